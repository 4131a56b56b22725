"""Follow topics by partition assignment: the alerts viewer and the demo read this way.

No consumer group: followers are read-only viewers that should neither disturb each other nor wait
for a group join (the bundled broker takes seconds to complete one). Every partition of every topic
is assigned, starting at the beginning or at the end as it is when the follower starts.
"""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError
from aiokafka.structs import ConsumerRecord

from ..config import KafkaSettings
from .topics import ensure_topics, unreachable


class TopicFollower:
    def __init__(self, kafka: KafkaSettings, topics: list[str], from_beginning: bool = False):
        self.kafka = kafka
        self.topics = topics
        self.from_beginning = from_beginning
        self.consumer: AIOKafkaConsumer | None = None

    async def __aenter__(self) -> "TopicFollower":
        # created if missing, so a follower can start before the worker does
        counts = await ensure_topics(self.kafka, self.topics)
        self.consumer = AIOKafkaConsumer(**self.kafka.client_options(),
                                         enable_auto_commit=False, auto_offset_reset="earliest",
                                         fetch_max_wait_ms=200, client_id="logstream-follow")
        try:
            await self.consumer.start()
        except KafkaConnectionError as exc:
            await self.consumer.stop()
            raise unreachable(self.kafka.bootstrap_servers, exc) from None
        partitions = [TopicPartition(topic, p) for topic in self.topics for p in range(counts[topic])]
        self.consumer.assign(partitions)
        if self.from_beginning:
            await self.consumer.seek_to_beginning(*partitions)
        else:  # pin the end now: everything published after this point is seen
            for tp, offset in (await self.consumer.end_offsets(partitions)).items():
                self.consumer.seek(tp, offset)
        return self

    async def __aexit__(self, *exc) -> None:
        if self.consumer is not None:
            await self.consumer.stop()

    async def poll(self, timeout_s: float = 0.5) -> list[ConsumerRecord]:
        """The records that arrived, in partition order (each partition in offset order)."""
        batches = await self.consumer.getmany(timeout_ms=int(timeout_s * 1000))
        return [record for records in batches.values() for record in records]

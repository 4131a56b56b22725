"""Create the service's Kafka topics explicitly, with the partition count configured in one place.

Topics auto-created by a client get the broker's default partition count (4 on the bundled broker),
which later breaks anything that expects ``KafkaSettings.partitions`` (a Faust table's changelog
must match its source topic), so every entry point creates its topics through here first.
"""

from __future__ import annotations

import logging

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError, TopicAlreadyExistsError, for_code

from ..config import KafkaSettings

log = logging.getLogger("logstream.topics")


class KafkaUnavailable(RuntimeError):
    """No broker could be reached (or none is configured); the message says how to fix it."""


def unreachable(bootstrap_servers: str | None, exc: BaseException | None = None) -> KafkaUnavailable:
    """The error to raise when ``bootstrap_servers`` cannot be reached: which address, how to configure it."""
    how = ("start one (`logstream broker` runs the embedded broker on 127.0.0.1:9092) or point "
           "--bootstrap-servers, LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS or kafka.bootstrap_servers in the "
           "config file at a running Kafka")
    if not bootstrap_servers:
        return KafkaUnavailable(f"no Kafka broker configured: {how}")
    reason = f" ({exc})" if exc else ""
    return KafkaUnavailable(f"cannot reach a Kafka broker at {bootstrap_servers}{reason}: {how}")


async def ensure_topics(settings: KafkaSettings, names: list[str] | None = None) -> dict[str, int]:
    """Create the missing ones of ``names`` (default: input, alerts and dead-letter topics).

    Returns each topic's partition count. A topic that already exists is left as it is; a warning
    says so when its partition count differs from ``settings.partitions``.
    """
    names = names or [settings.input_topic, settings.alerts_topic, settings.dead_letter_topic]
    if not settings.bootstrap_servers:
        raise unreachable(None)
    admin = AIOKafkaAdminClient(client_id="logstream-topics", **settings.client_options())
    try:
        try:
            await admin.start()
        except KafkaConnectionError as exc:
            raise unreachable(settings.bootstrap_servers, exc) from None
        existing = set(await admin.list_topics())
        missing = [name for name in dict.fromkeys(names) if name not in existing]
        if missing:
            response = await admin.create_topics(
                [NewTopic(name, settings.partitions, settings.replication_factor) for name in missing])
            for name, code, message in response.topic_errors:
                # another process may have created it between list and create: that is fine
                if code and code != TopicAlreadyExistsError.errno:
                    raise for_code(code)(f"creating topic {name!r}: {message}")
            log.info("created topics %s (%d partitions, replication %d)", ", ".join(missing),
                     settings.partitions, settings.replication_factor)
        counts = {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(list(names))}
    finally:
        await admin.close()
    for name, count in counts.items():
        if count != settings.partitions:
            log.warning("topic %s has %d partitions, the configuration says %d", name, count,
                        settings.partitions)
    return counts

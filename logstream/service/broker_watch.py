"""Is the broker reachable? A small probe of its own, for readiness and for the outage metrics.

The Kafka clients reconnect by themselves when a broker comes back (measured: scoring resumed
within a second of the end of a 5 s and of a 45 s outage), but while it is away they only log
connection errors, the readiness endpoint kept saying "ready" and no metric told an operator. The
watch asks the broker for its metadata every ``interval_s`` with its own client, answers "not ready"
while that fails, and counts outages and the seconds spent in them.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka.client import AIOKafkaClient
from aiokafka.errors import KafkaError
from prometheus_client import Counter, Gauge

from ..config import KafkaSettings

log = logging.getLogger("logstream.broker")


class BrokerWatch:
    def __init__(self, kafka: KafkaSettings, up: Gauge, outages: Counter, outage_seconds: Counter,
                 timeout_s: float = 5.0, who: str = "worker"):
        self.kafka, self.timeout_s, self.who = kafka, timeout_s, who
        self.up_gauge, self.outages, self.outage_seconds = up, outages, outage_seconds
        self.reachable = True  # until a probe says otherwise: the service starts only once it was reached
        self._down_since: float | None = None
        self._counted_until = 0.0
        self._client: AIOKafkaClient | None = None
        up.set(1)

    async def check(self) -> bool:
        """One probe; updates the metrics and logs the start and end of an outage."""
        try:
            await asyncio.wait_for(self._probe(), self.timeout_s)
            ok = True
        except (KafkaError, OSError, asyncio.TimeoutError) as exc:
            ok, error = False, exc
        now = time.monotonic()
        if not ok and self.reachable:
            self._down_since = self._counted_until = now
            self.outages.inc()
            log.warning("%s: the Kafka broker at %s does not answer (%s: %s); not ready until it does, "
                        "the clients keep reconnecting", self.who, self.kafka.bootstrap_servers,
                        type(error).__name__, error or "no answer")
        if self._down_since is not None:
            self.outage_seconds.inc(now - self._counted_until)
            self._counted_until = now
        if ok and not self.reachable:
            log.warning("%s: the Kafka broker at %s answers again after %.1f s", self.who,
                        self.kafka.bootstrap_servers, now - self._down_since)
            self._down_since = None
        self.reachable = ok
        self.up_gauge.set(1 if ok else 0)
        return ok

    async def _probe(self) -> None:
        if self._client is None:
            client = AIOKafkaClient(client_id=f"logstream-{self.who}-watch",
                                    request_timeout_ms=int(self.timeout_s * 1000), **self.kafka.client_options())
            try:
                await client.bootstrap()
            except BaseException:
                await client.close()
                raise
            self._client = client
        await self._client.fetch_all_metadata()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

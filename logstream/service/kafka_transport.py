"""Faust's aiokafka transport, with the consumer's fetch wait a setting (``worker.fetch_wait_ms``).

Faust builds the worker's aiokafka consumer with ``fetch_max_wait_ms=1500``, fixed in its driver: a
fetch with nothing new waits up to 1.5 s, and a line that arrives then waits with it (measured in the
service benchmark: ingest-to-alert p50 540 ms at 50 lines/s, 100 ms with a 100 ms wait). The
subclasses below change only that value, on the consumer Faust made, before it starts; Faust's files
stay as they are.
"""

from __future__ import annotations

from faust.transport.drivers import aiokafka as driver


class ConsumerThread(driver.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: "Transport"):
        consumer = super()._create_worker_consumer(transport)
        # aiokafka hands this to its fetcher when the consumer starts
        consumer._fetch_max_wait_ms = transport.fetch_max_wait_ms
        return consumer


class Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> ConsumerThread:
        return ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(driver.Transport):
    Consumer = Consumer
    fetch_max_wait_ms = 1500

    @classmethod
    def with_fetch_wait(cls, ms: int) -> type["Transport"]:
        return type("Transport", (cls,), {"fetch_max_wait_ms": int(ms)})


def use_fetch_wait(app, ms: int) -> None:
    """Give a Faust app (not started yet) the transport with this fetch wait."""
    app.transport = Transport.with_fetch_wait(ms)(app.conf.broker_consumer, app)

"""``logstream broker``: the embedded broker in the foreground stops its broker process on SIGTERM as on
Ctrl-C (a container stop must not leave the real broker running), and never stalls on its own log."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from logstream.service.broker import BrokerError, EmbeddedBroker, free_port


def _default_interrupt() -> None:
    """Ctrl-C as a terminal's process gets it: a test run started in the background of a non-interactive
    shell passes SIGINT on ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_broker_command_stops_its_broker_process(sig):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
    process = subprocess.Popen([sys.executable, "-m", "logstream.cli", "broker", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True, preexec_fn=_default_interrupt)
    try:
        assert "broker listening on" in process.stdout.readline()  # our line; the broker's log is on stderr
        assert listening(port)
        process.send_signal(sig)
        assert process.wait(30) != 0 or sig == signal.SIGINT
        deadline = time.monotonic() + 10
        while listening(port):  # the broker process went with it
            assert time.monotonic() < deadline, f"the broker still listens on {port} after {sig.name}"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()


def test_the_brokers_log_goes_to_a_file_and_a_failed_start_says_why():
    with EmbeddedBroker() as broker:
        assert broker.process.stdout is None and broker.process.stderr is None  # no pipe left to fill up
        assert "tansu" in broker.log_tail()
    with pytest.raises(BrokerError, match="exited with") as failed:
        EmbeddedBroker(port=70000).start(timeout_s=10)  # no such port
    assert "70000" in str(failed.value)  # the broker's own words say why


def test_a_partitions_end_is_exact_from_the_brokers_two_answers():
    """The lag gauge's end offset: the bundled broker answers ListOffsets with its last batch's first
    offset, the fetch's high watermark is the real end once fetched; the larger of the two is exact and
    neither is above the end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from kafka import KafkaProducer

    from logstream.service.worker import partition_end

    records = 2_000
    with EmbeddedBroker() as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=20,
                                 batch_size=4096)  # many batches, as a shipper writes them
        for i in range(records):
            producer.send("ends", value=f"line {i}".encode(), partition=0)
        producer.flush()
        producer.close()
        tp = TopicPartition("ends", 0)

        async def answers() -> tuple[int, int | None, int | None]:
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                                        auto_offset_reset="earliest", fetch_max_wait_ms=20)
            await consumer.start()
            try:
                consumer.assign([tp])
                before = consumer.highwater(tp)  # nothing fetched yet
                read = 0
                while read < records:
                    read += sum(len(batch) for batch in (await consumer.getmany(timeout_ms=1000)).values())
                listed = (await consumer.end_offsets([tp]))[tp]
                return listed, before, consumer.highwater(tp)
            finally:
                await consumer.stop()

        listed, before, fetched = asyncio.run(answers())
    assert listed <= records and fetched == records
    assert partition_end(listed, fetched) == records
    assert before is None and partition_end(listed, before) == listed  # before any fetch: ListOffsets alone
    assert partition_end(None, None) is None

"""A broker outage with real processes: the tailer and the worker keep running, say so, and go on.

The bundled broker keeps its data in memory, so the outage is a ``FaultProxy`` in front of it (what a
real Kafka's restart looks like to its clients: connections reset and refused, then its topics and
offsets back). Lines are written to the tailed file before, during and after the outage; every one
of them must reach the input topic and be scored, with the worker not ready meanwhile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from logstream.service.broker import EmbeddedBroker, free_port
from logstream.service.faults import FaultProxy
from service_helpers import Scenario, TopicReader, metric, model_dir_or_skip, readiness

OUTAGE_S = 12.0  # longer than the tests' session timeout (6 s): the worker has to join its group again


def wait(condition, what: str, timeout_s: float, processes=()) -> float:
    started = time.monotonic()
    while not condition():
        for p in processes:
            if p.poll() is not None if hasattr(p, "poll") else not p.alive:
                pytest.fail(f"a process exited before {what}")
        if time.monotonic() - started > timeout_s:
            pytest.fail(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.2)
    return time.monotonic() - started


def test_tailer_and_worker_ride_out_a_broker_outage(tmp_path):
    model_dir_or_skip()
    proxy_port = free_port()
    with EmbeddedBroker(advertised_port=proxy_port) as broker, FaultProxy(broker.port, port=proxy_port) as proxy:
        scenario = Scenario(proxy.address, tmp_path)
        scenario.create_topics()
        log = tmp_path / "app.log"
        written: list[str] = []

        def write(n: int) -> None:
            with log.open("a") as f:
                for _ in range(n):
                    written.append(f"job {len(written)} finished in 12 ms")
                    f.write(written[-1] + "\n")

        write(40)
        worker = scenario.worker()
        tail_port = free_port()
        tailer = subprocess.Popen(
            [sys.executable, "-m", "logstream.cli", "tail", str(log), "--checkpoint", str(tmp_path / "cp.json"),
             "--bootstrap-servers", proxy.address],
            env={**os.environ, **scenario.env(), "LOGSTREAM_TAIL__METRICS_PORT": str(tail_port),
                 "LOGSTREAM_TAIL__ACK_TIMEOUT_S": "5"},
            stdout=open(tmp_path / "tail.log", "wb"), stderr=subprocess.STDOUT)
        reader = TopicReader(scenario.bootstrap, [scenario.input_topic, scenario.scores_topic])
        try:
            def scored_lines() -> set[str]:
                reader.poll()
                return {json.loads(r.value)["line"] for r in reader.records[scenario.input_topic]}

            def all_scored() -> bool:
                lines = scored_lines()
                inputs = {(r.partition, r.offset) for r in reader.records[scenario.input_topic]}
                scores = {(s["partition"], s["offset"]) for s in reader.values(scenario.scores_topic)}
                return set(written) <= lines and inputs <= scores

            wait(all_scored, "the first lines scored", 240, [tailer, worker])
            wait(lambda: readiness(scenario.metrics_port) == 200, "the worker ready", 30)
            reader.close()

            proxy.cut()
            for _ in range(int(OUTAGE_S)):  # the application keeps logging while Kafka is away
                write(5)
                time.sleep(1)
            assert readiness(scenario.metrics_port) == 503, "ready while the broker was away"
            assert metric(scenario.metrics_port, "logstream_broker_up") == 0
            proxy.restore()
            restored = time.monotonic()
            write(20)

            reader = TopicReader(scenario.bootstrap, [scenario.input_topic, scenario.scores_topic])
            recovered = wait(all_scored, "every line, written before, during and after the outage, scored", 120,
                             [tailer, worker])
            assert tailer.poll() is None and worker.alive
            assert recovered < 30, f"recovery took {recovered:.0f} s after the broker came back"
            wait(lambda: readiness(scenario.metrics_port) == 200, "the worker ready again", 30)
            assert metric(scenario.metrics_port, "logstream_broker_up") == 1
            assert metric(scenario.metrics_port, "logstream_broker_outages_total") == 1
            assert metric(scenario.metrics_port, "logstream_broker_outage_seconds_total") >= OUTAGE_S / 2
            assert time.monotonic() - restored < 150
        finally:
            reader.close()
            tailer.terminate()
            tailer.wait(30)
            worker.stop()

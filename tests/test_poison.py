"""A message that kills the worker is dead-lettered on the next starts, never looped on.

The worker process is really killed: a ``sitecustomize`` on its path makes the scorer exit the
process (``os._exit``, as the kernel's OOM killer or a native crash would end it: no exception, no
shutdown) when it meets one marked line. Everything else is the real worker against the real
broker: it dies with the line in a batch, dies again on it alone, then dead-letters it with the
reason and scores every other line.
"""

from __future__ import annotations

import json
import textwrap
import threading

import pytest
from service_helpers import Scenario, TopicReader, model_dir_or_skip
from test_worker import many_streams, positions, produce

from logstream.service.broker import EmbeddedBroker
from logstream.service.inflight import InflightLog

POISON = "this line kills the worker POISON-PILL"
CRASH = textwrap.dedent(f"""
    import os

    from logstream.scoring import scorer

    _score = scorer.LineScorer.score

    def score(self, entries):
        if any({POISON!r} in entry[1] for entry in entries):
            os._exit(137)  # the process ends here, as a killed one does
        return _score(self, entries)

    scorer.LineScorer.score = score
""")


@pytest.fixture(scope="module")
def broker():
    model_dir_or_skip()
    with EmbeddedBroker() as b:
        yield b


def test_a_message_that_kills_the_worker_is_dead_lettered_and_the_rest_scored(broker, tmp_path):
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "sitecustomize.py").write_text(CRASH)
    scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={"PYTHONPATH": str(crash)})
    scenario.create_topics()
    normal = many_streams(40, seed=5)
    landed = produce(scenario.bootstrap, scenario.input_topic,
                     normal[:20] + [(b"victim", POISON.encode())] + normal[20:])
    poison_at = landed[20]
    expected = set(landed) - {poison_at}
    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic, scenario.dead_letter_topic])
    try:
        for attempt in ("in a batch", "alone"):  # it dies twice: with the line in a batch, then on it alone
            worker = scenario.worker(f"dies-{attempt.replace(' ', '-')}")
            assert worker.process.wait(240) == 137, worker.log_tail()
        survivor = scenario.worker("survives")
        try:
            reader.wait_for(lambda: expected <= set(positions(reader.values(scenario.scores_topic)))
                            and reader.values(scenario.dead_letter_topic),
                            "every other line scored and the poison dead-lettered", workers=[survivor])
            assert survivor.alive
        finally:
            survivor.stop()
        dead = reader.values(scenario.dead_letter_topic)
        assert [(d["partition"], d["offset"], d["kind"]) for d in dead] == [(*poison_at, "poison")]
        assert "poison pill" in dead[0]["reason"] and POISON in dead[0]["value"]
        assert poison_at not in set(positions(reader.values(scenario.scores_topic)))
        assert "handled one at a time" in survivor.log_tail(20_000)
    finally:
        reader.close()


def test_a_worker_stopped_in_an_orderly_way_leaves_no_suspect(broker, tmp_path):
    scenario = Scenario(broker.bootstrap_servers, tmp_path)
    scenario.create_topics()
    landed = produce(scenario.bootstrap, scenario.input_topic, many_streams(30, seed=6))
    reader = TopicReader(scenario.bootstrap, [scenario.scores_topic])
    worker = scenario.worker()
    try:
        reader.wait_for(lambda: set(landed) <= set(positions(reader.values(scenario.scores_topic))),
                        "every line scored", workers=[worker])
    finally:
        assert worker.stop() == 0
        reader.close()
    slot = tmp_path / f"faust-{scenario.tag}" / "workers" / "0"  # the worker's own part of its data_dir
    assert (slot / "adaptive-thresholds.json").exists() and not (slot / "inflight.json").exists()


def test_two_writers_of_one_inflight_log_never_crash_on_each_others_temporary_file(tmp_path):
    """Two workers started with one ``data_dir`` (its default is one per consumer group) write one inflight
    log: each wrote ``inflight.tmp`` and replaced the log with it, so one's replace found the other's file
    already moved and the worker crashed (seen once in CI's rebalance test). Each writer has a temporary
    file of its own; here two threads hold batches as fast as they can."""
    path = tmp_path / "inflight.json"
    failures = []

    def hold_many(partition: int):
        log = InflightLog(path)
        try:
            for offset in range(2000):
                log.hold([("lines", partition, offset)])
        except OSError as exc:
            failures.append(exc)

    threads = [threading.Thread(target=hold_many, args=(p,)) for p in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    held = json.loads(path.read_text())["held"]
    assert held in ([["lines", 0, 1999]], [["lines", 1, 1999]])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inflight.json"]  # no temporary file left behind

"""Continual fine-tuning in a real worker process against a real broker: a round runs in the background
for a source the model does not know, the new version is swapped in without losing a line, and an
operator's rollback is followed."""

from __future__ import annotations

from pathlib import Path

import pytest

from logstream.cli import main
from logstream.scoring.card import ModelCard
from logstream.service.broker import EmbeddedBroker
from service_helpers import KafkaProducer, Scenario, TopicReader, metric, model_dir_or_skip

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FOREIGN = ROOT / "benchmarks" / "data" / "onboarding" / "postgresql" / "normal.log"


def send(bootstrap: str, topic: str, lines: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for line in lines:
            producer.send(topic, key=b"pg", value=line.encode())
        producer.flush()
    finally:
        producer.close()


def test_a_round_is_swapped_in_without_losing_a_line_and_rollback_is_followed(tmp_path, monkeypatch):
    model_dir = model_dir_or_skip()
    if not FOREIGN.exists():
        pytest.skip(f"{FOREIGN} is missing (benchmarks/onboarding_data.py makes it)")
    lines = FOREIGN.read_text().splitlines()[:420]
    base_version = ModelCard.load(model_dir).model_version
    store = tmp_path / "models"
    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={
            "LOGSTREAM_ADAPT__STORE_DIR": str(store), "LOGSTREAM_ADAPT__FIRST_AFTER_LINES": "250",
            "LOGSTREAM_ADAPT__STEPS": "3", "LOGSTREAM_ADAPT__CONTEXT": "128", "LOGSTREAM_ADAPT__RELEARN_LINES": "50",
            "LOGSTREAM_ADAPT__CHECK_INTERVAL_S": "1"})
        scenario.create_topics()
        kafka = scenario.kafka
        reader = TopicReader(broker.bootstrap_servers, [kafka.scores_topic])
        worker = scenario.worker("adapting")
        try:
            send(broker.bootstrap_servers, kafka.input_topic, lines[:300])
            reader.wait_for(lambda: metric(scenario.metrics_port, "logstream_model_swaps_total") >= 1,
                            "a fine-tuning round to be swapped in", workers=[worker])
            send(broker.bootstrap_servers, kafka.input_topic, lines[300:360])
            reader.wait_for(lambda: len(reader.values(kafka.scores_topic)) >= 360, "every line scored",
                            workers=[worker])
            records = reader.values(kafka.scores_topic)
            assert sorted((r["partition"], r["offset"]) for r in records) == sorted(
                {(r["partition"], r["offset"]) for r in records})  # each line once: none lost, none twice
            adapted = records[-1]["model_version"]
            assert adapted != base_version and records[0]["model_version"] == base_version
            # the version was made ready beside scoring: scoring paused only to switch (and to re-learn steps)
            assert metric(scenario.metrics_port, "logstream_model_swap_pause_seconds_count") >= 1
            assert (store / "versions" / adapted / "model.safetensors").exists()

            for name, value in scenario.env().items():
                monkeypatch.setenv(name, value)
            assert main(["model", "rollback"]) == 0
            reader.wait_for(lambda: metric(scenario.metrics_port, "logstream_model_swaps_total") >= 2,
                            "the rollback to be followed", workers=[worker])
            send(broker.bootstrap_servers, kafka.input_topic, lines[360:420])
            reader.wait_for(lambda: len(reader.values(kafka.scores_topic)) >= 420, "the last lines scored",
                            workers=[worker])
            assert reader.values(kafka.scores_topic)[-1]["model_version"] == base_version
        finally:
            worker.stop()
            reader.close()


def test_the_adapt_check_starts_a_swap_and_returns_while_it_is_made_ready(tmp_path):
    """The fine-tuning timer does not wait for a new version to be made ready (that outlasts its
    interval: Faust logged the timer as overlapping); later checks see the swap through, once."""
    import asyncio
    import json
    import shutil

    from logstream.config import Settings
    from logstream.service.model_worker import ModelWorker
    from logstream.service.worker import Adaptation

    model_dir = model_dir_or_skip()
    settings = Settings(model={"path": model_dir, "threads": 1},
                        adapt={"enabled": False, "store_dir": str(tmp_path / "models")},
                        worker={"data_dir": str(tmp_path / "data")})
    model = ModelWorker(settings)
    try:
        staged = tmp_path / "staged"
        shutil.copytree(model_dir, staged)
        card = json.loads((staged / "logstream.json").read_text())
        card["model_version"] = "copy-for-the-swap-test"
        (staged / "logstream.json").write_text(json.dumps(card))
        assert model.store.add(staged, reason="test") == "copy-for-the-swap-test"

        async def checks() -> int:
            adaptation = Adaptation(settings, model)
            await adaptation.tick()
            assert adaptation.swapping is not None and not adaptation.swapping.done()
            assert model.served != "copy-for-the-swap-test"  # still the old one: scoring goes on with it
            ticks = 1
            while model.served != "copy-for-the-swap-test" or adaptation.swapping is not None:
                await asyncio.sleep(0.05)
                await adaptation.tick()
                ticks += 1
                assert ticks < 4000, "the swap was never seen through"
            await adaptation.tick()
            assert adaptation.swapping is None  # nothing more to swap
            return ticks

        assert asyncio.run(checks()) > 1
    finally:
        model.close()

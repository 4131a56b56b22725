"""`logstream score FILE` replays a file as the worker reads it: the same lines alert, with the same
thresholds adapting online (here without fine-tuning rounds, whose timing differs by design)."""

from __future__ import annotations

import itertools
import json

import pytest

from logstream.cli import main
from logstream.service.broker import EmbeddedBroker
from logstream.synth import SyntheticLogs
from service_helpers import KafkaProducer, Scenario, TopicReader, model_dir_or_skip

pytestmark = pytest.mark.slow


def test_offline_replay_alerts_on_the_lines_the_worker_alerts_on(tmp_path, capsys, monkeypatch):
    model_dir_or_skip()
    # one stream of synthetic web-server logs with injected anomalies, written to a file
    entries = list(itertools.islice(SyntheticLogs(seed=11, anomaly_rate=0.03, services={"web": 1}), 600))
    log = tmp_path / "web.log"
    log.write_text("\n".join(e.line for e in entries) + "\n")
    env = {"LOGSTREAM_ADAPT__ENABLED": "false", "LOGSTREAM_SCORING__ADAPTIVE__COLD_START_LINES": "100",
           "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0", "LOGSTREAM_WORKER__BATCH_SIZE": "64"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["score", str(log), "--json", "--no-adapt", "--batch", "64"]) == 0
    offline = {json.loads(row)["line"] for row in capsys.readouterr().out.splitlines()}
    assert offline, "the injected anomalies were expected to raise some alerts"

    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings=env)
        scenario.create_topics()
        kafka = scenario.kafka
        reader = TopicReader(broker.bootstrap_servers, [kafka.alerts_topic, kafka.scores_topic])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        for entry in entries:  # key = the file name, as `logstream tail` keys a file's lines
            producer.send(kafka.input_topic, key=str(log).encode(), value=entry.line.encode())
        producer.flush()
        producer.close()
        worker = scenario.worker("replayed")
        try:
            reader.wait_for(lambda: len(reader.values(kafka.scores_topic)) >= len(entries), "every line scored",
                            workers=[worker])
            flagged = sum(r["anomaly"] for r in reader.values(kafka.scores_topic))
            reader.wait_for(lambda: len(reader.values(kafka.alerts_topic)) >= flagged, "the alerts", workers=[worker])
            online = {alert["line"] for alert in reader.values(kafka.alerts_topic)}
        finally:
            worker.stop()
            reader.close()
    assert online == offline

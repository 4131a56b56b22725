"""Operator feedback against a real broker and real worker processes: a false alert marked normal
stops recurring (the same and similar lines), an error of the same stream still alerts, and the mark
survives a worker restart. Marks arrive by the CLI (`logstream feedback`) and by the worker's HTTP
endpoint with an Alertmanager webhook payload."""

from __future__ import annotations

import itertools
import json
import urllib.request

import pytest

from logstream.cli import main
from logstream.service.broker import EmbeddedBroker
from logstream.synth import SyntheticLogs
from service_helpers import KafkaProducer, Scenario, TopicReader, metric, model_dir_or_skip

pytestmark = pytest.mark.slow

# Thresholds adapt to the stream; a short cold start keeps the test short, a small margin makes the new
# template of the remount line alert (it is the false alert an operator marks), no fine-tuning rounds.
ADAPTIVE = {"LOGSTREAM_SCORING__ADAPTIVE__COLD_START_LINES": "60", "LOGSTREAM_SCORING__ADAPTIVE__MARGIN": "1.0",
            "LOGSTREAM_SCORING__ADAPTIVE__NOVEL_QUANTILE": "0.99", "LOGSTREAM_ADAPT__ENABLED": "false",
            "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0"}
SLOW = "081109 2140{:02d} 2561 WARN dfs.DataNode$PacketResponder: Slow BlockReceiver write packet to mirror took {}ms"
FULL = "081109 2141{:02d} 19 ERROR dfs.DataNode: java.io.IOException: No space left on device"
MOUNT = "081109 2142{:02d} 19 INFO dfs.DataNode: Remounted volume /data/{} read-only for scrubbing"


def hdfs_lines(n: int, seed: int) -> list[str]:
    return [e.line for e in itertools.islice(SyntheticLogs(seed=seed, anomaly_rate=0.0, services={"hdfs": 1}), n)]


def send(bootstrap: str, topic: str, lines: list[str], stream: bytes = b"dn-1") -> tuple[int, int]:
    """Sends the lines in order; returns the (partition, offset) of the last one."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=stream, value=line.encode()) for line in lines]
        producer.flush()
        last = futures[-1].get(timeout=30)
        return last.partition, last.offset
    finally:
        producer.close()


def scored(reader: TopicReader, topic: str, position: tuple[int, int]) -> bool:
    """Whether the line at this (partition, offset) has been scored. Counting score records is not enough:
    at-least-once delivery re-scores lines whose offsets were not committed before a restart."""
    return any((s["partition"], s["offset"]) == position for s in reader.values(topic))


def alerts_for(reader: TopicReader, topic: str, needle: str) -> list[dict]:
    return [a for a in reader.values(topic) if needle in a["line"]]


def test_marked_normal_stops_similar_alerts_keeps_errors_and_survives_a_restart(tmp_path, monkeypatch):
    model_dir_or_skip()
    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings=ADAPTIVE)
        scenario.create_topics()
        kafka = scenario.kafka
        reader = TopicReader(broker.bootstrap_servers, [kafka.alerts_topic, kafka.scores_topic])
        worker = scenario.worker("first")
        try:
            send(broker.bootstrap_servers, kafka.input_topic, hdfs_lines(150, seed=1) + [SLOW.format(1, 4512)])
            reader.wait_for(lambda: alerts_for(reader, kafka.alerts_topic, "took 4512ms"), "the first alert",
                            workers=[worker])
            false_alert = alerts_for(reader, kafka.alerts_topic, "took 4512ms")[0]
            assert false_alert["threshold_how"] in ("new template", "rare level")

            # the CLI marks it normal (it finds the alert on the alerts topic itself)
            for name, value in scenario.env().items():
                monkeypatch.setenv(name, value)
            assert main(["feedback", false_alert["alert_id"], "normal", "--bootstrap-servers",
                         broker.bootstrap_servers]) == 0
            reader.wait_for(lambda: metric(scenario.metrics_port, "logstream_feedback_applied_total") >= 1, "the mark to be applied",
                            workers=[worker])

            last = send(broker.bootstrap_servers, kafka.input_topic,
                        hdfs_lines(40, seed=2) + [SLOW.format(2, 3120), FULL.format(1), MOUNT.format(1, "disk1")])
            reader.wait_for(lambda: scored(reader, kafka.scores_topic, last),
                            "the lines after the mark to be scored", workers=[worker])
            # the reader fetches the scores and the alerts topics apart: a line's score can be read before its
            # batch's alerts. The stream's alerts share a partition in order, so once the remount line's alert
            # is read, an alert of the similar line sent before it would have been read too.
            reader.wait_for(lambda: alerts_for(reader, kafka.alerts_topic, "Remounted volume /data/disk1"),
                            "the remount line's alert", workers=[worker])
            assert not alerts_for(reader, kafka.alerts_topic, "took 3120ms")  # similar line: quiet now
            assert alerts_for(reader, kafka.alerts_topic, "No space left")     # an error still alerts

            # a second false alert, marked through the worker's HTTP endpoint with an Alertmanager payload
            mount = alerts_for(reader, kafka.alerts_topic, "Remounted volume /data/disk1")
            assert mount, "the remount line was expected to alert before it is marked"
            body = json.dumps({"version": "4", "status": "firing", "alerts": [
                {"labels": {"alertname": "LogAnomaly"}, "annotations": {"alert_id": mount[0]["alert_id"]}}]})
            request = urllib.request.Request(f"http://127.0.0.1:{scenario.metrics_port}/feedback", data=body.encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 202
                assert json.loads(response.read())["marked"][0]["alert_id"] == mount[0]["alert_id"]
        finally:
            worker.stop()

        # a fresh worker reads the feedback topic from the beginning: both marks hold
        restarted = scenario.worker("restarted")
        try:
            reader.wait_for(lambda: metric(scenario.metrics_port, "logstream_feedback_applied_total") >= 2, "both marks to be re-applied",
                            workers=[restarted])
            last = send(broker.bootstrap_servers, kafka.input_topic,
                        hdfs_lines(150, seed=3) + [SLOW.format(3, 2890), MOUNT.format(2, "disk7"), FULL.format(2)])
            reader.wait_for(lambda: scored(reader, kafka.scores_topic, last),
                            "the lines after the restart to be scored", workers=[restarted])
            reader.wait_for(lambda: last[1] in {a["offset"] for a in alerts_for(reader, kafka.alerts_topic,
                                                                                   "No space left")},
                            "the error's alert after the restart (the last line sent)", workers=[restarted])
            assert not alerts_for(reader, kafka.alerts_topic, "took 2890ms")
            assert not alerts_for(reader, kafka.alerts_topic, "/data/disk7")
            # the error after the restart alerts too (a replayed first one may alert again: at-least-once)
            full = alerts_for(reader, kafka.alerts_topic, "No space left")
            assert {a["offset"] for a in full} >= {last[1]}, full
        finally:
            restarted.stop()
            reader.close()

"""What the usual log shippers write to Kafka reaches a score: Vector, Fluent Bit, Filebeat, the
OpenTelemetry Collector's OTLP JSON, plain JSON application log lines and logstream's own envelope
with non-string fields. Shapes are the ones their documentation gives for a file source and a Kafka
output with JSON encoding; what is still unusable is dead-lettered with its reason."""

from __future__ import annotations

import json

import pytest

from logstream.service.broker import EmbeddedBroker
from logstream.service.envelope import EnvelopeError, decode_entries
from service_helpers import KafkaProducer, Scenario, TopicReader, model_dir_or_skip

# Vector: `file` source -> `kafka` sink, `encoding.codec = "json"` (the file source's fields: file, host,
# message, source_type, timestamp)
VECTOR = {"file": "/var/log/nginx/error.log", "host": "web-1", "source_type": "file",
          "message": "2026/12/01 01:14:20 [error] 4605#4605: *3 connect() failed (111: Connection refused) while "
                     "connecting to upstream, client: 127.0.0.1",
          "timestamp": "2026-12-01T01:14:20.123456789Z"}
# Fluent Bit: `tail` input with `Path_Key filename` -> `kafka` output, `Format json` (Timestamp_Key @timestamp)
FLUENT_BIT = {"@timestamp": 1764551651.588, "filename": "/var/log/syslog",
              "log": "Dec  1 01:14:11 vm mytool[4574]: hello from logger test"}
# Filebeat 8: `filestream` input -> `output.kafka` with `codec.json` (ECS fields)
FILEBEAT = {"@timestamp": "2026-12-01T01:14:20.123Z",
            "@metadata": {"beat": "filebeat", "type": "_doc", "version": "8.13.0"},
            "log": {"offset": 1234, "file": {"path": "/var/log/app/app.log"}}, "message": "db timeout after 30000 ms",
            "input": {"type": "filestream"}, "ecs": {"version": "8.0.0"}, "host": {"name": "web-1"},
            "agent": {"type": "filebeat", "version": "8.13.0", "name": "web-1"}}
# OpenTelemetry Collector: `kafka` exporter, `encoding: otlp_json` (an ExportLogsServiceRequest)
OTLP = {"resourceLogs": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout"}},
                                {"key": "host.name", "value": {"stringValue": "pod-7"}}]},
    "scopeLogs": [{"scope": {"name": "checkout.payments"}, "logRecords": [
        {"timeUnixNano": "1764551660123000000", "severityNumber": 17, "severityText": "ERROR",
         "body": {"stringValue": "payment gateway timeout"},
         "attributes": [{"key": "retry", "value": {"intValue": "3"}}]},
        {"timeUnixNano": "1764551661123000000", "severityNumber": 9, "body": {"stringValue": "order placed"}}]}]}]}
APP_JSON = {"ts": 1764551660.1, "level": "error", "msg": "db timeout", "pid": 42}
ENVELOPE = {"line": "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 1.2.3.4",
            "stream": "bastion-1", "fields": {"pid": 24200, "port": 22, "tags": ["ssh"]}}


def decoded(obj, key: bytes | None = None, **kwargs):
    return decode_entries(json.dumps(obj).encode(), key, **kwargs)


def test_each_shipper_shape_becomes_entries_with_stream_line_and_level():
    (stream, vector), = decoded(VECTOR)
    assert stream == "web-1:/var/log/nginx/error.log" and vector.line == VECTOR["message"]
    assert vector.fields["shipper"] == "vector" and vector.timestamp.year == 2026
    (stream, fluent), = decoded(FLUENT_BIT)
    assert stream == "/var/log/syslog" and fluent.line == FLUENT_BIT["log"]
    (stream, beat), = decoded(FILEBEAT, key=b"app-on-web-1")
    assert stream == "app-on-web-1" and beat.line == "db timeout after 30000 ms"  # the key wins
    (stream, beat), = decoded(FILEBEAT)
    assert stream == "web-1:/var/log/app/app.log" and beat.fields["shipper"] == "filebeat"
    records = decoded(OTLP)
    assert [(s, e.line, e.fields.get("level")) for s, e in records] == [
        ("pod-7", "payment gateway timeout", "ERROR"), ("pod-7", "order placed", "INFO")]
    assert records[0][1].fields["retry"] == "3" and records[0][1].fields["service.name"] == "checkout"
    (stream, app), = decoded(APP_JSON, key=b"billing")
    assert stream == "billing" and app.line == json.dumps(APP_JSON)  # read by the canonical JSON format
    (stream, envelope), = decoded(ENVELOPE)
    assert envelope.fields == {"pid": "24200", "port": "22", "tags": '["ssh"]'}  # kept as text


def test_a_mapping_says_where_a_field_is():
    custom = {"event": {"original": "disk full"}, "kubernetes": {"pod": {"name": "db-0"}}, "agent": {}}
    (stream, entry), = decoded(custom, input_format="filebeat",
                               mapping={"line": "event.original", "stream": "kubernetes.pod.name"})
    assert (stream, entry.line) == ("db-0", "disk full")


@pytest.mark.parametrize("value, reason", [
    (json.dumps({"@metadata": {"beat": "filebeat"}, "message": None, "host": {"name": "h"}, "ecs": {}}),
     "filebeat record without a message"),
    (json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"severityText": "INFO"}]}]}]}),
     "OTLP message without a log record"),
    (json.dumps({"ts": 1, "msg": "no key and no stream"}), "no stream id"),
    ('{"line": "ok", "colour": "blue"}', "invalid envelope"),
])
def test_unusable_shapes_are_refused_with_their_reason(value, reason):
    with pytest.raises(EnvelopeError, match=reason):
        decode_entries(value.encode(), None)


@pytest.mark.slow
def test_every_shape_reaches_a_score_through_a_real_broker_and_worker(tmp_path):
    model_dir_or_skip()
    with EmbeddedBroker() as broker:
        scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={"LOGSTREAM_ADAPT__ENABLED": "false"})
        scenario.create_topics()
        kafka = scenario.kafka
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        messages = [(None, VECTOR), (None, FLUENT_BIT), (None, FILEBEAT), (None, OTLP), (b"billing", APP_JSON),
                    (None, ENVELOPE)]
        for key, obj in messages:
            producer.send(kafka.input_topic, key=key, value=json.dumps(obj).encode())
        producer.send(kafka.input_topic, key=b"bad", value=json.dumps({"@metadata": {}, "ecs": {}, "message": ""})
                      .encode())
        producer.flush()
        producer.close()
        reader = TopicReader(broker.bootstrap_servers, [kafka.scores_topic, kafka.dead_letter_topic])
        worker = scenario.worker("shippers")
        try:
            reader.wait_for(lambda: len(reader.values(kafka.scores_topic)) >= 7
                            and reader.values(kafka.dead_letter_topic), "the scores and the dead letter",
                            workers=[worker])
            streams = sorted(r["stream"] for r in reader.values(kafka.scores_topic))
            letters = reader.values(kafka.dead_letter_topic)
        finally:
            worker.stop()
            reader.close()
    assert streams == sorted(["web-1:/var/log/nginx/error.log", "/var/log/syslog", "web-1:/var/log/app/app.log",
                              "pod-7", "pod-7", "billing", "bastion-1"])
    assert len(letters) == 1 and "without a message" in letters[0]["reason"]


def test_the_shipped_recipes_send_to_logstreams_input_topic_as_json():
    import tomllib
    from pathlib import Path

    import yaml

    from logstream.config import Settings

    topic = Settings().kafka.input_topic
    recipes = Path(__file__).resolve().parents[1] / "deploy" / "shippers"
    vector = tomllib.loads((recipes / "vector.toml").read_text())["sinks"]["logstream"]
    assert (vector["type"], vector["topic"], vector["encoding"]["codec"]) == ("kafka", topic, "json")
    filebeat = yaml.safe_load((recipes / "filebeat.yml").read_text())["output.kafka"]
    assert filebeat["topic"] == topic and "codec.json" in filebeat
    otel = yaml.safe_load((recipes / "otelcol.yaml").read_text())
    assert otel["exporters"]["kafka"] == {"brokers": ["127.0.0.1:9092"], "topic": topic, "encoding": "otlp_json"}
    assert otel["service"]["pipelines"]["logs"]["exporters"] == ["kafka"]
    sections: dict[str, dict[str, str]] = {}  # Fluent Bit's classic format: [SECTION], then "Key value"
    for line in (recipes / "fluent-bit.conf").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = sections.setdefault(line.strip("[]"), {})
        elif line and not line.startswith("#"):
            key, value = line.split(None, 1)
            section[key] = value
    assert sections["OUTPUT"]["Topics"] == topic and sections["OUTPUT"]["Format"] == "json"
    assert sections["INPUT"]["Name"] == "tail"

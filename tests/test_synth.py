"""``logstream synth``: deterministic synthetic logs whose labeled anomalies really are anomalous.

The checks read the lines the way an outsider would: each service's line layout (after the Loghub
samples), the project's template masks, and a per-service flow key (block id, request id, sshd
pid, ZooKeeper client address). Whatever the generator believes about a line, the text must show it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from logstream.cli import main
from logstream.config import Settings
from logstream.service.envelope import decode_entry
from logstream.synth import ANOMALY_KINDS, SynthEntry, SyntheticLogs, write_training_corpus
from logstream.templates import mask_line

N_LINES = 20_000
START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)

# Where level, process and message sit in each service's lines.
LAYOUTS = {
    "hdfs": re.compile(r"\d{6} \d{6} \d+ (?P<level>[A-Z]+) (?P<msg>.*)"),
    "sshd": re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ (?P<proc>[^\s:]+): (?P<msg>.*)"),
    "web": re.compile(r"\[[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \d{4}\] "
                      r"\[(?P<level>[a-z]+)\] (?P<msg>.*)"),
    "zookeeper": re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - (?P<level>[A-Z]+) +\[.*?\] - "
                            r"(?P<msg>.*)"),
}
# What ties the lines of one flow together, per service: (pattern with a "key" group, where to look).
FLOW_KEYS = {
    "hdfs": (re.compile(r"(?P<key>blk_-?\d+)"), "msg"),
    "sshd": (re.compile(r"(?P<key>sshd\[\d+\])"), "proc"),
    "web": (re.compile(r"\brequest (?P<key>[0-9a-f]{8})\b"), "msg"),
    "zookeeper": (re.compile(r"(?:from|at|client) /(?P<key>\d+(?:\.\d+){3}:\d+)"), "msg"),
}
# A token that is a number, or numbers joined by ':' or ',' ("51234:11:", "200,").
NUMERIC_TOKEN = re.compile(r"-?\d+(?:[:,]-?\d+)*[:,]?")
ERROR_LEVELS = {"error", "fatal", "crit", "alert", "emerg"}


@dataclass(frozen=True)
class Parsed:
    entry: SynthEntry
    laid_out: bool  # the line has its service's usual prefix (a bare stack-trace line has not)
    message: str
    template: str
    flow_key: str | None
    is_error: bool


def parse(entry: SynthEntry) -> Parsed:
    match = LAYOUTS[entry.service].fullmatch(entry.line)
    parts = match.groupdict() if match else {}
    message = parts.get("msg", entry.line)
    pattern, where = FLOW_KEYS[entry.service]
    key = pattern.search(parts.get(where) or "") if match else None
    if entry.service == "sshd":
        is_error = message.startswith(("error:", "fatal:"))
    else:
        is_error = (parts.get("level") or "").lower() in ERROR_LEVELS
    return Parsed(entry, bool(match), message, mask_line(message), key.group("key") if key else None,
                  is_error)


def numeric_shape(message: str) -> tuple[str, dict[tuple[int, int], int]]:
    """The message with its numeric tokens as <N> (the rest masked as usual), and {(token, number
    within token): value}. Not mask_line alone: its masks take numbers of 8+ digits for hex ids."""
    shape, values = [], {}
    for i, token in enumerate(message.split()):
        if NUMERIC_TOKEN.fullmatch(token):
            shape.append("<N>")
            values.update({(i, j): int(n) for j, n in enumerate(re.findall(r"-?\d+", token))})
        else:
            shape.append(mask_line(token))
    return " ".join(shape), values


def take(logs: SyntheticLogs, n: int) -> list[SynthEntry]:
    return list(itertools.islice(logs, n))


@pytest.fixture(scope="module")
def parsed() -> list[Parsed]:
    return [parse(e) for e in take(SyntheticLogs(seed=7, anomaly_rate=0.01), N_LINES)]


@pytest.fixture(scope="module")
def normal(parsed) -> list[Parsed]:
    return [p for p in parsed if p.entry.label is None]


def anomalies(parsed: list[Parsed], kind: str) -> dict[int, list[Parsed]]:
    groups = defaultdict(list)
    for p in parsed:
        if p.entry.label == kind:
            groups[p.entry.anomaly_id].append(p)
    return groups


# --- determinism and rate ------------------------------------------------------------------------

def test_same_seed_gives_the_same_entries_and_another_seed_others():
    logs = SyntheticLogs(seed=11, anomaly_rate=0.02)
    first = take(logs, 3000)
    assert take(logs, 3000) == first  # iterating again starts over
    assert take(SyntheticLogs(seed=11, anomaly_rate=0.02), 3000) == first
    other = take(SyntheticLogs(seed=12, anomaly_rate=0.02), 3000)
    assert [e.line for e in other] != [e.line for e in first]
    assert len({e.line for e in first} & {e.line for e in other}) < 300  # shared lines: fixed messages only


@pytest.mark.parametrize("rate", [0.002, 0.01, 0.05])
def test_observed_anomaly_rate_is_close_to_the_requested_one(rate):
    entries = take(SyntheticLogs(seed=3, anomaly_rate=rate), N_LINES)
    observed = sum(e.label is not None for e in entries) / len(entries)
    assert observed == pytest.approx(rate, rel=0.2)


def test_every_kind_appears_and_only_those(parsed):
    ids_by_kind = {kind: len(anomalies(parsed, kind)) for kind in ANOMALY_KINDS}
    assert all(count >= 5 for count in ids_by_kind.values()), ids_by_kind
    assert {p.entry.label for p in parsed} == {None, *ANOMALY_KINDS}
    assert all((p.entry.label is None) == (p.entry.anomaly_id is None) for p in parsed)


def test_normal_lines_follow_their_service_layout_in_time_order(parsed, normal):
    assert all(p.laid_out for p in normal)
    assert {p.entry.stream for p in parsed} == {"hdfs-1", "hdfs-2", "web-1", "web-2", "sshd-1", "sshd-2",
                                                 "zookeeper-1"}
    times = [p.entry.timestamp for p in parsed]
    assert times == sorted(times) and times[0] >= START
    assert 20 < len({p.template for p in normal}) < 200  # structure to learn, not noise


# --- each kind is anomalous in the way it says -----------------------------------------------------

def test_unseen_messages_have_templates_normal_lines_never_show(parsed, normal):
    normal_templates = {p.template for p in normal}
    for group in anomalies(parsed, "unseen_message").values():
        assert len(group) == 1
        assert group[0].template not in normal_templates, group[0].entry.line


def test_error_bursts_are_runs_of_known_errors_longer_than_any_normal_run(parsed, normal):
    by_stream = defaultdict(list)
    for p in parsed:
        by_stream[p.entry.stream].append(p)
    longest_normal_run = 0
    for lines in by_stream.values():
        run = 0
        for p in lines:
            run = run + 1 if p.is_error and p.entry.label is None else 0
            longest_normal_run = max(longest_normal_run, run)
    assert longest_normal_run >= 1  # normal logs do show these errors, just never many in a row
    normal_error_templates = {p.template for p in normal if p.is_error}
    position = {id(p): i for lines in by_stream.values() for i, p in enumerate(lines)}
    for group in anomalies(parsed, "error_burst").values():
        assert len({p.entry.stream for p in group}) == 1
        first = position[id(group[0])]
        assert [position[id(p)] for p in group] == list(range(first, first + len(group)))  # back to back
        assert all(p.is_error and p.template in normal_error_templates for p in group)
        assert len(group) > longest_normal_run


def test_out_of_range_values_lie_outside_their_field_range_in_normal_lines(parsed, normal):
    ranges: dict[str, dict] = defaultdict(dict)
    for p in normal:
        shape, values = numeric_shape(p.message)
        fields = ranges[shape]
        for position, value in values.items():
            low, high = fields.get(position, (value, value))
            fields[position] = (min(low, value), max(high, value))
    for group in anomalies(parsed, "out_of_range_value").values():
        assert len(group) == 1
        p = group[0]
        shape, values = numeric_shape(p.message)
        assert shape in ranges, p.entry.line  # a normal message, only a value is off
        fields = ranges[shape]
        outside = [value for position, value in values.items()
                   if position in fields and not fields[position][0] <= value <= fields[position][1]]
        assert outside, p.entry.line


def test_broken_sequences_make_transitions_normal_flows_never_make(parsed, normal):
    last_step = {}
    transitions = []  # (line, previous template of its flow or None, its template)
    for p in parsed:
        if p.flow_key is None:
            continue
        flow = (p.entry.stream, p.flow_key)
        transitions.append((p, last_step.get(flow), p.template))
        last_step[flow] = p.template
    normal_transitions = {(before, now) for p, before, now in transitions if p.entry.label is None}
    normal_templates = {p.template for p in normal}
    broken = {id(p) for group in anomalies(parsed, "broken_sequence").values() for p in group}
    checked = 0
    for p, before, now in transitions:
        if id(p) in broken:
            assert now in normal_templates, p.entry.line  # a known step...
            assert (before, now) not in normal_transitions, p.entry.line  # ...in the wrong place
            checked += 1
    assert checked == len(broken) >= 5  # every broken line belongs to a flow


# --- zero rate, files, command line ---------------------------------------------------------------

def test_zero_rate_yields_a_purely_normal_corpus(tmp_path):
    assert all(e.label is None for e in take(SyntheticLogs(seed=5, anomaly_rate=0), 5000))
    written = write_training_corpus(tmp_path, 2000, seed=5)
    assert written.anomalous_lines == 0 and written.labels_path.read_text() == ""
    assert sum(len(path.read_text().splitlines()) for path in written.files.values()) == 2000


def test_files_hold_each_stream_and_labels_point_at_the_right_lines(tmp_path):
    logs = SyntheticLogs(seed=9, anomaly_rate=0.03)
    written = logs.write_files(tmp_path, 4000)
    entries = take(logs, 4000)
    files = {stream: path.read_text().splitlines() for stream, path in written.files.items()}
    for stream, lines in files.items():
        assert lines == [e.line for e in entries if e.stream == stream]
    labels = [json.loads(line) for line in written.labels_path.read_text().splitlines()]
    assert len(labels) == written.anomalous_lines == sum(e.label is not None for e in entries) > 50
    for label, entry in zip(labels, [e for e in entries if e.label]):  # labels come in line order
        assert label["file"] == f"{label['stream']}.log"
        assert files[label["stream"]][label["line_number"] - 1] == label["line"]
        assert (label["stream"], label["line"], label["kind"], label["anomaly_id"]) == (
            entry.stream, entry.line, entry.label, entry.anomaly_id)


def test_command_writes_the_same_files_as_the_library(tmp_path):
    assert main(["synth", "--out", str(tmp_path / "cli"), "--lines", "1500", "--seed", "4",
                 "--anomaly-rate", "0.02", "--services", "web=1,sshd=2"]) == 0
    written = SyntheticLogs(seed=4, anomaly_rate=0.02, services={"web": 1, "sshd": 2}).write_files(
        tmp_path / "lib", 1500)
    cli_files = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert cli_files == sorted([*(p.name for p in written.files.values()), "labels.jsonl"])
    for name in cli_files:
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes()


# --- Kafka ----------------------------------------------------------------------------------------

async def consume(bootstrap_servers: str, topic: str, expected: int):
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap_servers, group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        records, deadline = [], asyncio.get_running_loop().time() + 20
        while len(records) < expected and asyncio.get_running_loop().time() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records += batch
        for batch in (await consumer.getmany(timeout_ms=300)).values():  # nothing beyond what was sent
            records += batch
        return records, consumer.partitions_for_topic(topic)
    finally:
        await consumer.stop()


def test_kafka_gets_envelopes_keyed_by_stream_and_labels_with_their_offsets(tmp_path, monkeypatch):
    from logstream.service.broker import EmbeddedBroker

    monkeypatch.setenv("LOGSTREAM_KAFKA__PARTITIONS", "3")  # not the broker's default: the command made it
    topic = Settings.load().kafka.input_topic
    labels_path = tmp_path / "labels.jsonl"
    with EmbeddedBroker() as broker:
        assert main(["synth", "--kafka", "--bootstrap-servers", broker.bootstrap_servers, "--lines", "500",
                     "--rate", "5000", "--seed", "2", "--anomaly-rate", "0.05", "--start", START.isoformat(),
                     "--labels", str(labels_path)]) == 0
        records, partitions = asyncio.run(consume(broker.bootstrap_servers, topic, 500))
    assert len(partitions) == 3
    assert len(records) == 500
    expected = take(SyntheticLogs(seed=2, anomaly_rate=0.05, start_time=START), 500)
    received = defaultdict(list)
    at = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        stream, envelope = decode_entry(record.value, record.key)
        assert record.key.decode() == envelope.stream == stream
        assert envelope.source == stream.rsplit("-", 1)[0]
        received[stream].append((envelope.line, envelope.timestamp))
        at[(record.partition, record.offset)] = envelope
    for stream in {e.stream for e in expected}:  # one stream, one partition: its order holds
        assert received[stream] == [(e.line, e.timestamp) for e in expected if e.stream == stream]
    labels = [json.loads(line) for line in labels_path.read_text().splitlines()]
    anomalous = [e for e in expected if e.label]
    assert len(labels) == len(anomalous) >= 10
    assert sorted((x["stream"], x["line"], x["kind"]) for x in labels) == sorted(
        (e.stream, e.line, e.label) for e in anomalous)
    for label in labels:
        assert label["topic"] == topic
        envelope = at[(label["partition"], label["offset"])]
        assert (envelope.stream, envelope.line) == (label["stream"], label["line"])

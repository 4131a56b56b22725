"""The alert record (stable ids, UTC times, JSON round trip) and the grouper that folds bursts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from logstream.alerts import Alert, AlertGrouper, Explanation
from logstream.service.metrics import REGISTRY

T0 = datetime(2026, 3, 1, 8, 0, 0, tzinfo=timezone.utc)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def anomaly(i: int = 0, stream: str = "host-1", template: str | None = None, **overrides) -> Alert:
    """One anomalous entry; lines of one ``kind`` differ only in ids, sizes and IPs (masked alike)."""
    fields = dict(stream=stream, partition=1, offset=i, time=T0 + timedelta(milliseconds=i),
                  line=f"Received block blk_{9000 + i} of size {1000 + i} from /10.0.{i % 200}.7",
                  score=6.0, threshold=4.0, model_version="m@1", template=template)
    fields.update(overrides)
    return Alert(**fields)


def suppressed() -> float:
    return REGISTRY.get_sample_value("logstream_alerts_grouped_total") or 0.0


# -- the record ---------------------------------------------------------------------------------

def test_alert_json_round_trip():
    alert = anomaly(3, explanation=Explanation(surprising_tokens=[{"text": "blk", "logprob": -8.25}],
                                               nearest_template="Received block <*>", template_similarity=0.5,
                                               summary="odd"))
    data = alert.to_bytes()
    assert Alert.from_bytes(data) == alert
    assert b'"schema_version":3' in data


def test_alert_id_is_stable_and_identifies_the_first_anomaly():
    assert anomaly(5).alert_id == anomaly(5).alert_id  # a re-send carries the same id
    assert anomaly(5).alert_id != anomaly(6).alert_id  # another offset: another alert
    assert anomaly(5).alert_id != anomaly(5, stream="host-2").alert_id
    assert anomaly(5).alert_id != anomaly(5, template="Received block <*>").alert_id
    update = anomaly(5).model_copy(update={"count": 40})
    assert Alert.from_bytes(update.to_bytes()).alert_id == anomaly(5).alert_id
    # Without a Kafka offset the entry's time stands in, in any time zone.
    local = T0.astimezone(timezone(timedelta(hours=2)))
    assert anomaly(offset=None, partition=None, time=local).alert_id == \
        anomaly(offset=None, partition=None, time=T0).alert_id


def test_alert_times_are_utc():
    naive = anomaly(time=datetime(2026, 3, 1, 8, 0, 0))
    assert naive.time == T0 and naive.time.tzinfo == timezone.utc
    shifted = anomaly(time=datetime(2026, 3, 1, 10, 0, 0, tzinfo=timezone(timedelta(hours=2))))
    assert shifted.time == T0 and shifted.time.utcoffset() == timedelta(0)
    assert shifted.first_seen == shifted.last_seen == T0


def test_masked_lines_share_a_group_templates_take_precedence():
    assert anomaly(1).group_key == anomaly(2).group_key  # only ids, sizes and IPs differ
    assert anomaly(1).group_key != anomaly(1, line="Disk failure on /dev/sda").group_key
    tpl = "Block <*> replicated"
    assert anomaly(1, template=tpl, line="x 1").group_key == anomaly(2, template=tpl, line="y 2").group_key


# -- the grouper --------------------------------------------------------------------------------

def test_burst_of_1000_folds_into_one_alert_and_one_update():
    clock = FakeClock()
    grouper = AlertGrouper(window_s=60, clock=clock)
    before = suppressed()
    emitted = []
    for i in range(1000):
        clock.now = i * 0.01
        emitted += grouper.add(anomaly(i))
    assert len(emitted) == 1 and emitted[0].count == 1 and emitted[0].offset == 0
    assert suppressed() == before + 999
    clock.now = 59.0
    assert grouper.flush() == []  # window not over yet
    clock.now = 61.0
    [update] = grouper.flush()
    assert update.alert_id == emitted[0].alert_id
    assert update.count == 1000
    assert update.first_seen == anomaly(0).time and update.last_seen == anomaly(999).time
    assert grouper.flush() == []  # nothing folded since


def test_a_continuing_burst_keeps_its_alert_and_a_quiet_window_opens_a_new_one():
    clock = FakeClock()
    grouper = AlertGrouper(window_s=10, clock=clock)
    [first] = grouper.add(anomaly(0))
    clock.now = 5
    assert grouper.add(anomaly(1)) == []
    clock.now = 10
    [update] = grouper.flush()
    assert (update.alert_id, update.count) == (first.alert_id, 2)
    clock.now = 15  # within the window of the update: same alert, count continues
    assert grouper.add(anomaly(2)) == []
    clock.now = 20
    [update] = grouper.flush()
    assert (update.alert_id, update.count) == (first.alert_id, 3)
    clock.now = 31  # quiet for a whole window: news again
    [fresh] = grouper.add(anomaly(3))
    assert fresh.alert_id != first.alert_id and fresh.count == 1 and fresh.offset == 3


def test_a_backlog_read_in_seconds_folds_by_its_entries_own_time():
    """A tailer catching up, or a worker back from an outage, reads minutes of log in seconds: anomalies
    minutes apart in their own time are each news; a burst within a window of entry time is still one."""
    clock = FakeClock()
    grouper = AlertGrouper(window_s=60, clock=clock)
    emitted = []
    for i in range(10):  # read 0.1 s apart, written 5 minutes apart, then a burst within one second
        clock.now = i * 0.1
        emitted += grouper.add(anomaly(i, time=T0 + timedelta(minutes=5 * i)))
    assert [a.offset for a in emitted] == list(range(10))
    for i in range(10, 20):
        clock.now = 1 + i * 0.1
        emitted += grouper.add(anomaly(i, time=T0 + timedelta(minutes=60, milliseconds=i)))
    assert len(emitted) == 11  # the burst: its first anomaly, the rest folded into it
    clock.now = 62
    [update] = grouper.flush()
    assert (update.alert_id, update.count) == (emitted[-1].alert_id, 10)


def test_anomaly_after_the_window_without_flush_still_sends_the_pending_update_first():
    clock = FakeClock()
    grouper = AlertGrouper(window_s=10, clock=clock)
    [first] = grouper.add(anomaly(0))
    grouper.add(anomaly(1))
    clock.now = 12
    update, fresh = grouper.add(anomaly(2))
    assert (update.alert_id, update.count) == (first.alert_id, 2)
    assert fresh.alert_id != first.alert_id and fresh.count == 1


def test_groups_are_per_stream_and_per_anomaly():
    grouper = AlertGrouper(window_s=60, clock=FakeClock())
    out = grouper.add(anomaly(0)) + grouper.add(anomaly(1, stream="host-2")) + \
        grouper.add(anomaly(2, line="Disk failure on /dev/sda")) + grouper.add(anomaly(3))
    assert [(a.stream, a.offset) for a in out] == [("host-1", 0), ("host-2", 1), ("host-1", 2)]


def test_zero_window_emits_every_anomaly():
    grouper = AlertGrouper(window_s=0, clock=FakeClock())
    assert [len(grouper.add(anomaly(i))) for i in range(5)] == [1] * 5


def test_memory_is_bounded():
    clock = FakeClock()
    grouper = AlertGrouper(window_s=10, clock=clock, max_groups=3)
    grouper.add(anomaly(0, stream="s0"))
    grouper.add(anomaly(1, stream="s0"))  # folded: s0 has a pending update
    for i in range(1, 3):
        grouper.add(anomaly(i, stream=f"s{i}"))
    assert len(grouper) == 3
    evicted_update, new = grouper.add(anomaly(3, stream="s3"))  # the oldest group goes, its count with it
    assert (evicted_update.stream, evicted_update.count) == ("s0", 2) and new.stream == "s3"
    assert len(grouper) == 3
    clock.now = 10 * 3 + 1  # idle for more than three windows: forgotten
    assert grouper.flush() == [] and len(grouper) == 0


def test_invalid_arguments():
    with pytest.raises(ValueError):
        AlertGrouper(window_s=-1)
    with pytest.raises(ValueError):
        AlertGrouper(window_s=1, max_groups=0)

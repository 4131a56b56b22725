"""Entity flows: a step out of order in the life of a request (``logstream.scoring.flows``)."""

from __future__ import annotations

import json
import random

from logstream.config import AdaptiveSettings
from logstream.scoring.adaptive import OUT_OF_ORDER, AdaptiveThresholds
from logstream.scoring.masking import LineMasker

CONFIG = AdaptiveSettings(cold_start_lines=50, min_template_lines=10, history=64)
STEPS = ("request {rid} opened: GET /shop/{n} HTTP/1.1", "request {rid} routed to worker {n}",
         "request {rid} processed: status 200, {n} bytes", "request {rid} closed")
MASK = LineMasker()


def judge(adaptive: AdaptiveThresholds, text: str):
    """What the scorer does with a line: judge it, then learn it or count it as seen."""
    masked = MASK(text)
    verdict = adaptive.judge("src", masked, 2.0, text=text)
    if verdict.anomaly:
        adaptive.seen("src", 2.0, masked, text=text, how=verdict.how)
    else:
        adaptive.learn("src", masked, 2.0, routine=verdict.routine is not None, text=text)
    return verdict


class Requests:
    """Interleaved request flows, each with its own hex id, as a web server logs them."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.open: list[tuple[str, int]] = []  # (id, next step)

    def rid(self) -> str:
        return f"{self.rng.getrandbits(28):07x}a"

    def line(self, step: int, rid: str) -> str:
        return STEPS[step].format(rid=rid, n=self.rng.randint(1, 9999))

    def lines(self, n: int):
        """n lines of normal flows, four in flight at a time."""
        for _ in range(n):
            while len(self.open) < 4:
                self.open.append((self.rid(), 0))
            i = self.rng.randrange(len(self.open))
            rid, step = self.open[i]
            yield self.line(step, rid)
            if step + 1 < len(STEPS):
                self.open[i] = (rid, step + 1)
            else:
                self.open.pop(i)


def learned(seed: int = 0, config: AdaptiveSettings = CONFIG) -> tuple[AdaptiveThresholds, Requests]:
    adaptive, requests = AdaptiveThresholds(config), Requests(seed)
    for text in requests.lines(1200):
        assert not judge(adaptive, text).anomaly, text
    return adaptive, requests


def test_a_skipped_step_and_a_late_step_without_a_start_alert_and_say_what_usually_comes_next():
    adaptive, requests = learned()
    rid = requests.rid()
    assert not judge(adaptive, requests.line(0, rid)).anomaly
    assert not judge(adaptive, requests.line(1, rid)).anomaly
    skipped = judge(adaptive, requests.line(3, rid))  # closed, never processed
    assert skipped.anomaly and skipped.how == OUT_OF_ORDER
    assert rid in skipped.note and "right after 'request <HEX> routed" in skipped.note
    assert "usually next: 'request <HEX> processed" in skipped.note
    orphan = judge(adaptive, requests.line(2, requests.rid()))  # processed, never opened
    assert orphan.anomaly and orphan.how == OUT_OF_ORDER and "as its first line" in orphan.note
    for text in requests.lines(400):  # the rule does not disturb normal flows
        assert not judge(adaptive, text).anomaly, text


def test_a_flow_alerts_once_and_a_broken_flow_that_keeps_coming_back_turns_routine():
    adaptive, requests = learned()
    rid = requests.rid()
    judge(adaptive, requests.line(0, rid))
    assert judge(adaptive, requests.line(2, rid)).anomaly  # routing skipped
    assert not judge(adaptive, requests.line(2, rid)).anomaly  # the same flow: told already
    alerted = []
    for _ in range(40):  # routing skipped in request after request, a few lines apart: one long episode
        rid = requests.rid()
        judge(adaptive, requests.line(0, rid))
        alerted.append(judge(adaptive, requests.line(2, rid)).anomaly)
        for text in requests.lines(3):
            judge(adaptive, text)
    assert alerted[:2] == [True, True] and not any(alerted[2:])  # its burst told, then routine


def test_a_source_whose_flows_are_still_unfolding_is_not_judged_by_them():
    config = CONFIG.model_copy(update={"flow_min_lines": 5000})
    adaptive, requests = learned(config=config)
    rid = requests.rid()
    judge(adaptive, requests.line(0, rid))
    assert not judge(adaptive, requests.line(3, rid)).anomaly


def test_an_id_in_every_line_is_no_flow_and_steps_in_either_order_are_no_news():
    adaptive = AdaptiveThresholds(CONFIG)
    boot = "4f1e2d3c4b5a6978"
    rng = random.Random(1)
    for i in range(1500):  # a boot id in every line of a source, whatever the line says
        text = f"boot {boot}: " + rng.choice(("disk checked", "unit started", "timer fired", "link up"))
        assert not judge(adaptive, text).anomaly, i
    # two steps that come in either order: a message delivered to two mailboxes
    adaptive, _ = learned()
    for _ in range(300):
        qid = f"{rng.getrandbits(36):09X}A"
        first, second = rng.sample(("delivered to mailbox alice", "relayed to partner"), 2)
        for text in (f"{qid}: queued", f"{qid}: {first}", f"{qid}: {second}", f"{qid}: removed"):
            assert not judge(adaptive, text).anomaly, text


def test_flows_survive_a_restart_and_an_operators_mark_makes_a_pair_normal():
    adaptive, requests = learned()
    in_flight = requests.rid()
    judge(adaptive, requests.line(0, in_flight))
    again = AdaptiveThresholds(CONFIG)
    again.load_state(json.loads(json.dumps(adaptive.state())))
    assert not judge(again, requests.line(1, in_flight)).anomaly  # its flow goes on where it was
    rid = requests.rid()
    judge(again, requests.line(0, rid))
    skipped = requests.line(3, rid)
    assert judge(again, skipped).how == OUT_OF_ORDER  # what was learned survived
    again.mark_normal("src", MASK(skipped), 2.0, text=skipped)
    rid = requests.rid()
    judge(again, requests.line(0, rid))
    assert not judge(again, requests.line(3, rid)).anomaly  # opened then closed is normal now
    off = AdaptiveThresholds(CONFIG.model_copy(update={"flow_ids": ""}))
    off.load_state(adaptive.state())
    rid = requests.rid()
    judge(off, requests.line(0, rid))
    assert not judge(off, requests.line(3, rid)).anomaly

"""Entity flows: a step out of order in the life of a request (``logstream.scoring.flows``)."""

from __future__ import annotations

import json
import random

from logstream.config import FLOW_IDS, AdaptiveSettings
from logstream.scoring.adaptive import OUT_OF_ORDER, AdaptiveThresholds
from logstream.scoring.flows import EntityFlows, FlowState
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
    # a state saved before a step's successors were counted (four items a step) loads, and judges the same
    older = json.loads(json.dumps(adaptive.state()))
    for item in older["sources"]["src"]["flows"]["steps"]:
        del item[4:]
    again = AdaptiveThresholds(CONFIG)
    again.load_state(older)
    rid = requests.rid()
    judge(again, requests.line(0, rid))
    assert judge(again, requests.line(3, rid)).how == OUT_OF_ORDER
    off = AdaptiveThresholds(CONFIG.model_copy(update={"flow_ids": ""}))
    off.load_state(adaptive.state())
    rid = requests.rid()
    judge(off, requests.line(0, rid))
    assert not judge(off, requests.line(3, rid)).anomaly


def test_after_a_step_that_anything_follows_nothing_is_out_of_order():
    """An id that names no entity's life, such as slapd's time written in hex (``6b13556a.3a1aa18b``) at the
    head of each line, groups whatever lines share a second: such a step has many successors, and a new one
    is no news (measured: 6 false alerts in slapd's first run, before steps with more than
    ``flow_max_branches`` successors were left unjudged)."""
    flows = EntityFlows(FLOW_IDS, min_lines=0, quiet=10, min_step_lines=5, max_entities=1000, max_steps=64,
                        max_branches=2)
    state = FlowState()
    for i in range(300):  # step 1 is followed by 2 (a workflow); step 3 by any of 4, 5, 6 (a time in hex)
        flows.observe(state, 1, f"id {i:07x}a", normal=True)
        flows.observe(state, 2, f"id {i:07x}a", normal=True)
        flows.observe(state, 3, f"id {i:07x}b", normal=True)
        flows.observe(state, 4 + i % 3, f"id {i:07x}b", normal=True)
    for i in range(10):  # step 7: known, as some entities' first
        flows.observe(state, 7, f"id {i:07x}c", normal=True)
    flows.observe(state, 1, "id 9999999a", normal=True)
    assert flows.unknown(state, 5, "id 9999999a") == ("9999999a", (1, 5))  # a workflow's step skipped
    flows.observe(state, 3, "id 9999999b", normal=True)
    assert state.follows[3] >= 5 and flows.unknown(state, 7, "id 9999999b") is None  # step 3: three successors
    wide = EntityFlows(FLOW_IDS, 0, 10, 5, 1000, 64, max_branches=3)
    assert wide.unknown(state, 7, "id 9999999b") == ("9999999b", (3, 7))


def test_entities_are_bounded_per_source_and_in_a_saved_state():
    adaptive = AdaptiveThresholds(CONFIG.model_copy(update={"flow_entities": 500}))
    for i in range(3000):
        judge(adaptive, f"request {i:07x}a opened: GET /shop/{i} HTTP/1.1")
    flow = adaptive._sources["src"].flow
    assert len(flow.last) == 500 and f"{2999:07x}a" in flow.last and f"{0:07x}a" not in flow.last
    saved = adaptive.state()["sources"]["src"]["flows"]
    assert len(saved["entities"]) <= 500


class Packages:
    """dpkg.log as a package manager writes it: packages (named, no id) installed, upgraded and removed over and
    over, a few at a time; every line also names the host's repository, a constant of the source."""

    LIFE = ("upgrade {p} {old} {new}", "status half-configured {p} {old}", "status unpacked {p} {old}",
            "status half-installed {p} {old}", "status unpacked {p} {new}", "configure {p} {new} {new}",
            "status half-configured {p} {new}", "status installed {p} {new}")

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)
        self.versions = {f"{name}:all": 1 for name in ("libfoo", "shop-api", "log-shipper", "acme-web", "backup-tools",
                                                        "diskwatch", "fonts-acme", "vimrc-ops")}

    def line(self, step: int, package: str) -> str:
        version = self.versions[package]
        text = self.LIFE[step].format(p=package, old=f"1.{version}-1", new=f"1.{version + 1}-1")
        return f"{text} via mirror.example.test"

    def lines(self, n: int):
        """n lines of upgrades, two packages at a time, their steps interleaved."""
        done = 0
        while done < n:
            a, b = self.rng.sample(sorted(self.versions), 2)
            steps = [(a, s) for s in range(len(self.LIFE))] + [(b, s) for s in range(len(self.LIFE))]
            order = sorted(steps, key=lambda ps: (ps[1] + self.rng.random() * 2, ps[0]))
            seen = {a: -1, b: -1}
            for package, _ in order:  # each package's own steps stay in order
                seen[package] += 1
                yield self.line(seen[package], package)
                done += 1
            self.versions[a] += 1
            self.versions[b] += 1


def test_a_package_named_by_a_word_whose_configure_fails_and_is_retried_alerts_as_out_of_order():
    adaptive, packages = AdaptiveThresholds(CONFIG), Packages()
    for text in packages.lines(2000):
        assert not judge(adaptive, text).anomaly, text
    # the post-install script fails: half-configured, never installed, and the next run upgrades it again
    for step in range(7):
        assert not judge(adaptive, packages.line(step, "libfoo:all")).anomaly
    retried = judge(adaptive, packages.line(0, "libfoo:all"))
    assert retried.anomaly and retried.how == OUT_OF_ORDER
    assert "libfoo:all" in retried.note and "right after 'status half-configured <NAME>" in retried.note
    for step in range(1, 8):  # the retry goes through: installed at last
        assert not judge(adaptive, packages.line(step, "libfoo:all")).anomaly
    packages.versions["libfoo:all"] += 1
    for text in packages.lines(400):  # back on known paths, normal lives do not alert
        assert not judge(adaptive, text).anomaly, text
    # (the mirror, a name in every line, is no entity: followed, it would have taught every order of steps and
    # the retry would not alert); the rule can be turned off
    off, packages = AdaptiveThresholds(CONFIG.model_copy(update={"flow_name_share": 0.0})), Packages()
    for text in packages.lines(2000):
        judge(off, text)
    for step in range(7):
        judge(off, packages.line(step, "libfoo:all"))
    assert not judge(off, packages.line(0, "libfoo:all")).anomaly


def test_named_flows_survive_a_restart():
    adaptive, packages = AdaptiveThresholds(CONFIG), Packages(1)
    for text in packages.lines(2000):
        judge(adaptive, text)
    for step in range(5):  # in flight across the restart
        judge(adaptive, packages.line(step, "diskwatch:all"))
    again = AdaptiveThresholds(CONFIG)
    again.load_state(json.loads(json.dumps(adaptive.state())))
    assert not judge(again, packages.line(5, "diskwatch:all")).anomaly  # its life goes on where it was
    assert not judge(again, packages.line(6, "diskwatch:all")).anomaly
    skipped = judge(again, packages.line(0, "diskwatch:all"))  # half-configured, then upgraded again
    assert skipped.anomaly and skipped.how == OUT_OF_ORDER

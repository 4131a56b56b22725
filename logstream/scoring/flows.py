"""Entity flows: a step out of order in the life of a request, a session, a block or a message.

Many incidents leave no unusual line behind: a request closed that was never processed, a session
that was never opened, a block served that was never received. Each such line reads like any other
of its template; what is wrong is the step it follows. So lines that name an entity (an id: a request
or queue id in hex, a ZooKeeper session ``0x...``, an HDFS ``blk_...``; ``flow_ids``) are followed per
entity: a line's step is its template (the adaptive thresholds' drain3 cluster), and each source
learns which step follows which in its entities' lives (``START`` before an entity's first line).

A step's successors are settled once it has been followed ``flow_quiet`` times (and a quarter of all
its follow-ups) without a new one; after a settled step, a step never seen after it in a normal line
alerts, once per entity. Per step, not per source: a rare path that shows a new pair now and then (a
404 among requests) does not stop the other steps from being judged. An id in more than
``flow_max_steps`` lines (a boot or container id) names no flow; steps seen in either order (two
deliveries of one message) are in order either way.

Online, with no training. It cannot see a flow that stops early (nothing follows the missing step):
a model trained on whole sessions does (``logstream train --sessions``, ``logstream.scoring.sessions``).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

START = -1  # the step before an entity's first line
SAVED_ENTITIES = 2_000  # entities whose latest step a saved state keeps (the most recent; the state is saved
# every minute for up to scoring.adaptive.max_sources sources)


@dataclass
class FlowState:
    """What one source has learned of its entities' flows."""

    pairs: set = field(default_factory=set)  # (previous step, step) seen in normal lines
    # entity -> (its latest step, its lines, whether its flow alerted already), least recent first
    last: OrderedDict = field(default_factory=OrderedDict)
    steps: Counter = field(default_factory=Counter)  # step -> entity lines at that step
    follows: Counter = field(default_factory=Counter)  # step -> times a normal line followed it
    settled: dict = field(default_factory=dict)  # step -> ``follows`` when it last had a new successor
    branches: Counter = field(default_factory=Counter)  # step -> its successors learned
    lines: int = 0  # entity lines seen
    loaded_at: int | None = None  # ``lines`` when this state was loaded: entities in flight then start mid-way
    alerts: dict = field(default_factory=dict)  # pair -> Recurrence of its lines not learned as normal


class EntityFlows:
    """Judges and learns steps against a source's ``FlowState`` (settings: ``scoring.adaptive.flow_*``)."""

    def __init__(self, ids: str, min_lines: int, quiet: int, min_step_lines: int, max_entities: int,
                 max_steps: int, max_branches: int):
        self.ids = re.compile(ids) if ids else None
        self.min_lines, self.quiet, self.min_step_lines = min_lines, quiet, min_step_lines
        self.max_entities, self.max_steps, self.max_branches = max_entities, max_steps, max_branches

    def entities(self, text: str | None) -> list[str]:
        """The entity ids a line names, each once, in order."""
        if self.ids is None or not text:
            return []
        return list(dict.fromkeys(m.group(0) for m in self.ids.finditer(text)))

    def settled(self, state: FlowState, step: int) -> bool:
        """Whether a step's successors are known: followed often, none new for a while, and few (a workflow's
        next step is one of a few; an id that is no entity's, such as a time written in hex, is followed by
        any line at all). START is any step's predecessor: its successors are not counted."""
        follows = state.follows[step]
        return (follows >= self.min_step_lines
                and follows - state.settled.get(step, 0) >= max(self.quiet, follows // 4)
                and (step == START or state.branches[step] <= self.max_branches))

    def unknown(self, state: FlowState, step: int | None, text: str | None) -> tuple[str, tuple[int, int]] | None:
        """(entity, pair) of the first of this line's entities whose step follows its previous one in a pair
        never shown in a normal line, after a settled step; else None."""
        if step is None or state.lines < self.min_lines or state.steps[step] < self.min_step_lines:
            return None
        for entity in self.entities(text):
            previous, lines, told = state.last.get(entity, (START, 0, False))
            if told or lines >= self.max_steps:
                continue  # its flow alerted once already, or it is no flow: an id in every line (a boot id)
            if previous == START and state.loaded_at is not None and state.lines - state.loaded_at < self.min_lines:
                continue  # an entity in flight across a restart starts mid-way
            if not self.settled(state, previous):
                continue
            if (previous, step) not in state.pairs and (step, previous) not in state.pairs:
                # (the reverse seen: two steps that come in either order, such as two deliveries of a message)
                return entity, (previous, step)
        return None

    def observe(self, state: FlowState, step: int | None, text: str | None, normal: bool,
                told: bool = False) -> list[tuple[int, int]]:
        """A line was decided: its entities move to ``step`` (``told``: the line alerted as a step out of
        order, their flows alert no more). A ``normal`` line's pairs of steps are learned, except those that
        alerted before (``state.alerts``: their comebacks are counted, not learned) and those of a flow that
        alerted (its later steps teach nothing). Returns the pairs it showed that the source has not learned."""
        if step is None:
            return []
        unlearned = []
        for entity in self.entities(text):
            previous, lines, was_told = state.last.get(entity, (START, 0, False))
            pair = (previous, step)
            state.lines += 1
            state.steps[step] += 1
            if normal and not was_told and lines < self.max_steps:
                state.follows[previous] += 1
            if pair not in state.pairs and not was_told:
                if normal and pair not in state.alerts and lines < self.max_steps:
                    state.pairs.add(pair)
                    state.settled[previous] = state.follows[previous]
                    state.branches[previous] += 1
                else:
                    unlearned.append(pair)
            state.last[entity] = (step, lines + 1, was_told or told)
            state.last.move_to_end(entity)
            while len(state.last) > self.max_entities:
                state.last.popitem(last=False)
        return unlearned

    # -- saving ---------------------------------------------------------------------------------

    @staticmethod
    def as_json(state: FlowState, templates: dict[int, str], alerts_json) -> dict:
        """``state`` with steps as template text (``templates``: step -> text; steps forgotten are left out)."""
        def text(step: int) -> str | None:
            return None if step == START else templates.get(step)

        def known(*steps: int) -> bool:
            return all(s == START or s in templates for s in steps)

        entities = list(state.last.items())[-SAVED_ENTITIES:]
        return {"lines": state.lines,
                "pairs": [[text(a), text(b)] for a, b in state.pairs if known(a, b)],
                "steps": [[text(s), state.steps[s], state.follows[s], state.settled.get(s, 0), state.branches[s]]
                          for s in set(state.steps) | set(state.follows) if known(s)],
                "entities": [[e, text(s), n, told] for e, (s, n, told) in entities if known(s)],
                "alerts": [[text(a), text(b), alerts_json(r)] for (a, b), r in state.alerts.items() if known(a, b)]}

    @staticmethod
    def from_json(data: dict, step_of, recurrence_of) -> FlowState:
        """A saved state, its template texts mined again (``step_of``: text -> step)."""
        def step(text: str | None) -> int:
            return START if text is None else step_of(text)

        state = FlowState(lines=int(data["lines"]))
        state.loaded_at = state.lines
        state.pairs = {(step(a), step(b)) for a, b in data["pairs"]}
        for text, lines, follows, settled, *branches in data["steps"]:
            s = step(text)
            state.steps[s] += int(lines)
            state.follows[s] += int(follows)
            state.settled[s] = max(state.settled.get(s, 0), int(settled))
            state.branches[s] += int(branches[0]) if branches else 0
        if any(len(item) < 5 for item in data["steps"]):  # saved before successors were counted: its pairs'
            state.branches = Counter(first for first, _ in state.pairs)
        state.last = OrderedDict((entity, (step(text), int(n), bool(told))) for entity, text, n, told in data["entities"])
        state.alerts = {(step(a), step(b)): recurrence_of(r) for a, b, r in data["alerts"]}
        return state

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

Entities a line names by a word rather than an id (a package ``libssl3:amd64``, a host, a file) are followed
too (``NamedFlows``), each source apart from its ids: a name lives through many flows (a package installed,
upgraded, removed again), so its step is the line with its names replaced, and a step back is out of order.

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
    step_ids: OrderedDict = field(default_factory=OrderedDict)  # NamedFlows: step text -> step, least recent first
    next_step: int = 0


class EntityFlows:
    """Judges and learns steps against a source's ``FlowState`` (settings: ``scoring.adaptive.flow_*``)."""

    # an id names one flow: steps seen in either order are in order (two deliveries of a message), and once
    # its flow alerted it alerts no more
    either_order = True
    told_until_known = False

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

    def is_flow(self, state: FlowState, lines: int) -> bool:
        """Whether an entity with ``lines`` lines so far is followed: one in more lines is no flow."""
        return lines < self.max_steps

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
            if told or not self.is_flow(state, lines):
                continue  # its flow alerted once already, or it is no flow: an id in every line (a boot id)
            if previous == START and state.loaded_at is not None and state.lines - state.loaded_at < self.min_lines:
                continue  # an entity in flight across a restart starts mid-way
            if not self.settled(state, previous):
                continue
            if (previous, step) not in state.pairs and not (self.either_order and (step, previous) in state.pairs):
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
            flow = self.is_flow(state, lines)
            if normal and not was_told and flow:
                state.follows[previous] += 1
            if pair not in state.pairs and not was_told:
                if normal and pair not in state.alerts and flow:
                    state.pairs.add(pair)
                    state.settled[previous] = state.follows[previous]
                    state.branches[previous] += 1
                else:
                    unlearned.append(pair)
            if was_told and self.told_until_known and normal and pair in state.pairs:
                was_told = False  # back on a known path: its next step out of order is news again
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


# A name written as a word that holds a ':', '.', '/' or '@' inside, or letters and digits together: a package
# and its architecture (``libssl3:amd64``), a host, a file, an address. Masked lines only: numbers are masks.
NAME = re.compile(r"^[(\[{'\"]*([A-Za-z0-9][\w.:/@+~-]*[\w/+~])[)\]}'\",.;:]*$")
NAME_MARK = re.compile(r"[A-Za-z][\w+~-]*[:.@/][\w+~-]|(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{6,}")
NAMED = "<NAME>"
MASK_WIDTH = re.compile(r"<N\d+>")  # a version's 1.2-1 and 1.10-1 are one step


class NamedFlows(EntityFlows):
    """Flows of entities a line names by a word, not an id: dpkg's packages (``configure libfoo:all 1.2-1``,
    ``status half-configured libfoo:all 1.2-1``), files, hosts. A line's step is its masked text with its names
    replaced (``status half-configured <NAME> <N>.<N>-<N>``), not its drain3 template: drain3 keeps the
    package and makes the status a wildcard. A name in more than ``max_share`` of the source's entity lines
    is a constant of the source, not an entity (a zone, a mirror), from its first lines on: followed for a
    while, its lines would teach the source every order of steps at all."""

    # a name lives through many flows (a package installed, upgraded, removed): a step back is no delivery
    # twice but a step out of order, and once its flow is back on a known path a step out of order is news again
    either_order = False
    told_until_known = True

    def __init__(self, min_lines: int, quiet: int, min_step_lines: int, max_entities: int, max_branches: int,
                 max_share: float, max_step_texts: int):
        super().__init__("", min_lines, quiet, min_step_lines, max_entities, 0, max_branches)
        self.max_share, self.max_step_texts = max_share, max_step_texts
        self._last: tuple[str, tuple[str, list[str]]] | None = None  # a line is judged, then learned: read once

    def read(self, masked: str) -> tuple[str, list[str]]:
        """(the line's step text, the names it holds)."""
        if self._last is not None and self._last[0] == masked:
            return self._last[1]
        self._last = (masked, self._read(masked))
        return self._last[1]

    @staticmethod
    def _read(masked: str) -> tuple[str, list[str]]:
        names, words = [], masked.split()
        for i, word in enumerate(words):
            if "<" in word or ">" in word or "=" in word:
                continue
            found = NAME.match(word)
            if found and NAME_MARK.search(found.group(1)):
                names.append(found.group(1))
                words[i] = word.replace(found.group(1), NAMED)
        return MASK_WIDTH.sub("<N>", " ".join(words)), list(dict.fromkeys(names))

    def step_of(self, state: FlowState, step_text: str) -> int:
        """The step's number in this source (the least recent forgotten past ``max_step_texts``)."""
        step = state.step_ids.get(step_text)
        if step is None:
            step = state.step_ids[step_text] = state.next_step
            state.next_step += 1
            while len(state.step_ids) > self.max_step_texts:
                state.step_ids.popitem(last=False)
        else:
            state.step_ids.move_to_end(step_text)
        return step

    def entities(self, text: str | None) -> list[str]:
        return self.read(text)[1] if text else []

    def is_flow(self, state: FlowState, lines: int) -> bool:
        return lines <= self.max_share * state.lines  # from its first lines on: a constant learns no pairs

"""Adaptive thresholds: an alert means "rarer than this source's own recent normal lines".

A fixed threshold calibrated once cannot fit every source: a log format the model never saw scores
high on every line, and one it knows well scores low. So each line is judged against what its own
source has shown, per template:

* **Templates.** Lines are clustered online by drain3 (on the masked canonical text, one miner per
  source). A template's recent scores on lines that did not alert (the last ``history``) give its
  own threshold once it has ``min_template_lines`` of them: their ``quantile`` plus a margin
  (``margin`` nats, or ``iqr_margin`` interquartile ranges if wider). A line far above what its
  own template usually scores (an out-of-range value, a corrupted variant) alerts.
* **New templates.** A line whose template the source has (almost) never shown is judged against
  the source's recent new-template lines: above their ``novel_quantile`` plus ``margin`` it alerts.
  A new normal message reads like the source's other new messages; an error usually reads stranger.
* **The model's own calibration, where it holds.** The model card's calibrated threshold (set for
  a 0.1% false-alert rate on normal lines like those it was trained on) also applies to a source
  as long as it demonstrably holds there: at most ``familiar_share`` of the source's recent lines
  score above it. On a format the model never saw it would flood (every line of a dpkg log,
  measured) and does not apply; on the sources it knows it catches what the source's own
  statistics are still too young to.
* **Cold start.** For a source's first ``cold_start_lines`` lines there is no "normal" of its own
  to be rarer than yet: only the calibrated threshold (where it holds) and the unseen-problem rule
  can alert. A problem that strikes in those first lines is news like any other (measured: an
  Alertmanager receiver failing within its first 200 lines was learned as normal, and the same
  failure later went unnoticed, recall 0.59); lines that merely read as problems but are the
  source's routine stop alerting once they recur (see below).
* **Rare levels.** A line at a level that is not routine (WARN, ERROR, FATAL, or a level word a
  format does not rank, like PostgreSQL's DETAIL) alerts when that level is under
  ``rare_level_share`` of the source's normal lines: ERROR in a source that never writes ERROR is
  news however plain its words (measured: the level alone finds most of the injected errors of the
  onboarding benchmark without a false alert, where one token of surprise in a line is diluted in
  its mean). Lines that alert are not counted as normal, so a level that keeps alerting would
  alert for good (a WARN that is 5% of HDFS's lines alerted on every line once its first one had:
  measured): it is taken as routine once it recurs (``Recurrence``), per pattern: the same ERROR
  coming back is routine, a new ERROR of the source is still news. Counting alerted lines in the
  share instead let a few error bursts make ERROR routine (measured: recall on the Alertmanager
  onboarding source 0.59 -> 0.41). A pattern the source has shown at that level in a normal line
  (a known-good baseline's, or one learned while the level was common) is no news either: BGL's
  training half logs ``FATAL APP: ciod: Error loading ...`` as normal, and alerting it again on the
  test half was 38 of 94 false alerts (measured, ``benchmarks/specs/bgl_chrono.yaml``).
* **Unseen problems.** A line that reads as a problem (a level other than TRACE, DEBUG, INFO or
  NOTICE, or a word of ``problem_words``: "refused", "timed out", "Traceback"...) alerts while its
  pattern (drain3 at the stricter ``problem_similarity``) has never been seen in a normal line of
  its source *with the same problem words*: nginx's routine ERROR ``open() ... failed (No such
  file)`` for a favicon does not make ``client intended to send too large body`` routine, though
  drain3 puts both in one pattern (measured: journald onboarding source). Lines that alert are
  not learned from, so a recurring error keeps alerting (grouped per stream by the alert router)
  until an operator marks it normal or it becomes routine. Measured on the onboarding benchmark:
  most real errors of a source the model never saw are recurring problems whose mean token
  surprise reads like any other new message's, and the first of them teaches nothing (they were
  never normal).
* **Benign news.** A line at such a level that reports a success or an orderly start or stop
  (``benign_words``: "succeeded", "is UP", "stopped", "Configuration loaded"; or, in its text before
  masking, an exit with status 0: "exited with code 0") and no bad outcome
  (a problem word, "lost", "down", "terminated", "signal", "unexpectedly") is no news by its level
  alone: HAProxy logs every reload at WARNING ("Proxy fe_shop stopped"), Redis every restart ("Redis is
  starting", "Server initialized"), and each one alerted. It is learned neither as a normal line at
  its level nor as a problem coming back: the level stays as rare as the source's other lines make
  it, and a warning of the same pattern without such words ("is DOWN" beside "is UP") still alerts.
  Nor is such a line news by its novelty, at any level: a restart writes messages a source shows only
  then (Caddy's "shutting down apps, then terminating signal=SIGTERM"; a signal to stop in order,
  SIGTERM, SIGINT, SIGHUP or SIGQUIT, is no bad outcome).
* **Start-ups.** A program writes the same warnings and new messages at every start (Caddy's "automatic
  HTTP->HTTPS redirects are disabled" at WARN): within ``startup_lines`` lines of a line that reports a start
  or stop (``START_STOP``, no problem word; and from a source's first line), a line without problem words
  whose pattern the source also wrote in an earlier start-up, and never away from one, is no news. A new
  message of a start (a broken configuration) and any line with a problem word still alert.
* **Values out of range.** Masking hides a number's value from the model (``<N5>``: five digits), and
  one surprising token barely moves a line's mean surprise, so a latency of 90,000 ms where 3,000
  is the most ever seen, a negative size or a timeout of 0 where 10,000 is the least read like any
  other line of their template (measured: none of the demo's 15 such anomalies alerted). Each
  template keeps, per numeric field, the least (its 3rd least: two odd values among its first lines
  do not count) and greatest value its normal lines held; once a field has ``range_min_lines`` of
  them, a value more than ``range_factor`` times beyond (above a field that was ever nonzero; below
  one that keeps within that factor, never under 100), a negative value where the field was
  (almost) never negative, a nonzero error code (``err=``, ``rc=``, ``errno=``) or status (``status =``)
  where it was always 0, or a code an error-code field never held where it held only a few
  (``NEW_CODE_SHARE``) alerts; codes from the template's ``min_template_lines``-th normal line on, while
  they are at most ``YOUNG_MAX_CODES``.
  Not fields inside names (``web<N1>``, ``worker-<N2>``) or after a dot (fractions, versions). Such a
  field that keeps going out of range turns routine like a problem pattern while it keeps coming back;
  its held-back lines (the rest of a burst, a routine's) do not widen the range
  (``Verdict.held_out_of_range``). Nor does a quantity alert in a template's first line since its source's
  latest start-up: a restarted program answers its first request of each kind slowly (cold caches, an
  index loaded); a code does (a failure right after a start is a failure).
* **Routine.** A problem pattern or a rare level that keeps coming back is the source's routine
  while it does: when it came back in ``routine_episodes`` episodes (bursts: its lines within
  ``routine_gap`` source lines of one another) within the source's last ``routine_window`` lines
  (the last ``routine_window`` lines of its stream while one stream alone has shown it: a program that
  shares its format with busier ones keeps its own pace, snmpd's engine discovery among two others),
  or in one episode that has lasted ``routine_episodes`` x ``routine_gap`` lines, it does not
  alert, and stays routine until it has been quiet for ``routine_window`` lines (``info_routine_window``,
  longer, in lines its program wrote at INFO or NOTICE: by its own account no trouble, so a slower pace
  is its routine too: nghttpx's ``Idle connection timeout`` every ~500 lines); after
  ``problem_routine_episodes`` episodes in all (``quiet_routine_episodes`` for a problem in DEBUG or
  TRACE lines: a program tracing its own housekeeping; ``info_routine_episodes``, off by default, in INFO
  or NOTICE lines), or one episode that went on for ``routine_window``
  lines (a chronic condition: a corrected parity error logged for hours), it is routine for good. A
  favicon 404 logged as an ERROR every few lines is routine within about a hundred lines; one burst
  of errors (an upstream down for a minute) alerts its first ``episode_alerts`` lines, however many
  lines it has (the rest is the same news: a 784-line burst of one HDFS WARN, each line about
  another block, alerted 92 blocks when every line of a burst alerted: measured), and the next
  burst is news again, told in its first ``later_episode_alerts`` lines (the coming back is the news);
  an error that strikes now and then stays news. Routine lines are not learned as normal problems: once a
  pattern has been quiet for ``routine_window`` lines it is news again.
* **One incident, one alert.** The rest of a multi-line record that alerted is that alert's (``record_key``),
  and so is the stream's next line, in another pattern, where it shares a rare word with the alert
  (``logstream.scoring.incident``: Supervisor's ``killing 'archiver' ... with SIGKILL`` then ``stopped:
  archiver``): counted as the alert's line (``Verdict.incident``), not learned as normal.
* **Operator feedback.** A template marked normal (``mark_normal``) keeps alerting only far above
  the scores of the lines it was marked on, and the marked line's pattern at its level (or its access
  event: ``WARN Bad Request``) and its problem words are no news. The other rules still read the
  template's lines: one with a problem word or an event the marked line did not carry is news (measured
  on replays with a simulated operator: an exit on SIGHUP marked normal silenced a later SIGSEGV crash
  of the same template when a mark switched every rule off).

Bounded: at most ``max_sources`` sources and ``max_templates`` templates per source (drain3's own
LRU), fixed-length score histories. ``state()`` / ``load_state()`` round-trip what was learned as
plain JSON (templates as text, re-mined on load: no pickles), so a restart is not a cold start.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict, deque
from collections.abc import Collection
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from drain3 import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig

from ..config import AdaptiveSettings
from .flows import START, EntityFlows, FlowState, NamedFlows
from .incident import WORD_LIMIT, WordCounts, same_pattern, shared_name
from .line_words import (
    EXIT_ZERO,
    GLUED_NUMBER,
    KEYED_QUOTE,
    LOW_LEVELS,
    QUOTED,
    START_STOP,
    ZERO_AFTER,
    ZERO_BEFORE,
    ZERO_REACH,
    bad_outcome,
    blank_keyed,
    blank_traced,
    fatal_signal,
    is_quiet,
    is_told_fine,
    spaced_codes,
)
from .masking import LineMasker
from .recurrence import Recurrence
from .value_fields import (
    IDENTIFIER,
    MAX_FIELDS,
    NEW_CODE_SHARE,
    RANGE_EXTREMES,
    YOUNG_MAX_CODES,
    code_field,
    count_code,
    judged_by_codes,
    keep_least,
    range_floor,
    shown_with_value,
    value_fields,
)

logging.getLogger("drain3").setLevel(logging.WARNING)  # it logs each miner's start at INFO

STATE_VERSION = 3  # 2: problem patterns keyed with their words, alerts kept as ``Recurrence``;
# 3: a rare level's recurrence kept per strict pattern
MIN_FAMILIAR_LINES = 20  # lines of a source before the calibration is judged to hold on it
RECENT_LINES = 1000  # a source's latest scores (alerted or not) on which that is judged
SAVED_STREAMS = 2_000  # streams whose latest step a saved state keeps per source (the most recent)
COLD = "cold start"
CALIBRATED = "calibrated"
TEMPLATE = "template"
NOVEL = "new template"
FEEDBACK = "marked normal"
RARE_LEVEL = "rare level"
OUT_OF_RANGE = "value out of range"
OUT_OF_ORDER = "step out of order"
UNSEEN_PROBLEM = "unseen problem"
BASELINE = "baseline"  # a line of a known-good log, learned as normal (``LineScorer.judge``)

@dataclass
class Verdict:
    """The decision on one line: alert or not, the threshold in force and how it was set."""

    anomaly: bool
    threshold: float | None
    how: str  # cold start | template | new template | marked normal | rare level | unseen problem |
    # value out of range | calibrated | baseline
    template: str | None = None
    template_id: int | None = None
    source: str | None = None
    note: str = ""  # a readable sentence saying where the threshold came from
    routine: str | None = None  # a problem rule held back because the problem keeps coming back: why
    incident: bool = False  # a line of the incident one of its stream's latest lines told (``routine`` says
    # what it names): counted as an alert's line (``seen``), not learned as normal nor as a problem come back
    # (template id, field key) of each field out of range that the rule held back (the rest of a burst that told
    # its news, or a routine's): ``learn`` counts it as come back and keeps its value out of the range
    held_out_of_range: tuple[tuple[int, str], ...] = ()

    def learnable(self) -> bool:
        return not self.anomaly and not self.incident


class OutOfRange(NamedTuple):
    """A field of a line out of its template's range (``AdaptiveThresholds._out_of_range``)."""

    key: str  # the field's key ("token.index"); for a code, "key=value": each code comes back on its own
    why: str  # a readable sentence: the value, and what the template's normal lines held
    code: bool  # a failure's code, not a quantity: news in a template's first line after a start too


@dataclass
class _Template:
    scores: deque
    marked_normal_at: float | None = None  # highest score an operator marked normal
    # numeric field ("token.index") -> [normal lines, its RANGE_EXTREMES least values ascending, its greatest,
    # and for a code field (``code_field``) its values seen {str(value): lines}, None once there were over MAX_CODES]
    ranges: dict = field(default_factory=dict)
    startup: int = 0  # the source's start-up count (``_Source.startups``) at the template's latest line




class _StreamRecord(NamedTuple):
    """A stream's latest line as the incident rules need it (``AdaptiveThresholds._part_of_alert``)."""

    record: str | None  # its record: time and level (``record_key``)
    alerted: bool  # a line of that record alerted: the rest of the record is that alert's
    alert: tuple[int | None, str] | None = None  # the pattern (``_line_key``) of an alert whose names are open
    names: frozenset[str] | None = None  # the things that alert named (``incident``)
    since: int = 0  # the stream's lines since that alert


@dataclass
class _Source:
    miner: TemplateMiner
    lines: int = 0
    templates: dict[int, _Template] = field(default_factory=dict)
    novel: deque = field(default_factory=deque)
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_LINES))  # latest scores, alerted or not
    levels: dict = field(default_factory=dict)  # level -> normal lines that carried it
    level_alerts: dict = field(default_factory=dict)  # (level, strict pattern id) -> Recurrence of its
    # lines not learned as normal
    level_normal: dict = field(default_factory=dict)  # (level, strict pattern id) -> its normal lines
    problems: TemplateMiner | None = None  # strict patterns for the unseen-problem rule
    # (strict pattern id, problem words) -> normal lines seen / Recurrence of lines not learned as
    # normal (alerted, or held back as routine); words None: any (what state version 1 kept)
    problem_normal: dict = field(default_factory=dict)
    problem_alerts: dict = field(default_factory=dict)
    range_alerts: dict = field(default_factory=dict)  # (template id, field key) -> Recurrence of its values
    # out of range
    flow: FlowState = field(default_factory=FlowState)  # its entities' steps (``logstream.scoring.flows``)
    named: FlowState = field(default_factory=FlowState)  # the steps of entities its lines name by a word
    # its start-ups: the line count at its latest line that reported an orderly start or stop (its first line
    # opens the first), how many there were, and its patterns (problem key -> [start-ups it was written in, the
    # latest, its lines away from a start-up])
    startup_at: int = 0
    startups: int = 1
    startup_patterns: OrderedDict = field(default_factory=OrderedDict)
    # stream -> the step (template) of its latest line, least recent first: what a problem came right after
    previous: OrderedDict = field(default_factory=OrderedDict)
    records: OrderedDict = field(default_factory=OrderedDict)  # stream -> its ``_StreamRecord``, least recent first
    words: WordCounts = field(default_factory=WordCounts)  # how many normal lines hold each word
    # stream -> its lines so far, least recent first: the clock of a pattern only that stream has shown
    stream_lines: OrderedDict = field(default_factory=OrderedDict)


SUBSECOND = re.compile(r"\d[.,]\d{3,}")


# a token of letters and numbers mixed at random, an identifier the masker leaves in pieces: a session's
# (Prosody's ``c2s55a3cc3de4`` -> ``c<N1>s<N2>a<N1>cc<N1>de<N1>``), a message's (Exim's ``1xZUN4-0002Nb-31``), a
# pod's or a UUID's: three number placeholders or more, and letters in two places or more between them
ID_TOKEN = re.compile(r"[\w<>-]+")  # a run of word characters and placeholders (one pass: no backtracking)
PLACEHOLDER = re.compile(r"<(?:N\d*|HEX)>")  # ``<N>``: a number of any width (``problem_pattern``)
NUMBER_WIDTH = re.compile(r"<N\d+>")


# a peer named at the head of a line, by its name and address (OpenVPN's ``alice/<IP> write UDPv4 ...`` for each
# client): drain3 sorts lines by their first words, so each client's lines were patterns of their own
PEER_HEAD = re.compile(r"^[\w.@-]+(?=/<IP>)")


def without_ids(masked: str) -> str:
    """``masked`` with each identifier the masker left in pieces as ``<ID>``, for the patterns the rules keep
    (drain3's clusters): one such id per line made each line a pattern of its own, a problem never routine
    (measured, read without their formats: Prosody's debug lines per session, 18.2 false alerts per 1,000;
    Exim's per message, 16.4). So is the name of a peer at the head of a line (``PEER_HEAD``)."""
    if "<" not in masked:
        return masked
    return ID_TOKEN.sub(_id_or_token, PEER_HEAD.sub("<ID>", masked, count=1))


def problem_pattern(masked: str) -> str:
    """What the problem rules' patterns are mined from: ``without_ids``, and each number of any width (``<N>``).
    A number's width is the model's to read; here a count or an uptime at the head of a line that gained a digit
    made its problem a pattern of its own, never routine (measured: upsd's debug log heads each line with its
    uptime, and its routine "ERR FEATURE-NOT-CONFIGURED" began anew at 10 seconds, and at each restart)."""
    return NUMBER_WIDTH.sub("<N>", without_ids(masked))


def _id_or_token(match: re.Match) -> str:
    if "<" not in match.group(0):
        return match.group(0)
    pieces = PLACEHOLDER.split(match.group(0))
    if len(pieces) > 3 and sum(1 for piece in pieces if any(c.isalpha() for c in piece)) >= 2:
        return "<ID>"
    return match.group(0)


def record_key(timestamp: str | None, level: str | None, pid: str | None = None) -> str | None:
    """What a line shares with the other lines of one multi-line record that writes its header on each line
    (the same time to the millisecond or finer, level and pid); None for a time in whole seconds (two
    records a second are common)."""
    if not timestamp or not SUBSECOND.search(timestamp):
        return None
    return f"{timestamp}|{level}|{pid}"


def level_key(level: str | None, event: str | None = None) -> str | None:
    """What the rare-level rule counts: the level, with the event where the format names one, so that
    ``WARN Forbidden`` is rare in an access log where ``WARN Not Found`` is routine."""
    if level is None:
        return None
    return f"{level} {event}" if event else level


def writer_key(process: str | None, pid: str | None) -> str | None:
    """Who wrote a line, where its format says: its process and pid (or thread); None where it names neither."""
    return None if process is None and pid is None else f"{process or ''}[{pid or ''}]"


def after_key(stream: str | None, writer: str | None) -> str | None:
    """Whose previous line a line comes after: its writer's within its stream, where the format names the
    writer (a process, its pid or thread), else its stream's. atftpd serves each transfer on a thread of its
    own and their lines interleave: its "TFTP Aborted" after each boot ROM's size probe came right after that
    thread's "sent OACK" each time, but after another transfer's line as often as not."""
    return stream if writer is None else f"{stream or ''}\x1f{writer}"


def has_event(level: str | None) -> bool:
    """Whether a level key carries its event (``level_key``: ``WARN Not Found``)."""
    return level is not None and " " in level


def _keep_recent(table: OrderedDict, key, value, limit: int) -> None:
    """``table[key] = value`` as its most recent entry, the ``limit`` most recent kept (a stream's latest record,
    step or line count: least recent streams forgotten)."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > limit:
        table.popitem(last=False)


def _forget_gone(by_cluster: dict, miner: TemplateMiner, at: int = 0) -> None:
    """Drop the entries of clusters the miner forgot (drain3 keeps its ``max_templates`` most recent);
    keys are cluster ids, or tuples with one at index ``at``."""
    alive = {c.cluster_id for c in miner.drain.clusters}
    alive.add(None)  # entries kept without a cluster (a level with its event) stay
    for key in [k for k in by_cluster if (k[at] if isinstance(k, tuple) else k) not in alive]:
        del by_cluster[key]


def _by_level_pattern(table: dict, templates: dict, as_json) -> list[list]:
    """A table keyed by (level, strict pattern id) as [level, the pattern's template (None: the level's
    event is the pattern), value as JSON], for the patterns the miner still keeps."""
    return [[level, templates.get(cid), as_json(value)] for (level, cid), value in table.items()
            if cid is None or cid in templates]


def _quantiles(values, q: float) -> tuple[float, float]:
    """(q-quantile, interquartile range) of the values."""
    array = np.fromiter(values, dtype=np.float64)
    high, q75, q25 = np.quantile(array, [q, 0.75, 0.25])
    return float(high), float(q75 - q25)


class AdaptiveThresholds:
    def __init__(self, config: AdaptiveSettings = AdaptiveSettings(), masker: LineMasker | None = None):
        self.config = config
        # reads the values behind a masked line's number placeholders from its text (the model's masking
        # rules; a line whose count does not match its masked text's placeholders is not range-checked)
        self._numbers = (masker or LineMasker()).numbers
        self._last_numbers: tuple[str | None, list[int]] = (None, [])
        self._sources: OrderedDict[str, _Source] = OrderedDict()
        # a problem word that names a field (``timeout=30000``, ``"error": null``) is a setting, and one
        # inside a name (the package ``libgpg-error-dev``, ``/srv/errors/``, ``error.log``) is a name: not
        # verdicts (measured: every line of a real dpkg.log about libgpg-error-dev alerted); and one inside
        # a list of counters (``avg <N1> exceeded <N1> jostled <N1>``: a number before it, a number and
        # another counter after) names a counter (measured: unbound's statistics every few minutes, the
        # only such lines of the four corpora); and one followed by "successfully" or "gracefully" names an action
        # done as meant (uWSGI's "worker 1 killed successfully (pid: 4242)" at each reload)
        words = config.problem_words
        counter = rf"(?<=\d> )(?:{words}) <N\d+> [A-Za-z][\w-]* <N\d+>"
        done = r"\s+(?:successfully|gracefully)\b"
        self._problem_words = (re.compile(rf"(?<![-./])(?!{counter})(?:{words})(?![-/]|\.\w|\s*=|[\"']\s*:|{done})",
                                          re.IGNORECASE) if words else None)
        self._benign_words = re.compile(config.benign_words, re.IGNORECASE) if config.benign_words else None
        self._rescoring: set[str] = set()  # sources whose score histories are being re-learned
        self._flows = EntityFlows(config.flow_ids, config.flow_min_lines, config.flow_quiet,
                                  config.min_template_lines, config.flow_entities, config.flow_max_steps,
                                  config.flow_max_branches)
        self._named = NamedFlows(config.flow_min_lines, config.flow_quiet, config.min_template_lines,
                                 config.flow_entities, config.flow_max_branches,
                                 config.flow_name_share, config.max_templates) if config.flow_name_share else None

    # -- deciding -------------------------------------------------------------------------------

    def judge(self, source: str, masked: str, score: float, calibrated: float | None = None,
              level: str | None = None, text: str | None = None, stream: str | None = None,
              record: str | None = None, writer: str | None = None) -> Verdict:
        """Decide on a line (does not learn from it: call ``learn`` once it is known to be normal).

        ``calibrated``: the model's own threshold for this line, used where it holds (``calibration_holds``).
        ``level``: the line's level for the rare-level rule: its canonical level, with its event where the
        format has one (an access log's status, ``WARN Forbidden``), see ``level_key``.
        ``text``: the line before masking, where a problem word counted zero (``0 Invalid entries``) shows.
        ``stream``: the line's stream within its source, whose previous line a problem may come as a step after
        (``Recurrence.in_sequence``).
        ``record``: what makes the line one with the stream's line before it (``record_key``): the rest of a
        record one of whose lines alerted is that alert's, not news of its own.
        ``writer``: the process (and its pid or thread) that wrote the line, where the format names it: a step
        comes after the line its writer wrote before it (``after_key``), not after another thread's.
        """
        verdict = self._judge_score(source, masked, score)
        state = self._sources[source]
        same_record, named = self._part_of_alert(state, stream, record, masked, verdict.template_id, text)
        if same_record:
            return replace(verdict, anomaly=False, routine="a line of the record above (its time and level), "
                           "which alerted")
        verdict = self._judge_line(source, state, verdict, masked, score, calibrated, level, text, stream, writer)
        if verdict.anomaly and named:  # a line that would not alert is learned as any line is
            return replace(verdict, anomaly=False, incident=True, routine=f"names {named!r} as an alert a few "
                           "lines before it in its stream did: that incident's line")
        return verdict

    def _judge_line(self, source: str, state: _Source, verdict: Verdict, masked: str, score: float,
                    calibrated: float | None, level: str | None, text: str | None, stream: str | None,
                    writer: str | None) -> Verdict:
        """``judge``'s rules past the score's own verdict (``_judge_score``), for a line on its own."""
        after = state.previous.get(after_key(stream, writer))
        words = self._problem_words_in(masked, level, text)  # once a line: every rule below reads them
        if verdict.anomaly and verdict.how == NOVEL:
            orderly = self._orderly(masked, words, text)
            startup = None if orderly else self._startup_repeat(state, masked, words, level)
            if orderly:  # a new message of a program starting or stopping in order is no news by its novelty
                verdict = replace(verdict, anomaly=False, routine=f"a new message that reports {orderly!r}: "
                                  "an orderly start or stop")
            elif startup:
                verdict = replace(verdict, anomaly=False, routine=startup)
        if verdict.anomaly:
            return verdict
        share = self._level_share(state, level)
        benign = self._benign(masked, level, words, text)
        if benign:  # held back, not learned as a normal line at its level
            verdict.routine = f"{level} line that reports {benign!r}: a success or an orderly start or stop"
        if verdict.how != COLD and share is not None and share < self.config.rare_level_share and not benign:
            pattern = self._level_pattern(state, masked, level)
            if not state.level_normal.get(pattern, 0):  # a pattern learned as normal at this level is no news
                held_back = self._held_back(state, state.level_alerts.get(pattern), after, stream=stream)
                startup = None if held_back else self._startup_repeat(state, masked, words, level)
                if held_back:
                    verdict.routine = f"{level} lines: the pattern {held_back}"
                elif startup:
                    verdict.routine = f"{level} line: {startup}"
                else:
                    return Verdict(True, verdict.threshold, RARE_LEVEL, verdict.template, verdict.template_id,
                                   source, f"{level} lines are {100 * share:.2f}% of this source's normal lines "
                                   f"(under {100 * self.config.rare_level_share:g}%)")
        problem, held_back = self._unseen_problem(state, masked, level, words, benign, after, stream)  # from a source's first line on
        if problem is not None and not held_back:
            held_back = self._startup_repeat(state, masked, words, level)
        if problem is not None and not held_back:
            return Verdict(True, verdict.threshold, UNSEEN_PROBLEM, verdict.template, verdict.template_id, source,
                           f"{problem}, in a pattern this source has never shown in a normal line")
        if held_back:
            verdict.routine = f"{problem}, in a pattern that {held_back}"
        beyond = self._out_of_range(state, verdict.template_id, masked, text)
        if beyond and self._first_since_start(state, verdict.template_id):
            # a restarted program answers its first request of each kind slowly, but a failure's code right
            # after a start is still a failure (PowerDNS Recursor's SERVFAIL right after another program of its
            # source started was learned, and its next 7 failures read as normal)
            slow = [finding for finding in beyond if not finding.code]
            beyond = [finding for finding in beyond if finding.code]
            if slow and not beyond:
                verdict.routine = f"{slow[0].why}, in the template's first line since the source started"
        if beyond:
            recurrence = state.range_alerts.get((verdict.template_id, beyond[0].key))
            if not self._held_back(state, recurrence):
                return Verdict(True, verdict.threshold, OUT_OF_RANGE, verdict.template, verdict.template_id,
                               source, beyond[0].why)
            # the rest of a burst whose first lines told the news, or a routine's: taken into the range, it made
            # the next burst (a later failure) normal (PowerDNS Recursor's SERVFAILs: 9 of 20 missed)
            verdict.held_out_of_range = tuple((verdict.template_id, finding.key) for finding in beyond)
        for flows, flow_state, step, line in ((self._flows, state.flow, verdict.template_id, text),
                                              (self._named, state.named, self._named_step(state, masked), masked)):
            flow = flows.unknown(flow_state, step, line) if flows is not None else None
            if flow is None:
                continue
            held_back = self._held_back(state, flow_state.alerts.get(flow[1]))
            if held_back:
                verdict.routine = f"a step out of order in a pair that {held_back}"
            else:
                return Verdict(True, verdict.threshold, OUT_OF_ORDER, verdict.template, verdict.template_id, source,
                               self._flow_note(state, flow_state, *flow))
        if (calibrated is not None and score > calibrated and verdict.how != FEEDBACK
                and self.calibration_holds(source, calibrated)):
            return Verdict(True, calibrated, CALIBRATED, verdict.template, verdict.template_id, source,
                           f"the model's calibrated threshold, which holds on this source (at most "
                           f"{100 * self.config.familiar_share:g}% of its last {len(state.recent)} lines above it)")
        return verdict

    @staticmethod
    def _flow_note(state: _Source, flow: FlowState, entity: str, pair: tuple[int, int]) -> str:
        """Says which step came after which for whom, and what usually comes after the first."""
        named = {step: text for text, step in flow.step_ids.items()} if flow is state.named else None

        def text(step: int) -> str:
            if step == START:
                return "its first line"
            if named is not None:
                return repr(named[step]) if step in named else "a forgotten step"
            cluster = state.miner.drain.id_to_cluster.get(step)
            return repr(cluster.get_template()) if cluster else "a forgotten step"

        previous, step = pair
        usual = [text(b) for a, b in flow.pairs if a == previous][:3]
        after = "as its first line" if previous == START else f"right after {text(previous)}"
        return (f"{entity}: {text(step)} {after}, an order of steps this source has never shown in "
                f"{flow.lines:,} lines of its entities" + (f" (usually next: {'; '.join(usual)})" if usual else ""))

    def _named_step(self, state: _Source, masked: str) -> int | None:
        """The line's step among the flows of entities named by a word (``NamedFlows``); None for a line that
        names none (its step is not kept)."""
        if self._named is None:
            return None
        step_text, names = self._named.read(masked)
        return self._named.step_of(state.named, step_text) if names else None

    def calibration_holds(self, source: str, calibrated: float | None) -> bool:
        """Whether the model's calibrated threshold keeps its promise on this source: few enough of the
        source's latest lines (alerted or not) score above it."""
        state = self._sources.get(source)
        if calibrated is None or state is None or len(state.recent) < MIN_FAMILIAR_LINES:
            return False
        above = sum(1 for s in state.recent if s > calibrated)
        return above <= self.config.familiar_share * len(state.recent)

    def _problem_words_in(self, masked: str, level: str | None = None, text: str | None = None) -> list[str]:
        """The problem words of a line. A DEBUG or TRACE line's quoted text is data it traces (a record
        sent, a request's body), not the program's own verdict: words there do not count (measured:
        the worker's debug lines echoing alert records flagged 9.8 per 1,000 normal lines). A level's
        event written at the head of the line (``WARN Unauthorized: ...``) is the rare-level rule's to
        judge, not a problem word: each 401 for another agent was a pattern of its own, never routine
        (measured on a replay of HAProxy's HTTP log: 22 false alerts from its 2,000th line on). With
        the line's ``text`` before masking, a problem word counted zero there (``0 Invalid entries``,
        ``0 With invalid flags``, ``errors: 0``) is a tally of nothing: not counted (measured: squid's
        start-up tallies alerted at every restart)."""
        if self._problem_words is None:
            return []
        if has_event(level):  # its event's words are in the line's head: ``WARN Not Found: ...``, or after the
            # logger's name in a structured record (``ERROR http.log.access Not Found: ...``)
            head, colon, rest = masked.partition(": ")
            for part in level.split(" ", 1):
                head = head.replace(part, "", 1)
            masked = head + colon + rest
        if is_quiet(level):
            masked = QUOTED.sub(blank_traced, masked)
        masked = KEYED_QUOTE.sub(blank_keyed, masked)
        masked = spaced_codes(GLUED_NUMBER.sub("0", masked))
        words = list(dict.fromkeys(m.group(0).lower() for m in self._problem_words.finditer(masked)))
        if words and text is not None:
            spaced = spaced_codes(text)  # read as the words were: "NO-ERROR" is "NO ERROR", a zero
            zero = {m.group(0).lower() for m in self._problem_words.finditer(spaced)
                    if ZERO_BEFORE.search(spaced, max(0, m.start() - ZERO_REACH), m.start())
                    or ZERO_AFTER.match(spaced, m.end())}
            words = [word for word in words if word not in zero]
        killed = fatal_signal(text) if text is not None else None  # its number is masked in ``masked``
        if killed:
            words.append(f"signal {killed}")
        return words

    def _benign(self, masked: str, level: str | None, words: list[str], text: str | None = None) -> str | None:
        """The words by which a line at a level that is not low reports a success or an orderly start or
        stop (``benign_words``, or an exit with status 0 in its ``text``), with no word of a bad outcome
        (``words``: its problem words); else None."""
        if level is None or has_event(level) or level in LOW_LEVELS:
            return None
        return self._orderly(masked, words, text)

    def _orderly(self, masked: str, words: list[str], text: str | None = None) -> str | None:
        """The words by which a line reports a success or an orderly start or stop, whatever its level, when
        it has no problem ``words`` and no word of a bad outcome; else None. With its ``text``, an exit with
        status 0 is one too."""
        if self._benign_words is None or words or bad_outcome(masked, text):
            return None
        found = self._benign_words.search(masked) or (EXIT_ZERO.search(text) if text else None)
        return found.group(0) if found else None

    @staticmethod
    def _reads_as_problem(level: str | None, words: list[str], benign: str | None) -> str | None:
        """Why a line reads as a problem (its level, or its problem ``words``), or None. A level that comes
        with an event (an access log's ``WARN Not Found``) is left to the rare-level rule: there the event
        is the pattern, and a 404 for a path never asked before is no news; so is a ``benign`` line."""
        if level is not None and not has_event(level) and level not in LOW_LEVELS and not benign:
            article = "an" if level[:1] in "AEIOU" else "a"
            return f"{article} {level} line" + (" with the words " + ", ".join(map(repr, words[:3])) if words else "")
        return "the words " + ", ".join(repr(word) for word in words[:3]) if words else None

    def _problem_key(self, state: _Source, masked: str, words: list[str], add: bool = False) -> tuple[int, str] | None:
        """A problem's pattern: its strict drain3 cluster and the problem ``words`` it carries (sorted).

        ``add``: the line joins the patterns first. Either way the key is the cluster the tree search
        finds for the line (``_match``), the one ``judge`` looks up: drain3 may add a line to another
        cluster than that search returns (it leaves wildcards out of the similarity), and a problem's
        comebacks counted there never made it routine (measured: a synthetic sshd's ``Failed password
        for root`` alerted 203 times in 1,250 lines)."""
        cluster_id = self._found(state.problems, problem_pattern(masked), add)
        return None if cluster_id is None else (cluster_id, " ".join(sorted(words)))

    def _unseen_problem(self, state: _Source, masked: str, level: str | None, words: list[str],
                        benign: str | None, after: int | None = None,
                        stream: str | None = None) -> tuple[str | None, str | None]:
        """(why this line is a problem never seen in a normal line of its source, or None; why it is held
        back, or None: it keeps coming back, or its burst has told the news: ``_held_back``)."""
        why = self._reads_as_problem(level, words, benign)
        if why is None:
            return None, None
        key = self._problem_key(state, masked, words)
        if key is None:
            return why, None
        if state.problem_normal.get(key, 0) > 0 or state.problem_normal.get((key[0], None), 0) > 0:
            return None, None
        return why, self._held_back(state, state.problem_alerts.get(key), after, for_good=self._for_good(level),
                                    stream=stream, window=self._window(level))

    def _for_good(self, level: str | None) -> int:
        """Episodes after which a problem pattern at this ``level`` is its source's routine for good: sooner in
        lines the program wrote as tracing (DEBUG, TRACE), and, where ``info_routine_episodes`` is set, as
        information (INFO, NOTICE); otherwise ``problem_routine_episodes``."""
        sooner = (self.config.quiet_routine_episodes if is_quiet(level)
                  else self.config.info_routine_episodes if is_told_fine(level) else 0)
        return sooner or self.config.problem_routine_episodes

    def _window(self, level: str | None) -> int:
        """Lines over which a problem pattern's latest episodes count: ``info_routine_window`` in lines the
        program wrote as information (INFO, NOTICE) where it is set; otherwise ``routine_window``."""
        if is_told_fine(level) and self.config.info_routine_window:
            return self.config.info_routine_window
        return self.config.routine_window

    @staticmethod
    def _first_since_start(state: _Source, template_id: int | None) -> bool:
        """Whether a template's line is its first since the source's latest start-up: a restarted program
        answers its first requests of each kind slowly (cold caches, an index loaded), so a value out of
        range there is no news (measured: InfluxDB's first queries after each restart took 40 times the
        longest its access records had held, 6 false alerts in 4,000 lines)."""
        template = state.templates.get(template_id) if template_id is not None else None
        # 0: not known (a template of a saved state): judged as ever
        return template is not None and 0 < template.startup != state.startups

    @staticmethod
    def _since_start(state: _Source, cluster) -> None:
        """The template of ``cluster``, the one ``judge`` found for a line (``_match``, before drain3 takes the
        line in: it may take it into another cluster, a value of more digits than its template's makes one of
        its own), has had a line since the source's latest start-up."""
        template = state.templates.get(cluster.cluster_id) if cluster is not None else None
        if template is not None:
            template.startup = state.startups

    def _fields_with_values(self, masked: str, text: str | None) -> list[tuple[tuple[str, str, int, str], int]]:
        """The line's numeric fields that are values of their own, each with its value (from ``text``)."""
        if text is None or "<N" not in masked:
            return []
        if self._last_numbers[0] is not text:  # judged, then learned: read once
            self._last_numbers = (text, self._numbers(text))
        fields, values = value_fields(masked), self._last_numbers[1]
        if len(fields) != len(values):  # masked by other rules than this masker's: not judged
            return []
        return [(f, v) for f, v in zip(fields, values) if f is not None][:MAX_FIELDS]

    def _out_of_range(self, state: _Source, template_id: int | None, masked: str,
                      text: str | None) -> list[OutOfRange]:
        """Each numeric field whose value is far outside what its template's normal lines held
        (``range_min_lines``, ``range_factor``), or a code they never held."""
        template = state.templates.get(template_id) if template_id is not None else None
        if template is None or not template.ranges or not self.config.range_min_lines:
            return []
        factor, beyond = self.config.range_factor, []
        for (key, token, index, name), value in self._fields_with_values(masked, text):
            seen = template.ranges.get(key)
            if seen is None or IDENTIFIER.search(name):
                continue
            codes = seen[3] if len(seen) > 3 else None
            young = seen[0] < self.config.range_min_lines
            if young and not (  # a young field: only by its codes, where they are judged and few
                    codes is not None and len(codes) <= YOUNG_MAX_CODES and seen[0] >= self.config.min_template_lines
                    and judged_by_codes(name, codes)):
                continue
            lines, least, greatest = seen[0], range_floor(seen[1]), seen[2]
            if codes and str(value) not in codes and judged_by_codes(name, codes) and (
                    sum(1 for count in codes.values() if count == 1) <= NEW_CODE_SHARE * lines):
                shown = shown_with_value(token, index, value)
                held = ", ".join(f"{int(code):,}" for code in sorted(codes, key=int))
                beyond.append(OutOfRange(f"{key}={value}", f"{shown!r}: a code this field never held in the "
                                         f"template's {lines:,} normal lines (only {held})", code=True))
                continue
            if young:
                continue
            # below: only a field that keeps within a factor of its least (a timeout, a block size), not one
            # spread over orders of magnitude (a row id of 1..100,000: "aid = 5" after 100 lines over 100
            # alerted, measured on PostgreSQL), and one that varied: a field that held one value in every normal
            # line is an identifier (ngIRCd's process id heads each line: the next process's, after a pid
            # wrap-around, alerted once per template, 14.9 false alerts per 1,000 lines)
            only_zero_code = least == greatest == 0 and code_field(name)
            if (value < 0 <= least and value <= -10) or (greatest >= 1 and value > factor * greatest) or (
                    only_zero_code and value != 0) or (
                    least >= 100 and least < greatest <= factor * least and value * factor < least):
                shown = shown_with_value(token, index, value)
                why = f"{shown!r}: this field held {least:,} to {greatest:,} in the template's {lines:,} normal lines"
                beyond.append(OutOfRange(key, why, code=only_zero_code))
        return beyond

    def _learn_ranges(self, template: _Template, masked: str, text: str | None, weight: int = 1,
                      keep_out: Collection[str] = ()) -> None:
        """Take the line's values into their fields' ranges (``weight`` times: an operator's mark takes a value
        in at once, as RANGE_EXTREMES lines), but those of the fields ``keep_out``."""
        for (key, _, _, name), value in self._fields_with_values(masked, text):
            if keep_out and (key in keep_out or f"{key}={value}" in keep_out):
                continue
            seen = template.ranges.get(key)
            if seen is None:
                if len(template.ranges) >= MAX_FIELDS:
                    continue
                seen = template.ranges[key] = [0, [], value] + ([{}] if code_field(name) else [])
            for _ in range(weight):
                seen[0] += 1
                keep_least(seen[1], value)
            seen[2] = max(seen[2], value)
            if len(seen) > 3 and seen[3] is not None:
                count_code(seen, value, weight)

    def _held_back(self, state: _Source, recurrence: Recurrence | None, after: int | None = None,
                   for_good: int | None = None, stream: str | None = None, window: int | None = None) -> str | None:
        """Why a level or problem pattern that alerted before does not alert now, or None: it keeps
        coming back often enough to be the source's routine, or each time as the step after the same line
        of its stream (``after``, the step of the stream's previous line), or its ongoing burst has already
        alerted ``episode_alerts`` lines, a later burst ``later_episode_alerts`` (the rest of a burst is the same
        news)."""
        if recurrence is None:
            return None
        if recurrence.routine(state.lines, self.config, for_good, window, self._home_lines(state, recurrence)):
            return "keeps coming back"
        if recurrence.in_sequence(after, self.config) and self._rare_step(state, after, recurrence.after_runs):
            return (f"came right after the same line of its stream each of its last {recurrence.after_runs} "
                    "times: a step the source takes")
        told = recurrence.burst_told(state.lines, self.config, stream)
        return f"alerted {told} lines of this burst" if told else None

    def _rare_step(self, state: _Source, step: int, runs: int) -> bool:
        """Whether a step is rare enough in its source (at most ``sequence_share`` of its lines) that a problem
        coming right after it time after time is no chance: after a source's most common line, any problem
        comes so now and then; and whether the problem's ``runs`` in a row after it are a fair share of the
        step's lines (``sequence_follow_share``), not a branch it seldom takes. Measured: once NATS's lines
        joined the format-wide source of Samba's, Samba's header before each authentication counted as rare,
        and its fifth and later wrong passwords were held back as a step the source takes."""
        cluster = state.miner.drain.id_to_cluster.get(step)
        return (cluster is not None and cluster.size <= self.config.sequence_share * max(state.lines, 1)
                and runs >= self.config.sequence_follow_share * cluster.size)

    def _level_share(self, state: _Source, level: str | None) -> float | None:
        """The smoothed share of ``level`` among the source's normal lines; None for low levels."""
        if level is None or level.split(" ", 1)[0] in LOW_LEVELS:
            return None
        seen = sum(state.levels.values())
        return (state.levels.get(level, 0) + 1) / (seen + 2)

    def _judge_score(self, source: str, masked: str, score: float) -> Verdict:
        cfg = self.config
        state = self._source(source)
        cluster = self._match(state.miner, masked)
        template = state.templates.get(cluster.cluster_id) if cluster is not None else None
        name = cluster.get_template() if cluster is not None else None
        cid = cluster.cluster_id if cluster is not None else None
        if state.lines < cfg.cold_start_lines:
            return Verdict(False, None, COLD, name, cid, source,
                           f"learning source {source!r}: line {state.lines + 1} of its first {cfg.cold_start_lines}")
        if template is not None and template.marked_normal_at is not None:
            threshold = template.marked_normal_at + cfg.feedback_margin
            if len(template.scores) >= cfg.min_template_lines:
                threshold = max(threshold, self._template_threshold(template))
            return Verdict(score > threshold, threshold, FEEDBACK, name, cid, source,
                           f"template marked normal by an operator (score {template.marked_normal_at:.2f}) "
                           f"+ {cfg.feedback_margin:g}")
        if template is not None and len(template.scores) >= cfg.min_template_lines:
            threshold = self._template_threshold(template)
            return Verdict(score > threshold, threshold, TEMPLATE, name, cid, source,
                           f"p{100 * cfg.quantile:g} of the template's last {len(template.scores)} normal scores "
                           f"+ margin")
        if len(state.novel) >= cfg.min_template_lines:
            high, iqr = _quantiles(state.novel, cfg.novel_quantile)
            threshold = high + max(cfg.margin, cfg.iqr_margin * iqr)
            return Verdict(score > threshold, threshold, NOVEL, name, cid, source,
                           f"new template: p{100 * cfg.novel_quantile:g} of the source's last {len(state.novel)} "
                           f"new-template scores + margin")
        return Verdict(False, None, COLD, name, cid, source, f"learning source {source!r}: too few new templates seen")

    def _template_threshold(self, template: _Template) -> float:
        high, iqr = _quantiles(template.scores, self.config.quantile)
        return high + max(self.config.margin, self.config.iqr_margin * iqr)

    # -- learning -------------------------------------------------------------------------------

    def learn(self, source: str, masked: str, score: float, level: str | None = None, routine: bool = False,
              text: str | None = None, stream: str | None = None, writer: str | None = None,
              held_out_of_range: Collection[tuple[int, str]] = ()) -> None:
        """Take a line that did not alert as normal: its template's and its source's histories grow.
        ``routine``: a problem held back as routine (``Verdict.routine``): its level and problem pattern
        count as coming back again, not as normal. ``held_out_of_range`` (``Verdict.held_out_of_range``): its
        fields that come back out of range, their values kept out. ``level``, ``text``, ``stream`` and
        ``writer`` as for ``judge``."""
        state = self._source(source)
        if source in self._rescoring:
            cluster = self._match(state.miner, masked)
            if cluster is not None and cluster.cluster_id in state.templates:
                state.templates[cluster.cluster_id].scores.append(score)
            return
        self._count(state, score, stream)
        if text is not None and self.config.incident_word_share:
            state.words.add(text, WORD_LIMIT)
        words = self._problem_words_in(masked, level, text)
        if self._benign(masked, level, words, text):
            # neither a normal line at its level nor a problem coming back: a warning in its pattern ("is DOWN"
            # where "is UP" is benign) is still news
            key = self._problem_key(state, masked, words)
        elif routine:
            key = self._recur(state, masked, level, words, state.previous.get(after_key(stream, writer)), stream)
        else:
            key = self._problem_normal(state, masked, words)
            state.levels[level] = state.levels.get(level, 0) + 1
            self._level_normal(state, masked, level)
        self._startup_line(state, masked, words, key, text)
        self._since_start(state, self._match(state.miner, masked))
        cluster_id = self._cluster(state, masked)
        self._flow_step(state, cluster_id, text, masked, normal=True)
        template = state.templates.get(cluster_id)
        # a template an operator marked normal teaches its own history only: its lines scored high
        # enough to alert once, and would lift the bar for every other new template of the source
        marked = template is not None and template.marked_normal_at is not None
        if not marked and (template is None or len(template.scores) < self.config.min_template_lines):
            self._push(state.novel, score, self.config.novel_history)
        if template is None:
            template = state.templates[cluster_id] = _Template(deque(maxlen=self.config.history))
        template.scores.append(score)
        template.startup = state.startups
        if held_out_of_range:
            self._out_of_range_again(state, held_out_of_range)
        # the line's own fields, whichever template drain files it under now (its judged template's, most often)
        self._learn_ranges(template, masked, text, keep_out={key for _, key in held_out_of_range})
        self._step(state, after_key(stream, writer), cluster_id)

    def seen(self, source: str, score: float, masked: str | None = None, level: str | None = None,
             text: str | None = None, how: str | None = None, stream: str | None = None,
             writer: str | None = None, incident: bool = False) -> None:
        """Count a line that alerted (it is not learned from, but the source has shown one more line,
        at its level; with its text, its problem pattern counts one more alert, and its entities move
        on to its step: ``how`` it alerted, ``OUT_OF_ORDER``, counts its pair of steps once more).
        ``incident``: the line did not alert itself, it is a line of an alert a few lines before it
        (``Verdict.incident``): the line after it is judged on its own."""
        if source in self._rescoring:
            return
        state = self._source(source)
        self._count(state, score, stream)
        if masked is None or incident:  # the rest of its record is its alert's; the next line is judged alone
            self._record_alerted(state, stream)
        if masked is not None:
            words = self._problem_words_in(masked, level, text)
            share = self.config.incident_word_share
            if not incident:
                self._record_alerted(state, stream, self._line_key(state, masked),
                                     state.words.names(text, share, words) if text is not None and share else None)
            key = after_key(stream, writer)
            self._startup_line(state, masked, words, self._recur(state, masked, level, words,
                                                                 state.previous.get(key), stream), text)
            cluster = self._match(state.miner, masked)
            step = cluster.cluster_id if cluster is not None else None
            self._step(state, key, step)
            self._flow_step(state, step, text, masked, normal=False, alerted=how == OUT_OF_ORDER)
            self._since_start(state, cluster)
            if cluster is not None:  # its fields out of range come back once more
                self._out_of_range_again(state, [(cluster.cluster_id, finding.key) for finding in
                                                 self._out_of_range(state, cluster.cluster_id, masked, text)])

    def _out_of_range_again(self, state: _Source, fields: Collection[tuple[int, str]]) -> None:
        """Each field, (template id, field key), out of range once more: an alert's (``seen``) or one the rule
        held back (``learn``); ``range_alerts`` kept within ``max_templates``."""
        for held in fields:
            state.range_alerts.setdefault(held, Recurrence()).add(state.lines, self.config)
        if len(state.range_alerts) > self.config.max_templates:
            _forget_gone(state.range_alerts, state.miner)

    def _in_startup(self, state: _Source) -> bool:
        """Whether the source is starting up: within ``startup_lines`` of its latest orderly start or stop."""
        return 0 <= state.lines - state.startup_at <= self.config.startup_lines

    def _startup_repeat(self, state: _Source, masked: str, words: list[str], level: str | None) -> str | None:
        """Why a line without problem ``words`` is no news as part of a start-up, or None: the source is starting
        up and wrote the line's pattern in an earlier start-up too, and never away from one. Caddy writes
        ``automatic HTTP->HTTPS redirects are disabled`` at WARN at every start, a new message each time
        (measured: 9 of its 12 false alerts from the 2,000th line on were such lines, some also written away
        from a start-up). A new problem of a start, a broken configuration, is in no earlier start-up, and a
        problem word is news at any time (measured: with them, sshd's and tinyproxy's errors that came soon
        after a frequent "Starting session" or "started" went unnoticed). Nor is an access record's event (a
        level with its event, ``WARN Bad Request``): that is traffic, and HAProxy's bad requests soon after a
        reload went unnoticed (measured). Nor is a line the source also writes away from its start-ups: Redis starts a background save for each replica that
        syncs ("Background RDB transfer started"), and a client over its output buffer limit soon after one
        went unnoticed (measured)."""
        if not self.config.startup_lines or words or has_event(level) or not self._in_startup(state):
            return None
        key = self._problem_key(state, masked, words)
        seen = state.startup_patterns.get(key) if key is not None else None
        if seen is None or seen[1] >= state.startups or seen[2]:
            return None
        return (f"a line this source also wrote in {seen[0]} earlier start-up{'s' if seen[0] > 1 else ''} "
                "(within a few lines of an orderly start or stop)")

    def _startup_line(self, state: _Source, masked: str, words: list[str], key: tuple[int, str] | None,
                      text: str | None = None) -> None:
        """Follow the source's start-ups: a line that reports a start or stop (``START_STOP``) with no problem
        ``words`` and no bad outcome opens one (unless one is open); a line is remembered by its problem pattern
        ``key`` (``_problem_key``, as ``learn`` or ``seen`` found it) with the start-up it was written in, or as
        written away from one. Counted after the line (``_count``)."""
        if not self.config.startup_lines:
            return
        if not words and START_STOP.search(masked) and not bad_outcome(masked, text):
            if not self._in_startup(state):
                state.startups += 1
            state.startup_at = state.lines
        if key is None:
            return
        seen = state.startup_patterns.setdefault(key, [0, 0, 0])
        state.startup_patterns.move_to_end(key)
        if not self._in_startup(state):
            seen[2] += 1
        elif seen[1] != state.startups:
            seen[0] += 1
            seen[1] = state.startups
        while len(state.startup_patterns) > self.config.max_templates:
            state.startup_patterns.popitem(last=False)

    def _flow_step(self, state: _Source, step: int | None, text: str | None, masked: str, normal: bool,
                   alerted: bool = False) -> None:
        """A line's entities move on to ``step`` (those it names by a word, to its named step). A normal line
        teaches its pairs of steps, except a pair that alerted before: its comebacks are counted, like a
        problem's, until they are routine."""
        for flows, flow, at, line in ((self._flows, state.flow, step, text),
                                      (self._named, state.named, self._named_step(state, masked), masked)):
            if flows is None:
                continue
            for pair in flows.observe(flow, at, line, normal, told=alerted):
                if alerted or pair in flow.alerts:
                    flow.alerts.setdefault(pair, Recurrence()).add(state.lines, self.config)

    def _recur(self, state: _Source, masked: str, level: str | None, words: list[str],
               after: int | None = None, stream: str | None = None) -> tuple[int, str] | None:
        """A line not learned as normal: its level (in its pattern) and its problem pattern (its problem
        ``words``) come back once more, right after the step ``after`` of its stream. Returns the problem
        pattern's key."""
        key = self._problem_key(state, masked, words, add=True)
        for recurrence in (state.problem_alerts.setdefault(key, Recurrence()),
                           state.level_alerts.setdefault(self._level_pattern(state, masked, level), Recurrence())):
            recurrence.add(state.lines, self.config, after, stream)
            recurrence.home_at(stream, state.stream_lines.get(stream))
        if len(state.problem_alerts) > self.config.max_templates:
            _forget_gone(state.problem_alerts, state.problems)
        if len(state.level_alerts) > self.config.max_templates:
            _forget_gone(state.level_alerts, state.problems, at=1)
        return key

    def _level_pattern(self, state: _Source, masked: str, level: str | None) -> tuple[str | None, int | None]:
        """What the rare-level rule's recurrence is kept by: the level and the line's strict pattern. A
        level is not routine as a whole: an outage's ERROR lines coming back make that outage's
        pattern routine, not every ERROR of the source (measured: a broker's ERROR level turned
        routine after five outages and its next new error went unnoticed)."""
        if has_event(level):  # ``WARN Unauthorized``: the event is the pattern; an access line's path and
            return level, None  # agent are not (see ``_reads_as_problem``)
        cluster = self._search(state.problems, problem_pattern(masked))
        return level, cluster.cluster_id if cluster is not None else None

    def _level_normal(self, state: _Source, masked: str, level: str | None, marked: bool = False) -> None:
        """A normal line at a level that is not low: its pattern at that level is no news to the rare-level
        rule (a known-good baseline's FATAL lines, or lines learned while the level was common). Not a
        level with its event (``WARN Bad Request``): that is judged by its share alone, and one client's
        bad request among a new source's first lines made every later one no news (measured: HAProxy);
        unless an operator ``marked`` the line normal: then that event is no news either."""
        if level is None or (has_event(level) and not marked) or level in LOW_LEVELS:
            return
        key = self._level_pattern(state, masked, level)
        state.level_normal[key] = state.level_normal.get(key, 0) + 1
        if len(state.level_normal) > self.config.max_templates:
            _forget_gone(state.level_normal, state.problems, at=1)

    def _problem_normal(self, state: _Source, masked: str, words: list[str]) -> tuple[int, str] | None:
        """A normal line's problem pattern (with its problem ``words``) is seen once more; returns its key."""
        key = self._problem_key(state, masked, words, add=True)
        state.problem_normal[key] = state.problem_normal.get(key, 0) + 1
        if len(state.problem_normal) > self.config.max_templates:
            _forget_gone(state.problem_normal, state.problems)
        return key

    def _part_of_alert(self, state: _Source, stream: str | None, record: str | None, masked: str,
                       template_id: int | None, text: str | None) -> tuple[bool, str | None]:
        """Whether the line is part of its stream's latest alert: whether it goes on a record that alerted
        (RabbitMQ writes each line of a report with its header: 9 lines, each a rare ERROR line), and the thing
        it names as an alert within its stream's last ``incident_lines`` lines did, in another pattern (its
        ``_line_key``, found only then; ``logstream.scoring.incident``), or None. Either is not news of its own,
        nor learned as normal (the same pattern again is a burst, which the problem rules count:
        ``episode_alerts``). Keeps the line's record as the stream's latest."""
        if stream is None:
            return False, None
        latest = state.records.get(stream)
        same = record is not None and latest is not None and latest.record == record and latest.alerted
        # an alert's names stay open for its stream's next ``incident_lines`` lines
        open_alert = latest is not None and latest.names and latest.since < self.config.incident_lines
        _keep_recent(state.records, stream, _StreamRecord(record, same, latest.alert, latest.names, latest.since + 1)
                     if open_alert else _StreamRecord(record, same), self.config.flow_entities)
        named = shared_name(latest.names, text) if open_alert else None
        if named and same_pattern(latest.alert, self._line_key(state, masked, template_id), self.config.similarity):
            named = None  # the same pattern again is a burst
        return same, named

    def _record_alerted(self, state: _Source, stream: str | None, line: tuple[int | None, str] | None = None,
                        names: frozenset[str] | None = None) -> None:
        """A line of the stream's latest record alerted: the rest of that record is its alert's, and so is a line
        of the stream's next ``incident_lines`` that names one of ``names`` in another pattern than ``line``
        (``_line_key``)."""
        if stream in state.records:
            state.records[stream] = _StreamRecord(state.records[stream].record, True, line, names)

    def _line_key(self, state: _Source, masked: str, template_id: int | None = None) -> tuple[int | None, str]:
        """A line's pattern for ``_part_of_alert`` (``incident.same_pattern``): its template, where it has one,
        and its text rid of ids."""
        if template_id is None:
            cluster = self._match(state.miner, masked)
            template_id = cluster.cluster_id if cluster is not None else None
        return template_id, without_ids(masked)

    def _step(self, state: _Source, stream: str | None, step: int | None) -> None:
        """The stream's (or its writer's, ``after_key``) latest line was at ``step`` (its template; None: a
        new one that alerted)."""
        _keep_recent(state.previous, stream, step, self.config.flow_entities)

    def _count(self, state: _Source, score: float, stream: str | None = None) -> None:
        state.recent.append(score)
        state.lines += 1
        if stream is not None:
            _keep_recent(state.stream_lines, stream, state.stream_lines.get(stream, 0) + 1, self.config.flow_entities)

    @staticmethod
    def _home_lines(state: _Source, recurrence: Recurrence) -> int | None:
        """The lines so far of the one stream that has shown a pattern (``Recurrence.home``); None where more
        than one has, or none is known."""
        return None if recurrence.home is None else state.stream_lines.get(recurrence.home)

    def mark_normal(self, source: str, masked: str, score: float, level: str | None = None,
                    text: str | None = None) -> None:
        """An operator says lines like this are normal: its template alerts again only far above.
        ``level`` and ``text`` as for ``judge``: its problem words are then the ones judging reads."""
        state = self._source(source)
        cluster_id = self._cluster(state, masked)
        template = state.templates.setdefault(cluster_id, _Template(deque(maxlen=self.config.history)))
        template.marked_normal_at = max(score, template.marked_normal_at or score)
        template.scores.append(score)
        self._learn_ranges(template, masked, text, weight=RANGE_EXTREMES)  # its values are in range from now on
        self._problem_normal(state, masked, self._problem_words_in(masked, level, text))
        self._level_normal(state, masked, level, marked=True)  # its level is no news in its pattern, or its event
        for flow, step in ((state.flow, cluster_id), (state.named, self._named_step(state, masked))):
            for pair in [pair for pair in flow.alerts if pair[1] == step]:  # in order after any step it alerted after
                flow.pairs.add(pair)
                del flow.alerts[pair]

    @classmethod
    def _found(cls, miner: TemplateMiner, pattern: str, add: bool = False) -> int | None:
        """The cluster id the tree search finds for a line's ``pattern`` (the line rid of its ids: ``without_ids``,
        or ``problem_pattern`` for the problem rules' miner), what ``judge`` looks it up by (``_match``);
        ``add``: the line joins the miner first. drain3 may add a line to another cluster than that search
        returns (it leaves wildcards out of the similarity): then the search's wins, the added one only if the
        search finds none. None: not added and no cluster fits."""
        added = miner.add_log_message(pattern)["cluster_id"] if add else None
        cluster = cls._search(miner, pattern)
        return cluster.cluster_id if cluster is not None else added

    @classmethod
    def _match(cls, miner: TemplateMiner, masked: str):
        """The cluster this line would join (drain3's tree search at its similarity, changing nothing)."""
        return cls._search(miner, without_ids(masked))

    @staticmethod
    def _search(miner: TemplateMiner, pattern: str):
        """drain3's tree search for a line already rid of its ids (``without_ids``)."""
        drain = miner.drain
        return drain.tree_search(drain.root_node, drain.get_content_as_tokens(pattern), drain.sim_th, True)

    def _cluster(self, state: _Source, masked: str) -> int:
        """The line joins its source's templates; returns the template ``judge`` looks it up by (``_found``)."""
        cluster_id = self._found(state.miner, without_ids(masked), add=True)
        if len(state.templates) > self.config.max_templates:
            _forget_gone(state.templates, state.miner)
        return cluster_id

    @staticmethod
    def _push(values: deque, value: float, limit: int) -> None:
        values.append(value)
        while len(values) > limit:
            values.popleft()

    def _source(self, source: str) -> _Source:
        state = self._sources.get(source)
        if state is None:
            state = self._sources[source] = _Source(self._miner(self.config.similarity),
                                                    problems=self._miner(self.config.problem_similarity))
            if len(self._sources) > self.config.max_sources:
                self._sources.popitem(last=False)
        else:
            self._sources.move_to_end(source)
        return state

    def _miner(self, similarity: float) -> TemplateMiner:
        config = TemplateMinerConfig()
        config.drain_sim_th = similarity
        config.drain_max_clusters = self.config.max_templates
        config.profiling_enabled = False
        return TemplateMiner(config=config)

    @contextmanager
    def rescoring(self, *sources: str):
        """Re-learn sources' template score histories under a new model: the lines scored inside the
        block (judged and learned as usual) join their templates' histories, where the old model's
        scores stay until newer ones push them out. The old model scored the source higher (it knew it
        less), so its scores are a safe bar while the new model's accumulate. The new-template
        history is kept as it is: re-scored lines of known templates are no new templates, and
        refilling it with them set the bar so low that rare normal messages alerted after a swap
        (measured: nginx error log, 1.5 -> 0.0 false alerts per 1,000 lines). What does not depend
        on the model is not counted again: line counts, levels, problem patterns and marks."""
        for source in sources:
            self._source(source)
        self._rescoring.update(sources)
        try:
            yield
        finally:
            self._rescoring.difference_update(sources)

    # -- persistence ----------------------------------------------------------------------------

    def state(self) -> dict:
        """What was learned, as JSON-able data."""
        sources = {}
        for name, state in self._sources.items():
            clusters = {c.cluster_id: c.get_template() for c in state.miner.drain.clusters}
            problems = {c.cluster_id: c.get_template() for c in state.problems.drain.clusters}
            keys = [k for k in dict.fromkeys([*state.problem_normal, *state.problem_alerts]) if k[0] in problems]
            sources[name] = {
                "problems": [{"template": problems[cid], "words": words, "normal": state.problem_normal.get((cid, words), 0),
                              "alerts": state.problem_alerts[(cid, words)].as_json(clusters)
                              if (cid, words) in state.problem_alerts else None} for cid, words in keys],
                "lines": state.lines, "novel": list(state.novel), "recent": list(state.recent),
                "levels": [[level, count] for level, count in state.levels.items()],
                "level_alerts": _by_level_pattern(state.level_alerts, problems, lambda r, c=clusters: r.as_json(c)),
                "level_normal": _by_level_pattern(state.level_normal, problems, int),
                "templates": [{"template": clusters[cid], "scores": list(t.scores), "marked": t.marked_normal_at,
                               "ranges": t.ranges} for cid, t in state.templates.items() if cid in clusters],
                "range_alerts": [[clusters[cid], key, recurrence.as_json()]
                                 for (cid, key), recurrence in state.range_alerts.items() if cid in clusters],
                "flows": EntityFlows.as_json(state.flow, clusters, Recurrence.as_json),
                "named_flows": EntityFlows.as_json(state.named, {step: text for text, step in state.named.step_ids.items()},
                                                   Recurrence.as_json),
                "previous": [[stream, clusters[step]] for stream, step in
                             list(state.previous.items())[-SAVED_STREAMS:] if step in clusters],
                "stream_lines": list(state.stream_lines.items())[-SAVED_STREAMS:],
                "words": state.words.as_json(self.config.incident_word_share),
                "startups": {"at": state.startup_at, "count": state.startups,
                             "patterns": [[problems[cid], words, seen] for (cid, words), seen in
                                          state.startup_patterns.items() if cid in problems]}}
        return {"version": STATE_VERSION, "sources": sources}

    def load_state(self, data: dict) -> None:
        """Continue from ``state()``'s output (templates are mined again from their text)."""
        version = data.get("version")
        if version not in (1, 2, STATE_VERSION):
            raise ValueError(f"adaptive state version {version!r}, expected {STATE_VERSION}")
        self._sources.clear()
        for name, saved in data["sources"].items():
            state = self._source(name)
            state.lines = int(saved["lines"])
            state.recent.extend(saved.get("recent", []))
            state.levels = {level: count for level, count in saved.get("levels", [])}
            state.novel.extend(saved["novel"][-self.config.novel_history:])

            def step_of(template: str, miner: TemplateMiner = state.miner) -> int:
                return self._found(miner, without_ids(template), True)

            for stream, template in saved.get("previous", []):  # kept since steps were followed
                state.previous[stream] = step_of(template)
            for stream, lines in saved.get("stream_lines", []):  # kept since patterns had a home stream
                state.stream_lines[stream] = int(lines)
            if "words" in saved:  # kept since incidents were told by the things they name
                state.words = WordCounts.from_json(saved["words"])
            for item in saved.get("problems", []):
                key = (state.problems.add_log_message(problem_pattern(item["template"]))["cluster_id"], item.get("words"))
                if item["normal"]:
                    state.problem_normal[key] = state.problem_normal.get(key, 0) + item["normal"]
                if item["alerts"]:
                    state.problem_alerts[key] = Recurrence.from_json(item["alerts"], self.config.routine_gap, step_of)
            # versions 1 and 2 kept a level's recurrence for all its patterns at once: counted afresh
            for level, template, recurrence in saved.get("level_alerts", []) if version == STATE_VERSION else []:
                key = self._level_pattern_of(state, level, template)
                state.level_alerts[key] = Recurrence.from_json(recurrence, self.config.routine_gap, step_of)
            for level, template, count in saved.get("level_normal", []):  # kept since this source's state
                key = self._level_pattern_of(state, level, template)
                state.level_normal[key] = state.level_normal.get(key, 0) + int(count)
            for item in saved["templates"]:
                cluster_id = state.miner.add_log_message(item["template"])["cluster_id"]
                template = state.templates.setdefault(cluster_id, _Template(deque(maxlen=self.config.history)))
                template.scores.extend(item["scores"])
                if item["marked"] is not None:
                    template.marked_normal_at = max(item["marked"], template.marked_normal_at or item["marked"])
                for key, (lines, least, greatest, *codes) in item.get("ranges", {}).items():  # kept since this rule
                    seen = template.ranges.setdefault(key, [0, [], greatest] + ([{}] if codes else []))
                    seen[0] += int(lines)
                    for value in least if isinstance(least, list) else [least]:  # saved before: its least alone
                        keep_least(seen[1], value)
                    seen[2] = max(seen[2], greatest)
                    if codes and len(seen) > 3 and seen[3] is not None:  # an error code's (saved since it was one)
                        if codes[0] is None:
                            seen[3] = None
                        for code, count in (codes[0] or {}).items():
                            count_code(seen, int(code), int(count))
            for template, key, recurrence in saved.get("range_alerts", []):
                cluster_id = state.miner.add_log_message(template)["cluster_id"]
                state.range_alerts[(cluster_id, key)] = Recurrence.from_json(recurrence, self.config.routine_gap)
            if "startups" in saved:  # kept since this rule
                state.startup_at, state.startups = int(saved["startups"]["at"]), int(saved["startups"]["count"])
                for template, words, seen in saved["startups"]["patterns"]:
                    key = (self._found(state.problems, problem_pattern(template), add=True), words)
                    state.startup_patterns[key] = [int(value) for value in seen]
            if "flows" in saved:  # kept since this rule
                state.flow = EntityFlows.from_json(saved["flows"], step_of,
                                                   lambda data: Recurrence.from_json(data, self.config.routine_gap))
            if "named_flows" in saved and self._named is not None:  # kept since this rule
                named = FlowState()
                state.named = EntityFlows.from_json(
                    saved["named_flows"], lambda text, steps=named: self._named.step_of(steps, text),
                    lambda data: Recurrence.from_json(data, self.config.routine_gap))
                state.named.step_ids, state.named.next_step = named.step_ids, named.next_step

    @staticmethod
    def _level_pattern_of(state: _Source, level: str, template: str | None) -> tuple[str, int | None]:
        """A saved (level, strict pattern template) key, its pattern mined again."""
        return level, None if template is None else state.problems.add_log_message(problem_pattern(template))["cluster_id"]

    def sources(self) -> dict[str, int]:
        """Lines seen per source."""
        return {name: state.lines for name, state in self._sources.items()}

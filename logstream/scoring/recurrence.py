"""How a problem pattern (or a rare level) keeps coming back: its episodes, and when it has turned routine
for its source. Used by the adaptive thresholds' problem rules (``logstream.scoring.adaptive``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..config import AdaptiveSettings


MAX_BURST_STREAMS = 1024  # streams followed in one burst of a pattern


@dataclass
class Recurrence:
    """How a problem pattern (or a rare level) keeps coming back without being learned as normal: its
    lines and its latest episodes, each a burst of its lines within ``routine_gap`` source lines of one
    another. Episodes, not lines or fixed stretches: a broker outage writes one error thirty times
    at once, and the next outage is news again (counting stretches of 20 lines, three outages made
    the fourth silent: measured, the worker's ``OffsetCommit failed`` bursts)."""

    lines: int = 0
    # [first line, last line (source line counts), its lines, and its last line in its home stream's lines]
    episodes: deque = field(default_factory=deque)
    comebacks: int = 0  # episodes in all
    chronic: bool = False  # one of its episodes went on for ``routine_window`` lines: routine for good
    steady: bool = False  # routine since it last turned so, until it is quiet for ``routine_window`` lines
    after: int | None = None  # the step (template) its latest episodes came right after in their stream
    after_runs: int = 0  # its latest episodes in a row that came right after ``after``
    # stream -> its lines in the ongoing episode (not saved: a restart tells an ongoing burst once more)
    burst_streams: dict = field(default_factory=dict)
    home: str | None = None  # the one stream that has shown it (None: none known, or more than one)

    def add(self, at: int, config: AdaptiveSettings, after: int | None = None, stream: str | None = None) -> None:
        """One more of its lines, at the source's line count ``at``, right after the step ``after`` of its
        ``stream`` (None: unknown)."""
        self.lines += 1
        if self.episodes and at - self.episodes[-1][1] <= config.routine_gap:
            self._in_burst(stream)
            self.episodes[-1][1] = at
            self.episodes[-1][2] += 1
            self.chronic = self.chronic or at - self.episodes[-1][0] >= config.routine_window
            return
        self.comebacks += 1
        self.episodes.append([at, at, 1])
        self.burst_streams.clear()
        self._in_burst(stream)
        same = after is not None and after == self.after
        self.after, self.after_runs = after, self.after_runs + 1 if same else 1
        while len(self.episodes) > max(config.routine_episodes, 1):
            self.episodes.popleft()

    def home_at(self, stream: str | None, lines: int | None) -> None:
        """Its latest line (just ``add``-ed) came from ``stream``, which had ``lines`` lines then (None: unknown):
        while one stream alone shows it, its episodes are counted in that stream's lines too. Its first line
        makes its stream its home; a line of another stream, or of none known, ends that for good (each episode
        since the home was set has its end in the home's lines, ``routine`` relies on it)."""
        if self.lines == 1 and stream is not None and lines is not None:
            self.home = stream
        elif self.home != stream or lines is None:
            self.home = None
        if self.home is not None:
            self.episodes[-1][3:] = [lines]

    def routine(self, now: int, config: AdaptiveSettings, for_good: int | None = None,
                window: int | None = None, home_now: int | None = None) -> bool:
        """Whether it keeps coming back: in enough episodes lately, in one that does not end, or in all.
        Once routine, it stays so until it has been quiet for that window of lines: a pattern that
        comes back a little less often than it turned routine is still the source's routine (measured:
        vsftpd's 550 for a missing file every ~250 lines flipped between routine and news). ``for_good``:
        episodes in all after which it is routine for good (default ``problem_routine_episodes``; 0: never).
        ``window``: the lines its latest episodes count over (default ``routine_window``). ``home_now``: the lines so
        far of the one stream that has shown it (``home_at``), in which the window is then counted: a program that
        shares its log format with busier ones comes back as often in its own lines however many lines the others
        write (measured: snmpd's engine discovery, "parse fail" every ~230 of its lines, alerted 33 times in 4,000
        lines of a source it shared with two other programs)."""
        for_good = config.problem_routine_episodes if for_good is None else for_good
        window = window or config.routine_window
        if self.chronic or (for_good and self.comebacks >= for_good):
            return True
        if not config.routine_episodes or not self.episodes:
            return False
        in_home = home_now is not None and len(self.episodes[0]) > 3
        end = 3 if in_home else 1  # where an episode's last line is kept: in its home stream's lines, or the source's
        oldest = (home_now if in_home else now) - window
        if self.steady and self.episodes[-1][end] > oldest:
            return True
        first, last = self.episodes[-1][:2]
        self.steady = ((len(self.episodes) >= config.routine_episodes and self.episodes[0][end] > oldest)
                       or (self.episodes[-1][end] > oldest and last - first >= config.routine_episodes * config.routine_gap))
        return self.steady

    def in_sequence(self, after: int | None, config: AdaptiveSettings) -> bool:
        """Whether it comes as a step of a sequence: each of its latest ``sequence_episodes`` episodes came
        right after the same step of its stream, and so does this line."""
        return bool(config.sequence_episodes and after is not None and after == self.after
                    and self.after_runs >= config.sequence_episodes)

    def _in_burst(self, stream: str | None) -> None:
        if stream is not None and (stream in self.burst_streams or len(self.burst_streams) < MAX_BURST_STREAMS):
            self.burst_streams[stream] = self.burst_streams.get(stream, 0) + 1

    def burst_told(self, now: int, config: AdaptiveSettings, stream: str | None = None) -> int | None:
        """Lines its ongoing episode has had once they are ``episode_alerts`` or more (the news is told:
        the rest of the burst is the same news), else None. With the line's ``stream``, its lines of the
        burst in that stream: one HDFS block's failure is not another's news, though both come in one burst
        of the source (beyond ``MAX_BURST_STREAMS`` streams in one burst, the burst's lines in all). A later
        burst of a pattern tells its news in ``later_episode_alerts`` lines: its coming back is the news."""
        if not config.episode_alerts or not self.episodes:
            return None
        _, last, lines = self.episodes[-1][:3]
        if stream is not None and len(self.burst_streams) < MAX_BURST_STREAMS:
            lines = self.burst_streams.get(stream, 0)
        later = self.comebacks > 1 and config.later_episode_alerts
        told = config.later_episode_alerts if later else config.episode_alerts
        # ``now``: the source's lines before the one judged, which ``add`` would count at ``now + 1``
        return lines if now + 1 - last <= config.routine_gap and lines >= told else None

    def as_json(self, templates: dict[int, str] | None = None) -> dict:
        """As JSON-able data; with ``templates`` (step -> template text), the step it came after too."""
        data = {"lines": self.lines, "episodes": [list(e) for e in self.episodes], "comebacks": self.comebacks,
                "chronic": self.chronic, "steady": self.steady, "home": self.home}
        if templates is not None and self.after in templates:
            data["after"], data["after_runs"] = templates[self.after], self.after_runs
        return data

    @classmethod
    def from_json(cls, data, gap: int = 20, step_of=None) -> Recurrence:
        """``as_json``'s output (``step_of``: template text -> step, to read the step it came after)."""
        if isinstance(data, int):  # state version 1 kept only a count
            return cls(lines=data, comebacks=data)
        if "episodes" in data:  # [first, last, lines]; saved before lines were counted: [first, last]
            episodes = deque([int(e[0]), int(e[1]), int(e[2]) if len(e) > 2 else 1]
                             + ([int(e[3])] if len(e) > 3 and e[3] is not None else []) for e in data["episodes"])
            recurrence = cls(int(data["lines"]), episodes, int(data["comebacks"]), bool(data.get("chronic", False)),
                             bool(data.get("steady", False)), home=data.get("home"))
            if step_of is not None and data.get("after") is not None:  # kept since steps were followed
                recurrence.after, recurrence.after_runs = step_of(data["after"]), int(data["after_runs"])
            return recurrence
        # versions 2 and 3 before episodes kept stretches of ``gap`` lines: one episode each
        stretches = data.get("stretches", [])
        return cls(int(data["lines"]), deque([[s * gap, s * gap, 1] for s in stretches]),
                   int(data.get("comebacks", len(stretches))))

"""The worker's fine-tuning rounds, in a background process with a lower CPU priority.

The model thread decides a round is due (``OnlineAdapter``); ``RoundRunner.start`` writes its lines
to a job directory and starts ``python -m pipelines.finetune`` under ``nice`` with
``adapt.threads`` threads; when it finishes, the new model goes into the store and the caller
swaps it in. Scoring goes on meanwhile, and comes first: the trainer is another process, paused
(``TrainerGate``) while scoring falls behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from ..config import AdaptSettings
from ..service.metrics import TRAINER_PAUSED, TRAINER_PAUSED_SECONDS
from .online import Round
from .store import ModelStore

log = logging.getLogger("logstream.adapt")


def trainer_command(settings: AdaptSettings, base: Path, recent: Path, out: Path,
                    sources: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line (under ``nice``) and environment of a round's fine-tuning process; start it in
    a session of its own, then ``lower_session_priority``."""
    command = ["nice", "-n", str(settings.nice), sys.executable, "-m", "pipelines.finetune", "--base", str(base),
               "--recent", str(recent), "--out", str(out), "--sources", ",".join(sources)]
    return command, {**os.environ, "OMP_NUM_THREADS": str(settings.threads), "TQDM_DISABLE": "1"}


def lower_session_priority(pid: int, nice: int) -> None:
    """Give the session ``pid`` leads the trainer's nice value as a whole. Under the kernel's autogroup
    scheduling (on by default in most distributions' kernels) each session is scheduled as one group,
    and a process's own nice only ranks it within its group: a trainer in a session of its own took
    as much CPU as the whole worker beside it, nice or not (measured: 0.7 of 2 cores, the worker's
    scoring thread waiting meanwhile). Where there are no autogroups, the process's nice does it."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    except OSError as exc:  # no autogroups (or not Linux): nothing to set
        log.debug("could not set the trainer session's nice value: %s", exc)


PARENT_ENV = "LOGSTREAM_TRAINER_PARENT"  # the worker's pid, for die_with_worker
ARMED_ENV = "LOGSTREAM_TRAINER_ARMED"  # a file die_with_worker makes once the kernel will kill the trainer


def die_with_worker() -> None:
    """In the trainer: be killed by the kernel when the worker that started it dies. A trainer the
    worker paused (SIGSTOP) could not notice by itself, and would wait stopped for ever."""
    parent = os.environ.get(PARENT_ENV)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL) != 0:
        return  # not armed: the worker never pauses this trainer
    if os.getppid() != int(parent):  # the worker died before the request was made
        raise SystemExit("the worker that started this round is gone")
    if os.environ.get(ARMED_ENV):
        Path(os.environ[ARMED_ENV]).touch()  # the worker may pause it from now on


def clear_abandoned_jobs(jobs: Path) -> list[Path]:
    """Remove the job folders of rounds whose worker is gone (a SIGKILL skips a round's clean-up, and
    its lines and staged model would stay on disk for good). A folder is named after its round's start
    and its worker's pid; one whose pid runs no process, or that has no pid (made before names had
    one), is abandoned. Another worker's running round, sharing the store, is left alone."""
    removed = []
    for job in sorted(jobs.iterdir()) if jobs.is_dir() else []:
        pid = job.name.rpartition("-")[2]
        if pid.isdigit() and (int(pid) == os.getpid() or _running(int(pid))):
            continue
        shutil.rmtree(job, ignore_errors=True)
        removed.append(job)
    if removed:
        log.info("removed %d fine-tuning job folder(s) left by a worker that did not end cleanly under %s",
                 len(removed), jobs)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


class RoundPausedOut(RuntimeError):
    """Scoring was late for so long that the round's trainer stayed paused past its time."""


class TrainerGate:
    """Scoring first. On a small machine a running trainer slows scoring whatever its nice (through
    what the cores share, we take it; benchmarks/results/trainer_gate_ab.md), so it is paused while
    micro-batches' oldest lines wait longer than ``pause_above_s`` to be scored, and goes on once
    none did for ``resume_after_s``."""

    def __init__(self, pause_above_s: float | None, resume_after_s: float, clock=time.monotonic):
        self.pause_above_s, self.resume_after_s, self.clock = pause_above_s, resume_after_s, clock
        self.last_late: float | None = None

    def observe(self, waited_s: float) -> None:
        """A batch was scored; its oldest line had waited ``waited_s`` since it was written."""
        if self.pause_above_s is not None and waited_s > self.pause_above_s:
            self.last_late = self.clock()

    def resume_in(self) -> float:
        """Seconds until the trainer may run again (0: now)."""
        if self.last_late is None:
            return 0.0
        return max(0.0, self.last_late + self.resume_after_s - self.clock())


class RoundRunner:
    def __init__(self, settings: AdaptSettings, store: ModelStore):
        self.settings, self.store = settings, store
        self.running: asyncio.Task | None = None
        pause_above = settings.pause_above_ms / 1000 if settings.pause_above_ms is not None else None
        self.gate = TrainerGate(pause_above, settings.resume_after_s)
        self.trainer: asyncio.subprocess.Process | None = None
        self.paused = False
        self.paused_s = 0.0  # in the running round
        self._counted_to = 0.0  # while paused: its time is counted up to here
        self._resume_check: asyncio.TimerHandle | None = None
        self._armed: Path | None = None  # exists once the trainer dies with the worker: only then is it paused
        if store is not None:
            clear_abandoned_jobs(store.root / "jobs")

    def batch_scored(self, waited_s: float) -> None:
        """Called for every scored batch: pause the trainer when scoring fell behind."""
        self.gate.observe(waited_s)
        self._apply_gate()

    def _apply_gate(self) -> None:
        wait = self.gate.resume_in()
        if wait > 0 and self.trainer is not None and not self.paused and self._armed is not None \
                and self._armed.exists():
            self._signal(signal.SIGSTOP)
            self.paused, self._counted_to = True, time.monotonic()
            TRAINER_PAUSED.set(1)
        elif wait == 0 and self.paused:
            self._resume()
        if self.paused:
            self._count_paused()
            if self._resume_check is None:  # batches may stop coming: check on a timer too
                def check() -> None:
                    self._resume_check = None
                    self._apply_gate()
                self._resume_check = asyncio.get_running_loop().call_later(min(max(wait, 0.05), 1.0), check)

    def _count_paused(self) -> None:
        """Add the time paused since the last count (the counter moves during a long pause too)."""
        now = time.monotonic()
        self.paused_s += now - self._counted_to
        TRAINER_PAUSED_SECONDS.inc(now - self._counted_to)
        self._counted_to = now

    def _resume(self) -> None:
        if not self.paused:
            return
        self._signal(signal.SIGCONT)
        self._count_paused()
        TRAINER_PAUSED.set(0)
        self.paused = False

    def _signal(self, signum: int) -> None:
        if self.trainer is None or self.trainer.returncode is not None:  # reaped: its pid may be another's
            return
        try:
            os.killpg(self.trainer.pid, signum)  # its session's group: the trainer and anything it starts
        except (ProcessLookupError, PermissionError):  # it has just ended
            pass

    @property
    def busy(self) -> bool:
        return self.running is not None and not self.running.done()

    def start(self, round_: Round, base: Path) -> asyncio.Task:
        """Train the round in the background; the task's result is the new version (or an exception)."""
        self.running = asyncio.get_running_loop().create_task(self._run(round_, base))
        return self.running

    async def _wait(self, process: asyncio.subprocess.Process, started: float) -> int:
        """The trainer's exit code. Its own limit is ``max_minutes`` of its CPU time; here a trainer
        that ran 3 x ``max_minutes`` + 5 minutes of wall time (time paused for scoring left out: a
        nice'd trainer may get a third of a core) is taken for hung, and one paused for
        ``max_minutes`` in all is given up (``RoundPausedOut``): scoring had no spare capacity."""
        self._apply_gate()  # scoring may be behind already
        limit, pause_limit = 3 * 60 * self.settings.max_minutes + 300, 60 * self.settings.max_minutes
        ended = asyncio.ensure_future(process.wait())
        try:
            while True:
                if self.paused:
                    self._count_paused()
                if self.paused_s > pause_limit:
                    raise RoundPausedOut(
                        f"the trainer was paused {self.paused_s / 60:.0f} min while scoring was late (lines waited "
                        f"over adapt.pause_above_ms): this worker has no spare capacity to fine-tune; give it more "
                        "cores or partitions to another worker, or raise adapt.pause_above_ms")
                left = limit - (time.monotonic() - started - self.paused_s)
                if left <= 0:
                    raise TimeoutError
                done, _ = await asyncio.wait({ended}, timeout=min(left, 1.0))
                if done:
                    return ended.result()
        finally:
            ended.cancel()  # a no-op once it is done

    async def _run(self, round_: Round, base: Path) -> str:
        job = self.store.root / "jobs" / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"  # see clear_abandoned_jobs
        job.mkdir(parents=True, exist_ok=True)
        try:
            recent = job / "recent.jsonl"
            with recent.open("w") as f:
                for stream, lines in round_.recent.streams.items():
                    for line in lines:
                        f.write(json.dumps({"stream": stream, "line": line}) + "\n")
            staged = job / "model"
            command, env = trainer_command(self.settings, base, recent, staged, round_.sources)
            started = time.monotonic()
            with (job / "trainer.log").open("wb") as out:
                process = await asyncio.create_subprocess_exec(*command, stdout=out, stderr=asyncio.subprocess.STDOUT,
                                                               env={**env, PARENT_ENV: str(os.getpid()),
                                                                    ARMED_ENV: str(job / "armed")},
                                                               start_new_session=True)
                lower_session_priority(process.pid, self.settings.nice)
                self.trainer, self.paused_s, self._armed = process, 0.0, job / "armed"
                try:
                    code = await self._wait(process, started)
                except (TimeoutError, asyncio.CancelledError, RoundPausedOut):
                    process.kill()
                    await process.wait()
                    raise
                finally:
                    self._resume()
                    self.trainer = None
            if code != 0:
                tail = (job / "trainer.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the fine-tuning process exited with code {code}:\n{tail}")
            version = self.store.add(staged, reason=f"fine-tuned on {', '.join(round_.sources)} "
                                                    f"({round_.lines} lines)")
            log.info("fine-tuning round for %s: version %s in %.0f s (%.0f s of it paused while scoring was late)",
                     ", ".join(round_.sources), version, time.monotonic() - started, self.paused_s)
            return version
        finally:
            shutil.rmtree(job, ignore_errors=True)

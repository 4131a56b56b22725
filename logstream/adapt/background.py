"""The worker's fine-tuning rounds, in a background process with a lower CPU priority.

The model thread decides a round is due (``OnlineAdapter``); ``RoundRunner.start`` writes its lines
to a job directory and starts ``python -m pipelines.finetune`` under ``nice`` with
``adapt.threads`` threads; when it finishes, the new model goes into the store and the caller
swaps it in. Scoring goes on meanwhile: the trainer is another process on another core.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from ..config import AdaptSettings
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


class RoundRunner:
    def __init__(self, settings: AdaptSettings, store: ModelStore):
        self.settings, self.store = settings, store
        self.running: asyncio.Task | None = None

    @property
    def busy(self) -> bool:
        return self.running is not None and not self.running.done()

    def start(self, round_: Round, base: Path) -> asyncio.Task:
        """Train the round in the background; the task's result is the new version (or an exception)."""
        self.running = asyncio.get_running_loop().create_task(self._run(round_, base))
        return self.running

    async def _run(self, round_: Round, base: Path) -> str:
        job = self.store.root / "jobs" / time.strftime("%Y%m%dT%H%M%S")
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
                                                               env=env, start_new_session=True)
                lower_session_priority(process.pid, self.settings.nice)
                try:
                    code = await asyncio.wait_for(process.wait(), timeout=60 * self.settings.max_minutes + 300)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    process.kill()
                    await process.wait()
                    raise
            if code != 0:
                tail = (job / "trainer.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the fine-tuning process exited with code {code}:\n{tail}")
            version = self.store.add(staged, reason=f"fine-tuned on {', '.join(round_.sources)} "
                                                    f"({round_.lines} lines)")
            log.info("fine-tuning round for %s: version %s in %.0f s", ", ".join(round_.sources), version,
                     time.monotonic() - started)
            return version
        finally:
            shutil.rmtree(job, ignore_errors=True)

"""Scoring first: the fine-tuning trainer is paused while scoring falls behind, and dies with its worker."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logstream.adapt.background import ARMED_ENV, PARENT_ENV, RoundPausedOut, RoundRunner, TrainerGate
from logstream.adapt.store import ModelStore
from logstream.config import DEFAULT_MODEL_DIR, AdaptSettings
from logstream.service.metrics import TRAINER_PAUSED_SECONDS

ROOT = Path(__file__).resolve().parents[1]
# a stand-in trainer: it ends after 0.3 s of its own CPU time, so while stopped it cannot end
BURN = "import time\nwhile time.process_time() < 0.3: pass"


def state(pid: int) -> str:
    """The process's state letter (R, S, T for stopped, Z), or '' once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return ""


def test_the_gate_pauses_on_a_late_batch_and_resumes_after_a_quiet_spell():
    now = [100.0]
    gate = TrainerGate(pause_above_s=0.15, resume_after_s=5.0, clock=lambda: now[0])
    gate.observe(0.10)
    assert gate.resume_in() == 0  # on time: the trainer runs
    gate.observe(0.20)
    assert gate.resume_in() == pytest.approx(5.0)
    now[0] += 3
    gate.observe(0.12)  # on time again, but not for long enough yet
    assert gate.resume_in() == pytest.approx(2.0)
    now[0] += 1
    gate.observe(0.30)  # late again: the quiet spell starts over
    assert gate.resume_in() == pytest.approx(5.0)
    now[0] += 5
    assert gate.resume_in() == 0


def test_a_gate_without_a_bound_never_pauses():
    gate = TrainerGate(pause_above_s=None, resume_after_s=5.0)
    gate.observe(1e6)
    assert gate.resume_in() == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_runner_stops_the_trainer_while_scoring_is_late_and_lets_it_finish_after(tmp_path):
    async def main() -> tuple[float, float, list[str]]:
        runner = RoundRunner(AdaptSettings(pause_above_ms=100, resume_after_s=1.0), store=None)
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", BURN, start_new_session=True)
        runner.trainer, runner._armed = process, tmp_path / "armed"
        runner._armed.touch()  # as die_with_worker does
        started = time.monotonic()
        runner.batch_scored(0.5)  # a batch whose oldest line waited 500 ms
        seen = []
        for _ in range(5):  # paused: no progress, whatever the wait
            await asyncio.sleep(0.1)
            seen.append(state(process.pid))
        code = await asyncio.wait_for(runner._wait(process, started), timeout=30)
        assert code == 0
        return time.monotonic() - started, runner.paused_s, seen

    before = TRAINER_PAUSED_SECONDS._value.get()
    took, paused, seen = asyncio.run(main())
    assert seen == ["T"] * 5
    assert TRAINER_PAUSED_SECONDS._value.get() - before == pytest.approx(paused)
    assert 0.9 < paused < 3.0  # resumed by the timer, with no batch coming in
    assert took >= paused


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_trainer_not_yet_armed_to_die_with_its_worker_is_not_paused(tmp_path):
    async def main() -> tuple[str, bool]:
        runner = RoundRunner(AdaptSettings(pause_above_ms=100, resume_after_s=1.0), store=None)
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(30)",
                                                       start_new_session=True)
        runner.trainer, runner._armed = process, tmp_path / "armed"  # never made
        try:
            runner.batch_scored(0.5)
            await asyncio.sleep(0.3)
            return state(process.pid), runner.paused
        finally:
            process.kill()
            await process.wait()

    seen, paused = asyncio.run(main())
    assert seen in ("R", "S") and paused is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_round_paused_past_its_time_is_given_up(tmp_path):
    async def main() -> BaseException | None:
        runner = RoundRunner(AdaptSettings(pause_above_ms=100, resume_after_s=60, max_minutes=0.01), store=None)
        process = await asyncio.create_subprocess_exec(sys.executable, "-c", BURN, start_new_session=True)
        runner.trainer, runner._armed = process, tmp_path / "armed"
        runner._armed.touch()
        runner.batch_scored(0.5)  # late, and no quiet spell for a minute
        try:
            await asyncio.wait_for(runner._wait(process, time.monotonic()), timeout=30)
        except RoundPausedOut as exc:
            return exc
        finally:
            process.kill()
            await process.wait()
        return None

    error = asyncio.run(main())
    assert isinstance(error, RoundPausedOut) and "no spare capacity" in str(error)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_paused_trainer_dies_with_its_worker(tmp_path):
    """The worker is SIGKILLed while its trainer is stopped: the kernel kills the trainer too."""
    worker_code = f"""
import os, signal, subprocess, sys, time
armed = {str(tmp_path / "armed")!r}
env = {{**os.environ, {PARENT_ENV!r}: str(os.getpid()), {ARMED_ENV!r}: armed}}
trainer = subprocess.Popen([sys.executable, "-c",
    "from logstream.adapt.background import die_with_worker; die_with_worker(); import time; time.sleep(60)"],
    env=env, start_new_session=True)
while not os.path.exists(armed):  # as the worker does, pause it only once it has made its request
    time.sleep(0.01)
os.killpg(trainer.pid, signal.SIGSTOP)
print(trainer.pid, flush=True)
time.sleep(60)
"""
    worker = subprocess.Popen([sys.executable, "-c", worker_code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        trainer_pid = int(worker.stdout.readline())
        deadline = time.monotonic() + 5  # a signal is delivered asynchronously
        while state(trainer_pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state(trainer_pid) == "T"
        worker.kill()
        worker.wait()
        deadline = time.monotonic() + 10
        while state(trainer_pid) not in ("", "Z") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert state(trainer_pid) in ("", "Z")
    finally:
        worker.kill()
        try:
            os.kill(trainer_pid, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass


def test_a_trainer_whose_worker_is_already_gone_exits():
    env = {**os.environ, PARENT_ENV: str(os.getpid() + 1), "PYTHONPATH": str(ROOT)}  # not its parent
    done = subprocess.run([sys.executable, "-c", "from logstream.adapt.background import die_with_worker; "
                           "die_with_worker()"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "is gone" in done.stderr


def test_job_folders_of_rounds_whose_worker_died_are_removed_when_a_runner_starts(tmp_path):
    """A SIGKILLed worker skips its round's clean-up; the next worker on the store removes what it left,
    and leaves a live worker's round (and its own) alone."""
    jobs = tmp_path / "store" / "jobs"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folders = {name: jobs / name for name in (f"20261203T000000-{gone.stdout.strip()}", "20261203T000001",
                                                  f"20261203T000002-{live.pid}", f"20261203T000003-{os.getpid()}")}
        for folder in folders.values():
            (folder / "model").mkdir(parents=True)
            (folder / "recent.jsonl").write_text('{"stream": "s", "line": "x"}\n')
        RoundRunner(AdaptSettings(), ModelStore(tmp_path / "store", DEFAULT_MODEL_DIR))
        assert sorted(p.name for p in jobs.iterdir()) == [f"20261203T000002-{live.pid}",
                                                          f"20261203T000003-{os.getpid()}"]
    finally:
        live.kill()
        live.wait()

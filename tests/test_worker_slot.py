"""Workers that share a data_dir each keep their own thresholds and messages in hand (``worker_slot``)."""

import os
import signal
import subprocess
import sys

import pytest

from logstream.service.worker_slot import claim_slot


def test_workers_of_one_data_dir_get_slots_of_their_own_and_a_released_one_is_taken_again(tmp_path):
    first, second = claim_slot(tmp_path), claim_slot(tmp_path)
    assert first.path != second.path
    assert {first.path.name, second.path.name} == {"0", "1"}
    first.release()
    assert not first.held and second.held
    again = claim_slot(tmp_path)
    assert again.path == first.path  # the lowest free slot: a restarted worker finds what it saved
    assert claim_slot(tmp_path).path.name == "2"
    with pytest.raises(ValueError, match="LOGSTREAM_WORKER__DATA_DIR"):  # every slot held: say what to set
        claim_slot(tmp_path, max_slots=2)


def test_the_slot_of_a_killed_worker_is_free_at_once(tmp_path):
    """The lock dies with its process (no stale lock file to clean up after a kill -9)."""
    program = ("import time; from pathlib import Path; from logstream.service.worker_slot import claim_slot; "
               f"slot = claim_slot(Path({str(tmp_path)!r})); print(slot.path, flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        held = holder.stdout.readline().strip()
        assert held.endswith(os.path.join("workers", "0"))
        assert claim_slot(tmp_path).path.name == "1"  # held by the live process
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    assert str(claim_slot(tmp_path).path) == held


def test_what_a_worker_kept_before_slots_moves_into_the_first_slot(tmp_path):
    (tmp_path / "adaptive-thresholds.json").write_text('{"version": "old"}')
    (tmp_path / "inflight.json").write_text('{"held": [["lines", 0, 7]], "alone": false}')
    first = claim_slot(tmp_path)
    assert (first.path / "adaptive-thresholds.json").read_text() == '{"version": "old"}'
    assert (first.path / "inflight.json").exists()
    assert not (tmp_path / "adaptive-thresholds.json").exists() and not (tmp_path / "inflight.json").exists()
    # a slot's own file is never replaced by an old one
    first.release()
    (tmp_path / "adaptive-thresholds.json").write_text('{"version": "older"}')
    assert (claim_slot(tmp_path).path / "adaptive-thresholds.json").read_text() == '{"version": "old"}'

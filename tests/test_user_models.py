"""`logstream calibrate` and `logstream train` never write into the installed package: a calibrated
shipped model is a copy in the user's models directory, and the user's configuration points at it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from logstream.cli import main
from logstream.config import PACKAGE_DIR, Settings

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "loghub" / "OpenSSH" / "OpenSSH_2k.log"


def package_digest() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE_DIR)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(PACKAGE_DIR.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture
def user_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("LOGSTREAM_CONFIG", raising=False)
    return tmp_path


def test_calibrate_and_train_leave_the_installed_package_byte_identical(user_dirs, capsys):
    logs = user_dirs / "ssh.log"
    logs.write_text("\n".join(SAMPLE.read_text().splitlines()[:300]) + "\n")
    before = package_digest()

    assert main(["calibrate", "--logs", str(logs)]) == 0
    out = capsys.readouterr().out
    calibrated = next((user_dirs / "data" / "logstream" / "models").iterdir())
    assert "left as it is" in out and str(calibrated) in out
    config = yaml.safe_load((user_dirs / "config" / "logstream" / "logstream.yaml").read_text())
    assert config["model"]["path"] == str(calibrated)
    assert Settings().model.path == calibrated  # the user's configuration is read from now on

    train_config = user_dirs / "tiny.yaml"
    train_config.write_text(yaml.safe_dump({"context": 64, "batch_size": 2, "preamble_max_tokens": 32}))
    assert main(["train", "--logs", str(logs), "--from", str(calibrated), "--steps", "2", "--train-config",
                 str(train_config), "--out", str(user_dirs / "mine")]) == 0
    assert main(["train", "--logs", str(logs), "--out", str(PACKAGE_DIR / "assets" / "mine")]) == 2
    assert "inside the installed logstream package" in capsys.readouterr().err
    assert package_digest() == before

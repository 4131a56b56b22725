"""Configuration that could never work is refused at start, saying what to fix and never printing a
secret: a webhook that cannot deliver, a YAML file that does not parse, a misspelled variable."""

from __future__ import annotations

import asyncio
import json

import pytest

from logstream.config import Settings


@pytest.mark.parametrize("webhook, says", [
    ({"url": "hooks.example/alerts"}, "http:// or https://"),
    ({"url": "ftp://hooks.example/alerts"}, "http:// or https://"),
    ({"url": "http://hooks:port/alerts"}, "not a valid URL"),
    ({"url": "http://hooks/alerts", "secret": "not-a-standard-secret"}, "whsec_<base64"),
    ({"url": "http://hooks/alerts", "secret": "whsec_@@@"}, "not valid base64"),
    ({"url": "http://hooks/alerts", "secret": "whsec_c2hvcnQ="}, "decodes to 5 bytes"),
])
def test_a_webhook_that_could_never_deliver_is_refused_at_start_without_printing_its_secret(webhook, says,
                                                                                         monkeypatch):
    monkeypatch.setenv("LOGSTREAM_ALERTS__WEBHOOKS", json.dumps([webhook]))
    with pytest.raises(ValueError) as refused:
        Settings()
    assert says in str(refused.value)
    if "secret" in webhook:
        assert webhook["secret"] not in str(refused.value)


def test_a_bad_alertmanager_url_is_refused_at_start(monkeypatch):
    monkeypatch.setenv("LOGSTREAM_ALERTS__ALERTMANAGER_URL", "alertmanager:9093")
    with pytest.raises(ValueError, match="alerts.alertmanager_url must be an http"):
        Settings()


def test_a_config_file_that_is_not_yaml_says_where(tmp_path):
    bad = tmp_path / "logstream.yaml"
    bad.write_text("kafka:\n  partitions: [1\n")
    with pytest.raises(ValueError, match=r"(?s)is not valid YAML.*line 2"):
        Settings.load(bad)


def test_none_in_the_environment_turns_an_optional_setting_off(monkeypatch):
    monkeypatch.setenv("LOGSTREAM_ADAPT__PAUSE_ABOVE_MS", "none")
    monkeypatch.setenv("LOGSTREAM_METRICS__PORT", "none")
    settings = Settings()
    assert settings.adapt.pause_above_ms is None and settings.metrics.port is None
    monkeypatch.setenv("LOGSTREAM_ADAPT__PAUSE_ABOVE_MS", "100")
    assert Settings().adapt.pause_above_ms == 100.0
    monkeypatch.setenv("LOGSTREAM_WORKER__BATCH_SIZE", "none")  # not optional: refused, not silently default
    with pytest.raises(ValueError, match="batch_size"):
        Settings()


def test_a_misspelled_section_in_the_environment_is_named(monkeypatch):
    monkeypatch.setenv("LOGSTREAM_KAFKAA__PARTITIONS", "3")
    with pytest.raises(ValueError, match="unknown setting LOGSTREAM_KAFKAA__PARTITIONS.*kafka"):
        Settings()
    monkeypatch.delenv("LOGSTREAM_KAFKAA__PARTITIONS")
    monkeypatch.setenv("LOGSTREAM_KAFKA__PARTITIONZ", "3")  # a misspelled field of a known section
    with pytest.raises(ValueError, match="partitionz"):
        Settings()


def test_a_data_dir_that_cannot_be_made_is_refused_with_what_to_set(tmp_path, monkeypatch):
    from logstream.service.worker import build_app

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    monkeypatch.setenv("LOGSTREAM_WORKER__DATA_DIR", str(blocker / "state"))
    with pytest.raises(ValueError, match="LOGSTREAM_WORKER__DATA_DIR"):
        build_app(Settings())
    monkeypatch.setenv("LOGSTREAM_WORKER__DATA_DIR", str(tmp_path / "missing" / "parents" / "state"))
    build_app(Settings())  # missing parents are made
    assert (tmp_path / "missing" / "parents" / "state").is_dir()
    taken = tmp_path / "no-slots"  # a data_dir where no worker slot can be made
    taken.mkdir()
    (taken / "workers").write_text("")
    monkeypatch.setenv("LOGSTREAM_WORKER__DATA_DIR", str(taken))
    with pytest.raises(ValueError, match="cannot be used.*LOGSTREAM_WORKER__DATA_DIR"):
        build_app(Settings())


def test_the_workers_consumer_fetch_wait_is_the_setting_not_fausts_fixed_one(tmp_path, monkeypatch):
    from logstream.service.worker import build_app

    monkeypatch.setenv("LOGSTREAM_KAFKA__BOOTSTRAP_SERVERS", "127.0.0.1:1")
    monkeypatch.setenv("LOGSTREAM_WORKER__DATA_DIR", str(tmp_path / "state"))
    async def consumer_of(app):  # aiokafka consumers are made inside the event loop, as Faust does
        return app.consumer._thread._create_worker_consumer(app.transport)

    for wait in (100, 750):
        monkeypatch.setenv("LOGSTREAM_WORKER__FETCH_WAIT_MS", str(wait))
        consumer = asyncio.run(consumer_of(build_app(Settings())))
        assert consumer._fetch_max_wait_ms == wait

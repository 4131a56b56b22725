"""Alert delivery survives crashes: the HTTP sinks take the alerts from the alerts topic and their
offsets are committed only once each alert was delivered (or dead-lettered). A receiver that is
down while the worker is SIGKILLed still gets every alert after the restart, with the same
``webhook-id`` on every attempt. Real broker, real worker processes, a real HTTP receiver."""

from __future__ import annotations

import json
import time

import pytest

from logstream.alerts.sinks import webhook_id
from logstream.service.broker import EmbeddedBroker
from service_helpers import Scenario, TopicReader, WebhookReceiver, model_dir_or_skip
from test_worker import WEBHOOK_SECRET, many_streams, produce


@pytest.fixture(scope="module")
def broker():
    model_dir_or_skip()
    with EmbeddedBroker() as b:
        yield b


def test_alerts_held_for_a_receiver_that_is_down_are_delivered_after_the_worker_is_killed(broker, tmp_path):
    receiver = WebhookReceiver(WEBHOOK_SECRET)  # its port is chosen, nothing listens there yet
    scenario = Scenario(broker.bootstrap_servers, tmp_path, settings={
        "LOGSTREAM_SCORING__THRESHOLD": "-1",  # every line alerts
        "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0",
        "LOGSTREAM_ALERTS__BACKOFF_MAX_S": "1",
        "LOGSTREAM_ALERTS__WEBHOOKS": json.dumps([{"url": receiver.url, "secret": WEBHOOK_SECRET}]),
    })
    scenario.create_topics()
    produce(scenario.bootstrap, scenario.input_topic, many_streams(20, seed=9))
    reader = TopicReader(scenario.bootstrap, [scenario.alerts_topic, scenario.dead_letter_topic])
    first = scenario.worker("delivers-nothing")
    try:
        reader.wait_for(lambda: len(reader.values(scenario.alerts_topic)) >= 20, "20 alerts on the alerts topic",
                        workers=[first])
        time.sleep(2)  # deliveries are being retried against the closed port
        first.kill()  # SIGKILL: whatever the sinks held in memory is gone with the process
        published = {v["alert_id"] for v in reader.values(scenario.alerts_topic)}
        receiver.start()
        second = scenario.worker("delivers-everything")
        try:
            reader.wait_for(lambda: published <= {a.alert_id for a in receiver.alerts},
                            "every published alert delivered after the restart", workers=[second])
        finally:
            second.stop()
        reader.poll()
        assert not reader.values(scenario.dead_letter_topic)  # delivered, not given up on
        assert not receiver.rejected  # every delivery signed with the key
        for alert, sent_id in zip(receiver.alerts, receiver.webhook_ids):
            assert sent_id == webhook_id(alert)  # duplicates (if any) carry the same webhook-id
    finally:
        reader.close()
        first.stop()
        if receiver._runner is not None:
            receiver.stop()

"""Alert delivery against real HTTP servers: an aiohttp receiver that verifies Standard Webhooks
signatures, and a real Alertmanager process (Debian package ``prometheus-alertmanager``).

No mocks: every request crosses a socket. Backoffs are tiny so the file runs in seconds; the only
timing assertion is a lower bound (a retry never comes earlier than ``Retry-After`` asked).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from aiohttp import web

from logstream.alerts import Alert, AlertGrouper, AlertmanagerSink, Explanation, SignatureError, WebhookSink
from logstream.alerts.formats import (FormatOptions, alert_annotations, alert_labels,
                                      alertmanager_webhook_payload, label_fingerprint)
from logstream.alerts.signing import sign, signature_headers, verify
from logstream.alerts.sinks import parse_retry_after, webhook_id
from logstream.config import AlertSettings, WebhookSettings
from logstream.service.metrics import REGISTRY

pytestmark = pytest.mark.timeout(60)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ALERTMANAGER_BIN = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"
HAVE_ALERTMANAGER = shutil.which(ALERTMANAGER_BIN) is not None
NOW = datetime.now(timezone.utc).replace(microsecond=0)


# -- helpers ------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_alert(i: int = 0, stream: str = "host-1", **overrides) -> Alert:
    fields = dict(
        stream=stream, partition=0, offset=100 + i, time=NOW + timedelta(milliseconds=i),
        line=f"Received block blk_{4000 + i} of size {1000 + i} from /10.0.0.{i % 250}",
        score=7.5, threshold=4.0, model_version="tiny-llama@test",
        explanation=Explanation(surprising_tokens=[{"text": "blk", "logprob": -9.1}],
                                nearest_template="Received block <*> of size <*> from <*>",
                                template_similarity=0.8, summary="rare block size"))
    fields.update(overrides)
    return Alert(**fields)


def settings(**overrides) -> AlertSettings:
    values = dict(max_attempts=4, backoff_initial_s=0.01, backoff_max_s=0.05, queue_size=100,
                  delivery_tasks=1, request_timeout_s=5.0)
    values.update(overrides)
    return AlertSettings(**values)


def metric(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class DeadLetters(list):
    """The dead_letter callback: records (alert, reason)."""

    async def __call__(self, alert: Alert, reason: str) -> None:
        self.append((alert, reason))


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on arrival


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1. Answers from ``script`` (status, headers) in order, repeating
    the last entry; with a ``secret``, verifies each request's signature and answers 401 on mismatch.
    Deduplicates accepted messages by ``webhook-id`` the way an idempotent receiver would."""

    script: list[tuple[int, dict[str, str]]]
    secret: str | None = None
    requests: list[Received] = field(default_factory=list)
    accepted: dict[str, bytes] = field(default_factory=dict)
    signature_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # bound now, not when served: a port only chosen was taken meanwhile by the Alertmanager the test
        # starts between the two ("address already in use", seen once in a full run)
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self.port = self._socket.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append(Received(dict(request.headers), body, time.monotonic()))
        if self.secret is not None:
            try:
                verify(self.secret, request.headers, body)
            except SignatureError as exc:
                self.signature_errors.append(str(exc))
                return web.Response(status=401, text=str(exc))
        status, headers = self.script[min(len(self.requests), len(self.script)) - 1]
        if 200 <= status < 300:
            self.accepted.setdefault(request.headers.get("webhook-id", f"#{len(self.requests)}"), body)
        return web.Response(status=status, headers=headers, text="" if status < 300 else f"answer {status}")

    async def __aenter__(self) -> "Receiver":
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket).start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()


async def deliver(sink, alerts) -> None:
    await sink.start()
    try:
        for alert in alerts:
            await sink.submit(alert)
        await asyncio.wait_for(sink.wait_idle(), 20)
    finally:
        await sink.close(timeout_s=1)


def webhook_sink(url: str, dead: DeadLetters, secret: str | None = SECRET, fmt: str = "standard",
                 **alert_settings) -> WebhookSink:
    return WebhookSink(WebhookSettings(url=url, secret=secret, format=fmt), settings(**alert_settings), dead)


# -- signing ------------------------------------------------------------------------------------

def test_signature_round_trip_and_rejections():
    body, ts = b'{"a": 1}', int(time.time())
    headers = signature_headers(SECRET, "msg_1", body, timestamp=ts)
    assert headers["webhook-signature"] == sign(SECRET, "msg_1", ts, body)
    assert headers["webhook-signature"].startswith("v1,")
    verify(SECRET, headers, body)
    verify(SECRET, {k.upper(): v for k, v in headers.items()}, body)  # header names are case-insensitive
    with pytest.raises(SignatureError, match="altered"):
        verify(SECRET, headers, body + b" ")
    with pytest.raises(SignatureError, match="wrong secret"):
        verify("whsec_" + "QUJD" * 8, headers, body)
    with pytest.raises(SignatureError, match="stale"):
        verify(SECRET, signature_headers(SECRET, "msg_1", body, timestamp=ts - 301), body)
    with pytest.raises(SignatureError, match="webhook-signature"):
        verify(SECRET, {"webhook-id": "msg_1", "webhook-timestamp": str(ts)}, body)
    with pytest.raises(ValueError, match="base64"):
        sign("whsec_not*base64", "msg_1", ts, body)


def test_signature_known_vector_and_raw_secret():
    # The Standard Webhooks reference test vector.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == \
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    raw = signature_headers("plain-secret", "msg_2", body)
    verify("plain-secret", raw, body)


def test_key_rotation_accepts_either_signature():
    old, new, body = "whsec_" + "b2xkLWtleQ==", "whsec_" + "bmV3LWtleQ==", b"{}"
    headers = signature_headers([old, new], "msg_3", body)
    assert len(headers["webhook-signature"].split()) == 2
    verify(old, headers, body)
    verify(new, headers, body)
    with pytest.raises(SignatureError):
        verify("whsec_" + "b3RoZXI=", headers, body)


# -- formats ------------------------------------------------------------------------------------

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def assert_alertmanager_webhook_shape(payload: dict) -> None:
    """The keys and types of an Alertmanager (and Grafana) webhook notification, version 4."""
    top = {"version": str, "groupKey": str, "truncatedAlerts": int, "status": str, "receiver": str,
           "groupLabels": dict, "commonLabels": dict, "commonAnnotations": dict, "externalURL": str,
           "alerts": list}
    assert set(top) <= set(payload), set(top) - set(payload)
    for key, kind in top.items():
        assert isinstance(payload[key], kind), (key, payload[key])
    assert payload["version"] == "4"
    assert payload["status"] in ("firing", "resolved")
    for key in ("groupLabels", "commonLabels", "commonAnnotations"):
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in payload[key].items()), key
    assert payload["alerts"]
    for alert in payload["alerts"]:
        assert {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL",
                "fingerprint"} <= set(alert)
        assert alert["status"] in ("firing", "resolved")
        for key in ("labels", "annotations"):
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in alert[key].items()), key
        assert RFC3339.match(alert["startsAt"]) and RFC3339.match(alert["endsAt"])
        assert isinstance(alert["generatorURL"], str)
        assert re.fullmatch(r"[0-9a-f]{16}", alert["fingerprint"])


def test_alertmanager_webhook_payload_shape():
    alerts = [make_alert(0), make_alert(1, stream="host-2")]
    payload = alertmanager_webhook_payload(alerts, FormatOptions(external_url="http://logstream:8080"))
    assert_alertmanager_webhook_shape(payload)
    json.dumps(payload)  # serialisable as is
    assert payload["commonLabels"] == {"alertname": "LogAnomaly", "severity": "warning",
                                       "template_id": alerts[0].fingerprint}  # same template, other streams
    assert payload["groupLabels"] == {"alertname": "LogAnomaly"}
    first = payload["alerts"][0]
    assert first["labels"]["stream"] == "host-1"
    assert first["annotations"]["description"] == alerts[0].line
    assert first["annotations"]["alert_id"] == alerts[0].alert_id
    assert first["fingerprint"] == label_fingerprint(first["labels"])
    assert payload["alerts"][1]["fingerprint"] != first["fingerprint"]


def test_retry_after_parsing():
    now = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("3", now) == 3.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=90), usegmt=True), now) == 90.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


# -- webhook delivery -----------------------------------------------------------------------------

def test_signed_webhook_is_verified_by_the_receiver():
    async def main():
        dead = DeadLetters()
        async with Receiver([(204, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead), [make_alert()])
        return receiver, dead

    before = metric("logstream_alerts_total", sink="webhook")
    receiver, dead = asyncio.run(main())
    assert receiver.signature_errors == [] and dead == []
    assert len(receiver.requests) == 1
    assert Alert.from_bytes(receiver.requests[0].body) == make_alert()
    assert receiver.requests[0].headers["webhook-id"] == webhook_id(make_alert())
    assert metric("logstream_alerts_total", sink="webhook") == before + 1


def test_wrong_secret_is_rejected_by_the_receiver_and_not_retried():
    async def main():
        dead = DeadLetters()
        async with Receiver([(200, {})], secret=SECRET) as receiver:
            wrong = "whsec_" + base64.b64encode(b"another key, 24 bytes ok").decode()
            await deliver(webhook_sink(receiver.url, dead, secret=wrong), [make_alert()])
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert len(receiver.requests) == 1 and receiver.signature_errors
    assert receiver.accepted == {}
    assert len(dead) == 1 and "HTTP 401" in dead[0][1]


def test_500_then_200_delivers_once_with_the_same_webhook_id():
    async def main():
        dead = DeadLetters()
        async with Receiver([(500, {}), (500, {}), (200, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead), [make_alert()])
        return receiver, dead

    retries = metric("logstream_sink_retries_total", sink="webhook")
    failures = metric("logstream_sink_failures_total", sink="webhook")
    receiver, dead = asyncio.run(main())
    assert dead == [] and receiver.signature_errors == []
    assert len(receiver.requests) == 3
    assert {r.headers["webhook-id"] for r in receiver.requests} == {webhook_id(make_alert())}
    assert len({r.body for r in receiver.requests}) == 1
    assert len(receiver.accepted) == 1
    assert metric("logstream_sink_retries_total", sink="webhook") == retries + 2
    assert metric("logstream_sink_failures_total", sink="webhook") == failures + 2


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(status):
    async def main():
        dead = DeadLetters()
        async with Receiver([(status, {"Retry-After": "1"}), (200, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead), [make_alert()])
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert dead == [] and len(receiver.requests) == 2 and len(receiver.accepted) == 1
    assert receiver.requests[1].at - receiver.requests[0].at >= 1.0  # backoff alone would be <= 0.05 s


def test_retry_after_beyond_the_limit_dead_letters_instead_of_blocking():
    async def main():
        dead = DeadLetters()
        async with Receiver([(429, {"Retry-After": "3600"})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead, retry_after_max_s=60), [make_alert()])
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert len(receiver.requests) == 1
    assert len(dead) == 1 and "Retry-After 3600" in dead[0][1]


def test_receiver_always_failing_dead_letters_after_max_attempts():
    async def main():
        dead = DeadLetters()
        async with Receiver([(500, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead, max_attempts=3), [make_alert()])
        return receiver, dead

    before = metric("logstream_dead_letters_total", kind="alert_delivery")
    receiver, dead = asyncio.run(main())
    assert len(receiver.requests) == 3
    assert [a for a, _ in dead] == [make_alert()]
    assert "after 3 attempts" in dead[0][1] and "HTTP 500" in dead[0][1]
    assert metric("logstream_dead_letters_total", kind="alert_delivery") == before + 1


def test_receiver_down_dead_letters_after_max_attempts():
    async def main():
        dead = DeadLetters()
        url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there: connection refused
        await deliver(webhook_sink(url, dead, max_attempts=3), [make_alert()])
        return dead

    dead = asyncio.run(main())
    assert len(dead) == 1
    assert "after 3 attempts" in dead[0][1] and "connection failed" in dead[0][1]


def test_400_is_not_retried():
    async def main():
        dead = DeadLetters()
        async with Receiver([(400, {}), (200, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead), [make_alert()])
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert len(receiver.requests) == 1 and receiver.accepted == {}
    assert len(dead) == 1 and "HTTP 400" in dead[0][1] and "answer 400" in dead[0][1]


def test_410_disables_the_endpoint():
    async def main():
        dead = DeadLetters()
        async with Receiver([(410, {}), (200, {})], secret=SECRET) as receiver:
            sink = webhook_sink(receiver.url, dead)
            await deliver(sink, [make_alert(0), make_alert(1)])
        return receiver, dead, sink

    receiver, dead, sink = asyncio.run(main())
    assert sink.disabled
    assert len(receiver.requests) == 1  # the second alert never went out
    assert [a.offset for a, _ in dead] == [100, 101]
    assert "410" in dead[0][1] and "disabled" in dead[1][1]


def test_full_queue_applies_backpressure_or_refuses():
    async def main():
        dead = DeadLetters()
        sink = webhook_sink("http://127.0.0.1:9/unused", dead, queue_size=2)  # not started: nothing drains
        assert sink.submit_nowait(make_alert(0))
        await sink.submit(make_alert(1))
        assert not sink.submit_nowait(make_alert(2))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(sink.submit(make_alert(3)), 0.2)  # waits for room
        await sink.close(timeout_s=0)
        with pytest.raises(RuntimeError, match="closed"):
            sink.submit_nowait(make_alert(4))
        return dead

    dead = asyncio.run(main())
    # Closing never loses what was queued: undelivered alerts go to the dead-letter callback.
    assert [(a.offset, reason) for a, reason in dead] == [(100, "sink closed before delivery"),
                                                          (101, "sink closed before delivery")]


def test_close_drains_the_queue():
    async def main():
        dead = DeadLetters()
        async with Receiver([(200, {})], secret=SECRET) as receiver:
            sink = webhook_sink(receiver.url, dead, delivery_tasks=3)
            await sink.start()
            for i in range(20):
                await sink.submit(make_alert(i))
            await sink.close(timeout_s=10)
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert dead == [] and len(receiver.accepted) == 20


def test_alertmanager_webhook_format_over_http():
    async def main():
        dead = DeadLetters()
        async with Receiver([(200, {})], secret=SECRET) as receiver:
            await deliver(webhook_sink(receiver.url, dead, fmt="alertmanager-webhook"), [make_alert()])
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert dead == [] and receiver.signature_errors == []
    payload = json.loads(receiver.requests[0].body)
    assert_alertmanager_webhook_shape(payload)
    assert payload["alerts"][0]["annotations"]["alert_id"] == make_alert().alert_id


def test_burst_through_grouper_and_sink_sends_one_alert_and_one_update():
    clock = [0.0]
    grouper = AlertGrouper(window_s=60, clock=lambda: clock[0])

    async def main():
        dead = DeadLetters()
        async with Receiver([(200, {})], secret=SECRET) as receiver:
            sink = webhook_sink(receiver.url, dead)
            await sink.start()
            for i in range(1000):
                clock[0] = i * 0.01
                for alert in grouper.add(make_alert(i)):
                    await sink.submit(alert)
            clock[0] = 61.0
            for alert in grouper.flush():
                await sink.submit(alert)
            await sink.wait_idle()
            await sink.close()
        return receiver, dead

    receiver, dead = asyncio.run(main())
    assert dead == [] and receiver.signature_errors == []
    sent = [Alert.from_bytes(r.body) for r in receiver.requests]
    assert [a.count for a in sent] == [1, 1000]
    assert sent[0].alert_id == sent[1].alert_id
    assert len(receiver.accepted) == 2  # a count update is a new message: its own webhook-id


# -- a real Alertmanager --------------------------------------------------------------------------

@pytest.fixture
def alertmanager(tmp_path):
    """Starts Alertmanager processes: ``start(webhook_url=None) -> base URL``; all stopped afterwards."""
    if not HAVE_ALERTMANAGER:
        pytest.skip(f"{ALERTMANAGER_BIN} not installed (Debian package prometheus-alertmanager; "
                    "scripts/setup installs it when run as root)")
    processes = []

    def start(webhook_url: str | None = None) -> str:
        port = free_port()
        workdir = tmp_path / f"am-{port}"
        workdir.mkdir()
        receiver = {"name": "hook"}
        if webhook_url:
            receiver["webhook_configs"] = [{"url": webhook_url, "send_resolved": False}]
        # group_wait 0s: notify at once, so the webhook test does not wait 30 s for the first group.
        config = {"route": {"receiver": "hook", "group_by": ["alertname", "stream"], "group_wait": "0s",
                            "group_interval": "1s", "repeat_interval": "1h"},
                  "receivers": [receiver]}
        (workdir / "alertmanager.yml").write_text(json.dumps(config))  # JSON is YAML
        log = open(workdir / "alertmanager.log", "wb")
        process = subprocess.Popen(
            [ALERTMANAGER_BIN, f"--config.file={workdir / 'alertmanager.yml'}",
             f"--storage.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
             "--cluster.listen-address="], stdout=log, stderr=subprocess.STDOUT)
        processes.append((process, log))
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                log_text = (workdir / "alertmanager.log").read_text()
                raise RuntimeError(f"alertmanager exited: {log_text[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return base
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("alertmanager did not become ready within 20 s")
            time.sleep(0.05)

    yield start
    for process, log in processes:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def get_alerts(base: str) -> list[dict]:
    with urllib.request.urlopen(base + "/api/v2/alerts", timeout=5) as response:
        return json.load(response)


def test_alertmanager_receives_alerts_through_the_api(alertmanager):
    base = alertmanager()
    first, other = make_alert(0), make_alert(1, stream="host-2")
    update = first.model_copy(update={"count": 5, "last_seen": first.time + timedelta(seconds=3)})

    async def main():
        dead = DeadLetters()
        sink = AlertmanagerSink(settings(external_url="http://logstream.test/"), dead, base_url=base)
        await deliver(sink, [first, other, update])
        return dead

    before = metric("logstream_alerts_total", sink="alertmanager")
    assert asyncio.run(main()) == []
    assert metric("logstream_alerts_total", sink="alertmanager") == before + 3
    stored = {a["labels"]["stream"]: a for a in get_alerts(base)}
    assert set(stored) == {"host-1", "host-2"}  # the update refreshed host-1's alert, not a third one
    host1 = stored["host-1"]
    assert host1["labels"] == {"alertname": "LogAnomaly", "stream": "host-1", "severity": "warning",
                               "template_id": first.fingerprint}
    assert host1["annotations"] == alert_annotations(update)
    assert host1["annotations"]["count"] == "5" and host1["annotations"]["description"] == first.line
    assert host1["status"]["state"] == "active"
    assert host1["fingerprint"] == label_fingerprint(host1["labels"])
    assert host1["generatorURL"] == "http://logstream.test/"
    assert datetime.fromisoformat(host1["startsAt"]) == first.first_seen
    assert stored["host-2"]["annotations"]["alert_id"] == other.alert_id


def test_alertmanager_rejects_an_invalid_alert_without_retries(alertmanager):
    base = alertmanager()

    class EmptyStreamSink(AlertmanagerSink):  # Alertmanager refuses alerts whose label set is empty
        def body(self, alert):
            return b'[{"labels": {}}]'

    async def main():
        dead = DeadLetters()
        await deliver(EmptyStreamSink(settings(), dead, base_url=base), [make_alert()])
        return dead

    dead = asyncio.run(main())
    assert len(dead) == 1 and "HTTP 400" in dead[0][1]


def test_our_webhook_payload_matches_what_alertmanager_sends(alertmanager):
    """Alertmanager notifies our receiver of an alert we posted; its payload and ours must have the
    same keys, the same types and the same identities (fingerprint, groupKey, labels)."""
    hook = Receiver([(200, {})])
    base = alertmanager(webhook_url=hook.url)
    alert = make_alert(0)

    async def main():
        async with hook:
            dead = DeadLetters()
            await deliver(AlertmanagerSink(settings(), dead, base_url=base), [alert])
            deadline = time.monotonic() + 15
            while not hook.requests and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return dead

    assert asyncio.run(main()) == []
    assert hook.requests, "Alertmanager did not notify the webhook within 15 s"
    real = json.loads(hook.requests[0].body)
    ours = alertmanager_webhook_payload([alert], FormatOptions(receiver="hook"))
    assert_alertmanager_webhook_shape(real)
    assert_alertmanager_webhook_shape(ours)
    assert set(ours) == set(real)
    assert set(ours["alerts"][0]) == set(real["alerts"][0])
    for key in ("version", "status", "receiver", "groupKey", "groupLabels", "commonLabels",
                "truncatedAlerts"):
        assert ours[key] == real[key], key
    for key in ("status", "labels", "annotations", "fingerprint", "endsAt"):
        assert ours["alerts"][0][key] == real["alerts"][0][key], key
    assert datetime.fromisoformat(ours["alerts"][0]["startsAt"]) == \
        datetime.fromisoformat(real["alerts"][0]["startsAt"])
    assert alert_labels(alert) == real["alerts"][0]["labels"]

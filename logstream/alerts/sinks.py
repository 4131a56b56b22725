"""Alert delivery over HTTP: signed webhooks and Alertmanager's API.

Each sink owns a bounded queue (backpressure: ``submit`` waits when it is full, ``submit_nowait``
returns False so the caller can dead-letter) and a few delivery tasks. Delivery follows what
Alertmanager and Standard Webhooks senders do: 2xx is success; 5xx, timeouts and connection
errors are retried with exponential backoff and full jitter; 429 and 503 wait for ``Retry-After``
when the receiver gives one; other 4xx are not retried; 410 Gone disables the endpoint. The
``webhook-id`` is the same on every attempt, so receivers can deduplicate. An alert that cannot be
delivered goes to the ``dead_letter(alert, reason)`` callback, never silently away.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import aiohttp

from logstream.alerts.formats import (FormatOptions, alertmanager_api_alerts, alertmanager_webhook_payload,
                                      generic_payload)
from logstream.alerts.model import Alert
from logstream.alerts.signing import signature_headers
from logstream.config import AlertSettings, WebhookSettings
from logstream.service.metrics import ALERTS, DEAD_LETTERS, SINK_FAILURES, SINK_QUEUE, SINK_RETRIES

log = logging.getLogger(__name__)

DeadLetter = Callable[[Alert, str], Awaitable[None]]
RETRY_AFTER_STATUSES = frozenset({429, 503})
REASON_BODY_CHARS = 200


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay in seconds, or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = datetime.now(timezone.utc) if now is None else now
    return max(0.0, (when - now).total_seconds())


def webhook_id(alert: Alert) -> str:
    """The receiver's idempotency key: the same for every attempt and re-send of one alert state;
    a count update of the same alert is a new message."""
    return f"msg_{alert.alert_id}_{alert.count}"


@dataclass
class _Outcome:
    done: bool                  # delivered, or not worth retrying
    delivered: bool = False
    reason: str = ""
    retry_after: float | None = None


class HttpSink:
    """Base of the HTTP sinks: queue, delivery tasks, retries, dead letters, metrics."""

    kind = "http"  # the ``sink`` metrics label: one per sink type, never a URL

    def __init__(self, url: str, alerts: AlertSettings, dead_letter: DeadLetter, *,
                 session: aiohttp.ClientSession | None = None):
        self.url = url
        self.settings = alerts
        self.format_options = FormatOptions.from_settings(alerts)
        self.dead_letter = dead_letter
        self.disabled = False  # set on 410 Gone: the receiver asked us to stop
        self._queue: asyncio.Queue[Alert] = asyncio.Queue(maxsize=alerts.queue_size)
        self._session = session
        self._owns_session = session is None
        self._tasks: list[asyncio.Task] = []
        self._closing = False
        self._keep_queued = False

    # -- what a subclass decides -------------------------------------------------------------

    def body(self, alert: Alert) -> bytes:
        raise NotImplementedError

    def headers(self, alert: Alert, body: bytes) -> dict[str, str]:
        """Per attempt (a signature's timestamp must be fresh)."""
        return {"content-type": "application/json", "webhook-id": webhook_id(alert)}

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self._tasks:
            return
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.settings.request_timeout_s))
        self._tasks = [asyncio.create_task(self._run(), name=f"{self.kind}-delivery-{i}")
                       for i in range(self.settings.delivery_tasks)]

    async def submit(self, alert: Alert) -> None:
        """Queue an alert; waits while the queue is full (backpressure)."""
        self._check_open()
        await self._queue.put(alert)
        SINK_QUEUE.labels(self.kind).inc()

    def submit_nowait(self, alert: Alert) -> bool:
        """Queue an alert if there is room; False when the queue is full (the caller dead-letters)."""
        self._check_open()
        try:
            self._queue.put_nowait(alert)
        except asyncio.QueueFull:
            return False
        SINK_QUEUE.labels(self.kind).inc()
        return True

    async def wait_idle(self) -> None:
        """Until every queued alert was delivered or dead-lettered."""
        await self._queue.join()

    async def close(self, timeout_s: float = 10.0, keep_queued: bool = False) -> None:
        """Stop taking alerts, deliver what is queued for up to ``timeout_s``, dead-letter the rest
        (``keep_queued``: drop the rest instead, for a caller that delivers them again later: the
        worker, whose alerts wait on the alerts topic until delivered)."""
        self._closing = True
        self._keep_queued = keep_queued
        if self._tasks:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout_s)
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []
        while not self._queue.empty():
            alert = self._queue.get_nowait()
            SINK_QUEUE.labels(self.kind).dec()
            if not keep_queued:
                await self._give_up(alert, "sink closed before delivery")
            self._queue.task_done()
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    def _check_open(self) -> None:
        if self._closing:
            raise RuntimeError(f"{self.kind} sink {self.url} is closed")

    # -- delivery ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            alert = await self._queue.get()
            SINK_QUEUE.labels(self.kind).dec()
            try:
                await self._deliver(alert)
            except asyncio.CancelledError:
                if not self._keep_queued:
                    await self._give_up(alert, "sink closed during delivery")
                raise
            except Exception as exc:  # a bug here must not kill the delivery task
                log.exception("%s sink: unexpected error delivering alert %s", self.kind, alert.alert_id)
                await self._give_up(alert, f"internal error: {exc!r}")
            finally:
                self._queue.task_done()

    async def _deliver(self, alert: Alert) -> None:
        if self.disabled:
            await self._give_up(alert, f"endpoint {self.url} disabled after 410 Gone")
            return
        body = self.body(alert)  # once: every attempt sends the same bytes
        attempts, retry_for = self.settings.max_attempts, self.settings.retry_for_s
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            outcome = await self._attempt(alert, body)
            if outcome.delivered:
                ALERTS.labels(self.kind).inc()
                return
            SINK_FAILURES.labels(self.kind).inc()
            if outcome.done:
                await self._give_up(alert, outcome.reason)
                return
            delay = self._backoff(attempt)
            if attempts is not None and attempt >= attempts:
                await self._give_up(alert, f"gave up after {attempts} attempts; last: {outcome.reason}")
                return
            if time.monotonic() - started + delay > retry_for:
                await self._give_up(alert, f"gave up after {attempt} attempts in {time.monotonic() - started:.0f} s "
                                           f"(alerts.retry_for_s={retry_for:g}); last: {outcome.reason}")
                return
            if outcome.retry_after is not None:
                limit = self.settings.retry_after_max_s
                if outcome.retry_after > limit:
                    await self._give_up(alert, f"{outcome.reason}; Retry-After {outcome.retry_after:g} s "
                                               f"exceeds retry_after_max_s={limit:g}")
                    return
                delay = outcome.retry_after  # never earlier than the receiver asked
            log.info("%s sink: attempt %d for alert %s failed (%s); retrying in %.2f s",
                     self.kind, attempt, alert.alert_id, outcome.reason, delay)
            SINK_RETRIES.labels(self.kind).inc()
            await asyncio.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max, initial * 2^(attempt-1))], so retrying senders spread out."""
        cap = min(self.settings.backoff_max_s, self.settings.backoff_initial_s * 2 ** (attempt - 1))
        return random.uniform(0, cap)

    async def _attempt(self, alert: Alert, body: bytes) -> _Outcome:
        try:
            async with self._session.post(self.url, data=body, headers=self.headers(alert, body)) as response:
                status = response.status
                if 200 <= status < 300:
                    return _Outcome(done=True, delivered=True)
                text = (await response.text(errors="replace"))[:REASON_BODY_CHARS]
                reason = f"HTTP {status} from {self.url}" + (f": {text.strip()}" if text.strip() else "")
                if status == 410:
                    self.disabled = True
                    log.warning("%s sink: %s answered 410 Gone; endpoint disabled", self.kind, self.url)
                    return _Outcome(done=True, reason=reason + " (endpoint disabled)")
                if status in RETRY_AFTER_STATUSES:
                    return _Outcome(done=False, reason=reason,
                                    retry_after=parse_retry_after(response.headers.get("Retry-After")))
                if status >= 500:
                    return _Outcome(done=False, reason=reason)
                # Other 4xx (and stray 1xx/3xx): the request itself is wrong; retrying won't help.
                return _Outcome(done=True, reason=reason)
        except asyncio.TimeoutError:
            return _Outcome(done=False,
                            reason=f"timed out after {self.settings.request_timeout_s:g} s: {self.url}")
        except aiohttp.ClientError as exc:
            return _Outcome(done=False, reason=f"connection failed: {exc}")

    async def _give_up(self, alert: Alert, reason: str) -> None:
        DEAD_LETTERS.labels(kind="alert_delivery").inc()
        log.warning("%s sink: alert %s dead-lettered: %s", self.kind, alert.alert_id, reason)
        try:
            await self.dead_letter(alert, reason)
        except Exception:
            log.exception("%s sink: dead-letter callback failed for alert %s", self.kind, alert.alert_id)


class WebhookSink(HttpSink):
    """POSTs each alert to a webhook: the Alert JSON signed per Standard Webhooks (``standard``), or
    an Alertmanager version "4" payload (``alertmanager-webhook``), signed too when a secret is set."""

    kind = "webhook"

    def __init__(self, webhook: WebhookSettings, alerts: AlertSettings, dead_letter: DeadLetter, *,
                 session: aiohttp.ClientSession | None = None):
        super().__init__(webhook.url, alerts, dead_letter, session=session)
        self.webhook = webhook

    def body(self, alert: Alert) -> bytes:
        if self.webhook.format == "alertmanager-webhook":
            return json.dumps(alertmanager_webhook_payload([alert], self.format_options)).encode()
        return generic_payload(alert)

    def headers(self, alert: Alert, body: bytes) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        headers.update(signature_headers(self.webhook.secret or [], webhook_id(alert), body))
        return headers


class AlertmanagerSink(HttpSink):
    """POSTs alerts to Alertmanager's ``/api/v2/alerts``; Alertmanager groups, silences and routes them."""

    kind = "alertmanager"

    def __init__(self, alerts: AlertSettings, dead_letter: DeadLetter, *, base_url: str | None = None,
                 session: aiohttp.ClientSession | None = None):
        base_url = base_url or alerts.alertmanager_url
        if not base_url:
            raise ValueError("AlertmanagerSink needs alerts.alertmanager_url (or base_url)")
        super().__init__(base_url.rstrip("/") + "/api/v2/alerts", alerts, dead_letter, session=session)

    def body(self, alert: Alert) -> bytes:
        return json.dumps(alertmanager_api_alerts([alert], self.format_options)).encode()


def build_sinks(alerts: AlertSettings, dead_letter: DeadLetter) -> list[HttpSink]:
    """One sink per configured webhook, plus Alertmanager if its URL is set (not started yet)."""
    sinks: list[HttpSink] = [WebhookSink(w, alerts, dead_letter) for w in alerts.webhooks]
    if alerts.alertmanager_url:
        sinks.append(AlertmanagerSink(alerts, dead_letter))
    return sinks

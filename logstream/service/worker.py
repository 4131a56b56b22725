"""The Faust worker: score every line of the input topic, publish alerts, at least once.

One agent reads the input topic as raw bytes in micro-batches (``take_events``: ``take`` with each
message's partition, offset and timestamp). For each batch:

1. every message is decoded (``decode_entries``: a raw line, an envelope, a shipper's record or an
   OTLP export of many; text that is not valid Unicode is refused); one that holds no log entry goes
   to the dead-letter topic with the reason;
2. the entries are scored in one forward pass on the model thread (``ModelWorker``); if that fails,
   every entry of the batch is dead-lettered with the reason;
3. scores go to the scores topic (if configured); anomalies go through the ``AlertGrouper``, the
   alerts it lets through go to the alerts topic and to the webhook/Alertmanager sinks;
4. the batch's loop body returns only once Kafka acknowledged everything it published, and only
   then does Faust ack the batch's messages (and commit their offsets, every
   ``worker.commit_interval_s``). A worker that dies mid-batch re-reads the batch on restart.

If Kafka does not acknowledge what a batch published (dead letters included), the batch's messages
are left unacknowledged, so their offsets are never committed, and the worker stops with an error:
it is restarted and reads them again, nothing is skipped.

Faust's own exactly-once mode is not used: the bundled broker (Tansu 0.6) refuses the idempotent
producer handshake it needs; the producer uses acks=all.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import faust
from faust.types import TP
from faust.types.tuples import ack_lock

from ..alerts import Alert, AlertGrouper, build_sinks
from ..alerts.sinks import HttpSink
from ..config import KafkaSettings, Settings
from .broker_watch import BrokerWatch
from .envelope import EnvelopeError, LogEnvelope, decode_entries
from .feedback import FeedbackError, FeedbackRecord, resolve, send_feedback
from .inflight import InflightLog
from .kafka_transport import use_fetch_wait
from .metrics import (ADAPT_ROUNDS, ALERTS, BROKER_OUTAGE_SECONDS, BROKER_OUTAGES, BROKER_UP, CONSUMER_LAG,
                      DEAD_LETTERS, EMPTY_LINES, FEEDBACK_APPLIED, FEEDBACK_INVALID, MODEL_SWAP_FAILURES,
                      PUBLISH_RETRIES, PUBLISH_WAIT, READY, TRUNCATED_LINES, initialise_labels)
from .model_worker import EntryMeta, ModelWorker, Scored
from .records import DeadLetterKind, DeadLetterRecord
from .streams import StreamRouter
from .topics import ensure_topics, unreachable
from .worker_slot import claim_slot

log = logging.getLogger("logstream.worker")

AGENT_NAME = "logstream-score"
DELIVERY_AGENT_NAME = "logstream-deliver"  # reads the alerts topic back for the HTTP sinks
RECENT_ALERTS = 10_000  # alerts kept in memory so HTTP feedback needs no search of the alerts topic


class PublishFailed(RuntimeError):
    """Kafka did not acknowledge a record the worker had to publish."""


@dataclass
class Pending:
    """A record on its way to Kafka, kept so that it can be sent again if the broker does not take it."""

    topic: object
    key: bytes | None
    value: bytes
    future: asyncio.Future


async def _sent(topic, key: bytes | None, value: bytes) -> Pending:
    return Pending(topic, key, value, await topic.send(key=key, value=value))


def broker_urls(bootstrap_servers: str) -> list[str]:
    return [f"kafka://{server.strip()}" for server in bootstrap_servers.split(",") if server.strip()]


def faust_credentials(kafka: KafkaSettings):
    """The Faust worker's side of ``KafkaSettings.client_options``: the same protocol, mechanism, user
    and TLS context, as Faust's credentials objects (its aiokafka driver turns them back into options)."""
    if kafka.security_protocol == "PLAINTEXT":
        return None
    ssl_context = kafka.ssl_context() if kafka.security_protocol.endswith("SSL") else None
    if kafka.security_protocol == "SSL":
        return faust.SSLCredentials(ssl_context)
    return faust.SASLCredentials(username=kafka.sasl_username, password=kafka.sasl_password.get_secret_value(),
                                 ssl_context=ssl_context, mechanism=kafka.sasl_mechanism)


def topic_names(settings: Settings) -> list[str]:
    kafka = settings.kafka
    names = [kafka.input_topic, kafka.alerts_topic, kafka.dead_letter_topic, kafka.feedback_topic]
    return names + [kafka.scores_topic] if kafka.scores_topic else names


@dataclass(frozen=True)
class InputMessage:
    """One message of the input topic, as the agent hands it over (raw bytes and where it was)."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: float | None = None  # Kafka timestamp, seconds since the epoch

    @classmethod
    def from_event(cls, event) -> "InputMessage":
        m = event.message
        return cls(event.key, event.value, m.topic, m.partition, m.offset, m.timestamp)

    @property
    def meta(self) -> EntryMeta:
        kafka_time = datetime.fromtimestamp(self.timestamp, UTC) if self.timestamp else None
        return EntryMeta(topic=self.topic, partition=self.partition, offset=self.offset,
                         kafka_time=kafka_time)


def decode_message(message: InputMessage, kafka=None) -> list[tuple[str, LogEnvelope]]:
    """The entries of an input message (several for an OTLP export), as ``kafka`` settings read them."""
    if kafka is None:
        return decode_entries(message.value, message.key)
    return decode_entries(message.value, message.key, kafka.input_format, kafka.input_mapping)


def abandon(events: Sequence) -> None:
    """Keep Faust from ever acking (and so committing) these events' messages.

    ``take_events`` acks a batch when its loop body is left, even by an exception; a message marked
    acked here is skipped by that ack, so the commit stops below it and a restart reads it again.
    """
    with ack_lock:
        for event in events:
            event.message.acked = True


class BatchProcessor:
    """What the agent does with each batch, and what the timers and rebalance hooks do."""

    def __init__(self, settings: Settings, model: ModelWorker, alerts_topic, dead_letter_topic,
                 scores_topic=None, inflight: InflightLog | None = None):
        self.settings = settings
        self.inflight = inflight
        self.model = model
        self.alerts_topic = alerts_topic
        self.dead_letter_topic = dead_letter_topic
        self.scores_topic = scores_topic
        self.router = StreamRouter(settings.scoring.stream_key)
        self.grouper = AlertGrouper(settings.alerts.group_window_s, max_groups=settings.alerts.max_groups)
        self.sinks: list[HttpSink] = build_sinks(settings.alerts, dead_letter=self.dead_letter_alert)
        self._sinks_started = False
        self._revoked: set[tuple[str, int]] = set()  # revoked, not yet known to be gone for good
        self.assigned_once = False  # the consumer group has been joined (readiness)
        self.recent_alerts: OrderedDict[str, Alert] = OrderedDict()  # alert id -> alert, for feedback
        self.on_scored: Callable[[float], None] | None = None  # told how long each batch's oldest line waited

    async def start(self) -> None:
        if not self._sinks_started:
            for sink in self.sinks:
                await sink.start()
            self._sinks_started = True

    # -- one batch ----------------------------------------------------------------------------

    async def process(self, messages: Sequence[InputMessage]) -> None:
        """Decode, score and publish one batch; returns once Kafka acknowledged all it published.
        Messages the worker held when it last died are handled one at a time (``inflight``)."""
        await self.start()
        if self.inflight is None:
            return await self._process(messages)
        run: list[InputMessage] = []
        for message in messages:  # in offset order: suspects alone, the others in runs between them
            key = (message.topic, message.partition, message.offset)
            if key not in self.inflight.suspects:
                run.append(message)
                continue
            await self._held(run)
            run = []
            if key == self.inflight.poison:
                await self._acknowledged([await self._dead_letter(
                    "poison pill: the worker died while handling this message alone, after dying with it in a "
                    "batch", "poison", message)])
                self.inflight.done([key])
            else:
                await self._held([message], alone=True)
        await self._held(run)

    async def _held(self, messages: list[InputMessage], alone: bool = False) -> None:
        if not messages:
            return
        keys = [(m.topic, m.partition, m.offset) for m in messages]
        self.inflight.hold(keys, alone)
        await self._process(messages)
        self.inflight.done(keys)

    async def _process(self, messages: Sequence[InputMessage]) -> None:
        pending: list[Pending] = []  # deliveries Kafka must acknowledge before the batch is done
        entries: list[tuple[str, str, EntryMeta]] = []
        sources: list[InputMessage] = []
        for message in messages:
            meta = message.meta
            try:
                decoded = decode_message(message, self.settings.kafka)
            except EnvelopeError as exc:
                pending.append(await self._dead_letter(str(exc), "envelope", message))
                continue
            for stream, envelope in decoded:
                if not envelope.line.strip():  # nothing to read: counted, not scored (it would score as odd)
                    EMPTY_LINES.inc()
                    continue
                capped = envelope.capped(self.settings.tail.max_line_bytes)
                if capped is not envelope:
                    TRUNCATED_LINES.inc()
                    envelope = capped
                keyed = self.router.stream_for(envelope.line, None)  # keyed streams are sessions
                stream = keyed or stream
                self.router.seen(stream, message.topic, message.partition)
                entries.append((stream, envelope.line, replace(meta, time=envelope.timestamp, session=keyed is not None,
                                                               level=envelope.fields.get("level"))))
                sources.append(message)
        try:
            scored = await self.model.score_batch(entries)
        except Exception as exc:
            log.exception("scoring a batch of %d entries failed; dead-lettering them", len(entries))
            reason = f"scoring failed: {type(exc).__name__}: {exc}"
            for message in dict.fromkeys(sources):  # an OTLP message's entries are dead-lettered as one
                pending.append(await self._dead_letter(reason, "scoring", message))
            scored = []
        pushed_out = self.router.take_pushed_out()
        if pushed_out:  # seen least recently of more streams than the router keeps: their windows go too
            await self.model.drop_streams(pushed_out)
        self._report_wait(scored)
        pending += await self._publish_scores(scored)
        alerts = [alert for s in scored if s.alert is not None for alert in self.grouper.add(s.alert)]
        alerts += await self._ended_sessions()
        pending += await self._publish_alerts(alerts)
        await self._acknowledged(pending)

    def _report_wait(self, scored: list[Scored]) -> None:
        """How long the batch's oldest line waited from its Kafka timestamp to its score."""
        oldest = min((s.meta.kafka_time for s in scored if s.meta.kafka_time is not None), default=None)
        if self.on_scored is not None and oldest is not None:
            self.on_scored(max(0.0, (datetime.now(UTC) - oldest).total_seconds()))

    async def _ended_sessions(self) -> list[Alert]:
        """End the sessions gone quiet; the alerts of abnormal ones. Ended sessions are forgotten
        here too: ids of finished blocks or requests never come back."""
        try:
            alerts, ended = await self.model.end_quiet_sessions()
        except Exception:  # the sessions stay open and are tried again; the batch's lines are handled
            log.exception("ending quiet sessions failed; they stay open until the next try")
            return []
        self.router.forget(ended)
        return [grouped for alert in alerts for grouped in self.grouper.add(alert)]

    async def end_quiet_sessions(self) -> int:
        """Score the ends of sessions gone quiet and publish the alerts of abnormal ones."""
        alerts = await self._ended_sessions()
        if alerts:
            await self._acknowledged(await self._publish_alerts(alerts))
        return len(alerts)

    async def _publish_scores(self, scored: list[Scored]) -> list[Pending]:
        if self.scores_topic is None:
            return []
        version = self.model.model_version
        return [await _sent(self.scores_topic, s.stream.encode(), s.record(version).to_bytes()) for s in scored]

    async def _publish_alerts(self, alerts: list[Alert]) -> list[Pending]:
        pending = []
        for alert in alerts:
            self.recent_alerts[alert.alert_id] = alert
            self.recent_alerts.move_to_end(alert.alert_id)
            if len(self.recent_alerts) > RECENT_ALERTS:
                self.recent_alerts.popitem(last=False)
            pending.append(await _sent(self.alerts_topic, alert.stream.encode(), alert.to_bytes()))
            ALERTS.labels(sink="topic").inc()  # the default sink counts too (the webhooks count on delivery)
        return pending  # the HTTP sinks take the alerts from the topic (``deliver``): a crash loses none

    async def deliver(self, values: list[bytes | None]) -> None:
        """Hand alerts read back from the alerts topic to every HTTP sink and wait until each was
        delivered or dead-lettered: only then are their offsets committed, so alerts a crash caught
        on their way are delivered after the restart (again, with the same ``webhook-id``)."""
        alerts = []
        for value in values:
            try:
                alerts.append(Alert.from_bytes(value))
            except (ValueError, TypeError) as exc:  # not ours: nothing a receiver could use
                log.warning("skipping a record of the alerts topic that is not an alert: %s", exc)
        await self.start()
        for sink in self.sinks:
            for alert in alerts:
                await sink.submit(alert)  # waits while the sink's queue is full
        await asyncio.gather(*(sink.wait_idle() for sink in self.sinks))

    async def _dead_letter(self, reason: str, kind: DeadLetterKind, message: InputMessage) -> Pending:
        DEAD_LETTERS.labels(kind=kind).inc()
        log.warning("dead letter (%s) %s[%s]@%s: %s", kind, message.topic, message.partition, message.offset,
                    reason)
        record = DeadLetterRecord.for_message(reason, kind, topic=message.topic, partition=message.partition,
                                              offset=message.offset, key=message.key, value=message.value)
        return await _sent(self.dead_letter_topic, message.key, record.to_bytes())

    async def _send_alert_dead_letter(self, alert: Alert, reason: str) -> Pending:
        record = DeadLetterRecord.for_message(
            reason, "alert_delivery", topic=self.settings.kafka.input_topic, partition=alert.partition,
            offset=alert.offset, key=alert.stream.encode(), value=alert.to_bytes())
        return await _sent(self.dead_letter_topic, alert.stream.encode(), record.to_bytes())

    async def dead_letter_alert(self, alert: Alert, reason: str) -> None:
        """The sinks' callback for an alert they could not deliver (they count it in the metrics)."""
        await self._acknowledged([await self._send_alert_dead_letter(alert, reason)])

    async def _acknowledged(self, pending: list[Pending]) -> None:
        """Wait until Kafka acknowledged every record; send the failed ones again (1 s, doubling up to
        30 s between tries) while the broker is away, for at most ``worker.publish_retry_for_s``. The
        batch's offsets are not committed meanwhile, so a crash or a stop loses nothing either way."""
        worker = self.settings.worker
        started, wait = asyncio.get_running_loop().time(), 1.0
        while pending:
            results = await asyncio.gather(*(p.future for p in pending), return_exceptions=True)
            failed = [p for p, r in zip(pending, results) if isinstance(r, BaseException)]
            if not failed:
                PUBLISH_WAIT.observe(asyncio.get_running_loop().time() - started)
                return
            error = next(r for r in results if isinstance(r, BaseException))
            waited = asyncio.get_running_loop().time() - started
            if worker.publish_retry_for_s is not None and waited + wait > worker.publish_retry_for_s:
                raise PublishFailed(f"Kafka did not acknowledge {len(failed)} of {len(pending)} records in "
                                    f"{waited:.0f} s: {error!r}")
            PUBLISH_RETRIES.inc(len(failed))
            log.warning("Kafka did not acknowledge %d of %d records (%r); sending them again in %.0f s (the "
                        "batch's offsets wait)", len(failed), len(pending), error, wait)
            await asyncio.sleep(wait)
            wait = min(2 * wait, 30.0)
            pending = [await _sent(p.topic, p.key, p.value) for p in failed]

    # -- operator feedback ------------------------------------------------------------------------

    async def submit_feedback(self, record: FeedbackRecord) -> FeedbackRecord:
        """Publish feedback (from the HTTP API) to the feedback topic; every worker then applies it."""
        alert = self.recent_alerts.get(record.alert_id)
        if alert is not None and not record.complete:
            record = record.with_alert(alert)
        return await send_feedback(self.settings.kafka, record)

    async def apply_feedback(self, value: bytes | None) -> bool:
        """Apply one record of the feedback topic to the scorer's thresholds; False if unusable."""
        try:
            record = FeedbackRecord.model_validate_json(value or b"")
            alert = self.recent_alerts.get(record.alert_id)
            record = record.with_alert(alert) if alert is not None and not record.complete else record
            record = await resolve(self.settings.kafka, record)
        except (ValueError, FeedbackError) as exc:  # pydantic's ValidationError is a ValueError
            FEEDBACK_INVALID.inc()
            log.warning("ignoring a feedback record that cannot be applied: %s", exc)
            return False
        if await self.model.mark_normal(record.stream, record.line, record.score):
            FEEDBACK_APPLIED.inc()
            log.info("alert %s marked normal (stream %s): lines like %r stop alerting", record.alert_id,
                     record.stream, record.line[:120])
            return True
        log.warning("feedback for alert %s not applied: thresholds are fixed (scoring.threshold or "
                    "scoring.adaptive.enabled false)", record.alert_id)
        return False

    # -- timers and rebalances ----------------------------------------------------------------

    async def flush_groups(self, force: bool = False) -> int:
        """Publish the count updates of alert groups whose window has passed (all of them if ``force``)."""
        updates = self.grouper.flush(force=force)
        if updates:
            await self._acknowledged(await self._publish_alerts(updates))
        return len(updates)

    def partitions_revoked(self, revoked: set[TP]) -> None:
        # Faust rebalances eagerly: every partition is revoked, then some come straight back. The
        # streams of those that come back lost no lines, so they are dropped only once the new
        # assignment shows which partitions really went away.
        self._revoked |= {(tp.topic, tp.partition) for tp in revoked}

    async def partitions_assigned(self, assigned: set[TP]) -> None:
        self.assigned_once = True
        READY.set(1)
        kept = {(tp.topic, tp.partition) for tp in assigned}
        gone_partitions, self._revoked = self._revoked - kept, set()
        gone = self.router.revoke(gone_partitions)
        if gone:
            dropped = await self.model.drop_streams(gone)
            log.info("partitions %s moved away: dropped %d of %d streams from the cache",
                     sorted(p for _, p in gone_partitions), dropped, len(gone))
        mine = sorted(tp.partition for tp in assigned if tp.topic == self.settings.kafka.input_topic)
        log.info("input partitions assigned: %s; streams new to this worker start warming up", mine)

    async def close(self) -> None:
        """Publish pending count updates, let the sinks deliver what they hold, stop the model thread."""
        try:
            await asyncio.wait_for(self.flush_groups(force=True), self.settings.worker.shutdown_timeout_s)
        except Exception as exc:  # shutting down anyway: say what was lost
            log.error("could not publish the last alert count updates: %r", exc)
        for sink in self.sinks:  # what is not delivered by then waits on the alerts topic for the next start
            await sink.close(self.settings.worker.shutdown_timeout_s, keep_queued=True)
        self.model.close()


class Adaptation:
    """Continual fine-tuning in the worker: start due rounds in the background, swap finished ones in,
    and follow the store's pointer (``logstream model rollback`` moves it)."""

    def __init__(self, settings: Settings, model: ModelWorker):
        from ..adapt.background import RoundRunner

        self.model = model
        self.runner = RoundRunner(settings.adapt, model.store) if settings.adapt.enabled else None
        self.swapping: asyncio.Task | None = None  # a new version being made ready beside scoring

    async def tick(self) -> None:
        """One look, quickly: a swap is started here and made ready in the background (it takes longer
        than the timer's interval, which Faust reports as an overlapping timer when awaited)."""
        running = self.runner.running if self.runner is not None else None
        if running is not None and running.done():
            self.runner.running = None
            if running.exception() is not None:
                ADAPT_ROUNDS.labels(result="failed").inc()
                log.error("a fine-tuning round failed; the current model stays: %s", running.exception())
            else:
                ADAPT_ROUNDS.labels(result="ok").inc()
        if self.swapping is not None:
            if not self.swapping.done():
                return
            swap, self.swapping = self.swapping, None
            if swap.exception() is not None:
                MODEL_SWAP_FAILURES.inc()
                log.error("could not swap in model version %s; the current one stays (tried again at the next "
                          "check): %s", swap.get_name(), swap.exception())
        wanted = self.model.store.current_version()
        if wanted != self.model.served:  # a new round finished, or an operator rolled back
            self.swapping = asyncio.get_running_loop().create_task(self.model.swap(wanted), name=wanted)
            return
        if self.runner is not None and not self.runner.busy:
            round_ = await self.model.due_round()
            if round_ is not None:
                log.info("fine-tuning round for %s on %d recent lines, in the background", ", ".join(round_.sources),
                         round_.lines)
                self.runner.start(round_, self.model.store.current())

    async def close(self) -> None:
        """At shutdown: a swap being made ready is dropped (the next start serves the store's current version)."""
        if self.swapping is not None and not self.swapping.done():
            self.swapping.cancel()
            await asyncio.gather(self.swapping, return_exceptions=True)


def partition_end(listed: int | None, fetched: int | None) -> int | None:
    """A partition's end offset from the broker's two answers: its ListOffsets answer (``listed``) and the
    high watermark of the consumer's latest fetch of it (``fetched``). Neither is above the real end, and
    each can be below it: the fetch's is stale while the consumer is not fetching (measured: the gauge
    read 0-39 while the worker was stuck behind 16,584 lines), and the bundled broker answers ListOffsets
    with its last record batch's first offset (1,459 for 2,000 records: ``benchmarks/broker_probes.py
    end-offsets``). The larger is exact whenever either is."""
    known = [offset for offset in (listed, fetched) if offset is not None and offset >= 0]
    return max(known) if known else None


async def update_consumer_lag(app: faust.App, input_topic: str) -> int | None:
    """Sum over this worker's input partitions of the end offset - committed offset (or position).

    The end offsets are asked of the broker each time (``highwaters``: a ListOffsets request) and taken
    together with the latest fetch's high watermark (``partition_end``). Faust keeps committed offsets
    in a private mapping (``Consumer._committed_offset``); where it is missing the fetch position is
    used, which leaves out messages fetched but not yet scored.
    """
    consumer = app.consumer
    committed = getattr(consumer, "_committed_offset", {})
    partitions = [tp for tp in consumer.assignment() if tp.topic == input_topic]
    ends = await consumer.highwaters(*partitions) if partitions else {}
    lag = 0
    for tp in partitions:
        try:
            fetched = consumer.highwater(tp)
        except AssertionError:  # aiokafka's: no longer assigned (a rebalance meanwhile)
            continue
        end = partition_end(ends.get(tp), fetched)
        if end is None:
            continue
        done = committed.get(tp)
        if done is None:
            done = await consumer.position(tp)
        lag += max(0, end - (done or 0))
    CONSUMER_LAG.set(lag)
    return lag


def build_app(settings: Settings, model: ModelWorker | None = None, http_socket: socket.socket | None = None
              ) -> faust.App:
    """The Faust app of the worker (the model is loaded now unless given); ``http_socket``: a bound
    socket to serve metrics, health and feedback on (``http_api.bind``)."""
    kafka, worker = settings.kafka, settings.worker
    if not kafka.bootstrap_servers:
        raise unreachable(None)
    data_dir = settings.data_dir()
    try:  # Faust's data and the model versions live here (missing parents are made), and this process's own
        data_dir.mkdir(parents=True, exist_ok=True)  # slot of it: its saved thresholds and messages in hand
        slot = claim_slot(data_dir)
    except OSError as exc:  # read-only, another user's, a file in the way, a filesystem without locks
        raise ValueError(f"worker.data_dir {data_dir} cannot be used ({exc.strerror}): set "
                         "LOGSTREAM_WORKER__DATA_DIR to a directory on a local filesystem this user may write") from None
    initialise_labels()
    READY.set(0)
    model = model or ModelWorker(settings, state_path=slot.path / "adaptive-thresholds.json")
    app = faust.App(
        kafka.consumer_group,
        broker=broker_urls(kafka.bootstrap_servers),
        broker_credentials=faust_credentials(kafka),
        producer_acks=-1,  # acks=all; no idempotence or transactions (the bundled broker refuses them)
        processing_guarantee="at_least_once",
        broker_commit_interval=worker.commit_interval_s,
        broker_session_timeout=worker.session_timeout_s,
        broker_heartbeat_interval=min(3.0, worker.session_timeout_s / 3),
        producer_request_timeout=worker.publish_timeout_s,
        consumer_auto_offset_reset="earliest",
        topic_partitions=kafka.partitions,
        topic_replication_factor=kafka.replication_factor,
        topic_disable_leader=True,  # no tables, so no use for Faust's leader topic
        web_enabled=worker.web_port is not None,
        web_port=worker.web_port or 6066,
        datadir=str(data_dir),
    )
    use_fetch_wait(app, worker.fetch_wait_ms)  # before any topic: the first one makes the transport

    def raw_topic(name: str):
        return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                         partitions=kafka.partitions)

    processor = BatchProcessor(settings, model, raw_topic(kafka.alerts_topic),
                               raw_topic(kafka.dead_letter_topic),
                               raw_topic(kafka.scores_topic) if kafka.scores_topic else None,
                               inflight=InflightLog(slot.path / "inflight.json"))

    if processor.sinks:
        @app.agent(raw_topic(kafka.alerts_topic), name=DELIVERY_AGENT_NAME)
        async def deliver_alerts(stream):
            async for events in stream.take_events(64, within=worker.batch_within_s):
                try:
                    await processor.deliver([event.value for event in events])
                except asyncio.CancelledError:  # stopping: what is not delivered yet is delivered next start
                    abandon(events)
                    raise
                except Exception as exc:  # never ack alerts that were not handed over
                    abandon(events)
                    log.exception("unexpected error delivering alerts; stopping so that a restart delivers them")
                    await app.crash(exc)
                    return

    @app.agent(raw_topic(kafka.input_topic), name=AGENT_NAME)
    async def score_lines(stream):
        async for events in stream.take_events(worker.batch_size, within=worker.batch_within_s):
            try:
                await processor.process([InputMessage.from_event(event) for event in events])
            except asyncio.CancelledError:  # stopping mid-batch: a restart reads the batch again
                abandon(events)
                raise
            except PublishFailed as exc:
                abandon(events)
                log.error("%s; stopping so that a restart reads the batch again", exc)
                await app.crash(exc)
                return
            except Exception as exc:  # a bug: never ack a batch that was not fully handled
                abandon(events)
                log.exception("unexpected error handling a batch; stopping so that a restart reads it again")
                await app.crash(exc)
                return

    @app.task
    async def start_sinks():
        await processor.start()

    @app.task
    async def serve_http():
        if http_socket is not None:
            from .http_api import build_http_app, serve

            await serve(build_http_app(lambda: processor.assigned_once and watch.reachable, processor.submit_feedback),
                        http_socket)

    @app.task
    async def follow_feedback():
        """Every record of the feedback topic, from its beginning: marks survive restarts."""
        from .follow import TopicFollower

        while True:
            try:
                async with TopicFollower(kafka, [kafka.feedback_topic], from_beginning=True) as follower:
                    while True:
                        for record in await follower.poll(1.0):
                            await processor.apply_feedback(record.value)
            except asyncio.CancelledError:
                raise
            except Exception:  # the broker went away: scoring goes on, feedback resumes from the start
                log.exception("following the feedback topic failed; retrying in 5 s")
                await asyncio.sleep(5)

    @app.timer(worker.alert_flush_interval_s, name="logstream-alert-flush")
    async def flush_alert_groups():
        try:
            await processor.flush_groups()
        except Exception:  # the groups keep their counts; the next flush or shutdown tries again
            log.exception("publishing alert count updates failed")

    @app.timer(settings.scoring.sessions.check_interval_s, name="logstream-session-ends")
    async def end_quiet_sessions():
        try:
            await processor.end_quiet_sessions()
        except Exception:  # the alerts are published by the next batch or check
            log.exception("ending quiet sessions failed")

    adaptation = Adaptation(settings, model)
    if adaptation.runner is not None:
        processor.on_scored = adaptation.runner.batch_scored

    @app.timer(settings.adapt.check_interval_s, name="logstream-adapt")
    async def adapt():
        try:
            await adaptation.tick()
        except Exception:  # scoring goes on with the model it has
            log.exception("continual fine-tuning step failed")

    @app.timer(worker.state_interval_s, name="logstream-save-state")
    async def save_state():
        try:
            await model.save_state()
        except Exception:  # the next save, or the one at shutdown, tries again
            log.exception("saving the adaptive threshold state failed")

    @app.timer(worker.lag_interval_s, name="logstream-consumer-lag")
    async def consumer_lag():
        try:  # bounded: while the broker is away the request would wait for as long as the outage
            await asyncio.wait_for(update_consumer_lag(app, kafka.input_topic), worker.broker_check_interval_s * 2)
        except Exception as exc:  # the gauge is informative; never let it stop the worker
            log.debug("consumer lag not available: %r", exc)

    watch = BrokerWatch(kafka, BROKER_UP, BROKER_OUTAGES, BROKER_OUTAGE_SECONDS,
                        timeout_s=worker.broker_check_interval_s)

    @app.timer(worker.broker_check_interval_s, name="logstream-broker-check")
    async def broker_check():
        await watch.check()
        READY.set(1 if processor.assigned_once and watch.reachable else 0)

    @app.on_partitions_revoked.connect
    async def on_revoked(app, revoked, **kwargs):
        processor.partitions_revoked(set(revoked))

    @app.on_partitions_assigned.connect
    async def on_assigned(app, assigned, **kwargs):
        await processor.partitions_assigned(set(assigned))

    @app.on_before_shutdown.connect
    async def on_shutdown(app, **kwargs):
        await adaptation.close()
        await processor.close()  # the thresholds are saved: the slot may go to the next worker
        await watch.close()
        slot.release()

    return app


def run_worker(settings: Settings, loglevel: str = "info") -> int:
    """Create the topics, load the model, serve metrics and run the Faust worker until a signal."""
    # Faust runs on the thread's current loop: make one, and create the topics on it first
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(ensure_topics(settings.kafka, topic_names(settings)))
    from .http_api import bind

    http_socket = bind(settings.metrics.host, settings.metrics.port) if settings.metrics.port is not None else None
    app = build_app(settings, http_socket=http_socket)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0

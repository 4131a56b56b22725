"""The model side of the worker: one thread owns the scorer, the event loop only awaits it.

The scorer (and its streaming engine) is not thread-safe and a forward pass blocks for milliseconds
to seconds, so ``ModelWorker`` keeps it in a single-thread executor: every call that touches the
model (loading, scoring, explaining, dropping streams, reading cache stats) runs on that thread,
and ``await score_batch(...)`` leaves the event loop free for Kafka heartbeats, fetches and sinks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..alerts import Alert, Explanation
from ..files import write_atomically
from ..alerts.model import SurprisingToken
from ..scoring.sessions import UNUSUAL_LINE
from ..config import Settings
from .metrics import (ANOMALIES, BATCH_SIZE, CACHE_DEVICE_BYTES, CACHE_DISK_BYTES, CACHE_FORGOTTEN, CACHE_HOST_BYTES,
                      CACHE_OFFLOADS, CACHE_RESTORES, CACHE_SHRUNK, CACHE_SLOTS, CACHE_SLOTS_IN_USE, CACHE_STREAMS,
                      CACHE_STREAMS_BY_TIER, ENTRIES_BY_FORMAT, ENTRIES_SCORED,
                      INGEST_TO_SCORE, MODEL_INFO, MODEL_SWAP_PAUSE, MODEL_SWAPS, SCORES, SCORING_LATENCY,
                      SESSIONS_ENDED, THRESHOLDS, TOKENS_SCORED)
from .records import ScoreRecord

log = logging.getLogger("logstream.model_worker")


def _lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority (Linux gives each thread its own nice value)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError) as exc:  # not Linux, or not allowed: the thread runs at full priority
        log.debug("could not lower the swap thread's priority: %s", exc)


@dataclass(frozen=True)
class EntryMeta:
    """Where an entry came from; every field is optional (entries need not come from Kafka)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    kafka_time: datetime | None = None  # the message's Kafka timestamp
    time: datetime | None = None  # the entry's own time (the envelope's timestamp)
    level: str | None = None  # a level the shipper gave apart from the line (OTLP severityText, log.level)
    session: bool = False  # the stream was keyed by scoring.stream_key: a session that ends


@dataclass
class Scored:
    stream: str
    line: str
    meta: EntryMeta
    score: float
    threshold: float | None
    anomaly: bool
    warm: bool
    tokens: int
    alert: Alert | None  # set when anomalous

    def record(self, model_version: str) -> ScoreRecord:
        return ScoreRecord(stream=self.stream, topic=self.meta.topic, partition=self.meta.partition,
                           offset=self.meta.offset, score=self.score, threshold=self.threshold,
                           anomaly=self.anomaly, warm=self.warm, tokens=self.tokens,
                           model_version=model_version, time=datetime.now(UTC))


class ModelWorker:
    """Loads the model from ``settings.model`` (on its own thread) and scores batches there."""

    def __init__(self, settings: Settings, state_path: Path | None = None):
        self.settings = settings
        self.state_path = state_path  # where what the adaptive thresholds learned is kept across restarts
        self.store = settings.model_store()  # adapted versions; the one served survives restarts
        self.served = None  # the store version being served ("base": model.path)
        self._pool_counts: tuple[int, int, int] | None = None  # the pool's counts at the last gauge update
        self._forgotten_unlogged = 0  # windows forgotten since the last warning (one a minute at most)
        self._forgotten_logged_at: float | None = None
        self.adapter = None  # OnlineAdapter: continual fine-tuning
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="logstream-model")
        # new model versions are made ready here, beside scoring, at the trainer's lower priority
        self._swapper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="logstream-swap",
                                           initializer=_lower_priority, initargs=(settings.adapt.nice,))
        self.scorer = None
        self.explainer = None
        self.sessions = None  # SessionTracker, when keyed streams are judged as sessions
        self._relearning = None  # steps of re-learning thresholds after a swap, one before each batch
        self._session_alerts: list[Alert] = []  # ends seen in a batch (end pattern), for the next drain
        self._ended: list[str] = []  # sessions ended since the last drain (the router forgets them)
        self._executor.submit(self._load).result()  # load errors surface here, in the caller

    # -- on the model thread ------------------------------------------------------------------

    def _load(self) -> None:
        import torch

        from ..scoring.explain import Explainer
        from ..scoring.scorer import load_scorer

        model, cache = self.settings.model, self.settings.cache
        torch.set_num_threads(model.torch_threads())
        if not model.path.is_dir():
            raise FileNotFoundError(f"model directory {model.path} does not exist: set model.path "
                                    "(LOGSTREAM_MODEL__PATH) to a checkpoint made by `logstream train`")
        engine_config = cache.engine_config(disk_dir=self.settings.data_dir() / "kv")
        started = time.monotonic()
        self.served = self.store.current_version()
        self.scorer = load_scorer(self.store.current(), device=model.device, dtype=model.dtype,
                                  engine_config=engine_config, threshold=self.settings.scoring.threshold,
                                  use_preamble=cache.preamble, sink_tokens=cache.sink_tokens,
                                  canonicalizer=self.settings.parsing.canonicalizer(),
                                  adaptive=self.settings.scoring.adaptive_thresholds())
        self.explainer = Explainer(self.scorer)
        self.sessions = self._session_tracker()
        self._load_adaptive_state()
        if self.settings.adapt.enabled and self.scorer.adaptive is not None:
            from ..adapt.online import OnlineAdapter

            self.adapter = OnlineAdapter(self.settings.adapt)
        warm, warming = self.scorer.thresholds()
        log.info("model %s loaded from %s in %.1f s (thresholds: %s warm, %s warming up)",
                 self.scorer.model_version, self.store.current(), time.monotonic() - started, warm, warming)
        if warm is None:
            log.warning("the model has no calibrated threshold and scoring.threshold is not set: "
                        "lines are scored but no alert is raised")
        self._update_cache_gauges()

    def _session_tracker(self):
        from ..scoring.sessions import SessionTracker

        cfg, card = self.settings.scoring.sessions, self.scorer.card
        calibration = card.calibration
        if not (cfg.enabled and self.settings.scoring.stream_key and card.session_ends and calibration is not None
                and calibration.session_threshold is not None and self.settings.scoring.threshold is None):
            if cfg.enabled and self.settings.scoring.stream_key and not card.session_ends:
                log.info("model %s was not trained on whole sessions: keyed streams are judged line by line "
                         "(train with `logstream train --sessions` to score how sessions end)", card.model_version)
            return None
        log.info("keyed streams are sessions: they end after %.0f s without a line%s; session threshold %.3f",
                 cfg.idle_s, f" or on /{cfg.end_pattern}/" if cfg.end_pattern else "", calibration.session_threshold)
        return SessionTracker(self.scorer, cfg.idle_s, re.compile(cfg.end_pattern) if cfg.end_pattern else None)

    def _relearn_step(self) -> None:
        if self._relearning is None:
            return
        started = time.perf_counter()
        if next(self._relearning, None) is None:
            self._relearning = None
        MODEL_SWAP_PAUSE.observe(time.perf_counter() - started)

    def _score(self, entries: list[tuple[str, str, EntryMeta]]) -> list[Scored]:
        self._relearn_step()
        started = time.perf_counter()
        results = self.scorer.score([(stream, line, meta.level) for stream, line, meta in entries])
        SCORING_LATENCY.observe(time.perf_counter() - started)
        BATCH_SIZE.observe(len(entries))
        now = datetime.now(UTC)
        warmup_tokens = self.settings.scoring.warmup_tokens
        out = []
        ended: list[str] = []
        for (stream, line, meta), result in zip(entries, results):
            anomaly = result.is_anomaly
            if meta.session and self.sessions is not None:  # judged as a line of its session
                result.threshold = self.sessions.line_threshold(result)
                result.verdict = None
                anomaly = self.sessions.observe(result, last=(line, meta))
                if self.sessions.ends(line):
                    ended.append(stream)
            anomaly = anomaly and result.stream_position >= warmup_tokens
            format_ = result.canonical.format if result.canonical is not None else "unknown"
            ENTRIES_SCORED.inc()
            ENTRIES_BY_FORMAT.labels(format=format_).inc()
            TOKENS_SCORED.inc(len(result.token_ids))
            SCORES.observe(result.score)
            if result.threshold is not None:
                THRESHOLDS.observe(result.threshold)
            if meta.kafka_time is not None:
                INGEST_TO_SCORE.observe(max(0.0, (now - meta.kafka_time).total_seconds()))
            if anomaly:
                session = meta.session and self.sessions is not None
                ANOMALIES.labels(kind=UNUSUAL_LINE if session else "line", format=format_,
                                 how="session" if session else result.verdict.how if result.verdict else "fixed").inc()
            out.append(Scored(stream=stream, line=line, meta=meta, score=result.score,
                              threshold=result.threshold, anomaly=anomaly, warm=result.warm,
                              tokens=len(result.token_ids),
                              alert=self._alert(stream, line, meta, result, session=meta.session and
                                                self.sessions is not None) if anomaly else None))
        for stream in dict.fromkeys(ended):
            self._end_session(stream, "end pattern")
        if self.adapter is not None:
            # a session model learns sessions whole, with their ends; online rounds learn lines of
            # other streams only, so they cannot wear its sense of where sessions end away
            kept = [i for i, (_, _, meta) in enumerate(entries) if not (meta.session and self.sessions is not None)]
            self.adapter.observe(self.scorer, [entries[i][:2] for i in kept], [results[i] for i in kept])
        self._update_cache_gauges()
        return out

    def _due_round(self):
        if self.adapter is None:
            return None
        due = self.adapter.due(self.scorer)
        return self.adapter.plan(due) if due else None

    def _relearn_plan(self) -> dict:
        return self.adapter.relearn_plan() if self.adapter is not None else {}

    def _prepare(self, version: str, plan: dict):
        """On the swap thread, while the model thread goes on scoring: load the version, prime its
        sink, score the lines its thresholds are re-learned from, build its explainer."""
        from ..adapt.online import PreparedSwap
        from ..scoring.explain import Explainer

        path = self.store.path_of(version)
        prepared = (self.adapter.prepare(self.scorer, path, plan) if self.adapter is not None
                    else PreparedSwap(self.scorer.with_model(path), {}))
        return prepared, Explainer(prepared.scorer)

    def _switch(self, version: str, prepared, explainer, started: float) -> None:
        """On the model thread, between two batches: the prepared scorer serves from now on."""
        switch_started = time.perf_counter()
        self.scorer = prepared.scorer
        # thresholds are re-learned a step before each batch from now on (see OnlineAdapter.relearning)
        self._relearning = self.adapter.relearning(prepared) if self.adapter is not None else None
        self.explainer = explainer
        self.sessions = self._session_tracker()  # windows restart with the new model: so do sessions
        self.served = version
        MODEL_SWAPS.inc()
        self._pool_counts = None  # a new pool, counting from zero
        self._update_cache_gauges()
        paused = time.perf_counter() - switch_started
        MODEL_SWAP_PAUSE.observe(paused)
        log.info("now serving model %s (%s): prepared beside scoring in %.1f s (sink primed, thresholds "
                 "re-learned from each source's latest lines, step by step between the next batches), scoring "
                 "paused %.0f ms for the switch; stream windows restarted", self.scorer.model_version, version,
                 time.monotonic() - started, 1000 * paused)

    def _end_session(self, stream: str, how: str) -> None:
        """Score a session's end, free its window; an abnormal end or stall becomes an alert."""
        from ..scoring.sessions import describe_end

        end = self.sessions.end(stream, how, explain=self.settings.scoring.sessions.explain)
        SESSIONS_ENDED.labels(kind=end.kind or "normal").inc()
        self._ended.append(stream)
        if not end.anomaly:
            return
        ANOMALIES.labels(kind=end.kind, how="session", format="session").inc()
        line, meta = end.last if end.last is not None else ("", EntryMeta())
        self._session_alerts.append(Alert(
            stream=stream, partition=meta.partition, offset=meta.offset, time=datetime.now(UTC), line=line,
            score=end.end_surprise, threshold=end.end_surprise - end.margin + end.threshold,
            threshold_how="session", kind=end.kind, expected=end.expected, template=f"session {end.kind}",
            explanation=Explanation(summary=describe_end(end)), model_version=self.scorer.model_version))

    def _end_quiet_sessions(self) -> tuple[list[Alert], list[str]]:
        if self.sessions is not None:
            for stream in self.sessions.due():
                self._end_session(stream, "idle")
            self._update_cache_gauges()
        alerts, self._session_alerts = self._session_alerts, []
        ended, self._ended = self._ended, []
        return alerts, ended

    def _alert(self, stream: str, line: str, meta: EntryMeta, result, session: bool = False) -> Alert:
        why = self.explainer.explain(result)
        explanation = Explanation(
            surprising_tokens=[SurprisingToken(text=t.text, logprob=t.logprob, share=t.share)
                               for t in why.surprising_tokens],
            nearest_template=why.nearest_template, template_similarity=why.template_similarity,
            summary=why.summary)
        # The template groups alerts: two different unseen messages must not fold together just because
        # the same known pattern is the least unlike either of them.
        similar = (why.template_similarity or 0.0) >= self.settings.alerts.template_min_similarity
        return Alert(stream=stream, partition=meta.partition, offset=meta.offset,
                     time=meta.time or meta.kafka_time or datetime.now(UTC), line=line, score=result.score,
                     threshold=result.threshold, explanation=explanation,
                     threshold_how=("session" if session else
                                    result.verdict.how if result.verdict is not None else "fixed"),
                     template=why.nearest_template if similar else None, model_version=self.scorer.model_version,
                     kind=UNUSUAL_LINE if session else None)

    def _load_adaptive_state(self) -> None:
        path = self.state_path
        if self.scorer.adaptive is None or path is None or not path.exists():
            return
        try:
            self.scorer.adaptive.load_state(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as exc:  # a damaged file must not stop the worker
            log.warning("ignoring adaptive threshold state %s (%s): sources start learning again", path, exc)
            return
        log.info("adaptive thresholds restored from %s: %d sources", path, len(self.scorer.adaptive.sources()))

    def _save_adaptive_state(self) -> None:
        path = self.state_path
        if self.scorer.adaptive is None or path is None:
            return
        write_atomically(path, json.dumps(self.scorer.adaptive.state()))

    def _drop(self, stream_ids: list[str]) -> int:
        if self.sessions is not None:
            for stream in stream_ids:
                self.sessions.forget(stream)
        dropped = sum(self.scorer.forget(stream) for stream in stream_ids)
        self._update_cache_gauges()
        return dropped

    def _warn_forgotten(self, pages: int, every_s: float = 60.0) -> None:
        """A warning when windows are forgotten, at most one a minute: under a flood of new keys it
        would come with every batch (the counter, logstream_cache_forgotten_total, has them all)."""
        now = time.monotonic()
        if not self._forgotten_unlogged or (self._forgotten_logged_at is not None
                                            and now - self._forgotten_logged_at < every_s):
            return
        since = f" in the last {now - self._forgotten_logged_at:.0f} s" if self._forgotten_logged_at is not None else ""
        log.warning("%d stream windows forgotten%s: every memory tier was full (a pool of %d pages; cache.pool_bytes, "
                    "cache.host_bytes, cache.disk_bytes size the tiers): their next lines are scored cold "
                    "(warm=false); at most one such warning a minute", self._forgotten_unlogged, since, pages)
        self._forgotten_unlogged, self._forgotten_logged_at = 0, now

    def _update_cache_gauges(self) -> None:
        stats = self.scorer.engine.stats()
        # the pool counts since it was made (a swap makes a new one): the counters grow by the difference
        last = self._pool_counts if self._pool_counts is not None else (0, 0, 0, 0)
        counts = (stats.offloads, stats.restores, stats.forgotten, stats.shrunk)
        if all(now >= before for now, before in zip(counts, last)):
            for counter, now, before in zip((CACHE_OFFLOADS, CACHE_RESTORES, CACHE_FORGOTTEN, CACHE_SHRUNK), counts, last):
                counter.inc(now - before)
            self._forgotten_unlogged += stats.forgotten - last[2]
            self._warn_forgotten(stats.slots)
        self._pool_counts = counts
        MODEL_INFO.clear()
        MODEL_INFO.labels(version=self.scorer.model_version).set(1)
        CACHE_SLOTS.set(stats.slots)
        CACHE_SLOTS_IN_USE.set(stats.slots_in_use)
        CACHE_DEVICE_BYTES.set(stats.device_bytes)
        CACHE_HOST_BYTES.set(stats.host_bytes)
        CACHE_DISK_BYTES.set(stats.disk_bytes)
        CACHE_STREAMS.set(stats.streams_resident + stats.streams_on_host + stats.streams_on_disk)
        for tier, streams in (("pool", stats.streams_resident), ("host", stats.streams_on_host),
                              ("disk", stats.streams_on_disk)):
            CACHE_STREAMS_BY_TIER.labels(tier=tier).set(streams)

    # -- from the event loop ------------------------------------------------------------------

    @property
    def model_version(self) -> str:
        return self.scorer.model_version

    async def score_batch(self, entries: list[tuple[str, str, EntryMeta]]) -> list[Scored]:
        """Score (stream, line, meta) entries in one batched forward; lines of a stream in list order."""
        if not entries:
            return []
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._score, entries)

    async def end_quiet_sessions(self) -> tuple[list[Alert], list[str]]:
        """End the sessions quiet for ``scoring.sessions.idle_s`` (scoring their ends, freeing their
        windows); returns the alerts of abnormal ends and stalls and the sessions ended, with those
        ended by their end pattern since the last call."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._end_quiet_sessions)

    async def due_round(self):
        """A fine-tuning round that is due now (``logstream.adapt.online.Round``), or None."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._due_round)

    async def swap(self, version: str) -> None:
        """Serve another model version of the store. It is made ready on a thread of its own (lower
        priority) while batches go on being scored with the current one; then scoring pauses only
        for the switch (``logstream_model_swap_pause_seconds``). Nothing is lost either way."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        plan = await loop.run_in_executor(self._executor, self._relearn_plan)
        prepared, explainer = await loop.run_in_executor(self._swapper, self._prepare, version, plan)
        await loop.run_in_executor(self._executor, self._switch, version, prepared, explainer, started)

    def _mark_normal(self, stream: str, line: str, score: float) -> bool:
        source = self.scorer.mark_normal(stream, line, score)
        if source is not None and self.adapter is not None:
            self.adapter.learn_normal(source, stream, line)  # and the next fine-tuning round learns it
        return source is not None

    async def mark_normal(self, stream: str, line: str, score: float) -> bool:
        """Apply an operator's "this was normal" to the adaptive thresholds (on the model thread)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._mark_normal, stream, line,
                                                                score)

    async def drop_streams(self, stream_ids: list[str]) -> int:
        """Forget these streams' windows (their partitions moved away); returns how many were known."""
        if not stream_ids:
            return 0
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._drop, list(stream_ids))

    async def save_state(self) -> None:
        """Write what the adaptive thresholds learned to ``state_path`` (atomically)."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._save_adaptive_state)

    def close(self) -> None:
        try:
            self._executor.submit(self._save_adaptive_state).result()
        except Exception:  # shutting down anyway: the next start learns again
            log.exception("could not save the adaptive threshold state")
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._swapper.shutdown(wait=True, cancel_futures=True)

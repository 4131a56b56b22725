"""Prometheus metrics of the service, all in one place.

One prefix (``logstream_``), base units, counters ending in ``_total``, and no high-cardinality
labels (never a stream id or a log line).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

ENTRIES_SCORED = Counter("logstream_entries_scored_total", "log entries scored", registry=REGISTRY)
TOKENS_SCORED = Counter("logstream_tokens_scored_total", "tokens scored", registry=REGISTRY)
SCORING_LATENCY = Histogram(
    "logstream_scoring_latency_seconds", "time to score one micro-batch", registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
INGEST_TO_SCORE = Histogram(
    "logstream_ingest_to_score_seconds", "time from the message's Kafka timestamp to its score",
    registry=REGISTRY, buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
PUBLISH_WAIT = Histogram(
    "logstream_publish_wait_seconds", "time a micro-batch waited for Kafka to acknowledge what it published",
    registry=REGISTRY, buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
BATCH_SIZE = Histogram("logstream_batch_size_entries", "entries per scored micro-batch", registry=REGISTRY,
                       buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
SCORES = Histogram("logstream_anomaly_score", "anomaly scores of scored entries", registry=REGISTRY,
                   buckets=(0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 20))
THRESHOLDS = Histogram("logstream_threshold", "threshold in force for each scored entry (beside "
                       "logstream_anomaly_score: how close the lines run to it)", registry=REGISTRY,
                       buckets=(0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15, 20))
ENTRIES_BY_FORMAT = Counter("logstream_format_entries_total", "log entries scored, by the format they were read "
                            "as (a source)", ["format"], registry=REGISTRY)
ANOMALIES = Counter("logstream_anomalies_total", "anomalies found, before grouping into alerts: by kind (line, "
                    "or a session's unusual line, abnormal end, stalled), how the threshold was set, and format",
                    ["kind", "how", "format"], registry=REGISTRY)
ALERTS = Counter("logstream_alerts_total", "alerts published, by sink (topic: on the alerts topic; webhook, "
                 "alertmanager: delivered)", ["sink"], registry=REGISTRY)
ALERTS_SUPPRESSED = Counter("logstream_alerts_grouped_total",
                            "anomalies folded into an already open alert group", registry=REGISTRY)
SINK_FAILURES = Counter("logstream_sink_failures_total", "failed delivery attempts, by sink", ["sink"],
                        registry=REGISTRY)
SINK_RETRIES = Counter("logstream_sink_retries_total", "delivery retries, by sink", ["sink"], registry=REGISTRY)
SINK_QUEUE = Gauge("logstream_sink_queue_entries", "alerts waiting for delivery, by sink", ["sink"],
                   registry=REGISTRY)
DEAD_LETTERS = Counter("logstream_dead_letters_total", "records sent to the dead-letter topic, by reason kind",
                       ["kind"], registry=REGISTRY)
CACHE_SLOTS_IN_USE = Gauge("logstream_cache_slots_in_use", "pool pages holding stream windows' tokens",
                           registry=REGISTRY)
CACHE_SLOTS = Gauge("logstream_cache_slots", "pool pages in all (cache.pool_bytes / page size)", registry=REGISTRY)
CACHE_DEVICE_BYTES = Gauge("logstream_cache_device_bytes", "bytes of the pool's pages in use",
                           registry=REGISTRY)
CACHE_HOST_BYTES = Gauge("logstream_cache_host_bytes", "bytes of windows moved to the host tier",
                         registry=REGISTRY)
CACHE_STREAMS = Gauge("logstream_cache_streams", "streams known to the engine", registry=REGISTRY)
CACHE_STREAMS_BY_TIER = Gauge("logstream_cache_tier_streams", "stream windows by where they are: pool (resident), "
                              "host, disk", ["tier"], registry=REGISTRY)
CACHE_DISK_BYTES = Gauge("logstream_cache_disk_bytes", "bytes of windows on the disk tier", registry=REGISTRY)
CACHE_SHRUNK = Counter("logstream_cache_shrunk_total", "cold windows shrunk to cache.shrink_to tokens to make room",
                       registry=REGISTRY)
CACHE_OFFLOADS = Counter("logstream_cache_offloads_total", "stream windows moved out of the pool to the host or "
                         "disk tier (the pool was full)", registry=REGISTRY)
CACHE_RESTORES = Counter("logstream_cache_restores_total", "stream windows brought back into the pool from the host "
                         "or disk tier", registry=REGISTRY)
CACHE_FORGOTTEN = Counter("logstream_cache_forgotten_total", "stream windows dropped because every memory tier was "
                          "full (their next lines are scored cold, warm=false)", registry=REGISTRY)
CONSUMER_LAG = Gauge("logstream_consumer_lag_messages", "input messages not yet consumed, summed over partitions",
                     registry=REGISTRY)
# The tailer runs as its own process (often on other machines): its metrics are served by its own
# endpoint (``tail.metrics_port``), from a registry of their own, never read as zeros on the worker's.
TAILER_REGISTRY = CollectorRegistry(auto_describe=True)
TAILER_LINES = Counter("logstream_tailer_lines_total", "lines the tailer handed to Kafka (acknowledged)",
                       registry=TAILER_REGISTRY)
TAILER_TRUNCATED = Counter("logstream_tailer_truncated_lines_total", "lines cut at the length cap",
                           registry=TAILER_REGISTRY)
TAILER_FILES = Gauge("logstream_tailer_files", "files being followed", registry=TAILER_REGISTRY)
TAILER_BROKER_UP = Gauge("logstream_tailer_broker_up", "1 while the tailer's Kafka producer is connected and "
                         "acknowledged", registry=TAILER_REGISTRY)
TAILER_RECONNECTS = Counter("logstream_tailer_reconnects_total", "times the tailer lost Kafka and started again from "
                            "its checkpoint", registry=TAILER_REGISTRY)
FEEDBACK_APPLIED = Counter("logstream_feedback_applied_total", "alerts marked normal by an operator, applied",
                           registry=REGISTRY)
FEEDBACK_INVALID = Counter("logstream_feedback_invalid_total", "feedback records that could not be applied",
                           registry=REGISTRY)
MODEL_SWAPS = Counter("logstream_model_swaps_total", "times another model version was swapped in", registry=REGISTRY)
MODEL_SWAP_PAUSE = Histogram("logstream_model_swap_pause_seconds", "how long scoring paused to switch to a "
                             "model version made ready beside it, and for each step of re-learning thresholds "
                             "after it", registry=REGISTRY,
                             buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
MODEL_SWAP_FAILURES = Counter("logstream_model_swap_failures_total", "model versions that could not be swapped "
                              "in (the served one stays)", registry=REGISTRY)
MODEL_INFO = Gauge("logstream_model_info", "the model version being served (value 1)", ["version"],
                   registry=REGISTRY)
READY = Gauge("logstream_ready", "1 when the model is loaded, the worker has joined its group and the broker answers",
              registry=REGISTRY)
BROKER_UP = Gauge("logstream_broker_up", "1 while the Kafka broker answers the worker's probe (worker.broker_check_"
                  "interval_s)", registry=REGISTRY)
PUBLISH_RETRIES = Counter("logstream_publish_retries_total", "records (scores, alerts, dead letters) sent again "
                          "because Kafka did not acknowledge them", registry=REGISTRY)
BROKER_OUTAGES = Counter("logstream_broker_outages_total", "times the broker stopped answering the worker",
                         registry=REGISTRY)
BROKER_OUTAGE_SECONDS = Counter("logstream_broker_outage_seconds_total", "seconds the broker did not answer the "
                                "worker", registry=REGISTRY)
ADAPT_ROUNDS = Counter("logstream_adapt_rounds_total", "continual fine-tuning rounds, by result", ["result"],
                       registry=REGISTRY)
TRAINER_PAUSED = Gauge("logstream_adapt_trainer_paused", "1 while the fine-tuning trainer is paused because scoring "
                       "fell behind (adapt.pause_above_ms)", registry=REGISTRY)
TRAINER_PAUSED_SECONDS = Counter("logstream_adapt_trainer_paused_seconds_total", "time the fine-tuning trainer spent "
                                 "paused for scoring", registry=REGISTRY)
EMPTY_LINES = Counter("logstream_empty_lines_total", "input entries with nothing but white space, skipped",
                      registry=REGISTRY)
TRUNCATED_LINES = Counter("logstream_truncated_lines_total", "input lines cut at tail.max_line_bytes before scoring",
                          registry=REGISTRY)
SESSIONS_ENDED = Counter("logstream_sessions_ended_total", "sessions ended (quiet or end pattern), by how they "
                         "were judged: normal, abnormal end, stalled", ["kind"], registry=REGISTRY)


def initialise_labels() -> None:
    """Create the label values known in advance at zero, so rates and alerting rules see a series from the
    first scrape rather than nothing until the first event."""
    for sink in ("topic", "webhook", "alertmanager"):
        ALERTS.labels(sink=sink)
    for sink in ("webhook", "alertmanager"):
        SINK_FAILURES.labels(sink=sink)
        SINK_RETRIES.labels(sink=sink)
    for kind in ("envelope", "scoring", "alert_delivery", "poison"):
        DEAD_LETTERS.labels(kind=kind)
    for result in ("ok", "failed"):
        ADAPT_ROUNDS.labels(result=result)
    for kind in ("normal", "abnormal end", "stalled"):
        SESSIONS_ENDED.labels(kind=kind)

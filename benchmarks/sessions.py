"""Workflow anomalies on HDFS block sessions (``../shared/data/hdfs_sessions``): detection, the same
decisions through Kafka, and the cost of keeping thousands of sessions open.

    python benchmarks/sessions.py [--steps 600] [--skip-eval] [--skip-replay] [--skip-scale]

1. ``logstream eval benchmarks/specs/hdfs_sessions.yaml``: the language model with and without
   session ends (trained on ``train_normal.log``, its latest 20% of sessions held out for the
   thresholds), Drain3 novelty and the n-gram baselines; writes ``benchmarks/results/sessions.md``.
2. Replay: every line of ``dev.log`` produced to Kafka (keyed by block), scored by a real
   ``logstream worker`` with that model; the sessions flagged on the alerts topic against those the
   offline evaluation's ``lm-live`` flags, and the time from a session's last line to its end alert.
   Writes ``benchmarks/results/sessions_replay.md``.
3. Scale: N = 100, 1,000 and 10,000 sessions open at once in one scorer with the service's cache
   settings (64 resident slots, the rest offloaded to host memory), their lines arriving round-robin,
   then every one ended: time per line, per session end, and resident memory.
   Writes ``benchmarks/results/sessions_scale.md``.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from cache_bench_setup import describe_machine  # noqa: E402 (next to this script)

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "benchmarks" / "specs" / "hdfs_sessions.yaml"
RESULTS = REPO / "benchmarks" / "results"
BLOCK = r"blk_-?\d+"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=600, help="training steps of the evaluation's model")
    p.add_argument("--skip-eval", action="store_true")
    p.add_argument("--skip-replay", action="store_true")
    p.add_argument("--skip-scale", action="store_true")
    p.add_argument("--idle-s", type=float, default=20.0, help="scoring.sessions.idle_s of the replay's worker "
                   "(a session's lines span a few seconds of the replay: longer, so none is cut in two)")
    p.add_argument("--sizes", default="100,1000,10000", help="open sessions to measure")
    p.add_argument("--rounds", type=int, default=3, help="lines per session timed after all are open")
    p.add_argument("--out", type=Path, default=RESULTS)
    return p.parse_args(argv)


def machine_lines(command: str) -> list[str]:
    info = describe_machine("cpu", 1)
    return [f"- command: `{command}`", f"- date: {datetime.now().strftime('%Y-%m-%d %H:%M')}"] + [
        f"- {key}: {value}" for key, value in info.items()]


def evaluate(args) -> None:
    command = ["logstream", "eval", str(SPEC.relative_to(REPO)), "--out", str(args.out), "--detectors", "lm",
               "drain-novelty", "ngram", "--lm-aggregates", "mean", "excess", "--lm-steps", str(args.steps),
               "--no-progress"]
    subprocess.run([sys.executable, "-m", "logstream.cli", *command[1:]], check=True, cwd=REPO)
    report = args.out / "sessions.md"
    report.write_text(report.read_text() + "\n## How this was made\n\n" + "\n".join(machine_lines(
        f"python benchmarks/sessions.py --steps {args.steps}  (runs: {' '.join(command)})")) + "\n")


def split_and_model(steps: int):
    """The evaluation's split and its trained model (from the evaluation cache: trained once)."""
    from logstream.evaluation.data import load_dataset, make_splits
    from logstream.evaluation.lm_detectors import SplitModel
    from logstream.evaluation.spec import load_spec

    spec = load_spec(SPEC)
    [split] = make_splits(load_dataset(spec))
    shared = SplitModel(train_steps=steps, pins=spec.pins(), sessions=True)
    model_dir = shared.ensure_trained(split.train, split.calibration, spec.target_false_alert_rate)
    return spec, split, shared, model_dir


# --- 2. replay through Kafka ---------------------------------------------------------------------

def replay(args) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from logstream.alerts import Alert
    from logstream.evaluation.lm_detectors import LiveDetector
    from logstream.service.broker import EmbeddedBroker, free_port
    from logstream.service.records import ScoreRecord
    from logstream.service.worker_process import WorkerProcess

    spec, split, shared, model_dir = split_and_model(args.steps)
    entries = split.test
    started = time.perf_counter()
    margins = LiveDetector(shared, settings=None).score(entries)
    offline_seconds = time.perf_counter() - started
    offline = {e.stream for e, m in zip(entries, margins) if m > 0}
    labels = {row["BlockId"]: row["Label"] == "1" for row in csv.DictReader(open(spec.labels.file))}
    blocks = list(dict.fromkeys(e.stream for e in entries))

    tag = f"sessions-{os.getpid()}"
    with EmbeddedBroker() as broker, tempfile.TemporaryDirectory() as tmp:
        env = {"LOGSTREAM_MODEL__PATH": str(model_dir), "LOGSTREAM_MODEL__THREADS": "1",
               "LOGSTREAM_SCORING__STREAM_KEY": BLOCK, "LOGSTREAM_SCORING__SESSIONS__IDLE_S": str(args.idle_s),
               "LOGSTREAM_ADAPT__ENABLED": "false", "LOGSTREAM_ALERTS__GROUP_WINDOW_S": "0",
               "LOGSTREAM_KAFKA__INPUT_TOPIC": f"lines-{tag}", "LOGSTREAM_KAFKA__ALERTS_TOPIC": f"alerts-{tag}",
               "LOGSTREAM_KAFKA__SCORES_TOPIC": f"scores-{tag}", "LOGSTREAM_KAFKA__CONSUMER_GROUP": tag,
               "LOGSTREAM_KAFKA__DEAD_LETTER_TOPIC": f"dead-{tag}", "LOGSTREAM_KAFKA__FEEDBACK_TOPIC": f"fb-{tag}",
               "LOGSTREAM_WORKER__DATA_DIR": str(Path(tmp) / "faust"), "LOGSTREAM_METRICS__PORT": str(free_port())}
        worker = WorkerProcess(broker.bootstrap_servers, Path(tmp) / "worker.log", env=env).start()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=20)
        for e in entries:
            producer.send(f"lines-{tag}", key=e.stream.encode(), value=e.line.encode())
        producer.flush()
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                                 auto_offset_reset="earliest", enable_auto_commit=False)
        topics = [f"scores-{tag}", f"alerts-{tag}"]
        parts = [TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t) or range(4)]
        consumer.assign(parts)
        consumer.seek_to_beginning()
        scores, alerts = [], []
        deadline = time.monotonic() + 1800
        quiet_since = None
        while time.monotonic() < deadline:
            got = consumer.poll(timeout_ms=500)
            for tp, records in got.items():
                for r in records:
                    (scores if tp.topic.startswith("scores") else alerts).append(r.value)
            if len(scores) >= len(entries):
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > args.idle_s + 10:  # every session has had time to end
                    break
            if not worker.alive:
                raise RuntimeError(f"the worker exited:\n{worker.log_tail()}")
        consumer.close()
        worker.terminate()
        worker.stop()
    scored = [ScoreRecord.model_validate_json(v) for v in scores]
    parsed = [Alert.from_bytes(v) for v in alerts]
    last_scored = {}
    for s in scored:
        last_scored[s.stream] = max(last_scored.get(s.stream, s.time), s.time)
    online = {a.stream for a in parsed}
    end_alerts = [a for a in parsed if a.kind in ("stalled", "abnormal end")]
    delays = sorted((a.time - last_scored[a.stream]).total_seconds() for a in end_alerts if a.stream in last_scored)
    lines = ["# HDFS sessions replayed through Kafka", "",
             f"Every line of `dev.log` ({len(entries):,} lines, {len(blocks):,} sessions) produced to the input "
             f"topic keyed by block, scored by one `logstream worker` (model `{model_dir.name}` from the "
             f"evaluation in `sessions.md`, `scoring.stream_key` = `{BLOCK}`, `scoring.sessions.idle_s` = "
             f"{args.idle_s:g} s, fine-tuning off); the sessions with an alert on the alerts topic against the "
             f"sessions the offline evaluation's `lm-live` flags on the same file.", ""] + machine_lines(
        "python benchmarks/sessions.py --skip-eval --skip-scale") + ["",
             "| | sessions |", "|---|---|",
             f"| flagged offline (`lm-live`) | {len(offline):,} |",
             f"| flagged through Kafka | {len(online):,} |",
             f"| flagged by both | {len(offline & online):,} |",
             f"| only offline / only through Kafka | {len(offline - online):,} / {len(online - offline):,} |",
             f"| of those flagged through Kafka, labeled anomalous | {sum(labels[b] for b in online):,} |",
             f"| end alerts (stalled or abnormal end) | {len(end_alerts):,} |", "",
             f"Time from a session's last line being scored to its end alert: median "
             f"{delays[len(delays) // 2]:.1f} s, 95th percentile {delays[int(len(delays) * 0.95)]:.1f} s, max "
             f"{delays[-1]:.1f} s, of which {args.idle_s:g} s is the configured quiet time (real HDFS blocks "
             f"stay open for minutes to hours; set `idle_s` to what a session's gaps are)." if delays else
             "No end alert.", "",
             f"Offline scoring of the same file took {offline_seconds:.0f} s on this machine."]
    (args.out / "sessions_replay.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


# --- 3. many open sessions ------------------------------------------------------------------------

def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale(args) -> None:
    import torch

    from logstream.config import Settings
    from logstream.scoring.scorer import load_scorer
    from logstream.scoring.sessions import SessionTracker

    torch.set_num_threads(1)
    spec, split, _, model_dir = split_and_model(args.steps)
    sessions: list[list[str]] = []
    by_block: dict[str, list[str]] = {}
    for e in split.test:
        by_block.setdefault(e.stream, []).append(e.line)
    sessions = [lines for lines in by_block.values() if len(lines) > args.rounds + 1]
    settings = Settings()
    rows = []
    for n in [int(x) for x in args.sizes.split(",")]:
        config = settings.cache.engine_config()
        scorer = load_scorer(model_dir, device="cpu", dtype="float32", engine_config=config)
        now = [0.0]
        tracker = SessionTracker(scorer, idle_s=1.0, clock=lambda: now[0])
        base_rss = rss_mib()
        # session i replays dev session i % len with a block id of its own
        def line(i: int, j: int) -> tuple[str, str]:
            text = sessions[i % len(sessions)][j]
            stream = f"blk_{9_000_000 + i}"
            return stream, re.sub(BLOCK, stream, text)

        def feed(pairs):
            for at in range(0, len(pairs), 64):
                for scored in scorer.score(pairs[at:at + 64]):
                    tracker.observe(scored)

        feed([line(i, 0) for i in range(n)])  # open all n
        started = time.perf_counter()
        timed = [line(i, j) for j in range(1, args.rounds + 1) for i in range(n)]
        feed(timed)
        per_line = (time.perf_counter() - started) / len(timed)
        stats = scorer.engine.stats()
        open_rss = rss_mib()
        now[0] = 10.0
        started = time.perf_counter()
        due = tracker.due()
        for stream in due:
            tracker.end(stream, explain=False)
        per_end = (time.perf_counter() - started) / max(1, len(due))
        after = scorer.engine.stats()
        rows.append(dict(n=n, per_line_ms=per_line * 1e3, per_end_ms=per_end * 1e3, ended=len(due),
                         device_mib=stats.device_bytes / 2**20, host_mib=stats.host_bytes / 2**20,
                         rss_mib=open_rss, rss_growth_mib=open_rss - base_rss, offloads=stats.offloads,
                         forgotten=stats.forgotten, left=after.streams_resident + after.streams_on_host))
        print(rows[-1], flush=True)
        del scorer, tracker
    first = rows[0]
    cache = settings.cache
    lines = ["# Many open sessions: per-line cost and memory", "",
             f"One scorer with the service's cache settings (window {cache.window_tokens} tokens, "
             f"{config.slots or 64} resident slots, host budget {cache.host_bytes / 2**30:g} GiB), the evaluation's "
             f"session model, one torch thread. N sessions (dev sessions with block ids of their own) are opened, "
             f"then {args.rounds} more lines of each arrive round-robin in 64-line batches (every batch brings "
             f"back 64 offloaded windows and sends 64 away once N > 64): the time per line is taken over those; "
             f"then all N go quiet and are ended (end scored, window freed).", ""] + machine_lines(
        "python benchmarks/sessions.py --skip-eval --skip-replay") + ["",
             "| open sessions | ms per line | vs 100 | ms per session end | resident slots MiB | host windows MiB "
             "| process RSS MiB | windows forgotten | windows left after the ends |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']:,} | {r['per_line_ms']:.2f} | {r['per_line_ms'] / first['per_line_ms']:.2f}x | "
                     f"{r['per_end_ms']:.2f} | {r['device_mib']:.0f} | {r['host_mib']:.0f} | {r['rss_mib']:.0f} | "
                     f"{r['forgotten']} | {r['left']} |")
    lines += ["", "Host memory holds only the positions a window has filled (a session of a few hundred tokens "
              "costs that, not a whole window); the resident pool is allocated once. Memory is bounded by "
              "`cache.slots` (or `cache.pool_bytes`) plus `cache.host_bytes`: past the host budget the least "
              "recently used windows are forgotten (counted in `logstream_cache_host_bytes` and the pool stats)."]
    (args.out / "sessions_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.skip_eval:
        evaluate(args)
    if not args.skip_replay:
        replay(args)
    if not args.skip_scale:
        scale(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

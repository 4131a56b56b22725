"""The recipe of the model shipped in ``logstream/assets/default-model``.

Normal lines of every Loghub sample in ``sample_logs/`` (BGL's labeled alerts left out, HDFS keyed
by block and only from blocks labeled normal) plus a normal corpus from ``logstream synth`` (so the
embedded demo's services are known), trained from scratch on CPU in about a quarter of an hour:

    logstream train --default-recipe --out logstream/assets/default-model
"""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from logstream.config import PACKAGE_DIR
from logstream.synth import write_training_corpus

from .corpus import Corpus, read_corpus
from .train import TrainConfig, train_pipeline

REPO = PACKAGE_DIR.parent
SAMPLES = REPO / "sample_logs"

DEFAULT_CONFIG = TrainConfig(
    vocab_size=4096, hidden_size=128, layers=3, heads=2, kv_heads=1, intermediate_size=384,
    context=640, batch_size=8, steps=500, learning_rate=3e-3, preamble_templates=12, preamble_max_tokens=192,
    threads=1,  # one thread trains faster than two on a shared 2-core machine
)


def default_corpus(synth_lines: int = 20_000, seed: int = 0) -> Corpus:
    if not SAMPLES.is_dir():
        raise FileNotFoundError(f"{SAMPLES} is missing: the default recipe trains on the repository's samples")
    loghub = sorted(str(p) for p in (SAMPLES / "loghub").glob("*/*_2k.log") if p.parent.name != "HDFS")
    corpus = read_corpus(loghub, skip=r"^(?!- )\S+ \d{10} \d{4}\.\d\d\.\d\d ")  # BGL alerts (label != '-')
    corpus.extend(read_corpus([str(SAMPLES / "bgl" / "BGL_10k_head.log")]))
    anomalous_blocks = {row["BlockId"] for row in csv.DictReader(open(SAMPLES / "hdfs" / "HDFS_5k_block_labels.csv"))
                        if row["Label"] != "Normal"}
    hdfs = read_corpus([str(SAMPLES / "hdfs" / "HDFS_5k.log"), str(SAMPLES / "loghub" / "HDFS" / "HDFS_2k.log")],
                       stream_key=r"blk_-?\d+")
    corpus.extend(Corpus({k: v for k, v in hdfs.streams.items() if k not in anomalous_blocks}))
    with tempfile.TemporaryDirectory() as tmp:
        write_training_corpus(tmp, synth_lines, seed=seed)
        corpus.extend(read_corpus([str(p) for p in sorted(Path(tmp).glob("*.log"))]))
        # Stream names from the temporary directory would be meaningless: key them by file name.
        corpus.streams = {(Path(k).name if k.startswith(tmp) else k): v for k, v in corpus.streams.items()}
    # Stable, machine-independent stream names (the calibration split is by name).
    corpus.streams = {(str(Path(k).relative_to(REPO)) if k.startswith(str(REPO)) else k): v
                      for k, v in corpus.streams.items()}
    return corpus


def train_default(out_dir: str | Path, steps: int | None = None, seed: int = 0):
    """Train, then calibrate the thresholds on fresh synthetic normal logs (another seed).

    The thresholds are set for the demo's synthetic services: the Loghub samples are too small and
    drift too much to stand for "normal" (their held-out tails put the threshold at a mean NLL of
    8). Operators recalibrate on their own normal logs with ``logstream calibrate``.
    """
    from .calibrate import recalibrate

    cfg = DEFAULT_CONFIG.model_copy(update={"seed": seed, **({"steps": steps} if steps else {})})
    train_pipeline(default_corpus(seed=seed), out_dir, cfg, target_false_alert_rate=1e-3,
                   description={"recipe": "pipelines/default_model.py"})
    with tempfile.TemporaryDirectory() as tmp:
        write_training_corpus(tmp, 8000, seed=seed + 101)
        held_out = read_corpus([str(p) for p in sorted(Path(tmp).glob("*.log"))])
        held_out.streams = {Path(k).name: v for k, v in held_out.streams.items()}
        return recalibrate(out_dir, held_out, 1e-3, source=f"logstream synth --anomaly-rate 0 --lines 8000 "
                           f"--seed {seed + 101}")

"""Continual fine-tuning: adapt a model to the sources it is serving, in minutes, on a CPU share.

``finetune`` takes a model directory, recent normal lines of the live sources (raw lines grouped by
stream, read exactly as the scorer reads them) and a replay sample of what the model was trained on
(``replay.jsonl`` next to its weights, so it does not forget the sources it already knew), trains
a copy for a few dozen steps on short contexts, and writes a complete new model directory: same
tokenizer, masks and pattern preamble, new weights and version. Thresholds are not recalibrated:
the service's adaptive thresholds follow the new model's scores per source.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import torch
from pydantic import BaseModel, Field

from logstream.canonical import Canonicalizer, Pin
from logstream.scoring.card import ModelCard
from logstream.scoring.masking import LineMasker

from .corpus import Corpus
from .train import ExampleSampler, TrainConfig, encode_streams, train_model, weights_version

REPLAY_FILE = "replay.jsonl"


class FinetuneConfig(BaseModel):
    steps: int = Field(40, ge=1, description="optimizer steps")
    context: int = Field(384, ge=32, description="stream tokens per example: short, so steps are cheap")
    batch_size: int = Field(8, ge=1)
    learning_rate: float = Field(1e-3, gt=0)
    replay_share: float = Field(0.25, ge=0, lt=1, description="share of training tokens from the replay sample")
    threads: int = Field(1, ge=1)
    seed: int = 0
    max_minutes: float | None = Field(None, description="stop early after this long")


def write_replay(corpus: Corpus, out_dir: str | Path, max_lines: int = 4000, seed: int = 0) -> Path:
    """Keep a sample of a model's training lines beside it (whole runs of each stream, so context stays
    realistic): what continual fine-tuning replays to keep the model's older knowledge."""
    rng = random.Random(seed)
    streams = sorted(corpus.streams.items())
    rng.shuffle(streams)
    budget = max_lines
    per_stream = max(50, max_lines // max(1, len(streams)))
    path = Path(out_dir) / REPLAY_FILE
    with path.open("w") as f:
        for stream, lines in streams:
            if budget <= 0:
                break
            start = rng.randrange(max(1, len(lines) - per_stream + 1))
            for line in lines[start:start + min(per_stream, budget)]:
                f.write(json.dumps({"stream": stream, "line": line}) + "\n")
            budget -= min(per_stream, len(lines) - start)
    return path


def read_replay(model_dir: str | Path) -> Corpus:
    corpus = Corpus()
    path = Path(model_dir) / REPLAY_FILE
    if path.exists():
        for row in path.read_text().splitlines():
            item = json.loads(row)
            corpus.add(item["stream"], item["line"])
    return corpus


def _texts(corpus: Corpus, card: ModelCard, pins: tuple[Pin, ...]) -> Corpus:
    return corpus.canonical(Canonicalizer(pins)) if card.reads == "canonical" else corpus


def _capped(streams: list[list[list[int]]], token_budget: int, rng: random.Random) -> list[list[list[int]]]:
    """Whole lines of the streams, in order, until the token budget is spent (random stream order)."""
    order = list(range(len(streams)))
    rng.shuffle(order)
    out, spent = [], 0
    for i in order:
        kept = []
        for line in streams[i]:
            if spent >= token_budget:
                break
            kept.append(line)
            spent += len(line)
        if kept:
            out.append(kept)
    return out


def finetune(base_dir: str | Path, recent: Corpus, out_dir: str | Path, cfg: FinetuneConfig = FinetuneConfig(),
             pins: tuple[Pin, ...] = (), progress: bool = False, description: dict | None = None) -> ModelCard:
    """Fine-tune a copy of ``base_dir`` on ``recent`` (raw lines by stream) plus its replay sample."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    if recent.n_lines == 0:
        raise ValueError("no recent lines to fine-tune on")
    base, out = Path(base_dir), Path(out_dir)
    card = ModelCard.load(base)
    torch.set_num_threads(cfg.threads)
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    model = LlamaForCausalLM.from_pretrained(base, local_files_only=True, use_safetensors=True)
    masker = LineMasker(tuple(card.masks))
    new = encode_streams(_texts(recent, card, pins), masker, tokenizer)
    new_tokens = sum(len(line) for stream in new for line in stream)
    replay = encode_streams(_texts(read_replay(base), card, pins), masker, tokenizer)
    budget = int(new_tokens * cfg.replay_share / (1 - cfg.replay_share))
    streams = new + _capped(replay, budget, random.Random(cfg.seed))
    prefix = [tokenizer.bos_token_id]
    for line in card.preamble:  # the sink the engine serves with
        prefix += tokenizer(line + "\n", add_special_tokens=False).input_ids
    sampler = ExampleSampler(streams, prefix, cfg.context, tokenizer.pad_token_id)
    train_cfg = TrainConfig(steps=cfg.steps, batch_size=cfg.batch_size, context=cfg.context,
                            learning_rate=cfg.learning_rate, warmup_steps=min(5, cfg.steps), seed=cfg.seed,
                            max_minutes=cfg.max_minutes, checkpoint_every=10**9)
    # max_minutes counts the trainer's own running (CPU time per thread): the worker pauses it while
    # scoring falls behind, and a paused round should not lose its steps for it
    summary = train_model(model, sampler, train_cfg, checkpoint_dir=None, progress=progress,
                          clock=lambda: time.process_time() / cfg.threads)

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    if (base / REPLAY_FILE).exists():
        shutil.copy2(base / REPLAY_FILE, tmp / REPLAY_FILE)  # the original knowledge stays the replay
    adapted = card.model_copy(update={
        "model_version": weights_version(tmp),
        "training": {**card.training, "finetune": {**(description or {}), **cfg.model_dump(), **summary,
                                                   "parent": card.model_version, "lines": recent.n_lines,
                                                   "new_tokens": new_tokens, "streams": len(recent.streams)}}})
    adapted.save(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return adapted


def main(argv=None) -> int:
    """One round as its own process (the worker starts it, ``nice``d, and swaps the result in)."""
    import argparse
    import logging

    from logstream.adapt.background import die_with_worker
    from logstream.config import Settings

    p = argparse.ArgumentParser(description="fine-tune a model on recent lines (one continual-learning round)")
    p.add_argument("--base", required=True, help="model directory to start from")
    p.add_argument("--recent", required=True, help="JSON lines {stream, line} to learn from")
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--sources", default="", help="the sources that asked for the round (recorded in the card)")
    args = p.parse_args(argv)
    die_with_worker()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    recent = Corpus()
    for row in Path(args.recent).read_text().splitlines():
        item = json.loads(row)
        recent.add(item["stream"], item["line"])
    card = finetune(args.base, recent, args.out, settings.adapt.finetune_config(), pins=settings.parsing.pins(),
                    description={"sources": [s for s in args.sources.split(",") if s]})
    print(json.dumps({"version": card.model_version, **card.training["finetune"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

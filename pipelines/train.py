"""Train the log language model: templates -> preamble, tokenizer, a compact Llama, calibration.

``train_pipeline`` takes a corpus of normal streams and writes one model directory in Hugging Face
format (config.json, model.safetensors, tokenizer.json) plus ``logstream.json``.

Each training example is laid out exactly as the engine serves it: the sink token, the pattern
preamble, then up to ``context`` tokens of one stream starting at a line boundary, at positions
0, 1, 2, ...; the loss covers the stream tokens only. So the model learns to read a stream against
the sink prefix, at every position the engine can put a query at (up to S + L).

Deterministic for a seed (the batch of step i depends only on the seed and i, so a resumed run
draws the same batches), resumable from ``<out>/checkpoint/``, with progress bars.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from pydantic import BaseModel, Field
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from logstream.canonical import Canonicalizer, Pin
from logstream.scoring.card import KnownTemplate, ModelCard
from logstream.scoring.masking import DEFAULT_RULES, LineMasker
from logstream.scoring.sessions import SESSION_AGGREGATE
from logstream.templates import Templates

from .corpus import Corpus
from .tokenizer import save_tokenizer, train_tokenizer

log = logging.getLogger(__name__)


class TrainConfig(BaseModel):
    vocab_size: int = 4096
    hidden_size: int = 128
    layers: int = 3
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 352
    context: int = Field(1024, description="stream tokens per training example (after the sink prefix)")
    batch_size: int = 8
    steps: int = 600
    learning_rate: float = 3e-3
    warmup_steps: int = 30
    weight_decay: float = 0.05
    seed: int = 0
    preamble_templates: int = Field(12, description="most frequent normal templates primed into the sink")
    preamble_max_tokens: int = 192
    known_templates: int = 500
    checkpoint_every: int = 50
    max_minutes: float | None = Field(None, description="stop early after this long (breaks determinism)")
    threads: int | None = None


# --- preparing the data -----------------------------------------------------------------------


def build_preamble(corpus: Corpus, masker: LineMasker, n_templates: int) -> tuple[list[str], list[KnownTemplate]]:
    """(preamble lines, known templates): a representative masked line per frequent normal template."""
    templates = Templates()
    examples: dict[int, str] = {}
    for line in corpus.lines():
        cid = templates.miner.add_log_message(line)["cluster_id"]
        templates.counts[cid] = templates.counts.get(cid, 0) + 1
        examples.setdefault(cid, masker(line))
    ranked = sorted(templates.counts.items(), key=lambda kv: -kv[1])
    known = [KnownTemplate(template=examples[cid], count=count) for cid, count in ranked]
    return [k.template for k in known[:n_templates]], known


def encode_streams(corpus: Corpus, masker: LineMasker, tokenizer) -> list[list[list[int]]]:
    """Per stream, per line: token ids of the masked line plus its newline. A whole session ends
    with one more "line": the end-of-session token (EOS), so the model learns when a workflow is
    complete and the service can ask how likely the end is where a session stopped."""
    streams = []
    for name, lines in tqdm(corpus.streams.items(), desc="tokenizing", unit="stream", leave=False):
        texts = [masker(line) + "\n" for line in lines]
        ids = tokenizer(texts, add_special_tokens=False).input_ids if texts else []
        if ids and name in corpus.sessions:
            ids.append([tokenizer.eos_token_id])
        streams.append(ids)
    return streams


@dataclass
class ExampleSampler:
    """Draws training examples: a stream (weighted by length), a start line, `context` tokens."""

    streams: list[list[list[int]]]
    prefix: list[int]
    context: int
    pad_id: int
    end_id: int | None = None  # a stream ending in this token is a whole session

    def __post_init__(self):
        self.weights = [sum(len(line) for line in s) for s in self.streams]
        self.stream_ids = [i for i, w in enumerate(self.weights) if w > 0]
        self.stream_weights = [self.weights[i] for i in self.stream_ids]

    def example(self, rng: random.Random) -> list[int]:
        index = rng.choices(self.stream_ids, self.stream_weights)[0]
        stream = self.streams[index]
        # Start at a line boundary; at the very start a quarter of the time, so short contexts
        # (new streams, warm-up) are trained as well as full windows. A session that fits the
        # context always starts at its start: the service opens a fresh window for each session,
        # and where a session ends only means something after its beginning.
        whole = self.end_id is not None and stream[-1] == [self.end_id] and self.weights[index] <= self.context
        start = 0 if whole or rng.random() < 0.25 else rng.randrange(len(stream))
        tokens: list[int] = []
        for line in stream[start:]:
            tokens += line
            if len(tokens) >= self.context:
                break
        return tokens[: self.context]

    def batch(self, step: int, seed: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        rng = random.Random(seed * 1_000_003 + step)
        rows = [self.prefix + self.example(rng) for _ in range(size)]
        width = max(len(r) for r in rows)
        ids = torch.full((size, width), self.pad_id, dtype=torch.long)
        labels = torch.full((size, width), -100, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            # Predict stream tokens only; the first is predicted from the last prefix token.
            labels[i, len(self.prefix): len(row)] = torch.tensor(row[len(self.prefix):])
        return ids, labels


# --- the model ---------------------------------------------------------------------------------


def new_model(cfg: TrainConfig, tokenizer, max_positions: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads,
        max_position_embeddings=max_positions, rms_norm_eps=1e-5, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, rope_theta=10000.0,
    )
    torch.manual_seed(cfg.seed)
    return LlamaForCausalLM(config)


def learning_rate(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.learning_rate * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def save_checkpoint(path: Path, model, optimizer, step: int, losses: list[float]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"},
              str(tmp / "model.safetensors"))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, "losses": losses}))
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)


def load_checkpoint(path: Path, model, optimizer) -> tuple[int, list[float]]:
    model.load_state_dict(load_file(str(path / "model.safetensors")), strict=False)
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
    state = json.loads((path / "state.json").read_text())
    return state["step"], state["losses"]


def train_model(model, sampler: ExampleSampler, cfg: TrainConfig, checkpoint_dir: Path | None,
                progress: bool = True, stop_at_step: int | None = None, clock=time.monotonic) -> dict:
    """Train to ``cfg.steps`` (resuming from ``checkpoint_dir``); ``stop_at_step`` pauses a run early."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=cfg.learning_rate, betas=(0.9, 0.95))
    step, losses = 0, []
    if checkpoint_dir is not None and (checkpoint_dir / "state.json").exists():
        step, losses = load_checkpoint(checkpoint_dir, model, optimizer)
        log.info("resuming from %s at step %d", checkpoint_dir, step)
    model.train()
    started, limit_started = time.monotonic(), clock()  # ``clock`` measures max_minutes
    bar = tqdm(total=cfg.steps, initial=step, desc="training", unit="step", disable=not progress)
    stopped_early = False
    while step < cfg.steps:
        ids, labels = sampler.batch(step, cfg.seed, cfg.batch_size)  # depends on (seed, step) only
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, cfg)
        loss = model(input_ids=ids, attention_mask=(ids != sampler.pad_id).long(), labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        losses.append(round(loss.item(), 5))
        bar.update(1)
        bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
        if checkpoint_dir is not None and step % cfg.checkpoint_every == 0:
            save_checkpoint(checkpoint_dir, model, optimizer, step, losses)
        if (cfg.max_minutes is not None and clock() - limit_started > cfg.max_minutes * 60) or \
                step == stop_at_step:
            if checkpoint_dir is not None:
                save_checkpoint(checkpoint_dir, model, optimizer, step, losses)
            stopped_early = True
            break
    bar.close()
    model.eval()
    return {"steps": step, "final_loss": sum(losses[-20:]) / max(1, len(losses[-20:])),
            "stopped_early": stopped_early, "seconds": round(time.monotonic() - started, 1)}


# --- the whole pipeline ----------------------------------------------------------------------------


def weights_version(model_dir: Path) -> str:
    digest = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()[:12]
    return f"logstream-lm-{digest}"


def train_pipeline(corpus: Corpus, out_dir: str | Path, cfg: TrainConfig = TrainConfig(),
                   calibration: Corpus | None = None, init_from: str | Path | None = None,
                   target_false_alert_rate: float = 1e-3, progress: bool = True,
                   description: dict | None = None, pins: tuple[Pin, ...] = ()) -> ModelCard:
    """Train (or fine-tune ``init_from``) on ``corpus`` and write a complete model directory.

    ``corpus`` holds raw lines: a new model learns their canonical text (``logstream.canonical``, with
    ``pins`` for streams pinned to a format), exactly what the scorer will read; a fine-tuned model
    keeps the reading it was trained with. ``calibration``: held-out normal streams for the
    thresholds (default: split off the corpus), replayed through the scorer as raw lines.
    """
    from .calibrate import calibrate

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if calibration is None:
        corpus, calibration = corpus.split(0.1)
    if corpus.n_lines == 0:
        raise ValueError("no training lines: check the --logs patterns and filters")

    if init_from is not None:  # fine-tune: keep the tokenizer and masks, rebuild preamble and templates
        from transformers import AutoTokenizer, LlamaForCausalLM

        base_card = ModelCard.load(init_from)
        masker = LineMasker(tuple(base_card.masks))
        tokenizer = AutoTokenizer.from_pretrained(init_from, local_files_only=True)
        model = LlamaForCausalLM.from_pretrained(init_from, local_files_only=True, use_safetensors=True)
        masks = base_card.masks
        reads = base_card.reads
    else:
        masker = LineMasker(DEFAULT_RULES)
        masks = list(DEFAULT_RULES)
        reads = "canonical"
        model = None
    texts = corpus.canonical(Canonicalizer(pins)) if reads == "canonical" else corpus
    if init_from is None:
        tokenizer = train_tokenizer((masker(line) for line in texts.lines()), cfg.vocab_size)
    preamble, known = build_preamble(texts, masker, cfg.preamble_templates)
    preamble_ids: list[int] = []
    kept: list[str] = []
    for line in preamble:  # whole lines only, up to the token budget
        ids = tokenizer(line + "\n", add_special_tokens=False).input_ids
        if len(preamble_ids) + len(ids) > cfg.preamble_max_tokens:
            break
        preamble_ids += ids
        kept.append(line)
    prefix = [tokenizer.bos_token_id] + preamble_ids
    if model is None:
        model = new_model(cfg, tokenizer, max_positions=len(prefix) + cfg.context + 1024)

    sampler = ExampleSampler(encode_streams(texts, masker, tokenizer), prefix, cfg.context, tokenizer.pad_token_id,
                             end_id=tokenizer.eos_token_id)
    summary = train_model(model, sampler, cfg, out / "checkpoint", progress)

    model.save_pretrained(str(out), safe_serialization=True)
    save_tokenizer(tokenizer, out)
    card = ModelCard(
        model_version=weights_version(out), reads=reads, masks=masks, preamble=kept,
        session_ends=bool(corpus.sessions) or (init_from is not None and base_card.session_ends),
        templates=known[: cfg.known_templates],
        training={**(description or {}), "config": cfg.model_dump(), **summary, "lines": corpus.n_lines,
                  "streams": len(corpus.streams), "sessions": len(corpus.sessions), "init_from": str(init_from) if init_from else None},
    )
    card.save(out)
    card.calibration = calibrate(out, calibration, target_false_alert_rate, progress=progress, pins=pins,
                                 aggregate=SESSION_AGGREGATE if corpus.sessions else "mean")
    card.save(out)
    from .finetune import write_replay

    write_replay(corpus, out, seed=cfg.seed)  # what continual fine-tuning replays to keep this knowledge
    shutil.rmtree(out / "checkpoint", ignore_errors=True)
    return card

"""What the cache benchmark runs on: the log stream, the model, the sink tokens, the machine.

The stream is every ``<System>/<System>_2k.log`` of the Loghub samples (16 systems x 2,000 lines),
concatenated in alphabetical order of the system and replayed in file order as ONE stream, each
line masked and tokenized exactly as ``logstream.scoring.scorer.LineScorer.encode`` does.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from logstream.scoring.card import CARD_FILE, ModelCard
from logstream.scoring.masking import DEFAULT_RULES, LineMasker

REPO = Path(__file__).resolve().parent.parent
REPO_LOGS = REPO / "sample_logs" / "loghub"
SHARED_LOGS = REPO.parent / "shared" / "data" / "loghub"  # where sample_logs/loghub was copied from
DEFAULT_MODEL = REPO / "logstream" / "assets" / "default-model"


def log_files(root: Path | None = None) -> list[Path]:
    """The 2k-line sample of every system, in a fixed (alphabetical) order."""
    roots = [root] if root is not None else [REPO_LOGS, SHARED_LOGS]
    for candidate in roots:
        files = sorted(candidate.glob("*/*_2k.log"))
        if files:
            return files
    raise SystemExit(f"no */*_2k.log under {', '.join(map(str, roots))}: the Loghub samples are missing "
                     "(see sample_logs/PROVENANCE.md)")


def read_lines(files: list[Path], limit: int | None = None) -> list[str]:
    lines: list[str] = []
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as f:
            lines += [line.rstrip("\r\n") for line in f]
        if limit is not None and len(lines) >= limit:
            return lines[:limit]
    return lines


def masker_for(model_dir: Path) -> LineMasker:
    """The model's own masking rules when it has a card, else the defaults (what the scorer uses)."""
    card = load_card(model_dir)
    return LineMasker(tuple(card.masks) if card else DEFAULT_RULES)


def load_card(model_dir: Path) -> ModelCard | None:
    return ModelCard.load(model_dir) if (model_dir / CARD_FILE).exists() else None


def encode_lines(tokenizer, masker: LineMasker, lines: list[str]) -> list[list[int]]:
    texts = [masker(line) + "\n" for line in lines]
    return tokenizer(texts, add_special_tokens=False).input_ids


def sink_tokens(tokenizer, card: ModelCard | None, count: int) -> list[int]:
    """BOS (else EOS) followed by the first tokens of the model's preamble, or BOS repeated."""
    sink_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if sink_id is None:
        raise SystemExit("the tokenizer has neither a BOS nor an EOS token to use as the attention sink")
    preamble: list[int] = []
    for line in (card.preamble if card else []):
        preamble += tokenizer(line + "\n", add_special_tokens=False).input_ids
    tokens = [sink_id] + preamble[: count - 1]
    return tokens + [sink_id] * (count - len(tokens))


def write_random_model(out_dir: Path, lines: list[str], seed: int = 0) -> None:
    """A random Llama of the default size with a byte-level BPE tokenizer trained on ``lines``.

    Same tokenizer and architecture as ``logstream train`` makes (pipelines/), untrained: timings
    and memory are those of the real model's size, perplexities mean nothing.
    """
    from pipelines.tokenizer import save_tokenizer, train_tokenizer
    from pipelines.train import TrainConfig, new_model

    masker = LineMasker(DEFAULT_RULES)
    tokenizer = train_tokenizer((masker(line) for line in lines), vocab_size=4096)
    model = new_model(TrainConfig(seed=seed), tokenizer, max_positions=4096)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir), safe_serialization=True)
    save_tokenizer(tokenizer, out_dir)


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe_machine(device: str, threads: int) -> dict[str, str]:
    cpu = cpu_name()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({usable} usable by this process)",
        "torch threads": str(threads),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "os": platform.platform(),
        "load average at start (1, 5, 15 min)": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "device": device,
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
        info["cuda"] = str(torch.version.cuda)
    return info

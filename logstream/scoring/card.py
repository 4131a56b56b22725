"""``logstream.json``: what travels with a model besides its weights and tokenizer.

The masking rules the model was trained with, the pattern preamble of its sink prefix, the known
templates (for explanations), how line scores are aggregated and the calibrated thresholds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .masking import DEFAULT_RULES, MaskRule

CARD_FILE = "logstream.json"

Aggregate = Literal["mean", "max", "top3", "excess"]


class Calibration(BaseModel):
    """Thresholds that meet a target false-alert rate on held-out normal lines."""

    aggregate: Aggregate = "mean"
    threshold: float = Field(..., description="alert when a warm line's score is above this")
    warmup_threshold: float = Field(..., description="the same for lines of a stream still warming up")
    warmup_tokens: int = Field(..., description="a stream is warming up until it has seen this many tokens")
    target_false_alert_rate: float
    calibration_lines: int
    calibration_warmup_lines: int
    end_threshold: float | None = Field(None, description="a session whose end scores above this (surprise "
                                        "of the end-of-session token, nats) ended abnormally")
    session_threshold: float | None = Field(None, description="a session alerts when a line's margin over its "
                                            "threshold, or its end's margin over end_threshold, is above this")
    calibration_sessions: int = 0


class KnownTemplate(BaseModel):
    template: str  # masked text of a representative line
    count: int


class ModelCard(BaseModel):
    format_version: int = 2
    model_version: str
    reads: Literal["line", "canonical"] = Field(
        "line", description="what the model was trained to read: 'canonical' = each line's level, source and "
        "message (logstream.canonical); 'line' = the whole raw line (models made before the canonical reading)")
    masks: list[MaskRule] = Field(default_factory=lambda: list(DEFAULT_RULES))
    preamble: list[str] = Field(default_factory=list, description="masked lines primed into the sink prefix")
    templates: list[KnownTemplate] = Field(default_factory=list)
    session_ends: bool = Field(False, description="trained with an end-of-session token after each whole "
                               "session (keyed stream), so the end of a session can be scored")
    calibration: Calibration | None = None
    training: dict = Field(default_factory=dict, description="how the model was made (data, steps, seed, loss)")

    @classmethod
    def load(cls, model_dir: str | Path) -> "ModelCard":
        path = Path(model_dir) / CARD_FILE
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: models for logstream are made by `logstream train`, which writes it")
        return cls.model_validate_json(path.read_text())

    def save(self, model_dir: str | Path) -> Path:
        path = Path(model_dir) / CARD_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.model_dump(mode="json"), indent=2) + "\n")
        tmp.replace(path)
        return path

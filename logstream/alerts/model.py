"""The alert record: what the worker publishes to the alerts topic and what the sinks deliver.

Versioned (``schema_version``) so that consumers can tell old records from new ones. ``alert_id``
is derived from the stream, the anomaly's group and its first offset, so a retry, a re-send after
a restart or a count update of the same group all carry the same id.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from logstream.templates import mask_line

SCHEMA_VERSION = 3  # 2: threshold_how (how the threshold in force was set); 3: session kind, expected line


class SurprisingToken(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(..., description="a word of what the model read")
    logprob: float = Field(..., description="log p(word | context), natural log (the sum over its tokens)")
    share: float | None = Field(None, description="its part of the line's surprise, 0..1")


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    surprising_tokens: list[SurprisingToken] = Field(default_factory=list,
                                                     description="the most surprising words, most first")
    nearest_template: str | None = None
    template_similarity: float | None = None
    summary: str = ""


def to_utc(value: datetime) -> datetime:
    """Aware datetimes converted to UTC; naive ones are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def anomaly_fingerprint(template: str | None, line: str) -> str:
    """Short stable id of "the same anomaly": its template, or the line with variable fields masked."""
    basis = f"template\0{template}" if template is not None else f"masked\0{mask_line(line)}"
    return hashlib.sha256(basis.encode()).hexdigest()[:16]


def stable_alert_id(stream: str, fingerprint: str, partition: int | None, offset: int | None,
                    time: datetime) -> str:
    # Without a Kafka offset (embedded runs, replays from files) the entry's time is the next most
    # stable thing that identifies the first anomaly of the group.
    position = f"{partition}:{offset}" if offset is not None else f"time:{to_utc(time).isoformat()}"
    return hashlib.sha256(f"{stream}\0{fingerprint}\0{position}".encode()).hexdigest()[:32]


class Alert(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    alert_id: str = Field("", description="stable id; computed from stream, group and first offset if empty")
    stream: str
    partition: int | None = None
    offset: int | None = None
    time: datetime = Field(..., description="time of the (first) anomalous entry, UTC")
    line: str
    score: float
    threshold: float | None = Field(..., description="the score threshold in force; None where there was none "
                                    "yet (a rule's alert in a source's first lines)")
    threshold_how: str | None = Field(None, description="why it alerted, how the threshold in force was set: "
                                      "'template' (the template's own recent normal scores), 'new template' (the "
                                      "source's recent new templates), 'rare level', 'unseen problem' (a problem "
                                      "line whose pattern the source never showed in a normal line), 'value out of "
                                      "range' (a numeric field far outside its template's normal values), "
                                      "'calibrated', 'marked normal', 'fixed' (configured)")
    explanation: Explanation = Field(default_factory=Explanation)
    template: str | None = None
    model_version: str
    kind: str | None = Field(None, description="for a session (a keyed stream that ends): 'unusual line', "
                             "'abnormal end' (it said it was done where the model did not expect it) or "
                             "'stalled' (it went quiet where the model expected it to go on)")
    expected: str | None = Field(None, description="for an abnormal end or a stall: the line the model "
                                 "expected next instead, as text with variable fields masked")
    count: int = Field(1, ge=1, description="anomalies folded into this alert")
    first_seen: datetime = Field(..., description="default: time")
    last_seen: datetime = Field(..., description="default: time")

    @model_validator(mode="before")
    @classmethod
    def _seen_defaults_to_time(cls, data: Any) -> Any:
        if isinstance(data, dict) and "time" in data:
            data = dict(data)
            data.setdefault("first_seen", data["time"])
            data.setdefault("last_seen", data["time"])
        return data

    @field_validator("time", "first_seen", "last_seen")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return to_utc(value)

    @model_validator(mode="after")
    def _stable_id(self) -> "Alert":
        if not self.alert_id:
            self.alert_id = stable_alert_id(self.stream, self.fingerprint, self.partition, self.offset,
                                            self.time)
        return self

    @property
    def fingerprint(self) -> str:
        """The group's id within its stream (low cardinality: usable as a label)."""
        return anomaly_fingerprint(self.template, self.line)

    def score_text(self) -> str:
        """'score 8.20 > 4.48' for an alert over its score threshold; a rule's alert (a rare level, an
        unseen problem) fires whatever the score, so there the threshold is only reported."""
        if self.threshold is None:
            return f"score {self.score:.2f}, no score threshold yet"
        if self.score > self.threshold:
            return f"score {self.score:.2f} > {self.threshold:.2f}"
        return f"score {self.score:.2f} (threshold {self.threshold:.2f})"

    @property
    def group_key(self) -> tuple[str, str]:
        return self.stream, self.fingerprint

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_bytes(cls, data: bytes | str) -> "Alert":
        return cls.model_validate_json(data)

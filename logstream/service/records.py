"""The worker's records besides alerts: one per score (optional scores topic), one per dead letter.

Both are JSON, versioned like ``Alert``, and carry the Kafka position (topic, partition, offset) of
the input message they are about, so a consumer can join them with anything else keyed that way
(the synthetic producer's labels, a replay, the alerts).
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

# What went wrong, as the ``kind`` of a dead letter (and the label of logstream_dead_letters_total):
# ``envelope``: the input message is not a log entry; ``scoring``: the batch it was in failed to score;
# ``alert_delivery``: an alert a sink could not deliver (the value is the alert's JSON).
DeadLetterKind = Literal["envelope", "scoring", "alert_delivery", "poison"]


class ScoreRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    stream: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    score: float
    threshold: float | None
    anomaly: bool = Field(..., description="over the threshold, and the stream past scoring.warmup_tokens")
    warm: bool
    tokens: int
    model_version: str
    time: datetime = Field(..., description="when it was scored, UTC")

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


def _encoded(data: bytes | None) -> tuple[str | None, Literal["utf-8", "base64"] | None]:
    """Bytes as text when they are UTF-8, else as base64 (so any input survives the JSON record)."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


class DeadLetterRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    reason: str
    kind: DeadLetterKind
    topic: str | None = Field(None, description="where the message was read (alerts: the input topic)")
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    key_encoding: Literal["utf-8", "base64"] | None = None
    value: str | None = None
    value_encoding: Literal["utf-8", "base64"] | None = None
    time: datetime = Field(default_factory=lambda: datetime.now(UTC), description="when it was dead-lettered")

    @classmethod
    def for_message(cls, reason: str, kind: DeadLetterKind, *, topic: str | None, partition: int | None,
                    offset: int | None, key: bytes | None, value: bytes | None) -> "DeadLetterRecord":
        key_text, key_encoding = _encoded(key)
        value_text, value_encoding = _encoded(value)
        return cls(reason=reason, kind=kind, topic=topic, partition=partition, offset=offset, key=key_text,
                   key_encoding=key_encoding, value=value_text, value_encoding=value_encoding)

    def raw_value(self) -> bytes | None:
        """The original message value, bytes for bytes."""
        if self.value is None:
            return None
        return base64.b64decode(self.value) if self.value_encoding == "base64" else self.value.encode()

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()

"""The input record: one log entry on the input topic.

A message value is either a raw line (bytes, UTF-8) or a JSON envelope. The message key is the
stream id (host, service or file); an envelope may name its stream itself.
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class EnvelopeError(ValueError):
    """A message that cannot be turned into a log entry; the message says why (goes to dead letter)."""


class LogEnvelope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: str = Field(..., description="the log line, without its trailing newline")
    source: str | None = Field(None, description="where it came from: a file path, a service name")
    stream: str | None = Field(None, description="stream id; default: the message key, then source")
    timestamp: datetime | None = None
    fields: dict[str, str] = Field(default_factory=dict, description="structured fields, e.g. host, level")
    truncated: bool = Field(False, description="the line was longer than the producer's cap and was cut")

    def to_bytes(self) -> bytes:
        return self.model_dump_json(exclude_none=True, exclude_defaults=True).encode()


def decode_entry(value: bytes | None, key: bytes | None) -> tuple[str, LogEnvelope]:
    """(stream id, envelope) for a message, or EnvelopeError with the reason."""
    if value is None:
        raise EnvelopeError("empty message (no value)")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"value is not UTF-8: {exc}") from None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            envelope = LogEnvelope.model_validate(json.loads(stripped))
        except json.JSONDecodeError as exc:
            raise EnvelopeError(f"malformed JSON envelope: {exc}") from None
        except RecursionError:  # thousands of nested brackets: a dead letter, never a crash loop
            raise EnvelopeError("JSON envelope nested too deeply") from None
        except ValidationError as exc:
            errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'envelope'}: {e['msg']}" for e in exc.errors())
            raise EnvelopeError(f"invalid envelope: {errors}") from None
    else:
        envelope = LogEnvelope(line=text.rstrip("\r\n"))
    if "\n" in envelope.line:
        raise EnvelopeError("a log entry must be one line (found a newline inside)")
    key_text = key.decode("utf-8", errors="replace") if key else None
    stream = envelope.stream or key_text or envelope.source
    if not stream:
        raise EnvelopeError("no stream id: give the message a key, or an envelope with stream or source")
    # A JSON envelope can carry an escaped lone surrogate ("\ud800"): valid JSON, but not text that
    # the tokenizer or any record written downstream can encode.
    for name, text in (("line", envelope.line), ("stream id", stream)):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EnvelopeError(f"the {name} is not valid Unicode text ({exc.reason} at position "
                                f"{exc.start})") from None
    return stream, envelope

"""The input record: log entries on the input topic.

A message value is a raw line (bytes, UTF-8), logstream's JSON envelope, a record of a usual log
shipper (Vector, Fluent Bit, Filebeat, an OpenTelemetry Collector's OTLP JSON: ``shippers``), or a
JSON log line of an application. The message key is the stream id (host, service or file); an
envelope may name its stream itself.
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class EnvelopeError(ValueError):
    """A message that cannot be turned into a log entry; the message says why (goes to dead letter)."""


class LogEnvelope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    line: str = Field(..., description="the log line, without its trailing newline")
    source: str | None = Field(None, description="where it came from: a file path, a service name")
    stream: str | None = Field(None, description="stream id; default: the message key, then source")
    timestamp: datetime | None = None
    fields: dict[str, str] = Field(default_factory=dict, description="structured fields, e.g. host, level "
                                   "(values that are not strings are kept as their JSON text)")
    truncated: bool = Field(False, description="the line was longer than the producer's cap and was cut")

    @field_validator("fields", mode="before")
    @classmethod
    def _as_text(cls, value):
        if isinstance(value, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), default=str)
                    for k, v in value.items()}
        return value

    def to_bytes(self) -> bytes:
        return self.model_dump_json(exclude_none=True, exclude_defaults=True).encode()

    def capped(self, max_bytes: int) -> "LogEnvelope":
        """The entry with its line cut to ``max_bytes`` of UTF-8 (at a character boundary) and marked
        truncated, as the tailer cuts long lines: one huge message must not hold up every stream."""
        data = self.line.encode("utf-8", errors="surrogatepass")
        if len(data) <= max_bytes:
            return self
        from .tailer import utf8_cut

        line = utf8_cut(data, max_bytes).decode("utf-8", errors="replace")
        return self.model_copy(update={"line": line, "truncated": True})


def decode_entry(value: bytes | None, key: bytes | None) -> tuple[str, LogEnvelope]:
    """(stream id, envelope) of a raw line or a logstream envelope, or EnvelopeError with the reason."""
    entries = decode_entries(value, key, "logstream")
    return entries[0]


def decode_entries(value: bytes | None, key: bytes | None, input_format: str = "auto",
                   mapping: dict[str, str] | None = None) -> list[tuple[str, LogEnvelope]]:
    """The log entries of a message: one for a raw line, an envelope or a shipper's record, many for an
    OTLP export (see ``shippers``); EnvelopeError with the reason when it holds none."""
    if value is None:
        raise EnvelopeError("empty message (no value)")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EnvelopeError(f"value is not UTF-8: {exc}") from None
    stripped = text.strip()
    if input_format == "raw" or not stripped.startswith("{"):
        envelopes = [LogEnvelope(line=text.rstrip("\r\n"))]
    else:
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise EnvelopeError(f"malformed JSON envelope: {exc}") from None
        except RecursionError:  # thousands of nested brackets: a dead letter, never a crash loop
            raise EnvelopeError("JSON envelope nested too deeply") from None
        envelopes = _envelopes(obj, stripped, input_format, mapping or {})
    return [_checked(envelope, key) for envelope in envelopes]


def _envelopes(obj: dict, text: str, input_format: str, mapping: dict[str, str]) -> list[LogEnvelope]:
    from . import shippers

    preset = shippers.recognise(obj) if input_format == "auto" else input_format
    try:
        if preset == "logstream":
            return [LogEnvelope.model_validate(obj)]
        if preset == "otlp":
            records = shippers.otlp_records(obj)
            if not records:
                raise EnvelopeError("OTLP message without a log record that has a body")
            return [LogEnvelope.model_validate(r) for r in records]
        if preset == "json":  # a JSON log line of an application: the canonical reading finds its message
            return [LogEnvelope(line=text)]
        record = shippers.map_record(obj, preset, mapping)
        if "line" not in record:
            looked = mapping.get("line") or ", ".join(shippers.PRESETS[preset]["line"])
            raise EnvelopeError(f"{preset} record without a message (looked for: {looked}; set "
                                "kafka.input_mapping.line to where yours is)")
        return [LogEnvelope.model_validate(record)]
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'envelope'}: {e['msg']}" for e in exc.errors())
        raise EnvelopeError(f"invalid envelope: {errors}") from None


def _checked(envelope: LogEnvelope, key: bytes | None) -> tuple[str, LogEnvelope]:
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

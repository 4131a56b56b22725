"""What the usual log shippers write to Kafka, mapped to log entries without code.

Presets, by name (``kafka.input_format``; ``auto`` recognises each by its shape):

* ``logstream``: logstream's own envelope (``line``, ``stream``, ``source``, ``timestamp``, ``fields``);
* ``vector``: Vector's ``kafka`` sink with ``encoding.codec = "json"`` after a ``file`` source
  (``message``, ``file``, ``host``, ``source_type``, ``timestamp``);
* ``fluentbit``: Fluent Bit's ``kafka`` output with ``Format json`` after a ``tail`` input (``log``,
  ``@timestamp``, with ``Path_Key`` a file path key such as ``filename``);
* ``filebeat``: Filebeat / Elastic Agent's ``kafka`` output with ``codec.json`` (ECS: ``message``,
  ``@timestamp``, ``log.file.path``, ``host.name``, ``log.level``);
* ``otlp``: the OpenTelemetry Collector's ``kafka`` exporter with ``encoding: otlp_json``: one message
  holds many log records (``resourceLogs[].scopeLogs[].logRecords[]``);
* ``json``: any other JSON object, scored as a JSON log line (its message and level found by the
  canonical reading);
* ``raw``: the value is the line.

``kafka.input_mapping`` overrides where a preset finds the line, stream, file, host, timestamp and
level (dotted paths, e.g. ``{line: "event.original", stream: "kubernetes.pod.name"}``). Values that are not
strings are kept as text. What still cannot be read goes to the dead-letter topic with the reason.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

# where each preset finds a record's parts; a record's stream is the message key if it has one, else
# "<host>:<file>" (one stream per file per host, as `logstream tail` keys them)
PRESETS: dict[str, dict[str, tuple[str, ...]]] = {
    "vector": {"line": ("message",), "file": ("file", "source_type"), "host": ("host",),
               "timestamp": ("timestamp",), "level": ("level", "severity")},
    "fluentbit": {"line": ("log", "message"), "file": ("filename", "file", "path", "kubernetes.container_name"),
                  "host": ("kubernetes.pod_name", "hostname", "host"), "timestamp": ("@timestamp", "date"),
                  "level": ("level", "severity")},
    "filebeat": {"line": ("message", "event.original"), "file": ("log.file.path", "container.name", "input.type"),
                 "host": ("host.name", "agent.name"), "timestamp": ("@timestamp",), "level": ("log.level",)},
}
FIELDS = ("line", "stream", "file", "host", "timestamp", "level")


def lookup(obj, path: str):
    """The value at a dotted path, whether the object nests it (``{"log": {"file": {"path": ...}}}``),
    flattens it (``{"log.level": ...}``) or mixes both."""
    if not isinstance(obj, dict):
        return None
    if path in obj:
        return obj[path]
    parts = path.split(".")
    for cut in range(1, len(parts)):
        head = ".".join(parts[:cut])
        if head in obj:
            value = lookup(obj[head], ".".join(parts[cut:]))
            if value is not None:
                return value
    return None


def text(value) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def recognise(obj: dict) -> str:
    """The preset an object looks like written by (``auto``)."""
    if "line" in obj:
        return "logstream"
    if "resourceLogs" in obj:
        return "otlp"
    if "message" in obj and ("@metadata" in obj or "ecs" in obj or "agent" in obj or "log.file.path" in obj
                             or isinstance(obj.get("log"), dict)):
        return "filebeat"
    if "message" in obj and "source_type" in obj:
        return "vector"
    if "log" in obj and isinstance(obj["log"], str):
        return "fluentbit"
    return "json"


def _first(obj: dict, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        value = text(lookup(obj, path))
        if value is not None:
            return value
    return None


def map_record(obj: dict, preset: str, overrides: dict[str, str]) -> dict:
    """Envelope fields (line, stream, source, timestamp, fields) of one shipper record."""
    paths = {name: ((overrides[name],) if name in overrides else PRESETS[preset].get(name, ())) for name in FIELDS}
    found = {name: _first(obj, paths[name]) for name in FIELDS}
    fields = {"shipper": preset, **{k: found[k] for k in ("host", "file", "level") if found[k] is not None}}
    entry = {"line": found["line"], "stream": found["stream"], "timestamp": found["timestamp"], "fields": fields,
             "source": ":".join(p for p in (found["host"], found["file"]) if p) or None}
    return {k: v for k, v in entry.items() if v is not None}


def _attributes(items) -> dict[str, str]:
    """OTLP ``[{key, value: {stringValue|intValue|...}}]`` as text values."""
    out = {}
    for item in items or []:
        if isinstance(item, dict) and "key" in item:
            value = item.get("value") or {}
            out[item["key"]] = text(next(iter(value.values()), None)) if isinstance(value, dict) else text(value)
    return {k: v for k, v in out.items() if v is not None}


def otlp_records(obj: dict) -> list[dict]:
    """Envelope fields of every log record of an OTLP JSON ``ExportLogsServiceRequest``."""
    out = []
    for resource_logs in obj.get("resourceLogs") or []:
        resource = _attributes((resource_logs.get("resource") or {}).get("attributes"))
        for scope_logs in resource_logs.get("scopeLogs") or []:
            for record in scope_logs.get("logRecords") or []:
                body = record.get("body") or {}
                line = text(next(iter(body.values()), None)) if isinstance(body, dict) else text(body)
                if line is None:
                    continue
                nanos = record.get("timeUnixNano") or record.get("observedTimeUnixNano")
                fields = {"shipper": "otlp", **resource, **_attributes(record.get("attributes"))}
                level = record.get("severityText") or _severity_number(record.get("severityNumber"))
                if level:
                    fields["level"] = level
                entry = {"line": line, "fields": fields,
                         "stream": resource.get("service.instance.id") or resource.get("host.name")
                         or resource.get("service.name"), "source": resource.get("service.name")}
                if nanos:
                    entry["timestamp"] = datetime.fromtimestamp(int(nanos) / 1e9, UTC)
                out.append({k: v for k, v in entry.items() if v is not None})
    return out


def _severity_number(number) -> str | None:
    """OTLP SeverityNumber 1-24 in its six ranges."""
    try:
        number = int(number)
    except (TypeError, ValueError):
        return None
    names = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
    return names[(number - 1) // 4] if 1 <= number <= 24 else None

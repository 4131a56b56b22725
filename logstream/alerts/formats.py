"""Payloads in the formats the ecosystem already speaks.

* generic: the Alert JSON itself (``Alert.to_bytes``);
* the Alertmanager webhook payload, version "4" (what Alertmanager's and Grafana's webhook
  receivers send), for receivers written against those;
* the Alertmanager API v2 ``POST /api/v2/alerts`` body, to let Alertmanager group, silence and route.

Labels identify an alert in Alertmanager, so they stay low-cardinality and stable within a group:
``alertname``, ``stream``, ``severity``, ``template_id`` (the group fingerprint). Everything that
varies (the line, the score, the explanation, the count) goes into annotations.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from logstream.alerts.model import Alert

ALERT_NAME = "LogAnomaly"
GROUP_BY = ("alertname", "stream")
WEBHOOK_VERSION = "4"
# Alertmanager's webhook writes a firing alert's endsAt as Go's zero time ("not resolved yet").
GO_ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class FormatOptions:
    severity: str = "warning"
    external_url: str | None = None  # externalURL and generatorURL
    resolve_after_s: float = 300.0   # endsAt = max(now, last_seen) + this
    receiver: str = "logstream"

    @classmethod
    def from_settings(cls, settings) -> "FormatOptions":  # an AlertSettings
        return cls(severity=settings.severity, external_url=settings.external_url,
                   resolve_after_s=settings.resolve_after_s)


def rfc3339(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def alert_labels(alert: Alert, options: FormatOptions = FormatOptions()) -> dict[str, str]:
    return {"alertname": ALERT_NAME, "stream": alert.stream, "severity": options.severity,
            "template_id": alert.fingerprint}


def alert_annotations(alert: Alert) -> dict[str, str]:
    summary = alert.explanation.summary or (
        f"unexpected log line in {alert.stream} ({alert.score_text()})")
    notes: dict[str, object] = {
        "summary": summary,
        "description": alert.line,
        "alert_id": alert.alert_id,
        "score": f"{alert.score:.4f}",
        "threshold": None if alert.threshold is None else f"{alert.threshold:.4f}",
        "threshold_how": alert.threshold_how,
        "count": alert.count,
        "first_seen": rfc3339(alert.first_seen),
        "last_seen": rfc3339(alert.last_seen),
        "model_version": alert.model_version,
        "template": alert.template,
        "nearest_template": alert.explanation.nearest_template,
        "template_similarity": (None if alert.explanation.template_similarity is None
                                else f"{alert.explanation.template_similarity:.3f}"),
        "surprising_words": ", ".join(f"{t.text!r} ({t.share:.0%})" if t.share is not None else repr(t.text)
                                      for t in alert.explanation.surprising_tokens) or None,
        "kafka_position": None if alert.offset is None else f"{alert.partition}:{alert.offset}",
        "session_kind": alert.kind,  # a session's alerts: unusual line, abnormal end, stalled
        "expected": alert.expected,
    }
    return {k: str(v) for k, v in notes.items() if v is not None}


def label_fingerprint(labels: dict[str, str]) -> str:
    """Alertmanager's fingerprint of a label set (FNV-1a 64 over sorted names and values)."""
    h = 0xCBF29CE484222325
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode() + b"\xff":
                h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _label_set_string(labels: dict[str, str]) -> str:
    # Alertmanager's LabelSet.String(): {a="x", b="y"}, names sorted, values quoted.
    return "{" + ", ".join(f"{k}={json.dumps(labels[k], ensure_ascii=False)}" for k in sorted(labels)) + "}"


def _common(dicts: Sequence[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    first, *rest = dicts
    return {k: v for k, v in first.items() if all(d.get(k) == v for d in rest)}


def _ends_at(alert: Alert, options: FormatOptions, now: datetime) -> datetime:
    return max(now, alert.last_seen) + timedelta(seconds=options.resolve_after_s)


def alertmanager_webhook_payload(alerts: Sequence[Alert], options: FormatOptions = FormatOptions()) -> dict:
    """The version "4" webhook payload of one notification holding ``alerts`` (all firing)."""
    labels = [alert_labels(a, options) for a in alerts]
    annotations = [alert_annotations(a) for a in alerts]
    common_labels = _common(labels)
    group_labels = {k: common_labels[k] for k in GROUP_BY if k in common_labels}
    return {
        "receiver": options.receiver,
        "status": "firing",
        "alerts": [{
            "status": "firing",
            "labels": alert_labels_,
            "annotations": annotations_,
            "startsAt": rfc3339(alert.first_seen),
            "endsAt": GO_ZERO_TIME,
            "generatorURL": options.external_url or "",
            "fingerprint": label_fingerprint(alert_labels_),
        } for alert, alert_labels_, annotations_ in zip(alerts, labels, annotations)],
        "groupLabels": group_labels,
        "commonLabels": common_labels,
        "commonAnnotations": _common(annotations),
        "externalURL": options.external_url or "",
        "version": WEBHOOK_VERSION,
        "groupKey": "{}:" + _label_set_string(group_labels),
        "truncatedAlerts": 0,
    }


def alertmanager_api_alerts(alerts: Sequence[Alert], options: FormatOptions = FormatOptions(),
                            now: datetime | None = None) -> list[dict]:
    """The body of Alertmanager's ``POST /api/v2/alerts``."""
    now = datetime.now(timezone.utc) if now is None else now
    body = []
    for alert in alerts:
        posted = {"labels": alert_labels(alert, options), "annotations": alert_annotations(alert),
                  "startsAt": rfc3339(alert.first_seen), "endsAt": rfc3339(_ends_at(alert, options, now))}
        if options.external_url:
            posted["generatorURL"] = options.external_url
        body.append(posted)
    return body


def generic_payload(alert: Alert) -> bytes:
    return alert.to_bytes()

"""Alerts: the record (model), folding bursts (grouping), payload formats, signing and delivery."""

from logstream.alerts.grouping import AlertGrouper
from logstream.alerts.model import Alert, Explanation, SurprisingToken
from logstream.alerts.signing import SignatureError, sign, signature_headers, verify
from logstream.alerts.sinks import AlertmanagerSink, HttpSink, WebhookSink, build_sinks

__all__ = [
    "Alert", "AlertGrouper", "AlertmanagerSink", "Explanation", "HttpSink", "SignatureError",
    "SurprisingToken", "WebhookSink", "build_sinks", "sign", "signature_headers", "verify",
]

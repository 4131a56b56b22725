"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

The sender signs ``"{webhook-id}.{webhook-timestamp}.{body}"`` with HMAC-SHA256 and sends
``webhook-signature: v1,<base64>``; several space-separated signatures let a receiver accept the
old and the new key while a secret is rotated. Secrets are ``whsec_<base64>``; a secret without
that prefix is used as raw UTF-8 bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping, Sequence

SECRET_PREFIX = "whsec_"


class SignatureError(ValueError):
    """The webhook's signature headers are missing, malformed, stale or do not match the body."""


def secret_bytes(secret: str) -> bytes:
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
        except binascii.Error as exc:
            raise ValueError(f"webhook secret {SECRET_PREFIX}... is not valid base64: {exc}") from None
    return secret.encode()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``v1,<base64>`` signature of one message."""
    signed = f"{msg_id}.{int(timestamp)}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_headers(secrets: str | Sequence[str], msg_id: str, body: bytes,
                      timestamp: int | None = None) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` (one signature per secret)."""
    timestamp = int(time.time()) if timestamp is None else int(timestamp)
    secrets = [secrets] if isinstance(secrets, str) else list(secrets)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(timestamp)}
    if secrets:
        headers["webhook-signature"] = " ".join(sign(s, msg_id, timestamp, body) for s in secrets)
    return headers


def verify(secret: str, headers: Mapping[str, str], body: bytes, tolerance_s: float = 300,
           now: float | None = None) -> None:
    """Raise SignatureError unless one ``v1`` signature in the headers matches ``secret``.

    The timestamp must be within ``tolerance_s`` of now (either way), against replays.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    missing = [h for h in ("webhook-id", "webhook-timestamp", "webhook-signature") if not lowered.get(h)]
    if missing:
        raise SignatureError(f"missing header(s): {', '.join(missing)}")
    msg_id, raw_timestamp = lowered["webhook-id"], lowered["webhook-timestamp"]
    try:
        timestamp = int(raw_timestamp)
    except ValueError:
        raise SignatureError(f"webhook-timestamp is not an integer: {raw_timestamp!r}") from None
    now = time.time() if now is None else now
    if abs(now - timestamp) > tolerance_s:
        raise SignatureError(f"webhook-timestamp {timestamp} is more than {tolerance_s:g} s from now "
                             f"({int(now)}): stale or replayed message")
    expected = sign(secret, msg_id, timestamp, body).encode()
    offered = [s for s in lowered["webhook-signature"].split() if s.startswith("v1,")]
    if not offered:
        raise SignatureError("webhook-signature holds no v1 signature")
    if not any(hmac.compare_digest(expected, s.encode()) for s in offered):
        raise SignatureError("no signature matches: wrong secret, or the body was altered")

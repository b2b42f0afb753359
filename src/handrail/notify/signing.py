"""The signature headers of a notification, as the Standard Webhooks specification
writes them: `webhook-id` (the notification's id, also sent as `Idempotency-Key`),
`webhook-timestamp` (Unix seconds) and `webhook-signature`: `v1,` and the base64
HMAC-SHA256 of `id.timestamp.body` under the secret's key."""

from __future__ import annotations

import base64
import hashlib
import hmac

SECRET_PREFIX = "whsec_"


def key(secret: str) -> bytes:
    """A `whsec_` secret is base64 of the key (the specification's form); any other
    secret is used as its UTF-8 bytes."""
    if secret.startswith(SECRET_PREFIX):
        return base64.b64decode(secret[len(SECRET_PREFIX) :] + "==")
    return secret.encode("utf-8")


def signature(secret: str, notification_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{notification_id}.{timestamp}.".encode() + body
    digest = hmac.new(key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secret: str, notification_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    out = {
        "Content-Type": "application/json",
        "User-Agent": "handrail-notify",
        "Idempotency-Key": notification_id,
        "webhook-id": notification_id,
        "webhook-timestamp": str(timestamp),
    }
    if secret:
        out["webhook-signature"] = signature(secret, notification_id, timestamp, body)
    return out

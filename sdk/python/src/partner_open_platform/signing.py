"""Request signing (scheme M and scheme H), the plugin launch signature and
webhook verification, exactly as the partner specification's Authentication
section defines them. Pure standard library."""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Optional, Union

Bytes = Union[bytes, bytearray, memoryview]

WEBHOOK_TOLERANCE = 300
"""Seconds a webhook timestamp may be away from the receiver's clock."""


def _b(v: Union[str, Bytes]) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def sign_m(app_key: str, timestamp: Union[int, str], app_secret: str, body: Union[str, Bytes]) -> str:
    """Scheme M: hex MD5 of app_key + timestamp + app_secret + body (no separators).

    The body is the raw request body (b"" for GET and DELETE)."""
    h = hashlib.md5()  # noqa: S324 - the spec's scheme M is MD5
    h.update(app_key.encode("utf-8"))
    h.update(str(timestamp).encode("ascii"))
    h.update(app_secret.encode("utf-8"))
    h.update(_b(body))
    return h.hexdigest()


def sign_string_h(method: str, uri: str, timestamp: Union[int, str], nonce: str, body: Union[str, Bytes]) -> str:
    """Scheme H signString: METHOD LF URI LF timestamp LF nonce LF hex(SHA-256(body))."""
    return "\n".join(
        [method.upper(), uri, str(timestamp), nonce, hashlib.sha256(_b(body)).hexdigest()]
    )


def sign_h(
    app_secret: str, method: str, uri: str, timestamp: Union[int, str], nonce: str, body: Union[str, Bytes]
) -> str:
    """Scheme H: lower-case hex HMAC-SHA-256 of the signString keyed with the app secret.

    uri is the path with its query string exactly as requested; an omitted
    X-Nonce signs as the empty string."""
    s = sign_string_h(method, uri, timestamp, nonce, body)
    return hmac.new(app_secret.encode("utf-8"), s.encode("utf-8"), hashlib.sha256).hexdigest()


def sign_plugin_launch(app_secret: str, app_key: str, third_user_id: str, timestamp: Union[int, str], nonce: str) -> str:
    """Plugin launch sign: hex HMAC-SHA-256 of appKey|thirdUserId|timestamp|nonce keyed with the app secret."""
    text = "|".join([app_key, third_user_id, str(timestamp), nonce])
    return hmac.new(app_secret.encode("utf-8"), text.encode("utf-8"), hashlib.sha256).hexdigest()


def webhook_signature(secret: str, timestamp: Union[int, str], body: Bytes) -> str:
    """X-Webhook-Signature: hex HMAC-SHA-256 of timestamp "." raw body, keyed with the webhook secret."""
    m = hmac.new(secret.encode("utf-8"), digestmod=hashlib.sha256)
    m.update(str(timestamp).encode("ascii"))
    m.update(b".")
    m.update(bytes(body))
    return m.hexdigest()


class WebhookVerificationError(Exception):
    """A webhook failed verification; answer 401 (bad signature) or 400 (stale) and do not process it.

    reason is one of "missing", "timestamp", "stale", "signature"."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def verify_webhook(
    secret: str,
    timestamp: Union[int, str, None],
    signature: Optional[str],
    body: Bytes,
    *,
    tolerance: int = WEBHOOK_TOLERANCE,
    now: Optional[float] = None,
) -> None:
    """Check X-Webhook-Signature over the raw body bytes, in constant time.

    Raises WebhookVerificationError when a header is missing, the timestamp
    is not Unix seconds or is more than `tolerance` seconds from `now`
    (default: the current time), or the signature does not match. Pass the
    body exactly as received, before any JSON parsing."""
    if isinstance(body, str):
        raise TypeError("body must be the raw request bytes, not str")
    if timestamp is None or timestamp == "" or not signature:
        raise WebhookVerificationError("missing", "missing X-Webhook-Timestamp or X-Webhook-Signature")
    ts_text = str(timestamp).strip()
    if not ts_text.isdigit() or not ts_text.isascii():
        raise WebhookVerificationError("timestamp", "X-Webhook-Timestamp is not Unix seconds")
    ts = int(ts_text)
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        raise WebhookVerificationError("stale", "X-Webhook-Timestamp is outside the %d s tolerance" % tolerance)
    expected = webhook_signature(secret, ts_text, body)
    if not hmac.compare_digest(expected.encode("ascii"), signature.strip().lower().encode("utf-8")):
        raise WebhookVerificationError("signature", "X-Webhook-Signature does not match")

"""Typed webhook events: verify a delivery, then parse its body into the event's model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

from . import models as m
from .event_types import EVENT_CATALOG
from .signing import WEBHOOK_TOLERANCE, Bytes, WebhookVerificationError, verify_webhook

WebhookEvent = Union[
    m.UserProfileUpdatedEvent,
    m.UserFamilyGroupCreatedEvent,
    m.UserFamilyGroupDeletedEvent,
    m.UserFamilyMemberCreatedEvent,
    m.UserFamilyMemberUpdatedEvent,
    m.UserFamilyMemberDeletedEvent,
    m.HealthReportCreatedEvent,
    m.HealthReportUpdatedEvent,
    m.PluginReportReadyEvent,
    m.OrderShippedEvent,
    "UnknownEvent",
]
"""Every event type the platform sends, plus UnknownEvent for types newer than this SDK."""


@dataclass
class UnknownEvent:
    """An event type this SDK version does not know; kept whole so a receiver can still log or queue it."""

    event: str
    delivery_id: Optional[str]
    raw: Dict[str, Any]


_CATALOGUED = frozenset(t.name for t in EVENT_CATALOG)


def is_catalogued_event_type(name: str) -> bool:
    """Whether name is a type of the platform's event catalog (GET /open/v1/event-types) as this SDK knows it."""
    return name in _CATALOGUED


def parse_event(body: Union[Bytes, str, Mapping[str, Any]]) -> WebhookEvent:
    """Parse a webhook body (raw bytes, text or an already decoded object) into its typed event.

    The event type comes from the body's `event` field; an unknown type
    gives UnknownEvent rather than an error, since the platform may add
    events."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        obj = json.loads(bytes(body).decode("utf-8"))
    elif isinstance(body, str):
        obj = json.loads(body)
    else:
        obj = dict(body)
    if not isinstance(obj, dict):
        raise ValueError("webhook body is not a JSON object")
    event = str(obj.get("event", ""))
    cls = m.EVENT_TYPES.get(event) if is_catalogued_event_type(event) else None
    if cls is None:
        did = obj.get("delivery_id")
        return UnknownEvent(event=event, delivery_id=None if did is None else str(did), raw=obj)
    parsed: WebhookEvent = cls.from_dict(obj)
    return parsed


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    low = name.lower()
    for k, v in headers.items():
        if k.lower() == low:
            return v
    return None


def construct_event(
    secret: str,
    headers: Mapping[str, str],
    body: Bytes,
    *,
    tolerance: int = WEBHOOK_TOLERANCE,
    now: Optional[float] = None,
    previous_secret: Optional[str] = None,
) -> WebhookEvent:
    """Verify X-Webhook-Timestamp/X-Webhook-Signature over the raw body, then parse the event.

    previous_secret is accepted too, for the overlap while a webhook secret
    is being rotated. Raises WebhookVerificationError when neither verifies."""
    ts = _header(headers, "X-Webhook-Timestamp")
    sig = _header(headers, "X-Webhook-Signature")
    try:
        verify_webhook(secret, ts, sig, body, tolerance=tolerance, now=now)
    except WebhookVerificationError as e:
        if previous_secret is None or e.reason != "signature":
            raise
        verify_webhook(previous_secret, ts, sig, body, tolerance=tolerance, now=now)
    return parse_event(body)

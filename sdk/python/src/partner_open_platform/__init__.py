"""Partner Open Platform SDK: signed, typed, retrying access to the partner API,
webhook verification and typed events, and the plugin host helper."""

from __future__ import annotations

from . import models
from .client import DEFAULT_ENDPOINT_ID, PartnerClient, Response, RetryPolicy
from .errors import PartnerApiError, TransportError
from .plugin import PluginHost, PluginLaunch, PluginProfile, decrypt_profile, encrypt_profile
from .signing import (
    WEBHOOK_TOLERANCE,
    WebhookVerificationError,
    sign_h,
    sign_m,
    sign_plugin_launch,
    sign_string_h,
    verify_webhook,
    webhook_signature,
)
from .event_types import EVENT_CATALOG, EventType
from .webhooks import UnknownEvent, WebhookEvent, construct_event, is_catalogued_event_type, parse_event

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENDPOINT_ID",
    "EVENT_CATALOG",
    "EventType",
    "PartnerClient",
    "PartnerApiError",
    "PluginHost",
    "PluginLaunch",
    "PluginProfile",
    "Response",
    "RetryPolicy",
    "TransportError",
    "UnknownEvent",
    "WEBHOOK_TOLERANCE",
    "WebhookEvent",
    "WebhookVerificationError",
    "construct_event",
    "decrypt_profile",
    "encrypt_profile",
    "is_catalogued_event_type",
    "models",
    "parse_event",
    "sign_h",
    "sign_m",
    "sign_plugin_launch",
    "sign_string_h",
    "verify_webhook",
    "webhook_signature",
]

"""The one error type of the SDK: every non-2xx answer of the platform."""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class PartnerApiError(Exception):
    """The platform refused a request; carries what a partner needs to react or to report it.

    status is the HTTP status; code the spec's string code (USER_NOT_FOUND,
    VALIDATION_ERROR, HTTP_401, ... ; the OAuth `error` for /oauth routes;
    None for the report pull's codeless 404 and 429); field_errors the
    VALIDATION_ERROR map of field path to messages; request_id the
    X-Request-Id header to quote to support; retry_after the Retry-After
    seconds when sent."""

    def __init__(
        self,
        status: int,
        code: Optional[str],
        message: str,
        *,
        field_errors: Optional[Dict[str, List[str]]] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__("%s %s: %s%s" % (status, code or "(no code)", message, " [request %s]" % request_id if request_id else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field_errors: Dict[str, List[str]] = field_errors or {}
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = body


class TransportError(Exception):
    """The platform could not be reached (connection refused, reset or timed out) after the allowed retries."""

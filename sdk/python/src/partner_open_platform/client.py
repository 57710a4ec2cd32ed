"""PartnerClient: every partner route of the platform, signed, typed and retried where safe."""

from __future__ import annotations

import base64
import email.utils
import json
import random
import secrets
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from . import models as m
from .errors import PartnerApiError, TransportError
from .signing import sign_h, sign_m

__all__ = ["PartnerClient", "Response", "RetryPolicy"]

# A request body: a generated model (sent through its to_dict) or a plain JSON-able mapping.
Body = Union[Mapping[str, Any], Any, None]

# operationId -> client method; tests/test_operations.py checks this table
# against the OpenAPI document and calls every method against a recorder.
OPERATION_METHODS: Dict[str, str] = {
    "registerChannelUser": "register_user",
    "getChannelUserSnapshot": "get_snapshot",
    "updateChannelUser": "update_user",
    "upsertFamilyGroup": "upsert_family_group",
    "dissolveFamilyGroup": "dissolve_family_group",
    "upsertFamilyMember": "upsert_family_member",
    "deleteFamilyMember": "delete_family_member",
    "listMyDeliveries": "list_deliveries",
    "getMyDelivery": "get_delivery",
    "resendMyDelivery": "resend_delivery",
    "acknowledgeErasure": "acknowledge_erasure",
    "listMyAccessLog": "list_access_log",
    "rotateMyWebhookSecret": "rotate_webhook_secret",
    "activateMyWebhookSecret": "activate_webhook_secret",
    "webhookEventFeed": "list_events",
    "pullHealthReport": "pull_health_report",
    "getDailyReport": "get_daily_report",
    "sandboxMockMeasure": "sandbox_mock_measure",
    "oauthToken": "fetch_access_token",
    "oauthRevoke": "revoke_access_token",
    "createOrder": "create_order",
    "getOrderDetail": "get_order",
    "sandboxShippedCallbackTest": "sandbox_ship_order",
    "triggerSandboxEvent": "trigger_sandbox_event",
    "registerOwnServiceProvider": "register_service_provider",
    "batchIssueBenefitCards": "batch_issue_benefit_cards",
    "verifyBenefitUse": "verify_benefit_use",
    "getBenefitCard": "get_benefit_card",
    "listFulfillments": "list_fulfillments",
    "rateFulfillment": "rate_fulfillment",
    "requestWebhookReplay": "replay_webhooks",
    "getWebhookReplay": "get_webhook_replay",
    "cancelWebhookReplay": "cancel_webhook_replay",
    "listMyWebhookEndpoints": "list_webhook_endpoints",
    "createMyWebhookEndpoint": "create_webhook_endpoint",
    "getMyWebhookEndpoint": "get_webhook_endpoint",
    "updateMyWebhookEndpoint": "update_webhook_endpoint",
    "deleteMyWebhookEndpoint": "delete_webhook_endpoint",
    "rotateMyWebhookEndpointSecret": "rotate_webhook_endpoint_secret",
    "activateMyWebhookEndpointSecret": "activate_webhook_endpoint_secret",
    "sendMyWebhookEndpointTest": "send_webhook_endpoint_test",
}

#: The app's default webhook endpoint (its webhook_url), signed with the
#: app's webhook secret; every other endpoint signs with its own secret.
DEFAULT_ENDPOINT_ID = 0


@dataclass
class Response:
    """One decoded answer: status, headers (lower-case names), parsed JSON and the request id."""

    status: int
    headers: Dict[str, str]
    json: Any
    request_id: Optional[str]

    @property
    def data(self) -> Any:
        """The envelope's data (None on operations without data)."""
        return self.json.get("data") if isinstance(self.json, dict) else None

    @property
    def replayed(self) -> bool:
        """True when the platform answered from its idempotency record (Idempotent-Replayed: true)."""
        return self.headers.get("idempotent-replayed", "").lower() == "true"


@dataclass
class RetryPolicy:
    """How 429 and 503 (and lost connections) are retried on requests that are safe to repeat.

    A request is safe when it is a read (GET) or a write sent with an
    Idempotency-Key. Retry-After is honoured when present (up to
    max_retry_after; a longer wait raises at once); otherwise the delay is
    exponential with full jitter: uniform(0, min(max_delay, base_delay * 2**n))."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0


class PartnerClient:
    """A partner application's server-side client.

    base_url is the platform's address ({base_url} of the spec). app_id,
    app_key and app_secret are the application's credentials; the secret
    signs requests and never leaves the server.

    Requests are signed with scheme H (HMAC-SHA-256 over method, path with
    query, timestamp, a fresh single-use nonce and the body's SHA-256) on
    every route by default; scheme="M" signs the spec's MD5 scheme M on the
    routes that take it instead (the report pull and the sandbox mock always
    use scheme H). Writes that accept an Idempotency-Key get a fresh UUID
    one per call, re-sent on that call's retries, unless you pass your own
    (auto_idempotency=False turns that off), which is what makes them safe
    to retry on 429/503. Thread-safe."""

    def __init__(
        self,
        base_url: str,
        app_id: Union[int, str],
        app_key: str,
        app_secret: str,
        *,
        timeout: float = 15.0,
        retry: Optional[RetryPolicy] = None,
        auto_idempotency: bool = True,
        scheme: str = "H",
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = "partner-open-platform-python/0.1",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.app_id = str(app_id)
        self.app_key = app_key
        self.app_secret = app_secret
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.auto_idempotency = auto_idempotency
        if scheme not in ("H", "M"):
            raise ValueError("scheme must be \"H\" or \"M\", not %r" % (scheme,))
        self.scheme = scheme
        self._clock = clock
        self._sleep = sleep
        self._user_agent = user_agent
        self._token_lock = threading.Lock()
        self._token: Optional[Tuple[str, float]] = None

    # ------------------------------------------------------------------ core

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Body = None,
        auth: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        form: Optional[Mapping[str, str]] = None,
        extra_timeout: float = 0.0,
    ) -> Response:
        """Send one signed request (auth "M", "H", "bearer:<token>", "basic" or "none"; None is the client's scheme); raise PartnerApiError on non-2xx.

        The request is retried on 429/503 and lost connections only when it is
        safe to repeat: a GET, or a write with an Idempotency-Key. Every attempt
        is signed anew (a fresh timestamp and nonce)."""
        if auth is None:
            auth = self.scheme
        method = method.upper()
        uri = path
        if query:
            q = [(k, _qv(v)) for k, v in query.items() if v is not None]
            if q:
                uri += "?" + urllib.parse.urlencode(q, quote_via=urllib.parse.quote)
        raw: bytes = b""
        ctype: Optional[str] = None
        if form is not None:
            raw = urllib.parse.urlencode(list(form.items())).encode("ascii")
            ctype = "application/x-www-form-urlencoded"
        elif body is not None:
            payload = body.to_dict() if hasattr(body, "to_dict") else body
            raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            ctype = "application/json"
        safe = method == "GET" or idempotency_key is not None
        attempt = 0
        while True:
            hdrs = {"Accept": "application/json", "User-Agent": self._user_agent}
            if ctype:
                hdrs["Content-Type"] = ctype
            if idempotency_key is not None:
                hdrs["Idempotency-Key"] = idempotency_key
            hdrs.update(self._auth_headers(auth, method, uri, raw))
            if headers:
                hdrs.update(headers)
            try:
                resp = self._send(method, uri, raw, hdrs, extra_timeout=extra_timeout) if extra_timeout else self._send(method, uri, raw, hdrs)
            except TransportError:
                if not safe or attempt >= self.retry.max_retries:
                    raise
                self._sleep(self._backoff(attempt))
                attempt += 1
                continue
            if 200 <= resp.status < 300:
                return resp
            err = _error(resp)
            retryable = resp.status in (429, 503) or (
                resp.status == 409 and err.code == "IDEMPOTENCY_KEY_IN_PROGRESS"
            )
            if not (retryable and safe) or attempt >= self.retry.max_retries:
                raise err
            if err.retry_after is not None:
                if err.retry_after > self.retry.max_retry_after:
                    raise err
                delay = err.retry_after
            else:
                delay = self._backoff(attempt)
            self._sleep(delay)
            attempt += 1

    def _backoff(self, attempt: int) -> float:
        cap = min(self.retry.max_delay, self.retry.base_delay * (2 ** attempt))
        return random.uniform(0, cap)

    def _auth_headers(self, auth: str, method: str, uri: str, raw: bytes) -> Dict[str, str]:
        now = int(self._clock())
        if auth == "M":
            return {"X-App-Id": self.app_id, "X-Timestamp": str(now), "X-Signature": sign_m(self.app_key, now, self.app_secret, raw)}
        if auth == "H":
            nonce = secrets.token_hex(16)
            return {
                "X-App-Key": self.app_key,
                "X-Timestamp": str(now),
                "X-Nonce": nonce,
                "X-Signature": sign_h(self.app_secret, method, uri, now, nonce, raw),
            }
        if auth.startswith("bearer:"):
            return {"Authorization": "Bearer " + auth[7:], "X-App-Key": self.app_key}
        if auth == "basic":
            cred = base64.b64encode((self.app_key + ":" + self.app_secret).encode("utf-8")).decode("ascii")
            return {"Authorization": "Basic " + cred}
        return {}

    def _send(self, method: str, uri: str, raw: bytes, headers: Mapping[str, str], extra_timeout: float = 0.0) -> Response:
        req = urllib.request.Request(self.base_url + uri, data=raw if method != "GET" else None, method=method)
        for k, v in headers.items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + extra_timeout) as r:  # noqa: S310 - base_url is the caller's
                return _decode(r.status, dict(r.headers.items()), r.read())
        except urllib.error.HTTPError as e:
            try:
                data = e.read()
            finally:
                e.close()
            return _decode(e.code, dict(e.headers.items()) if e.headers else {}, data)
        except (urllib.error.URLError, socket.timeout, ConnectionError) as e:
            raise TransportError("%s %s: %s" % (method, uri, e)) from e

    def _key(self, idempotency_key: Optional[str]) -> Optional[str]:
        if idempotency_key is not None:
            return idempotency_key
        return str(uuid.uuid4()) if self.auto_idempotency else None

    # ---------------------------------------------------------- channel users

    def register_user(self, req: Union[m.RegisterRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None) -> m.RegisterResult:
        """POST /open/v1/channel/users: one-step register and bind (idempotent on channel_user_id)."""
        r = self.request("POST", "/open/v1/channel/users", body=req, idempotency_key=self._key(idempotency_key))
        return m.RegisterResult.from_dict(_need(r))

    def get_snapshot(
        self, open_user_id: int, *, updated_after: Optional[str] = None, channel_user_id: Optional[str] = None
    ) -> m.Snapshot:
        """GET /open/v1/channel/users/{openUserId}: the user, live groups and members."""
        r = self.request(
            "GET",
            "/open/v1/channel/users/%d" % open_user_id,
            query={"updated_after": updated_after, "channel_user_id": channel_user_id},
        )
        return m.Snapshot.from_dict(_need(r))

    def update_user(
        self, open_user_id: int, patch: Union[m.UserPatch, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> None:
        """PATCH /open/v1/channel/users/{openUserId}: only sent fields change.

        A UserPatch omits None fields; to clear nickname, avatar, phone, email
        or birth_date pass a dict with that key set to None."""
        self.request("PATCH", "/open/v1/channel/users/%d" % open_user_id, body=patch, idempotency_key=self._key(idempotency_key))

    def upsert_family_group(
        self, open_user_id: int, group: Union[m.FamilyGroupInput, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.FamilyGroupUpsertResult:
        """POST .../family-groups: create or rename the group keyed by app_group_id."""
        r = self.request(
            "POST", "/open/v1/channel/users/%d/family-groups" % open_user_id, body=group, idempotency_key=self._key(idempotency_key)
        )
        return m.FamilyGroupUpsertResult.from_dict(_need(r))

    def dissolve_family_group(self, open_user_id: int, group_id: int, *, idempotency_key: Optional[str] = None) -> None:
        """DELETE .../family-groups/{groupId}: dissolve the group and soft-delete its members (irreversible)."""
        self.request(
            "DELETE",
            "/open/v1/channel/users/%d/family-groups/%d" % (open_user_id, group_id),
            idempotency_key=self._key(idempotency_key),
        )

    def upsert_family_member(
        self,
        open_user_id: int,
        member: Union[m.FamilyMemberUpsertInput, Mapping[str, Any]],
        *,
        idempotency_key: Optional[str] = None,
    ) -> m.FamilyMemberUpsertResult:
        """POST .../family-members: create or update the member keyed by app_user_id."""
        r = self.request(
            "POST", "/open/v1/channel/users/%d/family-members" % open_user_id, body=member, idempotency_key=self._key(idempotency_key)
        )
        return m.FamilyMemberUpsertResult.from_dict(_need(r))

    def delete_family_member(self, open_user_id: int, member_id: int, *, idempotency_key: Optional[str] = None) -> None:
        """DELETE .../family-members/{memberId}: soft-delete one member."""
        self.request(
            "DELETE",
            "/open/v1/channel/users/%d/family-members/%d" % (open_user_id, member_id),
            idempotency_key=self._key(idempotency_key),
        )

    # ----------------------------------------------------------------- orders

    def create_order(self, req: Union[m.OrderCreateRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None) -> m.OrderCreateResult:
        """POST /open/v1/order/create: a purchase order, starting in PENDING_REVIEW."""
        r = self.request("POST", "/open/v1/order/create", body=req, idempotency_key=self._key(idempotency_key))
        return m.OrderCreateResult.from_dict(_need(r))

    def get_order(self, order_code: str) -> m.Order:
        """GET /open/v1/order/detail: an order with its items."""
        r = self.request("GET", "/open/v1/order/detail", query={"order_code": order_code})
        return m.Order.from_dict(_need(r))

    def sandbox_ship_order(
        self, req: Union[m.SandboxShipmentRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.ShipmentResult:
        """POST /open/v1/order/shipped-callback-test: sandbox apps only, ship an approved order to test order.shipped."""
        r = self.request("POST", "/open/v1/order/shipped-callback-test", body=req, idempotency_key=self._key(idempotency_key))
        return m.ShipmentResult.from_dict(_need(r))

    def trigger_sandbox_event(self, event: str, *, idempotency_key: Optional[str] = None) -> m.SandboxEventTriggered:
        """POST /open/v1/webhooks/sandbox-events: sandbox apps only, cause a sample webhook event of type ``event``."""
        r = self.request("POST", "/open/v1/webhooks/sandbox-events", body={"event": event}, idempotency_key=self._key(idempotency_key))
        return m.SandboxEventTriggered.from_dict(_need(r))

    # --------------------------------------------------------- health reports

    def pull_health_report(self, open_report_id: int, *, query: Optional[Mapping[str, Any]] = None) -> m.HealthReport:
        """GET /open/v1/health-reports/{openReportId} with scheme H: the authoritative report snapshot."""
        r = self.request("GET", "/open/v1/health-reports/%d" % open_report_id, query=query, auth="H")
        return m.HealthReport.from_dict(_need(r))

    def fetch_access_token(self, scope: str = "daily_report") -> m.TokenResponse:
        """POST /oauth/token: a new client-credentials access token (HTTP Basic with key and secret). Not retried."""
        r = self.request("POST", "/oauth/token", auth="basic", form={"grant_type": "client_credentials", "scope": scope})
        tok = m.TokenResponse.from_dict(_need(r, whole=True))
        with self._token_lock:
            self._token = (tok.access_token, self._clock() + float(tok.expires_in) - 60.0)
        return tok

    def revoke_access_token(self, token: Optional[str] = None) -> None:
        """POST /oauth/revoke: end a token (default: the one this client holds)."""
        with self._token_lock:
            held = self._token
            if token is None or (held is not None and held[0] == token):
                self._token = None
        tok = token if token is not None else (held[0] if held else None)
        if tok is None:
            return
        self.request("POST", "/oauth/revoke", auth="basic", form={"token": tok})

    def _access_token(self) -> str:
        with self._token_lock:
            held = self._token
        if held is not None and held[1] > self._clock():
            return held[0]
        return self.fetch_access_token().access_token

    def get_daily_report(
        self, *, open_user_id: Optional[int] = None, channel_user_id: Optional[str] = None, date: Optional[str] = None
    ) -> m.DailyReport:
        """GET /v1/health/daily-report with a bearer token the client obtains (and renews once on INVALID_TOKEN)."""
        q = {"open_user_id": open_user_id, "channel_user_id": channel_user_id, "date": date}
        try:
            r = self.request("GET", "/v1/health/daily-report", query=q, auth="bearer:" + self._access_token())
        except PartnerApiError as e:
            if e.status != 401:
                raise
            with self._token_lock:
                self._token = None
            r = self.request("GET", "/v1/health/daily-report", query=q, auth="bearer:" + self._access_token())
        return m.DailyReport.from_dict(_need(r))

    def sandbox_mock_measure(
        self, req: Union[m.MockMeasureRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.Measurement:
        """POST /sandbox/mock/measure with scheme H: the sandbox sends plugin.report.ready to the app's webhook."""
        r = self.request("POST", "/sandbox/mock/measure", body=req, auth="H", idempotency_key=self._key(idempotency_key))
        return m.Measurement.from_dict(_need(r))

    # --------------------------------------------------------------- webhooks

    def list_deliveries(
        self,
        *,
        status: Optional[str] = None,
        event: Optional[str] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        after: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> m.DeliveryPage:
        """GET /open/v1/webhooks/deliveries: one page of this app's delivery log."""
        r = self.request(
            "GET",
            "/open/v1/webhooks/deliveries",
            query={"status": status, "event": event, "from": from_, "to": to, "after": after, "limit": limit},
        )
        return m.DeliveryPage.from_dict(_need(r))

    def iter_deliveries(
        self,
        *,
        status: Optional[str] = None,
        event: Optional[str] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        after: Optional[str] = None,
        limit: int = 100,
    ) -> Iterator[m.Delivery]:
        """Every delivery matching the filters, page after page (follows next_cursor until null)."""
        cursor = after
        while True:
            page = self.list_deliveries(status=status, event=event, from_=from_, to=to, after=cursor, limit=limit)
            yield from page.deliveries or []
            if not page.next_cursor or not page.deliveries:
                return
            cursor = page.next_cursor

    def get_delivery(self, delivery_id: str) -> m.DeliveryDetail:
        """GET /open/v1/webhooks/deliveries/{deliveryId}: one delivery with body and attempt log."""
        r = self.request("GET", "/open/v1/webhooks/deliveries/" + urllib.parse.quote(delivery_id, safe=""))
        return m.DeliveryDetail.from_dict(_need(r))

    def resend_delivery(self, delivery_id: str, *, idempotency_key: Optional[str] = None) -> m.ResendResult:
        """POST /open/v1/webhooks/deliveries/{deliveryId}/resend: deliver it again (same delivery_id)."""
        r = self.request(
            "POST",
            "/open/v1/webhooks/deliveries/%s/resend" % urllib.parse.quote(delivery_id, safe=""),
            idempotency_key=self._key(idempotency_key),
        )
        return m.ResendResult.from_dict(_need(r))

    def acknowledge_erasure(self, open_user_id: int, *, idempotency_key: Optional[str] = None) -> m.ErasureAcknowledgement:
        """POST /open/v1/erasures/{openUserId}/acknowledge: the app erased its copies of a person the
        platform erased (the user.erased webhook names them). Idempotent."""
        r = self.request(
            "POST",
            "/open/v1/erasures/%d/acknowledge" % int(open_user_id),
            idempotency_key=self._key(idempotency_key),
        )
        return m.ErasureAcknowledgement.from_dict(_need(r))

    def list_access_log(
        self,
        *,
        open_user_id: Optional[int] = None,
        from_: Optional[str] = None,
        to: Optional[str] = None,
        after: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> m.AccessLogPage:
        """GET /open/v1/access-log: who accessed this app's users' data and why (its own report
        pulls, operators' reveals), one page."""
        r = self.request(
            "GET",
            "/open/v1/access-log",
            query={"open_user_id": open_user_id, "from": from_, "to": to, "after": after, "limit": limit},
        )
        return m.AccessLogPage.from_dict(_need(r))

    def replay_webhooks(
        self, req: Union[m.WebhookReplayRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.WebhookReplay:
        """POST /open/v1/webhooks/replays: deliver past events of the chosen types again to one endpoint."""
        r = self.request("POST", "/open/v1/webhooks/replays", body=req, idempotency_key=self._key(idempotency_key))
        return m.WebhookReplay.from_dict(_need(r))

    def get_webhook_replay(self, replay_id: int) -> m.WebhookReplay:
        """GET /open/v1/webhooks/replays/{replayId}: the replay's status and counts."""
        r = self.request("GET", "/open/v1/webhooks/replays/%d" % replay_id)
        return m.WebhookReplay.from_dict(_need(r))

    def cancel_webhook_replay(self, replay_id: int, *, idempotency_key: Optional[str] = None) -> m.WebhookReplay:
        """POST /open/v1/webhooks/replays/{replayId}/cancel: stop it; what it queued is still sent."""
        r = self.request("POST", "/open/v1/webhooks/replays/%d/cancel" % replay_id, idempotency_key=self._key(idempotency_key))
        return m.WebhookReplay.from_dict(_need(r))

    def rotate_webhook_secret(self) -> m.PendingWebhookSecret:
        """POST /open/v1/webhooks/secret/rotate: a pending secret to verify with beside the current one. Not retried."""
        r = self.request("POST", "/open/v1/webhooks/secret/rotate")
        return m.PendingWebhookSecret.from_dict(_need(r))

    def activate_webhook_secret(self) -> m.WebhookSecretActivated:
        """POST /open/v1/webhooks/secret/activate: sign with the pending secret from now on. Not retried."""
        r = self.request("POST", "/open/v1/webhooks/secret/activate")
        return m.WebhookSecretActivated.from_dict(_need(r))

    def list_webhook_endpoints(self) -> m.WebhookEndpointList:
        """GET /open/v1/webhooks/endpoints: the app's endpoints, the default one (id 0) first; no secret is listed."""
        r = self.request("GET", "/open/v1/webhooks/endpoints")
        return m.WebhookEndpointList.from_dict(_need(r))

    def create_webhook_endpoint(
        self, endpoint: Union[m.WebhookEndpointCreate, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.NewWebhookEndpoint:
        """POST /open/v1/webhooks/endpoints: add an endpoint; its webhook_secret is in this answer only."""
        r = self.request("POST", "/open/v1/webhooks/endpoints", body=endpoint, idempotency_key=self._key(idempotency_key))
        return m.NewWebhookEndpoint.from_dict(_need(r))

    def get_webhook_endpoint(self, endpoint_id: int) -> m.WebhookEndpoint:
        """GET /open/v1/webhooks/endpoints/{endpointId}: one endpoint (0: the default one)."""
        r = self.request("GET", "/open/v1/webhooks/endpoints/%d" % endpoint_id)
        return m.WebhookEndpoint.from_dict(_need(r))

    def update_webhook_endpoint(
        self, endpoint_id: int, change: Union[m.WebhookEndpointUpdate, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.WebhookEndpoint:
        """PATCH /open/v1/webhooks/endpoints/{endpointId}: change url, events, enabled or description; only sent fields change.

        A WebhookEndpointUpdate omits None fields; to subscribe to every event
        again pass a dict with "events" set to [] (or None)."""
        r = self.request(
            "PATCH", "/open/v1/webhooks/endpoints/%d" % endpoint_id, body=change, idempotency_key=self._key(idempotency_key)
        )
        return m.WebhookEndpoint.from_dict(_need(r))

    def delete_webhook_endpoint(self, endpoint_id: int, *, idempotency_key: Optional[str] = None) -> None:
        """DELETE /open/v1/webhooks/endpoints/{endpointId}: remove it (for 0: clear the app's webhook_url)."""
        self.request("DELETE", "/open/v1/webhooks/endpoints/%d" % endpoint_id, idempotency_key=self._key(idempotency_key))

    def rotate_webhook_endpoint_secret(
        self, endpoint_id: int, *, idempotency_key: Optional[str] = None
    ) -> m.RotatedWebhookEndpoint:
        """POST .../{endpointId}/secret/rotate: a pending secret, shown once; the current one signs until activation."""
        r = self.request(
            "POST", "/open/v1/webhooks/endpoints/%d/secret/rotate" % endpoint_id, idempotency_key=self._key(idempotency_key)
        )
        return m.RotatedWebhookEndpoint.from_dict(_need(r))

    def activate_webhook_endpoint_secret(self, endpoint_id: int, *, idempotency_key: Optional[str] = None) -> m.WebhookEndpoint:
        """POST .../{endpointId}/secret/activate: the pending secret becomes the only one that signs."""
        r = self.request(
            "POST", "/open/v1/webhooks/endpoints/%d/secret/activate" % endpoint_id, idempotency_key=self._key(idempotency_key)
        )
        return m.WebhookEndpoint.from_dict(_need(r))

    def send_webhook_endpoint_test(self, endpoint_id: int, *, idempotency_key: Optional[str] = None) -> m.WebhookTestQueued:
        """POST .../{endpointId}/test: one signed webhook.test delivery to this endpoint only."""
        r = self.request("POST", "/open/v1/webhooks/endpoints/%d/test" % endpoint_id, idempotency_key=self._key(idempotency_key))
        return m.WebhookTestQueued.from_dict(_need(r))

    def list_events(self, *, after: Optional[str] = None, limit: Optional[int] = None, wait: Optional[int] = None) -> m.FeedPage:
        """GET /open/v1/webhooks/events: one page of this app's event feed.

        With ``wait`` (seconds, 1 to 20) it is a long-poll: when nothing follows
        ``after`` the platform holds the request until an event arrives or the
        wait ends (an empty page then); the request's timeout is the client's
        plus the wait. Call again with ``next_cursor`` to follow the feed."""
        r = self.request(
            "GET", "/open/v1/webhooks/events", query={"after": after, "limit": limit, "wait": wait}, extra_timeout=float(wait or 0)
        )
        return m.FeedPage.from_dict(_need(r))

    def iter_events(self, *, after: Optional[str] = None, limit: int = 100) -> Iterator[m.FeedEvent]:
        """Every feed event after `after`, page after page (while has_more)."""
        cursor = after
        while True:
            page = self.list_events(after=cursor, limit=limit)
            yield from page.events or []
            if not page.has_more or not page.events:
                return
            cursor = page.next_cursor

    # --------------------------------------------------------------- benefits

    def register_service_provider(
        self, req: Union[m.ProviderRegistration, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.ProviderRegistered:
        """POST /open/v1/service-providers: register this app's own provider (operators review it)."""
        r = self.request("POST", "/open/v1/service-providers", body=req, idempotency_key=self._key(idempotency_key))
        return m.ProviderRegistered.from_dict(_need(r))

    def batch_issue_benefit_cards(
        self, req: Union[m.BatchIssueRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.IssuedCards:
        """POST /open/v1/benefit-cards/batch-issue: approved channel partners issue cards."""
        r = self.request("POST", "/open/v1/benefit-cards/batch-issue", body=req, idempotency_key=self._key(idempotency_key))
        return m.IssuedCards.from_dict(_need(r))

    def verify_benefit_use(
        self, req: Union[m.VerifyUseRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.VerifyUseResult:
        """POST /open/v1/benefit-cards/verify-use: consume uses of a benefit item (irreversible)."""
        r = self.request("POST", "/open/v1/benefit-cards/verify-use", body=req, idempotency_key=self._key(idempotency_key))
        return m.VerifyUseResult.from_dict(_need(r))

    def get_benefit_card(self, card_number: str) -> m.Card:
        """GET /open/v1/benefit-cards/detail: a card and its remaining quantities."""
        r = self.request("GET", "/open/v1/benefit-cards/detail", query={"card_number": card_number})
        return m.Card.from_dict(_need(r))

    def list_fulfillments(
        self, *, role: Optional[str] = None, after: Optional[int] = None, limit: Optional[int] = None
    ) -> m.FulfillmentList:
        """GET /open/v1/benefit-cards/fulfillments: one page of fulfillment records by record id."""
        r = self.request("GET", "/open/v1/benefit-cards/fulfillments", query={"role": role, "after": after, "limit": limit})
        return m.FulfillmentList.from_dict(_need(r))

    def iter_fulfillments(self, *, role: Optional[str] = None, after: int = 0, limit: int = 100) -> Iterator[m.Fulfillment]:
        """Every fulfillment record after `after`, page after page (until a short page)."""
        cursor = after
        while True:
            page = self.list_fulfillments(role=role, after=cursor, limit=limit)
            items = page.fulfillments or []
            yield from items
            if len(items) < limit:
                return
            cursor = items[-1].fulfillment_record_id

    def rate_fulfillment(
        self, record_id: int, req: Union[m.RatingRequest, Mapping[str, Any]], *, idempotency_key: Optional[str] = None
    ) -> m.RatingResult:
        """POST /open/v1/benefit-cards/fulfillments/{recordId}/rating: the user's 1-5 rating."""
        r = self.request(
            "POST",
            "/open/v1/benefit-cards/fulfillments/%d/rating" % record_id,
            body=req,
            idempotency_key=self._key(idempotency_key),
        )
        return m.RatingResult.from_dict(_need(r))


def _need(r: Response, whole: bool = False) -> Dict[str, Any]:
    """The data object (or the whole body) of a 2xx answer; a missing one is the platform's fault, reported as such."""
    obj = r.json if whole else r.data
    if not isinstance(obj, dict):
        raise PartnerApiError(r.status, "UNEXPECTED_RESPONSE", "the answer carries no JSON object", request_id=r.request_id, body=r.json)
    return obj


def _qv(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _decode(status: int, headers: Mapping[str, str], raw: bytes) -> Response:
    h = {k.lower(): v for k, v in headers.items()}
    body: Any = None
    if raw:
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = raw.decode("utf-8", "replace")
    return Response(status=status, headers=h, json=body, request_id=h.get("x-request-id"))


def _retry_after(v: Optional[str]) -> Optional[float]:
    if not v:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:
        when = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error(resp: Response) -> PartnerApiError:
    b = resp.json if isinstance(resp.json, dict) else {}
    code: Optional[str] = None
    message = ""
    if "error" in b and "success" not in b:  # RFC 6749 error object of /oauth
        code = str(b.get("error"))
        message = str(b.get("error_description", ""))
    else:
        c = b.get("code")
        code = None if c is None else str(c)
        message = str(b.get("message", "")) if b else (resp.json if isinstance(resp.json, str) else "")
    fe: Dict[str, List[str]] = {}
    errs = b.get("errors")
    if isinstance(errs, dict):
        fe = {str(k): [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in errs.items()}
    return PartnerApiError(
        resp.status,
        code,
        message,
        field_errors=fe,
        request_id=resp.request_id,
        retry_after=_retry_after(resp.headers.get("retry-after")),
        body=resp.json,
    )

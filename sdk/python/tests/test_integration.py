"""A partner's day against the real platform, through the SDK.

Starts $PLATFORM_BIN (built from ./cmd/platform when unset) on a free
loopback port with a fresh data directory, sets the app up with the admin
API, then registers, reads, writes, orders, pulls a report with scheme H,
receives and verifies webhooks on a loopback receiver, verifies a benefit
use and checks the typed errors. The platform is killed and its directory
removed at the end, also on failure."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import pytest

import partner_open_platform as pop
from partner_open_platform import models as m

from .conftest import REPO_ROOT


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Platform:
    """A running platform process and its admin API."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.url = url
        self.admin_token = admin_token

    def call(self, method: str, path: str, body: Any = None, token: Optional[str] = None) -> Tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + (token or self.admin_token))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def admin(self, method: str, path: str, body: Any = None, token: Optional[str] = None) -> Any:
        status, env = self.call(method, path, body, token)
        assert 200 <= status < 300, (method, path, status, env)
        return env.get("data") if isinstance(env, dict) else None


@pytest.fixture(scope="module")
def platform() -> Iterator[Platform]:
    work = tempfile.mkdtemp(prefix="sdkpy-it-")
    proc: Optional[subprocess.Popen[bytes]] = None
    try:
        binary = os.environ.get("PLATFORM_BIN")
        if not binary:
            binary = os.path.join(work, "platform")
            subprocess.run(["go", "build", "-o", binary, "./cmd/platform"], cwd=REPO_ROOT, check=True, timeout=600)
        port = _free_port()
        token = secrets.token_hex(24)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_")}
        env.update(
            {
                "PLATFORM_ADDR": "127.0.0.1:%d" % port,
                "PLATFORM_DATA_DIR": os.path.join(work, "data"),
                "PLATFORM_ADMIN_TOKEN": token,
                "PLATFORM_WEBHOOK_ALLOW_LOOPBACK": "on",
                "PLATFORM_WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s",
                "PLATFORM_LOG_FORMAT": "text",
            }
        )
        log = open(os.path.join(work, "platform.log"), "wb")
        proc = subprocess.Popen([binary], env=env, stdout=log, stderr=subprocess.STDOUT)
        url = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        ready = True
                        break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        if not ready:
            log.flush()
            with open(os.path.join(work, "platform.log"), "rb") as f:
                tail = f.read()[-3000:].decode("utf-8", "replace")
            pytest.fail("platform did not become ready within 60 s:\n" + tail)
        yield Platform(url, token)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)


class Receiver:
    """A loopback webhook receiver keeping each request's headers and raw body."""

    def __init__(self) -> None:
        self.got: List[Tuple[Dict[str, str], bytes]] = []
        self.cond = threading.Condition()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                with outer.cond:
                    outer.got.append(({k: v for k, v in self.headers.items()}, body))
                    outer.cond.notify_all()
                self.send_response(204)
                self.end_headers()

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/hooks" % self.srv.server_address[1]
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, pred: Any, timeout: float = 30, since: int = 0) -> Tuple[Dict[str, str], bytes]:
        """The first request (from index `since` on) matching pred, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for h, b in self.got[since:]:
                    if pred(h, b):
                        return h, b
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no matching webhook within %.0f s; got %s" % (timeout, [h.get("X-Webhook-Event") for h, _ in self.got]))
                self.cond.wait(left)

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def test_partners_day(platform: Platform, receiver: Receiver) -> None:
    app = platform.admin(
        "POST",
        "/admin/v1/apps",
        {
            "name": "sdk-python",
            "webhook_url": receiver.url,
            "environment": "sandbox",
            "scopes": ["channel_users", "health_reports", "orders", "webhooks", "benefits", "daily_report", "plugin"],
        },
    )
    platform.admin("PATCH", "/admin/v1/apps/%d" % app["app_id"], {"webhook_url": receiver.url})
    platform.admin("POST", "/admin/v1/goods", {"goods_code": "BP-100", "goods_name": "Blood pressure monitor"})
    uploader = platform.admin("POST", "/admin/v1/uploaders", {"name": "station east"})
    client = pop.PartnerClient(platform.url, app["app_id"], app["app_key"], app["app_secret"])
    secret = app["webhook_secret"]

    # register with family, idempotently
    req = m.RegisterRequest(
        channel_user_id="cu-1",
        user=m.UserProfile(name="李雷", phone="13812345678", gender="male", birth_date="1980-02-03"),
        family_groups=[m.FamilyGroupInput(app_group_id=1, name="Home")],
        family_members=[m.FamilyMemberRegisterInput(app_user_id="self-1", app_group_id=1, name="李雷", relationship="SELF")],
    )
    reg = client.register_user(req, idempotency_key="reg-cu-1")
    assert reg.created is True and reg.open_user_id > 0
    assert [g.app_group_id for g in reg.family_groups] == [1]
    again = client.register_user(req)  # a new key: the platform's own idempotency on channel_user_id
    assert again.created is False and again.open_user_id == reg.open_user_id
    uid = reg.open_user_id

    # upsert a member, patch the user, read the snapshot
    up = client.upsert_family_member(
        uid, m.FamilyMemberUpsertInput(app_user_id="kid-1", app_group_id=1, name="小明", relationship="SON", height=120)
    )
    assert up.created is True
    client.update_user(uid, m.UserPatch(nickname="Lei"))
    snap = client.get_snapshot(uid)
    assert snap.user.nickname == "Lei" and snap.user.phone == "138****5678"
    assert sorted(x.app_user_id for x in snap.family_members) == ["kid-1", "self-1"]
    assert [g.name for g in snap.family_groups] == ["Home"]

    # order
    order = client.create_order(
        m.OrderCreateRequest(
            third_order_id="T-1", contact_person="李雷", contact_phone="13812345678", address="1 Road",
            items=[m.OrderItemInput(goods_code="BP-100", quantity=2, unit_price=1999)], user_id=uid,
        )
    )
    detail = client.get_order(order.order_code)
    assert detail.order_status == "PENDING_REVIEW"
    assert detail.items[0].total_price == 3998 and detail.items[0].goods_code == "BP-100"

    # a report ingested by an uploader, then pulled with scheme H
    raw = {"data_source": "station", "indicators": [{"code": "SYS", "value": 120, "unit": "mmHg"}]}
    ingested = platform.admin(
        "POST", "/admin/v1/health-reports",
        {"open_user_id": uid, "report_type": "BLOOD_PRESSURE", "request_report_id": "R-1", "raw_data": raw},
        token=uploader["token"],
    )
    report = client.pull_health_report(ingested["id"])
    assert report.id == ingested["id"] and report.open_user_id == uid
    assert report.raw_data == raw and report.report_type == "BLOOD_PRESSURE"

    # its webhook, verified over the raw bytes and parsed into the typed event
    h, body = receiver.wait_for(lambda h, b: h.get("X-Webhook-Event") == "health.report.created")
    ev = pop.construct_event(secret, h, body)
    assert isinstance(ev, m.HealthReportCreatedEvent)
    assert ev.open_report_id == ingested["id"] and ev.channel_user_id == "cu-1"
    assert ev.delivery_id == h["X-Webhook-Id"]
    with pytest.raises(pop.WebhookVerificationError):
        pop.construct_event(secret, h, body + b" ")
    h2, body2 = receiver.wait_for(lambda h, b: h.get("X-Webhook-Event") == "user.family_member.created")
    mev = pop.construct_event(secret, h2, body2)
    assert isinstance(mev, m.UserFamilyMemberCreatedEvent) and mev.open_user_id == uid

    # the delivery log and the feed, paged through
    deadline = time.monotonic() + 20
    while True:
        ids = {d.delivery_id for d in client.iter_deliveries(limit=2)}
        if ev.delivery_id in ids or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert ev.delivery_id in ids
    # the receiver's 204 is recorded shortly after it was sent
    deadline = time.monotonic() + 20
    got = client.get_delivery(ev.delivery_id)
    while got.status != "delivered" and time.monotonic() < deadline:
        time.sleep(0.2)
        got = client.get_delivery(ev.delivery_id)
    assert got.event == "health.report.created" and got.status == "delivered"
    assert got.attempt_log and got.attempt_log[-1].status_code == 204
    feed = list(client.iter_events(limit=2))
    assert ev.delivery_id in {f.delivery_id for f in feed}
    typed = [pop.parse_event(f.payload) for f in feed if f.payload is not None]
    assert any(isinstance(t, m.HealthReportCreatedEvent) for t in typed)
    resent = client.resend_delivery(ev.delivery_id)
    assert resent.to_dict()

    # sandbox mock measure -> plugin.report.ready
    meas = client.sandbox_mock_measure(
        m.MockMeasureRequest(app_key=app["app_key"], third_user_id="third-1", device_key="HOME_MULTI_BIO_MONITOR", measure_mode="BP")
    )
    h3, body3 = receiver.wait_for(lambda h, b: h.get("X-Webhook-Event") == "plugin.report.ready")
    pev = pop.construct_event(secret, h3, body3)
    assert isinstance(pev, m.PluginReportReadyEvent) and pev.measurement_no == meas.measurement_no

    # a launch built by the plugin host helper opens a session on the real platform
    host = pop.PluginHost(app["app_key"], app["app_secret"], sandbox=True)
    launch = host.launch(
        "third-2", "BODY_COMPOSITION_ANALYSIS", "BCA",
        pop.PluginProfile(gender="female", birth_date="1990-05-17", height=165, phone="13800138000"),
    )
    status, env = platform.call("POST", "/plugin/v1/sessions", launch.data())
    assert status == 201 and env["data"], env
    forged = dict(launch.data(), thirdUserId="third-3")  # the profile is bound to the user
    status, env = platform.call("POST", "/plugin/v1/sessions", forged)
    assert status == 401, env

    # daily report through the OAuth token flow
    daily = client.get_daily_report(open_user_id=uid)
    assert daily.date
    client.revoke_access_token()

    # benefits: own provider, reviewed and configured by operators, a card, verify-use
    prov = client.register_service_provider(m.ProviderRegistration(name="Clinic", type="SERVICE_PROVIDER", contact="c@x"))
    item = platform.admin("POST", "/admin/v1/benefit-items", {"name": "Annual check-up"})
    platform.admin("POST", "/admin/v1/service-providers/%d/review" % prov.provider_id, {"decision": "approve"})
    platform.admin(
        "PUT", "/admin/v1/service-providers/%d/benefit-items" % prov.provider_id,
        {"allowed_benefit_item_ids": [item["benefit_item_id"]]},
    )
    cards = platform.admin(
        "POST", "/admin/v1/benefit-cards",
        {"issuer_app_id": app["app_id"], "cards": [{"holder_name": "韩梅梅", "holder_phone": "13912344321",
          "expires_at": "2099-12-31T23:59:59", "items": [{"benefit_item_id": item["benefit_item_id"], "quantity": 3}]}]},
    )
    card_no = cards["cards"][0]["card_number"]
    ubi = cards["cards"][0]["items"][0]["user_benefit_item_id"]
    used = client.verify_benefit_use(m.VerifyUseRequest(card_number=card_no, user_benefit_item_id=ubi, quantity=1))
    assert used.remaining_quantity == 2 and used.quantity_used == 1
    assert used.user_info.phone_masked == "139****4321"
    card = client.get_benefit_card(card_no)
    assert card.items[0].remaining_quantity == 2
    recs = list(client.iter_fulfillments(limit=1))
    assert [r.fulfillment_record_id for r in recs] == [used.fulfillment_record_id]

    # webhook secret rotation: verify with both while it is pending, then with the new one
    pending = client.rotate_webhook_secret()
    new_secret = pending.pending_webhook_secret
    assert new_secret and new_secret != secret
    assert client.activate_webhook_secret().activated
    seen = len(receiver.got)
    client.update_user(uid, {"nickname": None})
    h4, body4 = receiver.wait_for(lambda h, b: h.get("X-Webhook-Event") == "user.profile.updated", since=seen)
    pu = pop.construct_event(new_secret, h4, body4, previous_secret=secret)
    assert isinstance(pu, m.UserProfileUpdatedEvent) and pu.data.changed_fields == ["nickname"]
    with pytest.raises(pop.WebhookVerificationError):
        pop.construct_event(secret, h4, body4)
    assert client.get_snapshot(uid).user.nickname is None

    # errors surface as the typed error
    with pytest.raises(pop.PartnerApiError) as e:
        client.get_snapshot(uid + 100000)
    assert e.value.status == 404 and e.value.code == "USER_NOT_FOUND" and e.value.request_id
    with pytest.raises(pop.PartnerApiError) as e:
        client.upsert_family_member(uid, {"app_user_id": "x", "app_group_id": 1, "name": "n", "relationship": "SELF", "height": 5})
    assert e.value.status == 422 and e.value.code == "VALIDATION_ERROR" and "height" in e.value.field_errors
    with pytest.raises(pop.PartnerApiError) as e:
        client.verify_benefit_use({"card_number": "0" * 15, "user_benefit_item_id": ubi})
    assert e.value.status == 404 and e.value.code == "CARD_NOT_FOUND"
    bad = pop.PartnerClient(platform.url, app["app_id"], app["app_key"], "wrong-secret")
    with pytest.raises(pop.PartnerApiError) as e:
        bad.get_snapshot(uid)
    assert e.value.status == 401 and e.value.code == "HTTP_401" and e.value.request_id  # scheme H, the route's 401
    bad_m = pop.PartnerClient(platform.url, app["app_id"], app["app_key"], "wrong-secret", scheme="M")
    with pytest.raises(pop.PartnerApiError) as e:
        bad_m.get_snapshot(uid)
    assert e.value.status == 401 and e.value.code == "HTTP_401" and e.value.request_id
    with pytest.raises(pop.PartnerApiError) as e:
        bad.pull_health_report(ingested["id"])
    assert e.value.status == 401 and e.value.code == "INVALID_SIGNATURE"


def test_webhook_endpoints(platform: Platform, receiver: Receiver) -> None:
    """An added endpoint signs with its own secret, not the app's; rotate, activate, disable, delete."""
    app = platform.admin(
        "POST", "/admin/v1/apps", {"name": "sdk-python endpoints", "webhook_url": receiver.url, "scopes": ["webhooks"]}
    )
    client = pop.PartnerClient(platform.url, app["app_id"], app["app_key"], app["app_secret"])
    listed = client.list_webhook_endpoints()
    assert [e.endpoint_id for e in listed.endpoints] == [pop.DEFAULT_ENDPOINT_ID]
    assert listed.endpoints[0].signing_secret == "app_webhook_secret"
    ep = client.create_webhook_endpoint(m.WebhookEndpointCreate(url=receiver.url + "/own", events=["user.*"]))
    assert ep.webhook_secret.startswith("whsec_") and ep.webhook_secret != app["webhook_secret"]
    assert ep.signing_secret == "endpoint_secret"

    def test_to(endpoint_id: int, since: int) -> Tuple[Dict[str, str], bytes]:
        return receiver.wait_for(
            lambda h, b: h.get("X-Webhook-Event") == "webhook.test" and json.loads(b)["endpoint_id"] == endpoint_id, since=since
        )

    seen = len(receiver.got)
    client.send_webhook_endpoint_test(ep.endpoint_id)
    h, body = test_to(ep.endpoint_id, seen)
    assert isinstance(pop.construct_event(ep.webhook_secret, h, body), m.WebhookTestEvent)
    with pytest.raises(pop.WebhookVerificationError):
        pop.construct_event(app["webhook_secret"], h, body)

    rotated = client.rotate_webhook_endpoint_secret(ep.endpoint_id)
    assert rotated.pending_secret and rotated.pending_webhook_secret.startswith("whsec_")
    assert not client.activate_webhook_endpoint_secret(ep.endpoint_id).pending_secret
    seen = len(receiver.got)
    client.send_webhook_endpoint_test(ep.endpoint_id)
    h, body = test_to(ep.endpoint_id, seen)
    pop.construct_event(rotated.pending_webhook_secret, h, body)
    with pytest.raises(pop.WebhookVerificationError):
        pop.construct_event(ep.webhook_secret, h, body)

    off = client.update_webhook_endpoint(ep.endpoint_id, {"enabled": False, "events": []})
    assert not off.enabled and off.events == []
    client.delete_webhook_endpoint(ep.endpoint_id)
    with pytest.raises(pop.PartnerApiError) as e:
        client.get_webhook_endpoint(ep.endpoint_id)
    assert e.value.status == 404 and e.value.code == "WEBHOOK_ENDPOINT_NOT_FOUND"


def test_concurrent_and_duplicate_writes(platform: Platform) -> None:
    """Several threads of one client: duplicate registrations give one user, parallel
    bodyless deletes (each with its own nonce) all succeed."""
    app = platform.admin("POST", "/admin/v1/apps", {"name": "sdk-python-conc"})
    client = pop.PartnerClient(platform.url, app["app_id"], app["app_key"], app["app_secret"])
    req = {
        "channel_user_id": "dup-1", "user": {"name": "Dup"},
        "family_groups": [{"app_group_id": i, "name": "g%d" % i} for i in range(1, 7)],
        "family_members": [{"app_user_id": "m%d" % i, "app_group_id": i, "name": "m", "relationship": "OTHER"} for i in range(1, 7)],
    }
    results: List[Any] = []
    errors: List[BaseException] = []

    def run(fn: Any) -> None:
        try:
            results.append(fn())
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(lambda: client.register_user(req),)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len({r.open_user_id for r in results}) == 1
    assert sorted(r.created for r in results) == [False] * 5 + [True]
    first = next(r for r in results if r.created)
    uid = first.open_user_id
    results.clear()
    threads = [
        threading.Thread(target=run, args=((lambda mid=mm.member_id: client.delete_family_member(uid, mid)),))
        for mm in first.family_members
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert client.get_snapshot(uid).family_members == []


class RecordingClient(pop.PartnerClient):
    """The SDK's client, keeping the headers of every request it sends."""

    sent: List[Tuple[str, str, Dict[str, str]]]

    def _send(self, method: str, uri: str, raw: bytes, headers: Mapping[str, str], extra_timeout: float = 0.0) -> pop.Response:
        self.sent.append((method, uri, dict(headers)))
        return super()._send(method, uri, raw, headers, extra_timeout)


def _recording(platform: Platform, app: Dict[str, Any], **kw: Any) -> RecordingClient:
    c = RecordingClient(platform.url, app["app_id"], app["app_key"], app["app_secret"], **kw)
    c.sent = []
    return c


def test_default_scheme_h_same_second_and_scheme_m_by_option(platform: Platform) -> None:
    """The default client signs scheme H: a register, a snapshot read and a bodyless
    DELETE signed in one second (pinned clock, one X-Timestamp) all succeed, each with
    its own nonce. scheme="M" still signs scheme M, which the platform accepts."""
    app = platform.admin("POST", "/admin/v1/apps", {"name": "sdk-python-schemes"})
    pinned = float(int(time.time()))
    c = _recording(platform, app, clock=lambda: pinned)
    reg = c.register_user(
        {
            "channel_user_id": "h-1", "user": {"name": "Han"},
            "family_groups": [{"app_group_id": 1, "name": "Home"}],
            "family_members": [{"app_user_id": "m1", "app_group_id": 1, "name": "Han", "relationship": "SELF"}],
        }
    )
    assert reg.created is True
    assert c.get_snapshot(reg.open_user_id).family_members[0].app_user_id == "m1"
    c.delete_family_member(reg.open_user_id, reg.family_members[0].member_id)
    assert c.get_snapshot(reg.open_user_id).family_members == []
    assert len(c.sent) == 4
    for method, uri, h in c.sent:
        assert "X-App-Id" not in h and h["X-App-Key"] == app["app_key"], (method, uri)
        assert h["X-Timestamp"] == str(int(pinned)) and len(h["X-Signature"]) == 64
    assert len({h["X-Nonce"] for _, _, h in c.sent}) == 4
    assert c.sent[2][0] == "DELETE" and c.sent[2][2]["Idempotency-Key"]

    # scheme M, one second: the read and the bodyless DELETE share a signature, and both succeed
    pinned_m = float(int(time.time()))
    cm = _recording(platform, app, scheme="M", clock=lambda: pinned_m)
    reg2 = cm.register_user({"channel_user_id": "m-1", "user": {"name": "Wang"}, "family_groups": [{"app_group_id": 2, "name": "G"}]})
    assert reg2.created is True
    up = cm.upsert_family_member(reg2.open_user_id, {"app_user_id": "k", "app_group_id": 2, "name": "Kid", "relationship": "SON"})
    assert up.created is True
    assert cm.get_snapshot(reg2.open_user_id).user.open_user_id == reg2.open_user_id
    cm.delete_family_member(reg2.open_user_id, up.member_id)
    assert len(cm.sent) == 4
    for method, uri, h in cm.sent:
        assert h["X-App-Id"] == str(app["app_id"]) and "X-Nonce" not in h and len(h["X-Signature"]) == 32, (method, uri)
        assert h["X-Timestamp"] == str(int(pinned_m)), (method, uri)
    assert cm.sent[2][2]["X-Signature"] == cm.sent[3][2]["X-Signature"]

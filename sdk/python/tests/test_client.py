"""PartnerClient behaviour a partner can observe: signatures on the wire, the typed
error, retries only where safe (honouring Retry-After), pagination, the token flow
and concurrent use. Runs against a loopback fake; sleeps are recorded, never timed."""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import partner_open_platform as pop
from partner_open_platform import models as m

from .fakeserver import FakePlatform, Recorded, fail, ok, start

KEY, SECRET, APP = "ak_test", "as_test_secret", 10001
NOW = 1763870400


@pytest.fixture()
def fake() -> Iterator[FakePlatform]:
    f, stop = start()
    try:
        yield f
    finally:
        stop()


class Clock:
    """A settable clock; sleeps advance it and are recorded."""

    def __init__(self, t: float = NOW) -> None:
        self.t = t
        self.sleeps: List[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def client(fake: FakePlatform, clock: Clock, **kw: Any) -> pop.PartnerClient:
    return pop.PartnerClient(fake.url, APP, KEY, SECRET, clock=clock.now, sleep=clock.sleep, **kw)


def test_default_is_scheme_h_on_every_route(fake: FakePlatform) -> None:
    """With no option every request is signed with scheme H; a register, a read and two
    bodyless DELETEs of one second go out in that second (no waiting, no clash)."""
    clock = Clock(NOW + 0.9)
    fake.handler = lambda r: ok({"open_user_id": 7, "channel_user_id": "u-1", "created": True, "family_groups": [], "family_members": []})
    c = client(fake, clock)
    assert c.scheme == "H"
    c.register_user(m.RegisterRequest(channel_user_id="u-1", user=m.UserProfile(name="张三")))
    c.get_snapshot(7, channel_user_id="u-1")
    c.delete_family_member(7, 70)
    c.delete_family_member(7, 71)
    assert clock.sleeps == []
    paths = [r.path for r in fake.requests]
    assert paths == [
        "/open/v1/channel/users",
        "/open/v1/channel/users/7?channel_user_id=u-1",
        "/open/v1/channel/users/7/family-members/70",
        "/open/v1/channel/users/7/family-members/71",
    ]
    for r in fake.requests:
        h = r.headers
        assert "X-App-Id" not in h and h["X-App-Key"] == KEY and h["X-Timestamp"] == str(NOW)
        assert h["X-Signature"] == pop.sign_h(SECRET, r.method, r.path, NOW, h["X-Nonce"], r.body)
        assert re.fullmatch(r"[0-9a-f]{64}", h["X-Signature"])
    assert len({r.headers["X-Nonce"] for r in fake.requests}) == 4
    assert len({r.headers["X-Signature"] for r in fake.requests}) == 4


def test_unknown_scheme_is_refused() -> None:
    with pytest.raises(ValueError):
        pop.PartnerClient("http://127.0.0.1:9", APP, KEY, SECRET, scheme="md5")


def test_scheme_m_by_option_signs_the_exact_body(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [ok({"open_user_id": 7, "channel_user_id": "u-1", "created": True, "family_groups": [], "family_members": []}, 201)]
    res = client(fake, clock, scheme="M").register_user(
        m.RegisterRequest(channel_user_id="u-1", user=m.UserProfile(name="张三", phone="13812345678"))
    )
    assert res.open_user_id == 7 and res.created is True
    rec = fake.requests[0]
    assert rec.method == "POST" and rec.path == "/open/v1/channel/users"
    assert rec.headers["X-App-Id"] == str(APP)
    assert rec.headers["X-Timestamp"] == str(NOW)
    assert rec.headers["X-Signature"] == pop.sign_m(KEY, NOW, SECRET, rec.body)
    assert json.loads(rec.body) == {"channel_user_id": "u-1", "user": {"name": "张三", "phone": "13812345678"}}
    assert "张三".encode("utf-8") in rec.body  # sent as UTF-8, not \\u escapes
    assert rec.headers.get("Idempotency-Key")  # writes get a key by default
    assert "X-Nonce" not in rec.headers and "X-App-Key" not in rec.headers


def test_scheme_m_bodyless_calls_of_one_second_are_not_moved(fake: FakePlatform) -> None:
    """Scheme M by option keeps no per-second bookkeeping: a read and bodyless writes of
    one second are all signed in that second (the platform accepts them)."""
    clock = Clock()
    fake.handler = lambda r: ok({})
    c = client(fake, clock, scheme="M")
    c.get_order("PO1")
    c.delete_family_member(7, 70)
    c.dissolve_family_group(7, 9)
    assert clock.sleeps == []
    for r in fake.requests:
        assert r.headers["X-Timestamp"] == str(NOW)
        assert r.headers["X-Signature"] == pop.sign_m(KEY, NOW, SECRET, b"")


def test_scheme_h_headers(fake: FakePlatform) -> None:
    clock = Clock()
    report: Dict[str, Any] = {k: None for k in m.HealthReport.WIRE.values()}
    report.update({"id": 90017, "app_id": APP, "open_user_id": 7, "is_viewed": False, "raw_data": {"a": 1}})
    fake.script = [ok(report)]
    got = client(fake, clock).pull_health_report(90017, query={"lang": "zh-CN"})
    assert got.id == 90017 and got.raw_data == {"a": 1}
    rec = fake.requests[0]
    assert rec.path == "/open/v1/health-reports/90017?lang=zh-CN"
    assert rec.headers["X-App-Key"] == KEY
    assert rec.headers["X-Signature"] == pop.sign_h(SECRET, "GET", rec.path, rec.headers["X-Timestamp"], rec.headers["X-Nonce"], b"")
    assert "X-App-Id" not in rec.headers


def test_error_is_typed(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(422, "VALIDATION_ERROR", "invalid", errors={"user.phone": ["must be a mainland 11-digit mobile number"]})]
    with pytest.raises(pop.PartnerApiError) as e:
        client(fake, clock).register_user({"channel_user_id": "u", "user": {"name": "x", "phone": "1"}})
    err = e.value
    assert (err.status, err.code, err.request_id) == (422, "VALIDATION_ERROR", "req-422")
    assert err.field_errors == {"user.phone": ["must be a mainland 11-digit mobile number"]}
    assert len(fake.requests) == 1 and clock.sleeps == []


def test_codeless_and_oauth_errors(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(404, None, "report not found"), (401, {"X-Request-Id": "r-o"}, {"error": "invalid_client", "error_description": "bad"})]
    c = client(fake, clock)
    with pytest.raises(pop.PartnerApiError) as e:
        c.pull_health_report(1)
    assert e.value.status == 404 and e.value.code is None and e.value.message == "report not found"
    with pytest.raises(pop.PartnerApiError) as e:
        c.fetch_access_token()
    assert (e.value.status, e.value.code, e.value.message, e.value.request_id) == (401, "invalid_client", "bad", "r-o")


def test_read_retries_429_and_503_honouring_retry_after(fake: FakePlatform) -> None:
    clock = Clock()
    snap = {"user": {"open_user_id": 7}, "family_groups": [], "family_members": []}
    fake.script = [fail(429, "HTTP_429", headers={"Retry-After": "2"}), fail(503, "HTTP_503"), ok(snap)]
    got = client(fake, clock).get_snapshot(7)
    assert got.user.open_user_id == 7
    assert len(fake.requests) == 3
    assert clock.sleeps[0] == 2.0
    assert 0 <= clock.sleeps[1] <= 1.0  # backoff attempt 1: uniform(0, 0.5 * 2)
    # every attempt is signed afresh for its own time
    assert [r.headers["X-Timestamp"] for r in fake.requests] == [str(NOW), str(NOW + 2), str(int(NOW + 2 + clock.sleeps[1]))]


def test_retries_stop_at_the_limit(fake: FakePlatform) -> None:
    clock = Clock()
    fake.handler = lambda r: fail(503, "HTTP_503", headers={"Retry-After": "1"})
    with pytest.raises(pop.PartnerApiError) as e:
        client(fake, clock, retry=pop.RetryPolicy(max_retries=2)).get_order("PO1")
    assert e.value.status == 503 and e.value.retry_after == 1.0
    assert len(fake.requests) == 3 and clock.sleeps == [1.0, 1.0]


def test_retry_after_beyond_the_cap_raises_at_once(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(429, "HTTP_429", headers={"Retry-After": "3600"})]
    with pytest.raises(pop.PartnerApiError) as e:
        client(fake, clock).get_order("PO1")
    assert e.value.code == "HTTP_429" and e.value.retry_after == 3600.0
    assert len(fake.requests) == 1 and clock.sleeps == []


def test_write_without_idempotency_key_is_not_retried(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(503, "HTTP_503", headers={"Retry-After": "1"})]
    c = client(fake, clock, auto_idempotency=False)
    with pytest.raises(pop.PartnerApiError):
        c.create_order({"third_order_id": "t1", "contact_person": "a", "contact_phone": "13800000000", "address": "x", "items": []})
    assert len(fake.requests) == 1 and "Idempotency-Key" not in fake.requests[0].headers
    # the secret rotation takes no key, so it is never repeated either
    fake.script = [fail(429, "HTTP_429", headers={"Retry-After": "1"})]
    with pytest.raises(pop.PartnerApiError):
        client(fake, clock).rotate_webhook_secret()
    assert len(fake.requests) == 2


def test_write_with_idempotency_key_retries_with_the_same_key_and_body(fake: FakePlatform) -> None:
    clock = Clock()
    res = {"id": 1, "order_code": "PO1", "order_time": "2026-11-23 12:00:00"}
    fake.script = [fail(503, "HTTP_503"), fail(409, "IDEMPOTENCY_KEY_IN_PROGRESS", headers={"Retry-After": "1"}), ok(res, 201, {"Idempotent-Replayed": "true"})]
    req = m.OrderCreateRequest(
        third_order_id="t1", contact_person="a", contact_phone="13800000000", address="x",
        items=[m.OrderItemInput(goods_code="BP-100", quantity=1, unit_price=100)],
    )
    got = client(fake, clock).create_order(req, idempotency_key="key-1")
    assert got.order_code == "PO1"
    assert len(fake.requests) == 3
    assert {r.headers["Idempotency-Key"] for r in fake.requests} == {"key-1"}
    assert len({r.body for r in fake.requests}) == 1
    # every attempt is signed anew: nonces are single-use on the platform
    assert len({r.headers["X-Nonce"] for r in fake.requests}) == 3


def test_generated_key_is_kept_across_the_retries_of_one_call(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(503, "HTTP_503"), fail(429, "HTTP_429", headers={"Retry-After": "2"}), ok(None), ok(None)]
    c = client(fake, clock)
    c.delete_family_member(7, 70)
    c.delete_family_member(7, 71)
    keys = [r.headers["Idempotency-Key"] for r in fake.requests]
    assert len(keys) == 4 and keys[0] == keys[1] == keys[2] != keys[3]
    assert str(uuid.UUID(keys[0])) == keys[0]
    assert len({r.headers["X-Nonce"] for r in fake.requests}) == 4
    assert clock.sleeps[1] == 2.0


def test_a_401_is_not_signed_again(fake: FakePlatform) -> None:
    """No re-sign-on-401: a refused signature surfaces at once as the typed error."""
    clock = Clock()
    fake.handler = lambda r: fail(401, "HTTP_401")
    for scheme in ("H", "M"):
        c = client(fake, clock, scheme=scheme)
        with pytest.raises(pop.PartnerApiError) as e:
            c.delete_family_member(7, 70)
        assert e.value.status == 401 and e.value.code == "HTTP_401"
        with pytest.raises(pop.PartnerApiError):
            c.get_order("PO1")
    assert len(fake.requests) == 4 and clock.sleeps == []


def test_connection_refused_is_a_transport_error(fake: FakePlatform) -> None:
    clock = Clock()
    c = pop.PartnerClient("http://127.0.0.1:9", APP, KEY, SECRET, clock=clock.now, sleep=clock.sleep, timeout=2)
    with pytest.raises(pop.TransportError):
        c.get_order("PO1")
    assert len(clock.sleeps) == 3  # a read is retried, then gives up


def test_concurrent_bodyless_writes_get_distinct_nonces(fake: FakePlatform) -> None:
    clock = Clock()
    fake.handler = lambda r: ok({})
    c = client(fake, clock)
    errors: List[BaseException] = []

    def worker(i: int) -> None:
        try:
            c.delete_family_member(7, i)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    sigs = [r.headers["X-Signature"] for r in fake.requests]
    assert len(sigs) == 12 and len(set(sigs)) == 12
    assert len({r.headers["X-Nonce"] for r in fake.requests}) == 12
    assert len({r.headers["Idempotency-Key"] for r in fake.requests}) == 12


def _delivery(i: int) -> Any:
    return {
        "delivery_id": "d-%d" % i, "app_id": APP, "event": "user.profile.updated", "status": "delivered", "attempts": 1,
        "next_attempt_at": None, "last_status_code": 200, "last_error": None, "last_error_class": None,
        "created_at": "2026-11-23T04:00:00Z", "updated_at": "2026-11-23T04:00:00Z", "cursor": "%d-%d" % (i, i),
    }


def test_iterators_follow_the_cursors(fake: FakePlatform) -> None:
    clock = Clock()
    items = [_delivery(i) for i in range(1, 6)]

    def handler(r: Recorded) -> Tuple[int, Any, Any]:
        from urllib.parse import parse_qs, urlsplit
        u = urlsplit(r.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        limit = int(q.get("limit", "100"))
        if u.path == "/open/v1/webhooks/deliveries":
            start = int(q["after"].split("-")[0]) if q.get("after") else 0
            page = [d for d in items if int(d["cursor"].split("-")[0]) > start][:limit]
            return ok({"deliveries": page, "next_cursor": page[-1]["cursor"] if len(page) == limit else None})
        if u.path == "/open/v1/webhooks/events":
            start = int(q["after"].split("-")[0]) if q.get("after") else 0
            evs = [{"cursor": d["cursor"], "delivery_id": d["delivery_id"], "event": d["event"], "payload": None} for d in items]
            page = [e for e in evs if int(e["cursor"].split("-")[0]) > start][:limit]
            return ok({"events": page, "next_cursor": page[-1]["cursor"] if page else (q.get("after") or ""), "has_more": len(page) == limit})
        start = int(q.get("after", "0"))
        recs: List[Dict[str, Any]] = [{"fulfillment_record_id": i, "card_number": "1000*******0042", "benefit_item_name": "x", "current_usage_quantity": 1,
                 "status": "COMPLETED", "points_code": None, "initiated_at": "2026-11-23 12:00:00", "rating": None} for i in range(1, 6)]
        return ok({"fulfillments": [x for x in recs if int(x["fulfillment_record_id"]) > start][:limit]})

    fake.handler = handler
    c = client(fake, clock)
    with pytest.raises(pop.PartnerApiError) as e:
        fake.script = [ok(None)]
        fake.handler = None
        c.get_order("PO1")
    assert e.value.code == "UNEXPECTED_RESPONSE" and e.value.request_id == "req-ok"
    fake.handler = handler
    fake.requests.clear()
    assert [d.delivery_id for d in c.iter_deliveries(limit=2)] == ["d-1", "d-2", "d-3", "d-4", "d-5"]
    n = len(fake.requests)
    assert n == 3
    assert [e.delivery_id for e in c.iter_events(limit=2)] == ["d-1", "d-2", "d-3", "d-4", "d-5"]
    assert len(fake.requests) - n == 3
    assert [f.fulfillment_record_id for f in c.iter_fulfillments(limit=5)] == [1, 2, 3, 4, 5]
    assert fake.requests[-1].path.endswith("after=5&limit=5")


def test_daily_report_gets_and_reuses_a_token(fake: FakePlatform) -> None:
    clock = Clock()
    token: Dict[str, Any] = {"access_token": "at_" + "0" * 48, "token_type": "Bearer", "expires_in": 7200, "scope": "daily_report"}
    report = {"date": "2026-11-22", "heartRate": {"avg": 70, "unit": "bpm"}, "spo2": {"avg": 98, "unit": "%"}, "aiInsight": "ok"}

    def handler(r: Recorded) -> Tuple[int, Any, Any]:
        if r.path == "/oauth/token":
            return 200, {}, token
        if r.path.startswith("/v1/health/daily-report"):
            if r.headers.get("Authorization") != "Bearer " + token["access_token"]:
                return fail(401, "INVALID_TOKEN")
            return ok(report)
        return ok(None)

    fake.handler = handler
    c = client(fake, clock)
    a = c.get_daily_report(open_user_id=7, date="2026-11-22")
    b = c.get_daily_report(open_user_id=7)
    assert a.ai_insight == "ok" and b.date == "2026-11-22"
    paths = [r.path.split("?")[0] for r in fake.requests]
    assert paths == ["/oauth/token", "/v1/health/daily-report", "/v1/health/daily-report"]
    tok_req = fake.requests[0]
    assert tok_req.headers["Authorization"].startswith("Basic ")
    assert tok_req.body == b"grant_type=client_credentials&scope=daily_report"
    assert fake.requests[1].headers["X-App-Key"] == KEY
    # a revoked (or expired) token is replaced once, transparently
    token["access_token"] = "at_" + "1" * 48
    c.get_daily_report(open_user_id=7)
    assert [r.path.split("?")[0] for r in fake.requests[3:]] == ["/v1/health/daily-report", "/oauth/token", "/v1/health/daily-report"]
    c.revoke_access_token()
    assert fake.requests[-1].path == "/oauth/revoke" and fake.requests[-1].body == ("token=" + token["access_token"]).encode()


def test_patch_can_clear_with_a_dict(fake: FakePlatform) -> None:
    clock = Clock()
    c = client(fake, clock)
    c.update_user(7, m.UserPatch(nickname="n"))
    c.update_user(7, {"nickname": None})
    assert json.loads(fake.requests[0].body) == {"nickname": "n"}
    assert json.loads(fake.requests[1].body) == {"nickname": None}


def test_retry_after_as_an_http_date(fake: FakePlatform) -> None:
    clock = Clock()
    fake.script = [fail(503, "HTTP_503", headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}), ok({"order_code": "PO1"})]
    assert client(fake, clock).get_order("PO1").order_code == "PO1"
    assert clock.sleeps == [0.0]  # a date in the past means: now

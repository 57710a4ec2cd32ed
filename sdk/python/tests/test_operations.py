"""Each client method sends the method and path of the operation it stands for
in the OpenAPI document (checked on the wire, against a loopback recorder)."""

from __future__ import annotations

import re
import uuid
from typing import Any, Callable, Dict, Iterator
from urllib.parse import urlsplit

import pytest

import partner_open_platform as pop
from partner_open_platform import models as m
from partner_open_platform.client import OPERATION_METHODS

from .fakeserver import FakePlatform, Recorded, ok, start
from .test_openapi_drift import _doc

CALLS: Dict[str, Callable[[pop.PartnerClient], Any]] = {
    "register_user": lambda c: c.register_user({"channel_user_id": "u", "user": {"name": "n"}}),
    "get_snapshot": lambda c: c.get_snapshot(7, updated_after="2026-01-01T00:00:00Z"),
    "update_user": lambda c: c.update_user(7, {"name": "n"}),
    "upsert_family_group": lambda c: c.upsert_family_group(7, m.FamilyGroupInput(app_group_id=1, name="g")),
    "dissolve_family_group": lambda c: c.dissolve_family_group(7, 9),
    "upsert_family_member": lambda c: c.upsert_family_member(
        7, m.FamilyMemberUpsertInput(app_user_id="a", app_group_id=1, name="n", relationship="SELF")
    ),
    "delete_family_member": lambda c: c.delete_family_member(7, 70),
    "list_deliveries": lambda c: c.list_deliveries(status="failed", limit=5),
    "get_delivery": lambda c: c.get_delivery("d-1"),
    "resend_delivery": lambda c: c.resend_delivery("d-1"),
    "rotate_webhook_secret": lambda c: c.rotate_webhook_secret(),
    "activate_webhook_secret": lambda c: c.activate_webhook_secret(),
    "list_events": lambda c: c.list_events(after="1-1"),
    "pull_health_report": lambda c: c.pull_health_report(42),
    "get_daily_report": lambda c: c.get_daily_report(open_user_id=7),
    "sandbox_mock_measure": lambda c: c.sandbox_mock_measure(
        m.MockMeasureRequest(app_key="ak", third_user_id="t", device_key="HOME_SPO2_RING", measure_mode="SPO2")
    ),
    "fetch_access_token": lambda c: c.fetch_access_token(),
    "revoke_access_token": lambda c: c.revoke_access_token("at_x"),
    "create_order": lambda c: c.create_order({"third_order_id": "t"}),
    "get_order": lambda c: c.get_order("PO1"),
    "sandbox_ship_order": lambda c: c.sandbox_ship_order({"order_code": "PO1"}),
    "trigger_sandbox_event": lambda c: c.trigger_sandbox_event("order.shipped"),
    "register_service_provider": lambda c: c.register_service_provider(
        m.ProviderRegistration(name="n", type="SERVICE_PROVIDER", contact="c")
    ),
    "batch_issue_benefit_cards": lambda c: c.batch_issue_benefit_cards({"cards": []}),
    "verify_benefit_use": lambda c: c.verify_benefit_use(m.VerifyUseRequest(card_number="1" * 15, user_benefit_item_id=3)),
    "get_benefit_card": lambda c: c.get_benefit_card("1" * 15),
    "list_fulfillments": lambda c: c.list_fulfillments(role="issuer"),
    "rate_fulfillment": lambda c: c.rate_fulfillment(5, m.RatingRequest(rating=4)),
    "acknowledge_erasure": lambda c: c.acknowledge_erasure(1001),
    "list_access_log": lambda c: c.list_access_log(open_user_id=1001, limit=10),
    "replay_webhooks": lambda c: c.replay_webhooks(
        m.WebhookReplayRequest(events=["user.profile.updated"], since="2026-01-01T00:00:00Z")
    ),
    "get_webhook_replay": lambda c: c.get_webhook_replay(3),
    "cancel_webhook_replay": lambda c: c.cancel_webhook_replay(3),
    "list_webhook_endpoints": lambda c: c.list_webhook_endpoints(),
    "create_webhook_endpoint": lambda c: c.create_webhook_endpoint(m.WebhookEndpointCreate(url="https://example.com/h")),
    "get_webhook_endpoint": lambda c: c.get_webhook_endpoint(0),
    "update_webhook_endpoint": lambda c: c.update_webhook_endpoint(3, {"enabled": False, "events": None}),
    "delete_webhook_endpoint": lambda c: c.delete_webhook_endpoint(3),
    "rotate_webhook_endpoint_secret": lambda c: c.rotate_webhook_endpoint_secret(3),
    "activate_webhook_endpoint_secret": lambda c: c.activate_webhook_endpoint_secret(3),
    "send_webhook_endpoint_test": lambda c: c.send_webhook_endpoint_test(3),
}


@pytest.fixture()
def fake() -> Iterator[FakePlatform]:
    f, stop = start()
    try:
        yield f
    finally:
        stop()


def _template_re(path: str) -> "re.Pattern[str]":
    return re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")


def _takes_key(op_id: str) -> bool:
    """Whether the document declares an Idempotency-Key on the operation."""
    for item in _doc()["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and op.get("operationId") == op_id:
                return any(
                    p.get("$ref", "").endswith("/IdempotencyKey") or (p.get("in") == "header" and p.get("name") == "Idempotency-Key")
                    for p in op.get("parameters", [])
                )
    raise AssertionError("no operation " + op_id)


@pytest.mark.parametrize("scheme", ["H", "M"])
def test_every_method_hits_its_operation(fake: FakePlatform, scheme: str) -> None:
    token = {"access_token": "at_" + "0" * 48, "token_type": "Bearer", "expires_in": 7200, "scope": "daily_report"}

    def handler(r: Recorded) -> Any:
        if r.path.startswith("/oauth/token"):
            return 200, {}, token
        return ok({})

    fake.handler = handler
    assert set(CALLS) == set(OPERATION_METHODS.values())
    c = pop.PartnerClient(fake.url, 1, "ak", "sk") if scheme == "H" else pop.PartnerClient(fake.url, 1, "ak", "sk", scheme="M")
    keys = set()
    for op_id, name in sorted(OPERATION_METHODS.items()):
        before = len(fake.requests)
        CALLS[name](c)
        sent = [r for r in fake.requests[before:] if not (name == "get_daily_report" and r.path == "/oauth/token")]
        assert len(sent) == 1, name
        method, path = m.PARTNER_OPERATIONS[op_id]
        assert sent[0].method == method, name
        assert _template_re(path).match(urlsplit(sent[0].path).path), (name, sent[0].path, path)
        h_only = name in ("pull_health_report", "sandbox_mock_measure")
        if h_only or (scheme == "H" and path.startswith("/open/")):
            assert sent[0].headers.get("X-Nonce") and sent[0].headers["X-App-Key"] == "ak" and "X-App-Id" not in sent[0].headers, name
        elif path.startswith("/open/"):
            assert sent[0].headers["X-App-Id"] == "1" and "X-Nonce" not in sent[0].headers, name
        # exactly the writes whose operation takes an Idempotency-Key send one: a fresh UUID per call
        key = sent[0].headers.get("Idempotency-Key")
        assert (key is not None) == _takes_key(op_id), (name, key)
        if key is not None:
            assert str(uuid.UUID(key)) == key and key not in keys, name
            keys.add(key)


def test_list_events_sends_the_wait(fake: FakePlatform) -> None:
    """list_events(wait=...) is the feed's long-poll: the wait goes out as a query parameter, absent by default."""
    fake.handler = lambda r: ok({"events": [], "next_cursor": "1-1", "has_more": False})
    c = pop.PartnerClient(fake.url, 1, "ak", "sk")
    c.list_events(after="1-1", wait=5)
    c.list_events(after="1-1")
    assert "wait=5" in urlsplit(fake.requests[-2].path).query
    assert "wait" not in urlsplit(fake.requests[-1].path).query

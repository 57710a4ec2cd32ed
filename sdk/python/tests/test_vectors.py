"""Every signer and verifier against the shared vectors (../shared/vectors/signatures.json,
used unchanged) and the server's published plugin vectors."""

from __future__ import annotations

import base64
from typing import Any, Dict

import pytest

import partner_open_platform as pop
from partner_open_platform.plugin import PluginLaunch, PluginProfile


def _body(case: Dict[str, Any]) -> bytes:
    raw = base64.b64decode(case["body_base64"])
    assert raw == case["body"].encode("utf-8"), "vector body and body_base64 disagree"
    return raw


def test_scheme_m(vectors: Dict[str, Any]) -> None:
    cred = vectors["credentials"]
    cases = vectors["scheme_m"]["cases"]
    assert cases
    for case in cases:
        got = pop.sign_m(cred["app_key"], case["timestamp"], cred["app_secret"], _body(case))
        assert got == case["signature"], case["name"]
        assert got == case["headers"]["X-Signature"]
        # str timestamps and str bodies sign the same bytes
        assert pop.sign_m(cred["app_key"], str(case["timestamp"]), cred["app_secret"], case["body"]) == got


def test_scheme_h(vectors: Dict[str, Any]) -> None:
    secret = vectors["credentials"]["app_secret"]
    cases = vectors["scheme_h"]["cases"]
    assert cases
    for case in cases:
        body = _body(case)
        assert pop.sign_string_h(case["method"], case["uri"], case["timestamp"], case["nonce"], body) == case["sign_string"]
        assert pop.sign_h(secret, case["method"], case["uri"], case["timestamp"], case["nonce"], body) == case["signature"], case["name"]
        # the method is upper-cased as the rule says
        assert pop.sign_h(secret, case["method"].lower(), case["uri"], case["timestamp"], case["nonce"], body) == case["signature"]


def test_plugin_launch(vectors: Dict[str, Any]) -> None:
    secret = vectors["credentials"]["app_secret"]
    for case in vectors["plugin_launch"]["cases"]:
        got = pop.sign_plugin_launch(secret, case["app_key"], case["third_user_id"], case["timestamp"], case["nonce"])
        assert got == case["signature"], case["name"]


def test_webhook_vectors_valid_and_stale(vectors: Dict[str, Any]) -> None:
    secret = vectors["credentials"]["webhook_secret"]
    cases = vectors["webhook"]["cases"]
    assert cases
    for case in cases:
        body = _body(case)
        assert pop.webhook_signature(secret, case["timestamp"], body) == case["signature"]
        pop.verify_webhook(secret, str(case["timestamp"]), case["signature"], body, now=case["valid_at"])
        pop.verify_webhook(secret, case["timestamp"], case["signature"].upper(), body, now=case["valid_at"])
        with pytest.raises(pop.WebhookVerificationError) as e:
            pop.verify_webhook(secret, str(case["timestamp"]), case["signature"], body, now=case["stale_at"])
        assert e.value.reason == "stale"
        # exactly at the tolerance edge is accepted, one second past is not
        pop.verify_webhook(secret, case["timestamp"], case["signature"], body, now=case["timestamp"] + 300)
        pop.verify_webhook(secret, case["timestamp"], case["signature"], body, now=case["timestamp"] - 300)
        with pytest.raises(pop.WebhookVerificationError):
            pop.verify_webhook(secret, case["timestamp"], case["signature"], body, now=case["timestamp"] + 301)


def test_webhook_rejects_tampering(vectors: Dict[str, Any]) -> None:
    secret = vectors["credentials"]["webhook_secret"]
    case = vectors["webhook"]["cases"][1]
    body = _body(case)
    ts = str(case["timestamp"])
    now = case["valid_at"]
    bad = [
        (secret, ts, case["signature"], body + b" "),  # re-serialised or altered body
        (secret, ts, case["signature"], body.replace(b"\n", b"")),
        (secret, str(case["timestamp"] + 1), case["signature"], body),  # timestamp swapped
        (secret + "x", ts, case["signature"], body),  # another secret
        (secret, ts, case["signature"][:-1], body),  # truncated signature
        (secret, ts, "sha256=" + case["signature"], body),
    ]
    for args in bad:
        with pytest.raises(pop.WebhookVerificationError) as e:
            pop.verify_webhook(*args, now=now)
        assert e.value.reason in ("signature", "stale")
    for ts_bad, reason in [("", "missing"), (None, "missing"), ("17638707O1", "timestamp"), ("-1763870701", "timestamp")]:
        with pytest.raises(pop.WebhookVerificationError) as e:
            pop.verify_webhook(secret, ts_bad, case["signature"], body, now=now)
        assert e.value.reason == reason
    with pytest.raises(pop.WebhookVerificationError):
        pop.verify_webhook(secret, ts, "", body, now=now)
    with pytest.raises(TypeError):
        pop.verify_webhook(secret, ts, case["signature"], case["body"], now=now)


def test_webhook_custom_tolerance(vectors: Dict[str, Any]) -> None:
    secret = vectors["credentials"]["webhook_secret"]
    case = vectors["webhook"]["cases"][0]
    body = _body(case)
    with pytest.raises(pop.WebhookVerificationError):
        pop.verify_webhook(secret, case["timestamp"], case["signature"], body, tolerance=5, now=case["valid_at"])
    pop.verify_webhook(secret, case["timestamp"], case["signature"], body, tolerance=10, now=case["valid_at"])


def test_server_plugin_vectors(plugin_vectors: Dict[str, Any]) -> None:
    for case in plugin_vectors["sign"]:
        assert pop.sign_plugin_launch(case["appSecret"], case["appKey"], case["thirdUserId"], case["timestamp"], case["nonce"]) == case["sign"]
    for case in plugin_vectors["profile"]:
        iv = bytes.fromhex(case["iv"])
        profile = pop.decrypt_profile(case["appSecret"], case["appKey"], case["thirdUserId"], case["userProfile"])
        assert profile.to_json() == case["plaintext"].encode("utf-8")
        assert pop.encrypt_profile(case["appSecret"], case["appKey"], case["thirdUserId"], profile, iv=iv) == case["userProfile"]
        with pytest.raises(ValueError):
            pop.decrypt_profile(case["appSecret"], case["appKey"], case["thirdUserId"] + "x", case["userProfile"])
    for case in plugin_vectors["url"]:
        l = case["launch"]
        launch = PluginLaunch(
            app_key=l["appKey"], third_user_id=l["thirdUserId"], user_profile=l["userProfile"], timestamp=l["timestamp"],
            nonce=l["nonce"], sign=l["sign"], device_key=l["deviceKey"], measure_mode=l["measureMode"], sandbox=case["sandbox"],
        )
        assert launch.url() == case["url"]


def test_plugin_host_launch_round_trip() -> None:
    host = pop.PluginHost("ak_x", "sk_y", sandbox=True)
    prof = PluginProfile(gender="male", birth_date="1980-01-02", height=172, metadata="m&1")
    a = host.launch("third-1", "BODY_COMPOSITION_ANALYSIS", "BCA", prof, now=1767225600)
    b = host.launch("third-1", "BODY_COMPOSITION_ANALYSIS", "BCA", prof, now=1767225600)
    assert a.nonce != b.nonce and a.user_profile != b.user_profile  # fresh nonce and IV per launch
    assert a.sign == pop.sign_plugin_launch("sk_y", "ak_x", "third-1", "1767225600", a.nonce)
    assert pop.decrypt_profile("sk_y", "ak_x", "third-1", a.user_profile) == prof
    resp = a.host_response()
    assert resp["code"] == 0 and resp["data"]["timestamp"] == "1767225600"
    assert a.url().endswith("&env=sandbox")
    with pytest.raises(ValueError):
        pop.PluginHost("a|b", "s")
    with pytest.raises(ValueError):
        host.launch("", "HOME_SPO2_RING", "SPO2")
    # the plugin's own rules are checked before anything is signed
    for device, mode, bad_profile in [
        ("HOME_SPO2_RING", "BP", None),
        ("SCALE", "BCA", None),
        ("BODY_COMPOSITION_ANALYSIS", "BCA", PluginProfile(gender="male")),
        ("HOME_SPO2_RING", "SPO2", PluginProfile(phone="12345")),
        ("HOME_SPO2_RING", "SPO2", PluginProfile(birth_date="2999-01-01")),
        ("HOME_SPO2_RING", "SPO2", PluginProfile(height=20)),
    ]:
        with pytest.raises(ValueError):
            host.launch("third-1", device, mode, bad_profile)
    assert pop.PluginProfile(gender="male").problems("BODY_COMPOSITION_ANALYSIS") == [
        "height: required for BODY_COMPOSITION_ANALYSIS", "birth_date: required for BODY_COMPOSITION_ANALYSIS",
    ]
    assert host.launch("third-1", "HOME_MULTI_BIO_MONITOR", "BG").measure_mode == "BG"

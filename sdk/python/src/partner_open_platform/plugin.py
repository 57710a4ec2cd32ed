"""Plugin host helper: the signed launch parameters and the encrypted userProfile
that a host server returns to its mini-program front end.

userProfile v1 is base64(iv || AES-256-GCM(key, iv, profile JSON, aad)), key =
HKDF-SHA256(appSecret, salt "partner-open-platform/plugin", info
"userProfile v1", 32 bytes), aad = appKey|thirdUserId (see plugin/ in the
server). AES-GCM needs the optional `cryptography` package
(pip install "partner-open-platform[plugin]"); signing alone does not."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import re
import secrets
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .signing import sign_plugin_launch

__all__ = ["DEVICE_MODES", "PluginProfile", "PluginLaunch", "PluginHost", "encrypt_profile", "decrypt_profile"]

DEVICE_MODES: Dict[str, Dict[str, str]] = {
    "HOME_MULTI_BIO_MONITOR": {"BP": "blood_pressure", "BG": "blood_glucose"},
    "HOME_SPO2_RING": {"SPO2": "spo2"},
    "HEARTLOG_ECG_RECORDER": {"ECG": "ecg"},
    "BODY_COMPOSITION_ANALYSIS": {"BCA": "bca"},
}
"""deviceKey to its measureModes and the report_type each produces (the platform's plugin/device.go)."""

_PHONE = re.compile(r"^1[3-9][0-9]{9}$")

_SALT = b"partner-open-platform/plugin"
_INFO = b"userProfile v1"
_IV = 12
_TAG = 16


@dataclass
class PluginProfile:
    """The person the plugin measures; encrypted into userProfile (height, gender and birth_date are required for BODY_COMPOSITION_ANALYSIS)."""

    phone: str = ""
    gender: str = ""
    birth_date: str = ""
    height: int = 0
    weight: int = 0
    name: str = ""
    metadata: str = ""

    def problems(self, device_key: str, today: Optional[datetime.date] = None) -> List[str]:
        """What the plugin would refuse in this profile for the device, as "field: reason" (empty when valid)."""
        out: List[str] = []
        if device_key == "BODY_COMPOSITION_ANALYSIS":
            for f in ("height", "gender", "birth_date"):
                if not getattr(self, f):
                    out.append("%s: required for BODY_COMPOSITION_ANALYSIS" % f)
        if self.phone and not _PHONE.match(self.phone):
            out.append("phone: must be an 11-digit mainland mobile number")
        if self.gender not in ("", "male", "female", "unknown"):
            out.append("gender: must be male, female or unknown")
        if self.birth_date:
            try:
                d = datetime.datetime.strptime(self.birth_date, "%Y-%m-%d").date()
            except ValueError:
                out.append("birth_date: must be a Y-m-d date")
            else:
                if d > (today or datetime.datetime.now(datetime.timezone.utc).date()):
                    out.append("birth_date: must not be in the future")
                elif d < datetime.date(1900, 1, 1):
                    out.append("birth_date: must not be before 1900-01-01")
        if self.height and not 30 <= self.height <= 300:
            out.append("height: must be 30..300 cm")
        if self.weight and not 100 <= self.weight <= 50000:
            out.append("weight: must be 100..50000 (kg x 100)")
        return out

    def to_json(self) -> bytes:
        """The plaintext: JSON in the server's field order, empty fields omitted, no HTML escaping."""
        out: Dict[str, Any] = {}
        for k in ("phone", "gender", "birth_date", "height", "weight", "name", "metadata"):
            v = getattr(self, k)
            if v:
                out[k] = v
        return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _hkdf(secret: str) -> bytes:
    prk = hmac.new(_SALT, secret.encode("utf-8"), hashlib.sha256).digest()
    okm = b""
    block = b""
    i = 1
    while len(okm) < 32:
        block = hmac.new(prk, block + _INFO + bytes([i]), hashlib.sha256).digest()
        okm += block
        i += 1
    return okm[:32]


def _aesgcm(app_secret: str) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as e:  # pragma: no cover - depends on the install
        raise RuntimeError('userProfile encryption needs: pip install "partner-open-platform[plugin]"') from e
    return AESGCM(_hkdf(app_secret))


def encrypt_profile(app_secret: str, app_key: str, third_user_id: str, profile: PluginProfile, *, iv: Optional[bytes] = None) -> str:
    """userProfile: base64(iv || AES-256-GCM ciphertext || tag) bound to app key and user."""
    nonce = os.urandom(_IV) if iv is None else iv
    if len(nonce) != _IV:
        raise ValueError("iv must be 12 bytes")
    sealed = _aesgcm(app_secret).encrypt(nonce, profile.to_json(), (app_key + "|" + third_user_id).encode("utf-8"))
    return base64.b64encode(nonce + sealed).decode("ascii")


def decrypt_profile(app_secret: str, app_key: str, third_user_id: str, user_profile: str) -> PluginProfile:
    """Open a userProfile (for tests and debugging); raises ValueError when it is malformed or forged."""
    try:
        raw = base64.b64decode(user_profile, validate=True)
    except ValueError as e:
        raise ValueError("userProfile is not base64") from e
    if len(raw) < _IV + _TAG:
        raise ValueError("userProfile is too short")
    from cryptography.exceptions import InvalidTag

    try:
        plain = _aesgcm(app_secret).decrypt(raw[:_IV], raw[_IV:], (app_key + "|" + third_user_id).encode("utf-8"))
    except InvalidTag as e:
        raise ValueError("userProfile failed authentication") from e
    obj = json.loads(plain.decode("utf-8"))
    if not isinstance(obj, dict):
        raise ValueError("userProfile plaintext is not an object")
    return PluginProfile(**{k: obj[k] for k in PluginProfile.__dataclass_fields__ if k in obj})


def _esc(s: str) -> str:
    return urllib.parse.quote(s, safe="")


@dataclass
class PluginLaunch:
    """What the host server returns to its front end, and the plugin URL built from it."""

    app_key: str
    third_user_id: str
    user_profile: str
    timestamp: str
    nonce: str
    sign: str
    device_key: str
    measure_mode: str
    sandbox: bool = False

    def data(self) -> Dict[str, str]:
        """The `data` object of the host endpoint's response (camelCase keys, as the front end expects)."""
        return {
            "appKey": self.app_key,
            "thirdUserId": self.third_user_id,
            "userProfile": self.user_profile,
            "timestamp": self.timestamp,
            "nonce": self.nonce,
            "sign": self.sign,
            "deviceKey": self.device_key,
            "measureMode": self.measure_mode,
        }

    def host_response(self) -> Dict[str, Any]:
        """The whole host endpoint response: {"code": 0, "data": {...}}."""
        return {"code": 0, "data": self.data()}

    def url(self) -> str:
        """plugin://platform-measure/bind?... with every value URL-encoded (env=sandbox only in the sandbox)."""
        q = "&".join(k + "=" + _esc(v) for k, v in self.data().items())
        return "plugin://platform-measure/bind?" + q + ("&env=sandbox" if self.sandbox else "")


class PluginHost:
    """Builds signed plugin launches for a host server holding the app secret (never ship the secret to clients)."""

    def __init__(self, app_key: str, app_secret: str, *, sandbox: bool = False) -> None:
        if not app_key or "|" in app_key:
            raise ValueError("app_key is required and must not contain '|'")
        if not app_secret:
            raise ValueError("app_secret is required")
        self.app_key = app_key
        self.app_secret = app_secret
        self.sandbox = sandbox

    def launch(
        self,
        third_user_id: str,
        device_key: str,
        measure_mode: str,
        profile: Optional[PluginProfile] = None,
        *,
        now: Optional[float] = None,
    ) -> PluginLaunch:
        """Sign a launch for one user and device: 10-digit timestamp, random nonce, encrypted profile."""
        if not third_user_id:
            raise ValueError("third_user_id is required")
        if device_key not in DEVICE_MODES:
            raise ValueError("device_key must be one of " + ", ".join(sorted(DEVICE_MODES)))
        if measure_mode not in DEVICE_MODES[device_key]:
            raise ValueError("measure_mode must be one of " + ", ".join(sorted(DEVICE_MODES[device_key])) + " for " + device_key)
        bad = (profile or PluginProfile()).problems(device_key)
        if bad:
            raise ValueError("userProfile: " + "; ".join(bad))
        ts = str(int(time.time() if now is None else now))
        if len(ts) != 10:
            raise ValueError("timestamp must be 10-digit Unix seconds")
        nonce = secrets.token_hex(16)
        return PluginLaunch(
            app_key=self.app_key,
            third_user_id=third_user_id,
            user_profile=encrypt_profile(self.app_secret, self.app_key, third_user_id, profile or PluginProfile()),
            timestamp=ts,
            nonce=nonce,
            sign=sign_plugin_launch(self.app_secret, self.app_key, third_user_id, ts, nonce),
            device_key=device_key,
            measure_mode=measure_mode,
            sandbox=self.sandbox,
        )

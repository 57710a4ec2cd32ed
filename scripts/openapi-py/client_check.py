"""Generates a client from openapi.yaml with openapi-python-client and uses it.

A partner may generate a client from the published document instead of
using an SDK. This generates one with an independent generator (any
warning fails: a schema it cannot read is a model the partner does not
get), then starts a real embedded platform ($PLATFORM_BIN, else built from
./cmd/platform) and, with the generated client only:

- registers a user and reads its snapshot, signed with scheme M;
- pulls a health report whose examined_at and interpreted_at are null,
  signed with scheme H;
- reads a daily report of a day without readings (heartRate and spo2
  null) with an OAuth access token;

and checks each answer parsed into the generated models.

    python client_check.py REPO_ROOT
"""

import datetime
import hashlib
import hmac
import importlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import httpx


def fail(msg):
    print("client-check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def generate(repo, work):
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        # No post hooks (ruff is not a dependency); the document's YAML
        # response is plain text to a client, the backup's tar is bytes.
        f.write("post_hooks: []\ncontent_type_overrides:\n  application/yaml: text/plain\n"
                "  application/x-tar: application/octet-stream\n")
    out = os.path.join(work, "client")
    gen = os.path.join(os.path.dirname(sys.executable), "openapi-python-client")
    r = subprocess.run(
        [gen, "generate", "--path", os.path.join(repo, "internal/openapi/openapi.yaml"), "--output-path", out,
         "--config", config, "--meta", "none"],
        capture_output=True, text=True, timeout=300,
    )
    text = r.stdout + r.stderr
    if r.returncode != 0 or "Warning" in text or "Error" in text:
        fail("openapi-python-client did not generate a clean client:\n" + text[-6000:])
    sys.path.insert(0, work)
    os.rename(out, os.path.join(work, "popclient"))
    return importlib.import_module("popclient")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_platform(repo, work):
    binary = os.environ.get("PLATFORM_BIN")
    if not binary:
        binary = os.path.join(work, "platform")
        subprocess.run(["go", "build", "-o", binary, "./cmd/platform"], cwd=repo, check=True, timeout=600)
    port, token = free_port(), secrets.token_hex(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_")}
    env.update({"PLATFORM_ADDR": "127.0.0.1:%d" % port, "PLATFORM_DATA_DIR": os.path.join(work, "data"),
                "PLATFORM_ADMIN_TOKEN": token, "PLATFORM_LOG_FORMAT": "text"})
    log = open(os.path.join(work, "platform.log"), "wb")
    proc = subprocess.Popen([binary], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as r:
                if r.status == 200:
                    return proc, url, token
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    proc.kill()
    with open(os.path.join(work, "platform.log"), "rb") as f:
        fail("the platform did not become ready:\n" + f.read()[-3000:].decode("utf-8", "replace"))


def scheme_m(app_id, app_key, app_secret):
    """An httpx request hook signing scheme M: MD5(app_key + timestamp + app_secret + body)."""
    def sign(request):
        ts = str(int(time.time()))
        body = request.read()
        request.headers["X-App-Id"] = str(app_id)
        request.headers["X-Timestamp"] = ts
        request.headers["X-Signature"] = hashlib.md5(app_key.encode() + ts.encode() + app_secret.encode() + body).hexdigest()
    return sign


def scheme_h(app_key, app_secret, method, uri, body=b""):
    """Scheme H headers: HMAC-SHA256 over method, URI, timestamp, nonce and the body's SHA-256."""
    ts, nonce = str(int(time.time())), uuid.uuid4().hex
    msg = "\n".join([method.upper(), uri, ts, nonce, hashlib.sha256(body).hexdigest()])
    sig = hmac.new(app_secret.encode(), msg.encode(), hashlib.sha256).hexdigest()
    return {"x_timestamp": ts, "x_nonce": nonce, "x_signature": sig}


def find_api(pkg, operation):
    """The generated module of an operationId (the generator files them by tag)."""
    import pkgutil
    name = "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")
    for tag in pkgutil.iter_modules(pkg.api.__path__):
        try:
            return importlib.import_module("popclient.api.%s.%s" % (tag.name, name))
        except ModuleNotFoundError:
            continue
    fail("the generated client has no operation %s" % operation)


def body(module, data):
    """The operation's request body model (as the generator typed it) built from data."""
    import typing
    hint = typing.get_type_hints(module.sync_detailed)["body"]
    for cls in typing.get_args(hint) or (hint,):
        if hasattr(cls, "from_dict"):
            return cls.from_dict(data)
    fail("%s takes no model body (%r)" % (module.__name__, hint))


def main(argv):
    repo = os.path.abspath(argv[1] if len(argv) > 1 else ".")
    work = tempfile.mkdtemp(prefix="openapi-client-")
    proc = None
    try:
        t0 = time.monotonic()
        pkg = generate(repo, work)
        importlib.import_module("popclient.api")
        models = importlib.import_module("popclient.models")
        types = importlib.import_module("popclient.types")
        print("client-check: openapi-python-client generated %d models without a warning (%.1f s)"
              % (len([m for m in dir(models) if not m.startswith("_")]), time.monotonic() - t0))
        proc, url, admin_token = start_platform(repo, work)

        admin = pkg.AuthenticatedClient(base_url=url, token=admin_token, raise_on_unexpected_status=True)
        op = find_api(pkg, "createApp")
        created = op.sync_detailed(client=admin, body=body(op, 
            {"name": "generated client", "environment": "sandbox",
             "scopes": ["channel_users", "health_reports", "daily_report"]}))
        if created.status_code != 201:
            fail("createApp answered %d: %s" % (created.status_code, created.content[:500]))
        app = created.parsed.data
        app_id, app_key, app_secret = app.app_id, app.app_key, app.app_secret

        partner = pkg.Client(base_url=url, raise_on_unexpected_status=True,
                             httpx_args={"event_hooks": {"request": [scheme_m(app_id, app_key, app_secret)]}})
        op = find_api(pkg, "registerChannelUser")
        reg = op.sync_detailed(client=partner, body=body(op, 
            {"channel_user_id": "generated-1", "user": {"name": "Li Lei", "phone": "13812345678"},
             "family_groups": [{"app_group_id": 1, "name": "Home"}],
             "family_members": [{"app_user_id": "self", "app_group_id": 1, "name": "Li Lei", "relationship": "SELF"}]}))
        if reg.status_code != 201 or not reg.parsed.data.created:
            fail("registerChannelUser answered %d: %s" % (reg.status_code, reg.content[:500]))
        uid = reg.parsed.data.open_user_id
        snap = find_api(pkg, "getChannelUserSnapshot").sync_detailed(uid, client=partner)
        if snap.status_code != 200:
            fail("getChannelUser answered %d: %s" % (snap.status_code, snap.content[:500]))
        s = snap.parsed.data
        if s.user.name != "Li Lei" or [m.app_user_id for m in s.family_members] != ["self"]:
            fail("snapshot %r" % s.to_dict())
        print("client-check: scheme M: registered user %d and read its snapshot (%d group, %d member)"
              % (uid, len(s.family_groups), len(s.family_members)))

        # A report uploaded without examined_at or an interpretation.
        op = find_api(pkg, "ingestHealthReport")
        up = op.sync_detailed(client=admin, body=body(op, 
            {"open_user_id": uid, "raw_data": {"indicators": []}}))
        if up.status_code != 201:
            fail("ingestHealthReport answered %d: %s" % (up.status_code, up.content[:500]))
        report_id = up.parsed.data.id
        # The generated operation takes scheme H's headers as parameters.
        # (X-App-Key is the scheme's API key, a client header.)
        puller = pkg.Client(base_url=url, raise_on_unexpected_status=True, headers={"X-App-Key": app_key})
        pulled = find_api(pkg, "pullHealthReport").sync_detailed(
            report_id, client=puller, **scheme_h(app_key, app_secret, "GET", "/open/v1/health-reports/%d" % report_id))
        if pulled.status_code != 200:
            fail("pullHealthReport answered %d: %s" % (pulled.status_code, pulled.content[:500]))
        r = pulled.parsed.data
        if r.id != report_id or r.examined_at is not None or r.interpreted_at is not None:
            fail("pulled report %r" % r.to_dict())
        print("client-check: scheme H: pulled report %d with examined_at and interpreted_at null" % report_id)

        tok = httpx.post(url + "/oauth/token", data={"grant_type": "client_credentials", "scope": "daily_report"},
                         auth=(app_key, app_secret), timeout=15)
        if tok.status_code != 200:
            fail("/oauth/token answered %d: %s" % (tok.status_code, tok.text[:500]))
        bearer = pkg.AuthenticatedClient(base_url=url, token=tok.json()["access_token"], raise_on_unexpected_status=True)
        daily = find_api(pkg, "getDailyReport").sync_detailed(client=bearer, x_app_key=app_key, open_user_id=uid,
                                                              date=datetime.date(2020, 1, 1))
        if daily.status_code != 200:
            fail("getDailyReport answered %d: %s" % (daily.status_code, daily.content[:500]))
        d = daily.parsed.data
        if d.heart_rate is not None or d.spo2 is not None or not d.ai_insight:
            fail("daily report without readings %r" % d.to_dict())
        print("client-check: OAuth: read a daily report without readings (heartRate and spo2 null)")
        return 0
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

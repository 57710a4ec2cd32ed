"""A loopback HTTP server that records requests and answers from a script, for client unit tests."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple


@dataclass
class Recorded:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes


Answer = Tuple[int, Dict[str, str], Any]


@dataclass
class FakePlatform:
    """Answers with `script` in order (then `default`), or with `handler` when set."""

    requests: List[Recorded] = field(default_factory=list)
    script: List[Answer] = field(default_factory=list)
    handler: Optional[Callable[[Recorded], Answer]] = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def answer(self, rec: Recorded) -> Answer:
        with self.lock:
            self.requests.append(rec)
            if self.handler is not None:
                return self.handler(rec)
            if self.script:
                return self.script.pop(0)
        return ok(None)


def ok(data: Any, status: int = 200, headers: Optional[Dict[str, str]] = None) -> Answer:
    env: Dict[str, Any] = {"success": True, "code": 0, "message": "ok", "timestamp": "2026-11-23T12:00:00+08:00"}
    if data is not None:
        env["data"] = data
    h = {"X-Request-Id": "req-ok"}
    h.update(headers or {})
    return status, h, env


def fail(status: int, code: Optional[str], message: str = "no", headers: Optional[Dict[str, str]] = None, **extra: Any) -> Answer:
    env: Dict[str, Any] = {"success": False, "message": message, "timestamp": "2026-11-23T12:00:00+08:00"}
    if code is not None:
        env["code"] = code
    env.update(extra)
    h = {"X-Request-Id": "req-%d" % status}
    h.update(headers or {})
    return status, h, env


def start() -> Tuple[FakePlatform, Callable[[], None]]:
    fake = FakePlatform()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            rec = Recorded(self.command, self.path, {k: v for k, v in self.headers.items()}, body)
            status, headers, payload = fake.answer(rec)
            raw = b"" if payload is None else json.dumps(payload).encode("utf-8")
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _any

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    fake.url = "http://127.0.0.1:%d" % srv.server_address[1]

    def stop() -> None:
        srv.shutdown()
        srv.server_close()
        t.join(5)

    return fake, stop

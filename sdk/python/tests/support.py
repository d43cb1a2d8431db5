"""Test support: the real gatehouse binary on a free port over a fresh SQLite
file, with a webhook channel whose relay is a local HTTP server here.

Cards arrive at the relay (their signatures checked as the docs tell relays
to); verdicts go back signed, as a relay sends them. Edited arguments go
through the web page as the bootstrap admin. The binary is $GATEHOUSE_BIN,
or built once with ``go build`` from the repository.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import http.cookiejar
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional

TOKEN = "py-test-token-0123456789abcdef"
SECRET = "py-test-webhook-secret-0123456789"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

_built: Optional[str] = None


def binary() -> str:
    global _built
    if os.environ.get("GATEHOUSE_BIN"):
        return os.environ["GATEHOUSE_BIN"]
    if _built is None:
        d = tempfile.mkdtemp(prefix="gatehouse-bin-")
        atexit.register(shutil.rmtree, d, True)
        _built = os.path.join(d, "gatehouse")
        subprocess.run(["go", "build", "-o", _built, "./cmd/gatehouse"], cwd=REPO, check=True)
    return _built


def sign(ts: str, body: bytes) -> str:
    return "v1=" + hmac.new(SECRET.encode(), b"v1:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()


class Relay:
    """A relay: records every POST with whether its signature verified."""

    def __init__(self) -> None:
        self.messages: List[Dict[str, Any]] = []
        self._cond = threading.Condition()
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                ts = self.headers.get("X-Gatehouse-Timestamp", "")
                ok = hmac.compare_digest(self.headers.get("X-Gatehouse-Signature", ""), sign(ts, body)) \
                    and ts.isdigit() and abs(time.time() - int(ts)) < 300
                msg = json.loads(body)
                msg["signature_ok"] = ok
                with relay._cond:
                    relay.messages.append(msg)
                    relay._cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/hook" % self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def next(self, match: Callable[[Dict[str, Any]], bool], timeout: float = 10.0) -> Dict[str, Any]:
        """The first message, past or future, that matches."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages:
                    if match(m):
                        return m
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("no matching relay message in %gs; got %r" % (timeout, self.messages))
                self._cond.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Server:
    """One running gatehouse serve."""

    def __init__(self, routes: str = "", port: int = 0, directory: Optional[str] = None,
                 relay: Optional[Relay] = None) -> None:
        self.dir = directory or tempfile.mkdtemp(prefix="gatehouse-py-")
        self.relay = relay or Relay()
        cfg = os.path.join(self.dir, "gatehouse.yaml")
        with open(cfg, "w") as f:
            f.write("""listen: 127.0.0.1:%d
public_url: http://gate.example.test
database:
  driver: sqlite
  dsn: %s
auth:
  api_tokens:
    - name: py-agent
      token: %s
defaults:
  channels: [relay]
channels:
  - name: relay
    type: webhook
    url: %s
    secret: %s
%s""" % (port, os.path.join(self.dir, "gatehouse.db"), TOKEN, self.relay.url, SECRET, routes))
        self.proc = subprocess.Popen([binary(), "serve", "--config", cfg], cwd=self.dir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = ""
        found = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log += line
                if "gatehouse listening" in line:
                    found.set()
        threading.Thread(target=read, daemon=True).start()
        if not found.wait(20):
            self.proc.kill()
            raise RuntimeError("gatehouse did not start:\n" + self.log)
        m = re.search(r"addr=(http://[0-9.:]+)", self.log)
        assert m, self.log
        self.url = m.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])

    def card(self, tool: str) -> Dict[str, Any]:
        return self.relay.next(lambda m: bool(m["type"] == "card" and m["request"]["tool_name"] == tool))

    def decide(self, request_id: str, decision: str, actor: str = "alice", reason: str = "") -> int:
        """Sends a signed verdict as the relay would; returns the HTTP status."""
        body = json.dumps({"request_id": request_id, "decision": decision, "actor": actor, "reason": reason}).encode()
        ts = str(int(time.time()))
        req = urllib.request.Request(self.url + "/callbacks/webhook/relay", data=body, method="POST", headers={
            "Content-Type": "application/json", "X-Gatehouse-Timestamp": ts, "X-Gatehouse-Signature": sign(ts, body)})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)

    def web_decide(self, request_id: str, verdict: str, modified_args: Any = None, reason: str = "") -> None:
        """Decides on the web page as the bootstrap admin, with edits when given.
        The request's route must include the web channel."""
        m = re.search(r"password=(\S+)", self.log)
        assert m, "no bootstrap password in the log"

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None

        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect)

        def csrf(path: str) -> str:
            with opener.open(self.url + path, timeout=10) as resp:
                found = re.search(r'name="csrf" value="([^"]+)"', resp.read().decode())
            assert found, path
            return found.group(1)

        def post(path: str, fields: Dict[str, str]) -> None:
            try:
                opener.open(self.url + path, data=urllib.parse.urlencode(fields).encode(), timeout=10)
            except urllib.error.HTTPError as e:
                if e.code != 303:
                    raise
            else:
                raise AssertionError("%s did not redirect" % path)

        post("/login", {"csrf": csrf("/login"), "username": "admin", "password": m.group(1), "next": "/"})
        fields = {"csrf": csrf("/approvals/" + request_id), "verdict": verdict, "reason": reason}
        if modified_args is not None:
            fields["modified_args"] = json.dumps(modified_args)
        post("/approvals/%s/decide" % request_id, fields)

    def requests(self, query: str = "") -> List[Dict[str, Any]]:
        req = urllib.request.Request(self.url + "/api/v1/approvals?limit=1000&" + query,
                                     headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return list(json.loads(resp.read())["approvals"])

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.proc.kill()
        self.proc.wait()
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def stop(self, keep: bool = False) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)
        self._close_pipe()
        if not keep:
            self.relay.close()
            shutil.rmtree(self.dir, ignore_errors=True)

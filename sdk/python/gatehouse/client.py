"""The client: POST /api/v1/gate, re-attaching by idempotency key until a verdict."""

from __future__ import annotations

import asyncio
import email.message
import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Mapping, Optional

__all__ = ["Gatehouse", "HookResult", "Denied", "gate", "agate", "new_key"]

_DENY_NOTE = " (denied: the gate fails closed)"


@dataclass(frozen=True)
class HookResult:
    """The gate's verdict: the seed design's hook result.

    ``allow`` is true only when the call may run: an approval, or an expiry
    on a route whose timeout verdict is allow. Every failure is
    ``allow=False`` with ``status="error"`` and an ``error`` that says why.
    """

    request_id: str
    status: str
    allow: bool
    error: str = ""
    modified_args: Any = None
    side_effects: List[str] = field(default_factory=list)
    url: str = ""
    """The request's page on the web UI, when the server has a public_url."""
    tool_call_id: str = ""
    """The tool call the request is about, when it named one."""

    @property
    def args_edited(self) -> bool:
        """Whether the approver edited the arguments (see ``modified_args``)."""
        return self.modified_args is not None


class Denied(Exception):
    """Raised by ``require_approval`` when a call may not run."""

    def __init__(self, result: HookResult) -> None:
        super().__init__(result.error or "gatehouse: denied (%s)" % result.status)
        self.result = result


def new_key() -> str:
    """A random idempotency key."""
    return "gh-" + secrets.token_hex(16)


def _failure(request_id: str, message: str) -> HookResult:
    return HookResult(request_id=request_id, status="error", allow=False,
                      error="gatehouse: " + message + _DENY_NOTE)


class _AnswerError(Exception):
    """An error status with the server's own words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Gatehouse:
    """A client of one Gatehouse server.

    :param url: the server; default ``$GATEHOUSE_URL``, else http://127.0.0.1:8080.
    :param token: a bearer token of the server's ``auth.api_tokens``; default ``$GATEHOUSE_TOKEN``.
    :param wait: seconds one long poll is held (55, under common proxy idle timeouts).
    :param retry_for: seconds to keep re-attaching while the server is
        unreachable or answers 5xx, before giving up with a deny (120).
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *,
                 wait: float = 55.0, retry_for: float = 120.0) -> None:
        self.url = (url or os.environ.get("GATEHOUSE_URL") or "http://127.0.0.1:8080").rstrip("/")
        self._token = token if token is not None else os.environ.get("GATEHOUSE_TOKEN") or None
        self.wait = wait
        self.retry_for = retry_for

    def gate(self, tool_name: str, tool_args: Any = None, *, summary: Optional[str] = None,
             requires_confirmation: Optional[bool] = None, agent_id: Optional[str] = None,
             user_id: Optional[str] = None, session_id: Optional[str] = None,
             tool_call_id: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None,
             route: Optional[str] = None, timeout_seconds: Optional[float] = None,
             idempotency_key: Optional[str] = None, deadline: Optional[float] = None,
             cancel: Optional[threading.Event] = None) -> HookResult:
        """Asks for approval and blocks until the verdict.

        It never raises for a failure of the gate: no server, a wrong token, a
        malformed answer, ``deadline`` (seconds) passing or ``cancel`` being
        set all return a deny. The same ``idempotency_key`` (a random one when
        absent, kept across this call's own retries) re-attaches to the same
        request, so a restart of the server never asks twice.
        """
        if not isinstance(tool_name, str) or not tool_name.strip():
            return _failure("", "tool_name: required")
        body: Dict[str, Any] = {"tool_name": tool_name, "idempotency_key": idempotency_key or new_key()}
        for k, v in (("tool_args", tool_args), ("summary", summary), ("requires_confirmation", requires_confirmation),
                     ("agent_id", agent_id), ("user_id", user_id), ("session_id", session_id),
                     ("tool_call_id", tool_call_id), ("metadata", dict(metadata) if metadata is not None else None),
                     ("route", route), ("timeout_seconds", timeout_seconds)):
            if v is not None:
                body[k] = v
        try:
            data = json.dumps(body, default=str).encode("utf-8")
        except (TypeError, ValueError) as e:
            return _failure("", "the request is not JSON: %s" % e)
        return self._loop(data, deadline, cancel, tool_call_id or "")

    async def agate(self, tool_name: str, tool_args: Any = None, **kwargs: Any) -> HookResult:
        """``gate`` for asyncio: waits in a worker thread; cancelling the
        task stops the wait (the request stays pending for its key)."""
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self.gate, tool_name, tool_args, cancel=cancel, **kwargs)
        finally:
            cancel.set()

    def _loop(self, data: bytes, deadline: Optional[float], cancel: Optional[threading.Event],
              tool_call_id: str = "") -> HookResult:
        target = "%s/api/v1/gate?wait=%s" % (self.url, urllib.parse.quote("%gs" % self.wait))
        end = time.monotonic() + deadline if deadline is not None else None
        request_id = ""
        delay = 0.25
        failing_since: Optional[float] = None
        while True:
            if cancel is not None and cancel.is_set():
                return _failure(request_id, "the wait was cancelled")
            if end is not None and time.monotonic() >= end:
                return _failure(request_id, "no verdict within the deadline")
            try:
                res = self._post(target, data, end)
            except _AnswerError as e:
                if e.status < 500:
                    return _failure(request_id, str(e))
                err: Exception = e
            except Exception as e:  # a network failure, a timeout: retried
                err = e
            else:
                if request_id and res.request_id != request_id:
                    # The key holds one request: an answer about another (a
                    # cache in the way, another caller's) is no verdict on it.
                    return _failure(request_id, "the answer is about request %r, not %r" % (res.request_id[:100], request_id))
                if tool_call_id and res.tool_call_id and res.tool_call_id != tool_call_id:
                    # The answer names another tool call: no verdict on this
                    # one, even as the first answer, before a request id is known.
                    return _failure(request_id, "the answer is about call %r, not %r" % (res.tool_call_id[:100], tool_call_id))
                request_id = res.request_id or request_id
                if res.status != "pending":
                    return res
                delay, failing_since = 0.25, None  # still pending: go again at once
                continue
            now = time.monotonic()
            if failing_since is None:
                failing_since = now
            elif now - failing_since > self.retry_for:
                return _failure(request_id, "server unreachable at %s for %gs: %s" % (self.url, self.retry_for, err))
            if _pause(delay, cancel):
                return _failure(request_id, "the wait was cancelled")
            delay = min(delay * 2, 5.0)

    def _post(self, target: str, data: bytes, end: Optional[float]) -> HookResult:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "gatehouse-python"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        timeout = self.wait + 15
        if end is not None:
            timeout = max(min(timeout, end - time.monotonic()), 0.1)
        req = urllib.request.Request(target, data=data, headers=headers, method="POST")
        try:
            # An opener per call: it reads the proxy settings as they are now.
            with urllib.request.build_opener(_NoRedirect).open(req, timeout=timeout) as resp:
                status, text = resp.status, resp.read(4 << 20)
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read(4 << 20)
        try:
            answer = json.loads(text.decode("utf-8"))
        except ValueError:
            answer = None
        if status != 200:
            raise _AnswerError(status, _error_message(status, answer, text))
        res = _hook_result(answer)
        if res is None:
            raise _AnswerError(502, "unreadable answer from %s: %r" % (self.url, text[:200]))
        return res


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the gate answers itself. urllib would follow a
    302 as a GET, with the token, to any host (from https to http too), and
    take what answers there as the verdict. A 3xx raises HTTPError: a deny."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: email.message.Message, newurl: str) -> Optional[urllib.request.Request]:
        return None



def _pause(seconds: float, cancel: Optional[threading.Event]) -> bool:
    """Sleeps, and reports whether cancel was set meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return False
    return cancel.wait(seconds)


def _hook_result(d: Any) -> Optional[HookResult]:
    """The answer as a HookResult, or None when it is not one. ``allow`` must
    be the boolean True with a status that allows: anything else denies."""
    if not isinstance(d, dict) or not isinstance(d.get("status"), str) or not isinstance(d.get("allow"), bool):
        return None
    status = d["status"]
    allow = d["allow"] is True and status in ("approved", "expired")
    error = d.get("error")
    if not isinstance(error, str):
        error = "" if allow else "denied (%s)" % status
    effects = d.get("side_effects")
    request_id = d.get("request_id")
    url = d.get("url")
    call = d.get("tool_call_id")
    return HookResult(request_id=request_id if isinstance(request_id, str) else "", status=status, allow=allow,
                      error=error, modified_args=d.get("modified_args"),
                      side_effects=[s for s in effects if isinstance(s, str)] if isinstance(effects, list) else [],
                      url=url if isinstance(url, str) else "", tool_call_id=call if isinstance(call, str) else "")


def _error_message(status: int, answer: Any, text: bytes) -> str:
    """The message of an error answer: {"error":{"code","message"}} or a hook result's error."""
    e = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(e, dict) and isinstance(e.get("message"), str):
        return str(e["message"])
    if isinstance(e, str):
        m = e[len("gatehouse: "):] if e.startswith("gatehouse: ") else e
        return m.replace(_DENY_NOTE, "")
    return "HTTP %d: %r" % (status, text[:200])


_default: Optional[Gatehouse] = None
_default_lock = threading.Lock()


def _client(client: Optional[Gatehouse]) -> Gatehouse:
    global _default
    if client is not None:
        return client
    with _default_lock:
        if _default is None:
            _default = Gatehouse()
        return _default


def gate(tool_name: str, tool_args: Any = None, *, client: Optional[Gatehouse] = None, **kwargs: Any) -> HookResult:
    """Asks for approval with a client from GATEHOUSE_URL and GATEHOUSE_TOKEN
    (or ``client``) and blocks until the verdict. See ``Gatehouse.gate``."""
    return _client(client).gate(tool_name, tool_args, **kwargs)


async def agate(tool_name: str, tool_args: Any = None, *, client: Optional[Gatehouse] = None,
                **kwargs: Any) -> HookResult:
    """``gate`` for asyncio."""
    return await _client(client).agate(tool_name, tool_args, **kwargs)


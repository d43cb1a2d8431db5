"""gate(), agate() and require_approval against the real binary."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
import unittest
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, List

from gatehouse import Denied, Gatehouse, HookResult, agate, gate, require_approval

from . import support

EDITED_ROUTE = "routes:\n  - {name: edited, match: {tool: 'edited_*'}, channels: [relay, web]}\n"


class GateTest(unittest.TestCase):
    server: support.Server
    client: Gatehouse
    pool: ThreadPoolExecutor

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = support.Server(routes=EDITED_ROUTE)
        # A short retry_for: a gate a failed test left waiting ends soon
        # after the server stops, so a failure cannot hang the suite.
        cls.client = Gatehouse(cls.server.url, support.TOKEN, retry_for=5)
        cls.pool = ThreadPoolExecutor(4)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()
        cls.pool.shutdown(cancel_futures=True)

    def start(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> "Future[Any]":
        return self.pool.submit(fn, *args, **kwargs)

    def test_approval_allows(self) -> None:
        pending = self.start(self.client.gate, "deploy", {"env": "prod"}, summary="Deploy prod")
        card = self.server.card("deploy")
        self.assertTrue(card["signature_ok"])
        self.assertEqual(card["request"]["summary"], "Deploy prod")
        self.assertEqual(card["request"]["tool_args"], {"env": "prod"})
        self.assertEqual(self.server.decide(card["request"]["id"], "approve", "alice", "go"), 200)
        res = pending.result(10)
        self.assertIsInstance(res, HookResult)
        self.assertIs(res.allow, True)
        self.assertEqual(res.status, "approved")
        self.assertEqual(res.request_id, card["request"]["id"])
        self.assertEqual(res.url, "http://gate.example.test/approvals/" + card["request"]["id"])
        self.assertEqual(res.error, "")
        self.assertIsNone(res.modified_args)
        self.assertRegex(res.side_effects[0], r"^gatehouse: approved by webhook:relay/alice via relay after \d+s: go$")

    def test_rejection_denies_with_the_reason(self) -> None:
        pending = self.start(self.client.gate, "drop_table", {"table": "users"})
        card = self.server.card("drop_table")
        self.server.decide(card["request"]["id"], "reject", "bob", "not in prod")
        res = pending.result(10)
        self.assertIs(res.allow, False)
        self.assertEqual(res.status, "rejected")
        self.assertRegex(res.error, r"Rejected by webhook:relay/bob via relay after \d+s: not in prod")

    def test_wrong_token_denies_at_once(self) -> None:
        res = Gatehouse(self.server.url, "not-the-token-0123456789").gate("deploy")
        self.assertIs(res.allow, False)
        self.assertEqual(res.status, "error")
        self.assertIn("invalid bearer token", res.error)

    def test_no_server_denies_after_retry_for(self) -> None:
        res = Gatehouse("http://127.0.0.1:1", support.TOKEN, retry_for=0.5).gate("deploy")
        self.assertIs(res.allow, False)
        self.assertEqual(res.status, "error")
        self.assertIn("server unreachable at http://127.0.0.1:1", res.error)

    def test_bad_input_denies_without_asking(self) -> None:
        self.assertIn("tool_name: required", self.client.gate("  ").error)
        before = len(self.server.requests())
        res = self.client.gate("deploy", {"n": float("nan")})  # NaN is not JSON the server takes
        self.assertIs(res.allow, False)
        self.assertEqual(len(self.server.requests()), before)

    def test_deadline_denies_and_the_key_reattaches(self) -> None:
        res = self.client.gate("rotate_keys", idempotency_key="k-deadline", deadline=0.5)
        self.assertIs(res.allow, False)
        self.assertIn("deadline", res.error)
        card = self.server.card("rotate_keys")
        again = self.start(self.client.gate, "rotate_keys", idempotency_key="k-deadline")
        self.server.decide(card["request"]["id"], "approve")
        self.assertEqual(again.result(10).request_id, card["request"]["id"])
        self.assertEqual(len(self.server.requests("tool=rotate_keys")), 1)

    def test_edited_arguments_come_back(self) -> None:
        pending = self.start(self.client.gate, "edited_deploy", {"env": "prod", "replicas": 10})
        card = self.server.card("edited_deploy")
        self.server.web_decide(card["request"]["id"], "approve", {"env": "prod", "replicas": 2})
        res = pending.result(10)
        self.assertIs(res.allow, True)
        self.assertTrue(res.args_edited)
        self.assertEqual(res.modified_args, {"env": "prod", "replicas": 2})

    def test_module_gate_reads_the_environment(self) -> None:
        import gatehouse.client as c
        old = dict(os.environ)
        try:
            os.environ["GATEHOUSE_URL"], os.environ["GATEHOUSE_TOKEN"] = self.server.url, support.TOKEN
            c._default = None
            pending = self.start(gate, "env_tool")
            card = self.server.card("env_tool")
            self.server.decide(card["request"]["id"], "reject", "carol")
            self.assertEqual(pending.result(10).status, "rejected")
        finally:
            os.environ.clear()
            os.environ.update(old)
            c._default = None

    def test_agate(self) -> None:
        async def main() -> HookResult:
            task = asyncio.ensure_future(agate("async_tool", {"x": 1}, client=self.client))
            card = await asyncio.get_running_loop().run_in_executor(None, self.server.card, "async_tool")
            await asyncio.get_running_loop().run_in_executor(None, self.server.decide, card["request"]["id"], "approve")
            return await task
        self.assertIs(asyncio.run(main()).allow, True)

    def test_require_approval_sync(self) -> None:
        ran: List[Any] = []

        @require_approval("transfer", summary=lambda to, amount: "Send %d to %s" % (amount, to), client=self.client)
        def transfer(to: str, amount: int = 100) -> str:
            ran.append((to, amount))
            return "sent %d" % amount

        pending = self.start(transfer, "ACME")
        card = self.server.card("transfer")
        self.assertEqual(card["request"]["summary"], "Send 100 to ACME")
        self.assertEqual(card["request"]["tool_args"], {"to": "ACME", "amount": 100})
        self.server.decide(card["request"]["id"], "approve")
        self.assertEqual(pending.result(10), "sent 100")

        pending = self.start(transfer, "Mallory", amount=9999)
        card = self.server.relay.next(lambda m: bool(m["type"] == "card" and m["request"]["tool_args"].get("to") == "Mallory"))
        self.server.decide(card["request"]["id"], "reject", "alice", "who is Mallory?")
        with self.assertRaises(Denied) as cm:
            pending.result(10)
        self.assertIn("who is Mallory?", str(cm.exception))
        self.assertIs(cm.exception.result.allow, False)
        self.assertEqual(ran, [("ACME", 100)], "the rejected call did not run")

    def test_require_approval_never_shares_one_key_across_calls(self) -> None:
        """A key given to the decorator would be every call's: a later,
        identical call re-attached to the first one's approval and ran,
        with nobody asked. It is refused when the function is decorated."""
        ran: List[int] = []
        try:
            @require_approval("wire_once", client=self.client, idempotency_key="wire-key")
            def wire(amount: int) -> None:
                ran.append(amount)
        except TypeError as e:
            self.assertIn("idempotency_key", str(e))
            return
        pending = self.start(wire, 5)
        card = self.server.card("wire_once")
        self.server.decide(card["request"]["id"], "approve")
        pending.result(10)
        again = self.start(wire, 5)
        try:
            again.result(3)
        except Exception:
            pass
        self.assertEqual(ran, [5], "the second call ran on the first call's approval")

    def test_require_approval_async_with_edits(self) -> None:
        ran: List[Any] = []

        @require_approval(client=self.client)
        async def edited_scale(service: str, replicas: int) -> int:
            ran.append((service, replicas))
            return replicas

        async def main() -> int:
            task = asyncio.ensure_future(edited_scale("web", replicas=50))
            loop = asyncio.get_running_loop()
            card = await loop.run_in_executor(None, self.server.card, "edited_scale")
            await loop.run_in_executor(None, lambda: self.server.web_decide(card["request"]["id"], "approve",
                                                                            {"service": "web", "replicas": 5}))
            return await task
        self.assertEqual(asyncio.run(main()), 5)
        self.assertEqual(ran, [("web", 5)])

    def test_require_approval_refuses_edits_it_cannot_apply(self) -> None:
        ran: List[Any] = []

        @require_approval("edited_rm", client=self.client)
        def rm(path: str) -> None:
            ran.append(path)

        pending = self.start(rm, "/tmp/x")
        card = self.server.card("edited_rm")
        self.server.web_decide(card["request"]["id"], "approve", {"path": "/tmp/x", "recursive": True})
        with self.assertRaises(Denied) as cm:
            pending.result(10)
        self.assertIn("naming no parameter", str(cm.exception))
        self.assertEqual(ran, [])


    def test_require_approval_refuses_edits_that_leave_a_value_out(self) -> None:
        # The approver, shown env=prod and force=True, approved {"env":
        # "staging"}: merged into the call's arguments, force=True ran,
        # a value the approver had removed. Found by a reader.
        ran: List[Any] = []

        @require_approval("edited_forced_deploy", client=self.client)
        def deploy(env: str, force: bool = False) -> None:
            ran.append((env, force))

        pending = self.start(deploy, "prod", force=True)
        card = self.server.card("edited_forced_deploy")
        self.assertEqual(card["request"]["tool_args"], {"env": "prod", "force": True})
        self.server.web_decide(card["request"]["id"], "approve", {"env": "staging"})
        with self.assertRaises(Denied) as cm:
            pending.result(10)
        self.assertIn("leave out force", str(cm.exception))
        self.assertEqual(ran, [])


class FakeAnswers(unittest.TestCase):
    """A server, or something posing as one, that answers 200 with anything
    but a well-formed allow must not be taken for an approval."""

    def test_answers_that_are_not_a_well_formed_allow_deny(self) -> None:
        for name, status, body in [
            ("allow as a string", 200, b'{"request_id":"x","status":"approved","allow":"true"}'),
            ("allow without a status", 200, b'{"allow":true}'),
            ("allow with an error status", 200, b'{"request_id":"x","status":"error","allow":true}'),
            ("allow with a rejected status", 200, b'{"request_id":"x","status":"rejected","allow":true}'),
            ("allow as 1", 200, b'{"request_id":"x","status":"approved","allow":1}'),
            ("not JSON", 200, b"<html>ok</html>"),
            ("a list", 200, b"[true]"),
            ("allow with a 403", 403, b'{"request_id":"x","status":"approved","allow":true}'),
        ]:
            with self.subTest(name):
                class H(http.server.BaseHTTPRequestHandler):
                    def do_POST(self) -> None:
                        self.rfile.read(int(self.headers.get("Content-Length", "0")))
                        self.send_response(status)
                        self.send_header("Content-Type", "application/json")
                        self.end_headers()
                        self.wfile.write(body)

                    def log_message(self, *args: Any) -> None:
                        pass
                srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
                threading.Thread(target=srv.serve_forever, daemon=True).start()
                try:
                    res = Gatehouse("http://127.0.0.1:%d" % srv.server_address[1], "t", retry_for=0.3).gate("deploy")
                    self.assertIs(res.allow, False, res)
                finally:
                    srv.shutdown()
                    srv.server_close()


    def test_a_redirect_is_no_verdict_and_takes_no_token(self) -> None:
        """urllib followed a 302 as a GET, with the token, to any host, and
        took what answered there as the verdict. Found by a tenth reader."""
        seen: List[str] = []

        class Elsewhere(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization", ""))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"request_id":"other","status":"approved","allow":true}')
            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        other = _serve(Elsewhere)
        for code in (301, 302, 303, 307, 308):
            with self.subTest(code):
                class Redirect(http.server.BaseHTTPRequestHandler):
                    def do_POST(self) -> None:
                        self.rfile.read(int(self.headers.get("Content-Length", "0")))
                        self.send_response(code)
                        self.send_header("Location", "http://localhost:%d/elsewhere" % other.server_address[1])
                        self.send_header("Content-Length", "0")
                        self.end_headers()

                    def log_message(self, *args: Any) -> None:
                        pass

                srv = _serve(Redirect)
                try:
                    res = Gatehouse("http://127.0.0.1:%d" % srv.server_address[1], "secret-token", retry_for=0.3).gate("deploy")
                    self.assertIs(res.allow, False, res)
                finally:
                    srv.shutdown()
                    srv.server_close()
        other.shutdown()
        other.server_close()
        self.assertEqual(seen, [], "the redirect was followed")

    def test_a_verdict_is_for_its_own_request(self) -> None:
        """Pending as A, then approved as B (a cache in the way): no verdict
        on A. Found by a tenth reader."""
        srv = _answering(b'{"request_id":"A","status":"pending","allow":false}', b'{"request_id":"B","status":"approved","allow":true}')
        try:
            res = Gatehouse("http://127.0.0.1:%d" % srv.server_address[1], "t", retry_for=0.3).gate("deploy")
            self.assertIs(res.allow, False, res)
            self.assertEqual(res.request_id, "A", res)
        finally:
            srv.shutdown()
            srv.server_close()

    def test_a_verdict_is_for_its_own_call(self) -> None:
        """Asked about call toolu_A, the first answer approves toolu_B: no
        verdict on toolu_A, as for the Go client (TestGateVerdictIsForItsCall)."""
        srv = _answering(b'{"request_id":"B","status":"approved","allow":true,"tool_call_id":"toolu_B"}')
        try:
            c = Gatehouse("http://127.0.0.1:%d" % srv.server_address[1], "t", retry_for=0.3)
            res = c.gate("Bash", {"command": "rm -rf build"}, tool_call_id="toolu_A", idempotency_key="toolu_A")
            self.assertIs(res.allow, False, res)
            self.assertIn("about call 'toolu_B', not 'toolu_A'", res.error)
            self.assertIs(c.gate("Bash", tool_call_id="toolu_B").allow, True)
        finally:
            srv.shutdown()
            srv.server_close()


def _answering(*answers: bytes) -> http.server.ThreadingHTTPServer:
    """A fake gate answering each call with the next of answers, the last
    one again and again."""
    queue = list(answers)

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(queue.pop(0) if len(queue) > 1 else queue[0])

        def log_message(self, *args: Any) -> None:
            pass

    return _serve(H)


def _serve(handler: Any) -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


class RestartTest(unittest.TestCase):
    def test_a_restart_in_the_middle_reattaches(self) -> None:
        own = support.Server()
        try:
            client = Gatehouse(own.url, support.TOKEN, wait=1)
            with ThreadPoolExecutor(1) as pool:
                pending = pool.submit(client.gate, "migrate", {"to": 42})
                card = own.card("migrate")
                own.kill()
                back = support.Server(port=own.port, directory=own.dir, relay=own.relay)
                try:
                    back.decide(card["request"]["id"], "approve")
                    res = pending.result(30)
                    self.assertIs(res.allow, True)
                    self.assertEqual(res.request_id, card["request"]["id"])
                    self.assertEqual(len(back.requests("tool=migrate")), 1, "one request, not two")
                finally:
                    back.stop(keep=True)
        finally:
            own.stop()


if __name__ == "__main__":
    unittest.main()

// gate() and requireApproval against the real binary.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { Gatehouse, gate, requireApproval, GatehouseDenied } from "../dist/index.js";
import { startGatehouse, TOKEN } from "./gatehouse-server.mjs";

let gh;
let client;
before(async () => {
  // "edited" calls also reach the web page, where an approver may edit them.
  gh = await startGatehouse({ routes: "routes:\n  - {name: edited, match: {tool: 'edited_*'}, channels: [relay, web]}\n" });
  client = new Gatehouse({ url: gh.url, token: TOKEN });
});
after(() => gh?.stop());

test("an approval allows, with who approved it", async () => {
  const pending = client.gate({ tool_name: "deploy", tool_args: { env: "prod" }, summary: "Deploy prod" });
  const card = await gh.card("deploy");
  assert.equal(card.signatureOK, true);
  assert.equal(card.request.summary, "Deploy prod");
  assert.deepEqual(card.request.tool_args, { env: "prod" });
  const d = await gh.decide(card.request.id, "approve", "alice", "go");
  assert.equal(d.status, 200, JSON.stringify(d.body));
  const res = await pending;
  assert.equal(res.allow, true);
  assert.equal(res.status, "approved");
  assert.equal(res.request_id, card.request.id);
  assert.equal(res.url, `http://gate.example.test/approvals/${card.request.id}`);
  assert.equal(res.error, "");
  assert.equal(res.modified_args, null);
  assert.match(res.side_effects[0], /^gatehouse: approved by webhook:relay\/alice via relay after \d+s: go$/);
});

test("a rejection denies, with the approver's reason", async () => {
  const pending = client.gate({ tool_name: "drop_table", tool_args: { table: "users" } });
  const card = await gh.card("drop_table");
  await gh.decide(card.request.id, "reject", "bob", "not in prod");
  const res = await pending;
  assert.equal(res.allow, false);
  assert.equal(res.status, "rejected");
  assert.match(res.error, /Rejected by webhook:relay\/bob via relay after \d+s: not in prod/);
});

test("a wrong token denies at once, naming the problem", async () => {
  const res = await new Gatehouse({ url: gh.url, token: "not-the-token-0123456789" }).gate({ tool_name: "deploy" });
  assert.equal(res.allow, false);
  assert.equal(res.status, "error");
  assert.match(res.error, /invalid bearer token/);
});

test("no server denies after retryFor, and never throws", async () => {
  const res = await new Gatehouse({ url: "http://127.0.0.1:1", token: TOKEN, retryForSeconds: 0.5 }).gate({ tool_name: "deploy" });
  assert.equal(res.allow, false);
  assert.equal(res.status, "error");
  assert.match(res.error, /server unreachable at http:\/\/127\.0\.0\.1:1/);
});

test("a missing tool name denies without asking", async () => {
  const res = await client.gate({ tool_name: "  " });
  assert.equal(res.allow, false);
  assert.match(res.error, /tool_name: required/);
});

test("an aborted wait denies; the request stays pending for a retry with the key", async () => {
  const ac = new AbortController();
  const pending = client.gate({ tool_name: "rotate_keys", idempotency_key: "k-abort" }, { signal: ac.signal });
  const card = await gh.card("rotate_keys");
  ac.abort();
  const res = await pending;
  assert.equal(res.allow, false);
  assert.match(res.error, /aborted/);
  const again = client.gate({ tool_name: "rotate_keys", idempotency_key: "k-abort" });
  await gh.decide(card.request.id, "approve");
  const res2 = await again;
  assert.equal(res2.allow, true);
  assert.equal(res2.request_id, card.request.id);
});

// A server (or something posing as one) that answers 200 with anything
// but a well-formed allow must not be taken for an approval.
test("answers that are not a well-formed allow deny", async (t) => {
  for (const [name, status, body] of [
    ["allow as a string", 200, '{"request_id":"x","status":"approved","allow":"true"}'],
    ["allow without a status", 200, '{"allow":true}'],
    ["allow with an error status", 200, '{"request_id":"x","status":"error","allow":true}'],
    ["allow with a rejected status", 200, '{"request_id":"x","status":"rejected","allow":true}'],
    ["not JSON", 200, "<html>ok</html>"],
    ["a list", 200, "[true]"],
    ["allow with a 403", 403, '{"request_id":"x","status":"approved","allow":true}'],
  ]) {
    await t.test(name, async () => {
      const fake = createServer((_req, res) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(body);
      });
      await new Promise((r) => fake.listen(0, "127.0.0.1", r));
      try {
        const res = await new Gatehouse({ url: `http://127.0.0.1:${fake.address().port}`, retryForSeconds: 0.3 }).gate({ tool_name: "deploy" });
        assert.equal(res.allow, false, JSON.stringify(res));
      } finally {
        await new Promise((r) => fake.close(r));
      }
    });
  }
});

// fetch followed a redirect (a 302 as a GET, a 307 re-sending the call) and
// took what answered there as the verdict. Found by a tenth reader.
test("a redirect is no verdict, and the call goes nowhere else", async (t) => {
  let reached = 0;
  const other = createServer((_req, res) => {
    reached++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"request_id":"other","status":"approved","allow":true}');
  });
  await new Promise((r) => other.listen(0, "127.0.0.1", r));
  for (const code of [301, 302, 303, 307, 308]) {
    await t.test(String(code), async () => {
      const fake = createServer((_req, res) => {
        res.writeHead(code, { location: `http://127.0.0.1:${other.address().port}/elsewhere` });
        res.end();
      });
      await new Promise((r) => fake.listen(0, "127.0.0.1", r));
      try {
        const ran = [];
        const gated = new Gatehouse({ url: `http://127.0.0.1:${fake.address().port}`, token: "secret", retryForSeconds: 0.3 });
        const res = await gated.gate({ tool_name: "deploy" });
        assert.equal(res.allow, false, JSON.stringify(res));
        await requireApproval(async (a) => ran.push(a), { toolName: "deploy", client: gated })({ env: "prod" }).catch(() => {});
        assert.deepEqual(ran, []);
        // A caller's fetch that drops redirect: "manual" follows it: still a deny.
        const following = new Gatehouse({
          url: `http://127.0.0.1:${fake.address().port}`, retryForSeconds: 0.3,
          fetch: (u, i) => fetch(u, { method: i.method, headers: i.headers, body: i.body, signal: i.signal }),
        });
        const followed = await following.gate({ tool_name: "deploy" });
        assert.equal(followed.allow, false, JSON.stringify(followed));
      } finally {
        await new Promise((r) => fake.close(r));
      }
    });
  }
  await new Promise((r) => other.close(r));
  assert.equal(reached, 5, "the redirect was followed by the SDK's own fetch");
});

// Pending as A, then approved as B (a cache in the way): no verdict on A.
// Found by a tenth reader.
test("a verdict is for its own request", async () => {
  let n = 0;
  const fake = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(++n === 1 ? '{"request_id":"A","status":"pending","allow":false}' : '{"request_id":"B","status":"approved","allow":true}');
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  try {
    const res = await new Gatehouse({ url: `http://127.0.0.1:${fake.address().port}`, retryForSeconds: 0.3 }).gate({ tool_name: "deploy" });
    assert.equal(res.allow, false, JSON.stringify(res));
    assert.equal(res.request_id, "A");
  } finally {
    await new Promise((r) => fake.close(r));
  }
});

test("a verdict is for its own call", async () => {
  // Asked about call toolu_A, the first answer approves toolu_B: no verdict
  // on toolu_A, as for the Go client (TestGateVerdictIsForItsCall).
  const fake = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"request_id":"B","status":"approved","allow":true,"tool_call_id":"toolu_B"}');
  });
  await new Promise((r) => fake.listen(0, "127.0.0.1", r));
  try {
    const c = new Gatehouse({ url: `http://127.0.0.1:${fake.address().port}`, retryForSeconds: 0.3 });
    const res = await c.gate({ tool_name: "Bash", tool_args: { command: "rm -rf build" }, tool_call_id: "toolu_A", idempotency_key: "toolu_A" });
    assert.equal(res.allow, false, JSON.stringify(res));
    assert.match(res.error, /about call "toolu_B", not "toolu_A"/);
    assert.equal((await c.gate({ tool_name: "Bash", tool_call_id: "toolu_B" })).allow, true);
  } finally {
    await new Promise((r) => fake.close(r));
  }
});

test("a restart of the server in the middle re-attaches to the same request", async () => {
  const own = await startGatehouse();
  try {
    const c = new Gatehouse({ url: own.url, token: TOKEN, waitSeconds: 1 });
    const pending = c.gate({ tool_name: "migrate", tool_args: { to: 42 } });
    const card = await own.card("migrate");
    await own.kill();
    const back = await startGatehouse({ port: own.port, dir: own.dir, relay: own.relay });
    try {
      await back.decide(card.request.id, "approve");
      const res = await pending;
      assert.equal(res.allow, true);
      assert.equal(res.request_id, card.request.id);
      assert.equal((await back.list("tool=migrate")).length, 1, "one request, not two");
    } finally {
      await back.stop();
    }
  } finally {
    await own.stop().catch(() => {});
  }
});

test("gate() reads GATEHOUSE_URL and GATEHOUSE_TOKEN", async () => {
  // The default client is built on first use, from the environment.
  process.env.GATEHOUSE_URL = gh.url;
  process.env.GATEHOUSE_TOKEN = TOKEN;
  const pending = gate({ tool_name: "env_tool" });
  const card = await gh.card("env_tool");
  await gh.decide(card.request.id, "reject", "carol");
  const res = await pending;
  assert.equal(res.status, "rejected");
});

test("requireApproval runs the tool only when allowed, with the approver's edits", async () => {
  const ran = [];
  const transfer = requireApproval(async (args) => (ran.push(args), `sent ${args.amount}`), {
    toolName: "transfer",
    summary: (a) => `Send ${a.amount} to ${a.to}`,
    client,
  });

  let pending = transfer({ to: "ACME", amount: 100 });
  let card = await gh.card("transfer");
  assert.equal(card.request.summary, "Send 100 to ACME");
  await gh.decide(card.request.id, "approve");
  assert.equal(await pending, "sent 100");

  pending = transfer({ to: "Mallory", amount: 9999 });
  // Handled from the start: the denial may settle before decide() returns,
  // and a rejection with no handler yet fails the run as unhandled.
  const denied = assert.rejects(pending, (e) => e instanceof GatehouseDenied && /who is Mallory\?/.test(e.message) && e.result.allow === false);
  card = await gh.relay.next((m) => m.type === "card" && m.request.tool_name === "transfer" && m.request.tool_args.to === "Mallory");
  await gh.decide(card.request.id, "reject", "alice", "who is Mallory?");
  await denied;
  assert.deepEqual(ran, [{ to: "ACME", amount: 100 }], "the rejected call did not run");
});

test("requireApproval never shares one idempotency key across calls", async () => {
  // A key in the wrapper's options would be every call's: a later,
  // identical call re-attached to the first one's approval and ran, with
  // nobody asked. It is refused when the tool is wrapped.
  const ran = [];
  let wire;
  try {
    wire = requireApproval(async (a) => ran.push(a.amount), { toolName: "wire_once", client, request: { idempotency_key: "wire-key" } });
  } catch (e) {
    assert.ok(e instanceof TypeError && /idempotency_key/.test(e.message), String(e));
    return;
  }
  const first = wire({ amount: 5 });
  const card = await gh.card("wire_once");
  await gh.decide(card.request.id, "approve");
  await first;
  const again = wire({ amount: 5 }).catch(() => {});
  await Promise.race([again, new Promise((r) => setTimeout(r, 3000))]);
  assert.deepEqual(ran, [5], "the second call ran on the first call's approval");
});

test("an approval with edited arguments gives them back, and requireApproval runs with them", async () => {
  const pending = client.gate({ tool_name: "edited_deploy", tool_args: { env: "prod", replicas: 10 } });
  const card = await gh.card("edited_deploy");
  await gh.webDecide(card.request.id, "approve", { modifiedArgs: { env: "prod", replicas: 2 } });
  const res = await pending;
  assert.equal(res.allow, true);
  assert.deepEqual(res.modified_args, { env: "prod", replicas: 2 });

  const ran = [];
  const scale = requireApproval(async (a) => ran.push(a), { toolName: "edited_scale", client });
  const p = scale({ replicas: 50 });
  const c2 = await gh.card("edited_scale");
  await gh.webDecide(c2.request.id, "approve", { modifiedArgs: { replicas: 5 } });
  await p;
  assert.deepEqual(ran, [{ replicas: 5 }]);
});

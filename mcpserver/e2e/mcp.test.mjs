// Gatehouse's MCP server driven by the official TypeScript MCP client
// (@modelcontextprotocol/sdk), over both transports: `gatehouse mcp` on
// stdio, and POST /mcp inside `gatehouse serve`. Decisions arrive as signed
// webhook verdicts (and, for edits, through the web page), as a person's
// would.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// Shared with the TypeScript SDK's tests: the real binary with a webhook
// relay and a web approver.
import { startGatehouse, binary, TOKEN, OTHER_TOKEN } from "../../sdk/typescript/test/gatehouse-server.mjs";

let gh;
before(async () => {
  gh = await startGatehouse({ routes: "routes:\n  - {name: edited, match: {tool: 'Edit'}, channels: [relay, web]}\n" });
});
after(() => gh?.stop());

const transports = {
  stdio: (token = TOKEN, url = gh.url, args = []) =>
    new StdioClientTransport({
      command: binary(),
      args: ["mcp", ...args],
      env: { ...process.env, GATEHOUSE_URL: url, GATEHOUSE_TOKEN: token },
      stderr: "pipe",
    }),
  http: (token = TOKEN) =>
    new StreamableHTTPClientTransport(new URL(`${gh.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
};

async function connect(transport) {
  const client = new Client({ name: "gatehouse-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** The JSON of a tool result's first text content. */
function textJSON(result) {
  assert.equal(result.content[0].type, "text");
  return JSON.parse(result.content[0].text);
}

let n = 0;
const unique = (name) => `${name}_${++n}`;

for (const [kind, transport] of Object.entries(transports)) {
  test(`${kind}: lists request_approval and approval_prompt with Claude Code's input shape`, async () => {
    const client = await connect(transport());
    try {
      const { tools } = await client.listTools();
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      assert.ok(byName.request_approval, JSON.stringify(tools));
      assert.deepEqual(Object.keys(byName.request_approval.inputSchema.properties).sort(), ["idempotency_key", "summary", "tool_args", "tool_name"]);
      assert.deepEqual(byName.request_approval.inputSchema.required, ["tool_name"]);
      assert.deepEqual(Object.keys(byName.approval_prompt.inputSchema.properties).sort(), ["input", "tool_name", "tool_use_id"]);
      assert.equal(client.getServerVersion().name, "gatehouse");
    } finally {
      await client.close();
    }
  });

  test(`${kind}: request_approval waits for the verdict`, async () => {
    const client = await connect(transport());
    try {
      const tool = unique("deploy");
      const calling = client.callTool({ name: "request_approval", arguments: { tool_name: tool, tool_args: { env: "prod" }, summary: "Deploy prod" } });
      const card = await gh.card(tool);
      assert.equal(card.request.summary, "Deploy prod");
      assert.deepEqual(card.request.tool_args, { env: "prod" });
      assert.equal(card.request.agent_id, "sdk-agent");
      assert.equal((await gh.decide(card.request.id, "approve", "alice", "ok")).status, 200);
      const result = await calling;
      assert.ok(!result.isError, JSON.stringify(result));
      assert.equal(result.structuredContent.allow, true);
      assert.equal(result.structuredContent.status, "approved");
      assert.equal(result.structuredContent.request_id, card.request.id);
      assert.deepEqual(textJSON(result), result.structuredContent);

      const rejecting = client.callTool({ name: "request_approval", arguments: { tool_name: tool, tool_args: { env: "prod", force: true } } });
      const card2 = await gh.relay.next((m) => m.type === "card" && m.request.tool_name === tool && m.request.tool_args.force === true);
      await gh.decide(card2.request.id, "reject", "bob", "no force");
      const rejected = (await rejecting).structuredContent;
      assert.equal(rejected.allow, false);
      assert.match(rejected.error, /Rejected by webhook:relay\/bob via relay .*no force/);
    } finally {
      await client.close();
    }
  });

  test(`${kind}: approval_prompt answers Claude Code's allow and deny`, async () => {
    const client = await connect(transport());
    try {
      const input = { command: `rm -rf build-${kind}` };
      const allowing = client.callTool({ name: "approval_prompt", arguments: { tool_name: "Bash", input, tool_use_id: `toolu_${kind}_1` } });
      let card = await gh.relay.next((m) => m.type === "card" && m.request.tool_args.command === input.command);
      assert.equal(card.request.tool_name, "Bash");
      await gh.decide(card.request.id, "approve");
      assert.deepEqual(textJSON(await allowing), { behavior: "allow", updatedInput: input });

      const input2 = { command: `git push --force ${kind}` };
      const denying = client.callTool({ name: "approval_prompt", arguments: { tool_name: "Bash", input: input2, tool_use_id: `toolu_${kind}_2` } });
      card = await gh.relay.next((m) => m.type === "card" && m.request.tool_args.command === input2.command);
      await gh.decide(card.request.id, "reject", "carol", "open a pull request");
      const denied = textJSON(await denying);
      assert.equal(denied.behavior, "deny");
      assert.match(denied.message, /open a pull request/);
      assert.equal(denied.updatedInput, undefined);
    } finally {
      await client.close();
    }
  });

  test(`${kind}: approval_prompt under an earlier call's tool_use_id asks again, not the earlier approval`, async () => {
    // A client whose model numbers its calls afresh in each session
    // (call_0 again: Claude Code over a proxy to another provider) sends
    // a later, identical call under an earlier call's id: a person must be
    // asked about it, as docs/sdks.md says of the model's call ids.
    const client = await connect(transport());
    try {
      const input = { command: `./deploy.sh prod-${kind}` };
      const args = { tool_name: "Bash", input, tool_use_id: `call_0_${kind}` };
      const first = client.callTool({ name: "approval_prompt", arguments: args });
      const card = await gh.relay.next((m) => m.type === "card" && m.request.tool_args.command === input.command);
      await gh.decide(card.request.id, "approve");
      assert.equal(textJSON(await first).behavior, "allow");

      const again = client.callTool({ name: "approval_prompt", arguments: args });
      const next = await Promise.race([
        again.then((r) => ({ answered: textJSON(r) })),
        gh.relay.next((m) => m.type === "card" && m.request.tool_args.command === input.command && m.request.id !== card.request.id)
          .then((c) => ({ card: c })),
      ]);
      assert.ok(next.card, `answered without asking anyone: ${JSON.stringify(next.answered)}`);
      await gh.decide(next.card.request.id, "reject", "bob", "not twice");
      const denied = textJSON(await again);
      assert.equal(denied.behavior, "deny");
      assert.match(denied.message, /not twice/);
    } finally {
      await client.close();
    }
  });

  test(`${kind}: approval_prompt allows edited input as the approver edited it`, async () => {
    const client = await connect(transport());
    try {
      const input = { file_path: `/srv/${kind}.conf`, old_string: "a", new_string: "rm -rf /" };
      const calling = client.callTool({ name: "approval_prompt", arguments: { tool_name: "Edit", input, tool_use_id: `toolu_${kind}_edit` } });
      const card = await gh.relay.next((m) => m.type === "card" && m.request.tool_args.file_path === input.file_path);
      const edited = { ...input, new_string: "b" };
      await gh.webDecide(card.request.id, "approve", { modifiedArgs: edited });
      assert.deepEqual(textJSON(await calling), { behavior: "allow", updatedInput: edited });
    } finally {
      await client.close();
    }
  });
}

test("stdio: a wrong token denies, naming it, and asks nobody", async () => {
  const client = await connect(transports.stdio("not-a-token-0123456789abcdef"));
  try {
    const before = (await gh.list()).length;
    const denied = textJSON(await client.callTool({ name: "approval_prompt", arguments: { tool_name: "Bash", input: { command: "ls" } } }));
    assert.equal(denied.behavior, "deny");
    assert.match(denied.message, /invalid bearer token/);
    const failed = await client.callTool({ name: "request_approval", arguments: { tool_name: "deploy" } });
    assert.equal(failed.isError, true);
    assert.equal(failed.structuredContent.allow, false);
    assert.equal((await gh.list()).length, before);
  } finally {
    await client.close();
  }
});

test("stdio: no server denies once --retry-for has passed", async () => {
  const client = await connect(transports.stdio(TOKEN, "http://127.0.0.1:1", ["--retry-for", "500ms"]));
  try {
    const denied = textJSON(await client.callTool({ name: "approval_prompt", arguments: { tool_name: "Bash", input: { command: "ls" } } }));
    assert.equal(denied.behavior, "deny");
    assert.match(denied.message, /unreachable/);
  } finally {
    await client.close();
  }
});

test("http: a wrong token cannot connect, and asks nobody", async () => {
  const before = (await gh.list()).length;
  await assert.rejects(connect(transports.http("not-a-token-0123456789abcdef")), /401|nauthorized/);
  const resp = await fetch(`${gh.url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "approval_prompt", arguments: { tool_name: "Bash", input: {} } } }),
  });
  assert.equal(resp.status, 401);
  assert.equal((await gh.list()).length, before);
});

test("http: each token asks as itself, and cannot borrow another's approval by its key", async () => {
  const a = await connect(transports.http(TOKEN));
  const b = await connect(transports.http(OTHER_TOKEN));
  try {
    const args = { tool_name: "transfer", tool_args: { amount: 5 }, idempotency_key: "mcp-5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a" };
    const first = a.callTool({ name: "request_approval", arguments: args });
    const card = await gh.card("transfer");
    await gh.decide(card.request.id, "approve");
    assert.equal((await first).structuredContent.allow, true);

    const second = b.callTool({ name: "request_approval", arguments: args });
    const card2 = await gh.relay.next((m) => m.type === "card" && m.request.tool_name === "transfer" && m.request.id !== card.request.id);
    assert.equal(card2.request.agent_id, "other-agent");
    await gh.decide(card2.request.id, "reject");
    const res = (await second).structuredContent;
    assert.equal(res.allow, false);
    assert.equal(res.request_id, card2.request.id);
  } finally {
    await a.close();
    await b.close();
  }
});

/** The server's gatehouse_waiters gauge: the calls waiting for a verdict now. */
async function waiters() {
  const text = await (await fetch(`${gh.url}/metrics`)).text();
  return Number(/^gatehouse_waiters (\S+)/m.exec(text)?.[1]);
}

async function eventually(cond, what) {
  const deadline = Date.now() + 10000;
  while (!(await cond())) {
    if (Date.now() > deadline) {
      throw new Error(`never: ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("http: a client that hangs up stops waiting; its key re-attaches later", async () => {
  const first = await connect(transports.http());
  const call = first.callTool({ name: "request_approval", arguments: { tool_name: "hangup", idempotency_key: "mcp-0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f" } }).catch(() => "closed");
  const card = await gh.card("hangup");
  await eventually(async () => (await waiters()) === 1, "one call waiting");
  await first.close();
  assert.equal(await call, "closed");
  await eventually(async () => (await waiters()) === 0, "the hung-up call stopped waiting");

  const second = await connect(transports.http());
  try {
    const again = second.callTool({ name: "request_approval", arguments: { tool_name: "hangup", idempotency_key: "mcp-0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f" } });
    await eventually(async () => (await waiters()) === 1, "the second call waiting");
    await gh.decide(card.request.id, "approve");
    const res = (await again).structuredContent;
    assert.equal(res.allow, true);
    assert.equal(res.request_id, card.request.id);
  } finally {
    await second.close();
  }
});

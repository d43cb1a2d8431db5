// The Vercel AI SDK's tool execution approval, answered by Gatehouse: the
// real `ai` package's generateText and its MockLanguageModelV3 drive a tool
// call through the real binary.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { generateText, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

import { Gatehouse } from "../dist/index.js";
import { approvalResponses } from "../dist/ai-sdk.js";
import { startGatehouse, TOKEN } from "./gatehouse-server.mjs";

let gh;
let client;
before(async () => {
  gh = await startGatehouse({ routes: "routes:\n  - {name: edited, match: {tool: 'scale'}, channels: [relay, web]}\n" });
  client = new Gatehouse({ url: gh.url, token: TOKEN });
});
after(() => gh?.stop());

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};
const callTurn = (id, name, input) => ({
  content: [{ type: "tool-call", toolCallId: id, toolName: name, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
const textTurn = (text) => ({ content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });

/** A model that calls `name` with `input`, then answers text; and a tool needing approval that records its runs. */
function setup(name, input) {
  const model = new MockLanguageModelV3({ doGenerate: [callTurn(`call-${name}`, name, input), textTurn("done")] });
  const ran = [];
  const tools = {
    [name]: tool({
      description: `${name} something`,
      inputSchema: z.object({ env: z.string().optional(), replicas: z.number().optional() }),
      needsApproval: true,
      execute: async (args) => {
        ran.push(args);
        return `${name} ran`;
      },
    }),
  };
  return { model, tools, ran };
}

/** The first turn: the model asks for the tool; generateText stops at the approval request. */
async function firstTurn(model, tools, messages) {
  const result = await generateText({ model, tools, messages });
  messages.push(...result.response.messages);
  const requests = result.content.filter((p) => p.type === "tool-approval-request");
  assert.equal(requests.length, 1, JSON.stringify(result.content));
  return result;
}

/** The tool result the model was shown on its second call. */
function toolResultShown(model) {
  const prompt = model.doGenerateCalls.at(-1).prompt;
  return prompt.filter((m) => m.role === "tool").flatMap((m) => m.content).find((p) => p.type === "tool-result");
}

test("an approval in Gatehouse runs the tool", async () => {
  const { model, tools, ran } = setup("deploy", { env: "prod" });
  const messages = [{ role: "user", content: "Deploy to prod" }];
  const first = await firstTurn(model, tools, messages);

  const answering = approvalResponses(first.content, { client, summary: (name, input) => `${name} ${input.env}` });
  const card = await gh.card("deploy");
  assert.equal(card.request.summary, "deploy prod");
  assert.deepEqual(card.request.tool_args, { env: "prod" });
  assert.equal((await gh.decide(card.request.id, "approve", "alice")).status, 200);
  const approvals = await answering;
  assert.equal(approvals.length, 1);
  assert.equal(approvals[0].approved, true);
  assert.equal(approvals[0].approvalId, first.content.find((p) => p.type === "tool-approval-request").approvalId);

  messages.push({ role: "tool", content: approvals });
  const second = await generateText({ model, tools, messages });
  assert.deepEqual(ran, [{ env: "prod" }]);
  assert.equal(second.text, "done");
  assert.equal(toolResultShown(model).output.value, "deploy ran");
});

test("a rejection in Gatehouse keeps the tool from running and tells the model why", async () => {
  const { model, tools, ran } = setup("drop_db", { env: "prod" });
  const messages = [{ role: "user", content: "Drop the prod database" }];
  const first = await firstTurn(model, tools, messages);

  const answering = approvalResponses(first.content, { client });
  const card = await gh.card("drop_db");
  await gh.decide(card.request.id, "reject", "bob", "never on a Friday");
  const approvals = await answering;
  assert.equal(approvals[0].approved, false);
  assert.match(approvals[0].reason, /never on a Friday/);

  messages.push({ role: "tool", content: approvals });
  await generateText({ model, tools, messages });
  assert.deepEqual(ran, []);
  const shown = toolResultShown(model);
  assert.equal(shown.output.type, "execution-denied");
  assert.match(shown.output.reason, /Rejected by webhook:relay\/bob via relay .*never on a Friday/);
});

test("an approval of edited arguments is not an approval of the model's call", async () => {
  const { model, tools, ran } = setup("scale", { replicas: 50 });
  const messages = [{ role: "user", content: "Scale to 50" }];
  const first = await firstTurn(model, tools, messages);
  const answering = approvalResponses(first.content, { client });
  const card = await gh.card("scale");
  await gh.webDecide(card.request.id, "approve", { modifiedArgs: { replicas: 5 } });
  const approvals = await answering;
  assert.equal(approvals[0].approved, false);
  assert.match(approvals[0].reason, /approved only with edited arguments \{"replicas":5\}/);
  messages.push({ role: "tool", content: approvals });
  await generateText({ model, tools, messages });
  assert.deepEqual(ran, [], "the model's 50 replicas never ran");
});

test("a gate that cannot be reached denies the call", async () => {
  const { model, tools, ran } = setup("deploy", { env: "staging" });
  const messages = [{ role: "user", content: "Deploy staging" }];
  const first = await firstTurn(model, tools, messages);
  const unreachable = new Gatehouse({ url: "http://127.0.0.1:1", token: TOKEN, retryForSeconds: 0.3 });
  const approvals = await approvalResponses(first.content, { client: unreachable });
  assert.equal(approvals[0].approved, false);
  assert.match(approvals[0].reason, /server unreachable/);
  messages.push({ role: "tool", content: approvals });
  await generateText({ model, tools, messages });
  assert.deepEqual(ran, []);
});

test("a later conversation that numbers its calls afresh gets no earlier approval", async () => {
  // Both conversations' models call transfer with toolCallId call-transfer
  // and the same input; keyed by that id, the second re-attached to the
  // first's approval and ran with no person asked. Found by a reader.
  const one = setup("transfer", { env: "acme" });
  const first = await firstTurn(one.model, one.tools, [{ role: "user", content: "Pay ACME" }]);
  const answering = approvalResponses(first.content, { client });
  const card = await gh.card("transfer");
  assert.equal((await gh.decide(card.request.id, "approve", "alice")).status, 200);
  assert.equal((await answering)[0].approved, true);

  // The same approval request asked again (a retry) re-attaches to it.
  let again;
  const [retry] = await approvalResponses(first.content, { client, onVerdict: (_, res) => (again = res) });
  assert.equal(retry.approved, true);
  assert.equal(again.request_id, card.request.id);

  const two = setup("transfer", { env: "acme" });
  const later = await firstTurn(two.model, two.tools, [{ role: "user", content: "Pay ACME again" }]);
  const asking = approvalResponses(later.content, { client });
  const another = gh.relay.next((m) => m.type === "card" && m.request.tool_name === "transfer" && m.request.id !== card.request.id);
  const next = await Promise.race([another, asking.then((answer) => ({ answer }))]);
  assert.equal(next.answer, undefined, `answered without a person: ${JSON.stringify(next.answer)}`);
  await gh.decide(next.request.id, "reject", "bob", "paid already");
  assert.equal((await asking)[0].approved, false);
});

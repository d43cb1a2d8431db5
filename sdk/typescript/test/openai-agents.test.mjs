// The OpenAI Agents SDK's needsApproval, answered by Gatehouse: the real
// @openai/agents Runner and its ScriptedModel (@openai/agents/testing) drive
// a tool call through the real binary.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { Agent, Runner, shellTool, tool } from "@openai/agents";
import { ScriptedModel, assistantMessage, functionCall } from "@openai/agents/testing";
import { z } from "zod";

import { Gatehouse } from "../dist/index.js";
import { resolveInterruptions, runWithGatehouse } from "../dist/openai-agents.js";
import { startGatehouse, TOKEN } from "./gatehouse-server.mjs";

let gh;
let client;
const runner = new Runner({ tracingDisabled: true });
const run = (agent, input) => runner.run(agent, input);
const runOf = (agent) => (input) => runner.run(agent, input);

before(async () => {
  gh = await startGatehouse({ routes: "routes:\n  - {name: edited, match: {tool: 'scale'}, channels: [relay, web]}\n  - {name: shells, match: {tool: 'shell'}, channels: [relay, web], remember: 1h}\n" });
  client = new Gatehouse({ url: gh.url, token: TOKEN });
});
after(() => gh?.stop());

/** An agent whose model calls `name` with `args`, then says "done"; the tool needs approval and records its runs. */
function setup(name, args, callId = `call_${name}`) {
  const model = new ScriptedModel([[functionCall(name, args, { callId })], [assistantMessage("done")]]);
  const ran = [];
  const t = tool({
    name,
    description: `${name} something`,
    parameters: z.object({ env: z.string().nullable(), replicas: z.number().nullable() }),
    needsApproval: true,
    execute: async (input) => {
      ran.push(input);
      return `${name} ran`;
    },
  });
  return { agent: new Agent({ name: "ops", instructions: "Operate carefully.", model, tools: [t] }), model, ran };
}

/** The function call output the model was shown on its last call. */
function outputShown(model) {
  const input = model.lastCall.request.input;
  return (Array.isArray(input) ? input : []).find((i) => i.type === "function_call_result");
}

test("runWithGatehouse: an approval in Gatehouse runs the tool and the run ends", async () => {
  const { agent, model, ran } = setup("deploy", { env: "prod", replicas: null });
  const running = runWithGatehouse(runOf(agent), "Deploy to prod", { client, summary: (n, a) => `${n} to ${a.env}` });
  const card = await gh.card("deploy");
  assert.equal(card.request.summary, "deploy to prod");
  assert.deepEqual(card.request.tool_args, { env: "prod", replicas: null });
  assert.equal((await gh.decide(card.request.id, "approve", "alice")).status, 200);
  const result = await running;
  assert.deepEqual(ran, [{ env: "prod", replicas: null }]);
  assert.equal(result.finalOutput, "done");
  assert.equal(outputShown(model).output.text ?? outputShown(model).output, "deploy ran");
  model.assertComplete();
});

test("resolveInterruptions: a rejection keeps the tool from running and tells the model why", async () => {
  const { agent, model, ran } = setup("drop_db", { env: "prod", replicas: null });
  const first = await run(agent, "Drop the prod database");
  assert.equal(first.interruptions.length, 1);
  const resolving = resolveInterruptions(first, { client });
  const card = await gh.card("drop_db");
  await gh.decide(card.request.id, "reject", "bob", "not without a backup");
  const verdicts = await resolving;
  assert.equal(verdicts.length, 1);
  assert.equal(verdicts[0].approved, false);
  assert.equal(verdicts[0].result.status, "rejected");
  const second = await run(agent, first.state);
  assert.deepEqual(ran, []);
  assert.equal(second.finalOutput, "done");
  assert.match(JSON.stringify(outputShown(model)), /not without a backup/);
});

test("an approval of edited arguments rejects the model's call", async () => {
  const { agent, ran } = setup("scale", { env: null, replicas: 50 });
  const running = runWithGatehouse(runOf(agent), "Scale to 50", { client });
  const card = await gh.card("scale");
  await gh.webDecide(card.request.id, "approve", { modifiedArgs: { env: null, replicas: 5 } });
  await running;
  assert.deepEqual(ran, [], "the model's 50 replicas never ran");
});

test("a gate that cannot be reached rejects the call", async () => {
  const { agent, ran } = setup("deploy", { env: "staging", replicas: null }, "call_unreachable");
  const unreachable = new Gatehouse({ url: "http://127.0.0.1:1", token: TOKEN, retryForSeconds: 0.3 });
  const result = await runWithGatehouse(runOf(agent), "Deploy staging", { client: unreachable });
  assert.deepEqual(ran, []);
  assert.equal(result.finalOutput, "done");
});

test("resolveInterruptions: a later run that numbers its calls afresh gets no earlier approval", async () => {
  // Both runs' models call pay with call id call_pay and the same
  // arguments; keyed by that id, the second re-attached to the first's
  // approval and ran with no person asked. Found by a reader.
  const one = setup("pay", { env: "acme", replicas: null });
  const first = await run(one.agent, "Pay ACME");
  const resolving = resolveInterruptions(first, { client });
  const card = await gh.card("pay");
  assert.equal((await gh.decide(card.request.id, "approve", "alice")).status, 200);
  assert.equal((await resolving)[0].approved, true);

  const two = setup("pay", { env: "acme", replicas: null });
  const later = await run(two.agent, "Pay ACME again");
  const asking = resolveInterruptions(later, { client });
  const another = gh.relay.next((m) => m.type === "card" && m.request.tool_name === "pay" && m.request.id !== card.request.id);
  const next = await Promise.race([another, asking.then((answer) => ({ answer }))]);
  assert.equal(next.answer, undefined, `answered without a person: ${JSON.stringify(next.answer?.map((v) => v.result))}`);
  await gh.decide(next.request.id, "reject", "bob", "paid already");
  assert.equal((await asking)[0].approved, false);
  const second = await run(two.agent, later.state);
  assert.deepEqual(two.ran, []);
  assert.equal(second.finalOutput, "done");
});

test("resolveInterruptions: asked again on the same result after an abort, a call re-attaches to its request", async () => {
  // The items are made anew at each read of result.interruptions, so a
  // key kept per item was never found again: the retry made a second
  // request, and the approver a second card. Found by a reader.
  const { agent, ran } = setup("refund", { env: "acme", replicas: null });
  const first = await run(agent, "Refund ACME");
  const ac = new AbortController();
  const giving = resolveInterruptions(first, { client, signal: ac.signal });
  const card = await gh.card("refund");
  ac.abort();
  assert.equal((await giving)[0].approved, false);
  const seen = [];
  const retry = resolveInterruptions(first, { client, onVerdict: (_, res) => seen.push(res.request_id) });
  const another = gh.relay.next((m) => m.type === "card" && m.request.tool_name === "refund" && m.request.id !== card.request.id);
  assert.equal((await gh.decide(card.request.id, "approve", "alice")).status, 200);
  const out = await Promise.race([retry.then((verdicts) => ({ verdicts })), another.then((m) => ({ second: m.request.id }))]);
  assert.equal(out.second, undefined, "the retry made a second request: the approver is asked twice");
  assert.equal(out.verdicts[0].approved, true);
  assert.deepEqual(seen, [card.request.id]);
  await run(agent, first.state);
  assert.deepEqual(ran, [{ env: "acme", replicas: null }]);
});

/** An agent whose model runs one shell command (a shell_call: no `arguments`, an action), then says "done". */
function shellAgent(command, callId) {
  const model = new ScriptedModel([
    [{ type: "shell_call", callId, id: `sh_${callId}`, status: "completed", action: { commands: [command] } }],
    [assistantMessage("done")],
  ]);
  const ran = [];
  const shell = shellTool({
    needsApproval: true,
    shell: {
      run: async (action) => {
        ran.push(...action.commands);
        return { output: [{ stdout: "", stderr: "", outcome: { type: "exit", exitCode: 0 } }] };
      },
    },
  });
  return { agent: new Agent({ name: "ops", instructions: "Operate carefully.", model, tools: [shell] }), ran };
}

test("a shell call is asked about with its commands: an approval for 1h of one never runs another", async () => {
  // A shell_call carries its commands in action, not arguments: asked
  // about as shell {}, the approver saw no command, and an "approve for
  // 1h" of ls made a grant for every shell call, rm -rf included.
  const one = shellAgent("ls /srv/data", "call_ls");
  const looking = runWithGatehouse(runOf(one.agent), "Look at /srv/data", { client });
  const card = await gh.card("shell");
  assert.match(JSON.stringify(card.request.tool_args), /ls \/srv\/data/, "the approver is shown the command");
  await gh.webDecide(card.request.id, "approve_for");
  await looking;
  assert.deepEqual(one.ran, ["ls /srv/data"]);

  const two = shellAgent("rm -rf /srv/data", "call_rm");
  const cleaning = runWithGatehouse(runOf(two.agent), "Clean up /srv/data", { client });
  const another = gh.relay.next((m) => m.type === "card" && m.request.tool_name === "shell" && m.request.id !== card.request.id);
  const next = await Promise.race([another, cleaning.then(() => ({ ran: [...two.ran] }))]);
  assert.equal(next.ran, undefined, `ran with no person asked: ${JSON.stringify(next.ran)}`);
  assert.match(JSON.stringify(next.request.tool_args), /rm -rf \/srv\/data/);
  await gh.decide(next.request.id, "reject", "bob", "not the data");
  await cleaning;
  assert.deepEqual(two.ran, []);
});

test("an approval for 1h of a shell command covers the same command again, as the Responses API gives it", async () => {
  // The OpenAI Responses model's shell_call keeps its item id in
  // providerData too (convertToOutputItem: {...providerData} = the rest of
  // the item, id included): a per-call id left in the args.
  const { createRequire } = await import("node:module");
  const conv = createRequire(import.meta.url)("../node_modules/@openai/agents-openai/dist/openaiResponsesConverter.js");
  const shellCall = (id) =>
    conv.convertToOutputItem([{ type: "shell_call", id: `sh_${id}`, call_id: `call_${id}`, status: "completed", action: { commands: ["ls /srv/logs"] } }])[0];
  const agentOf = (id) => {
    const model = new ScriptedModel([[shellCall(id)], [assistantMessage("done")]]);
    const ran = [];
    const shell = shellTool({
      needsApproval: true,
      shell: { run: async (action) => { ran.push(...action.commands); return { output: [{ stdout: "", stderr: "", outcome: { type: "exit", exitCode: 0 } }] }; } },
    });
    return { agent: new Agent({ name: "ops", instructions: "Operate carefully.", model, tools: [shell] }), ran };
  };
  const one = agentOf("a1");
  const looking = runWithGatehouse(runOf(one.agent), "Look at /srv/logs", { client });
  const card = await gh.relay.next((m) => m.type === "card" && m.request.tool_name === "shell" && JSON.stringify(m.request.tool_args).includes("/srv/logs"));
  await gh.webDecide(card.request.id, "approve_for");
  await looking;
  assert.deepEqual(one.ran, ["ls /srv/logs"]);

  const two = agentOf("a2");
  const again = gh.relay.next((m) => m.type === "card" && m.request.tool_name === "shell" && m.request.id !== card.request.id && JSON.stringify(m.request.tool_args).includes("/srv/logs"));
  const next = await Promise.race([again.then((m) => ({ asked: m.request.tool_args })), runWithGatehouse(runOf(two.agent), "Look again", { client }).then(() => ({}))]);
  assert.equal(next.asked, undefined, `asked again despite the grant: ${JSON.stringify(next.asked)}`);
  assert.deepEqual(two.ran, ["ls /srv/logs"]);
});

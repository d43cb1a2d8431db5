// Compile-time checks, by `npm run typecheck` (tsc --noEmit): the adapters'
// structural types fit the real packages' types, both ways, so a change of
// shape in `ai` or `@openai/agents` fails the build rather than a user.

import { generateText, type ModelMessage, type ToolApprovalResponse } from "ai";
import { Agent, run, type RunResult } from "@openai/agents";

import { Gatehouse, gate, requireApproval, type HookResult } from "../src/index.js";
import { approvalResponses } from "../src/ai-sdk.js";
import { resolveInterruptions, runWithGatehouse } from "../src/openai-agents.js";

export async function aiSDK(messages: ModelMessage[], params: Parameters<typeof generateText>[0]): Promise<void> {
  const result = await generateText(params);
  // A result's content goes in as it is; the responses go in a tool message.
  const approvals = await approvalResponses(result.content);
  const typed: ToolApprovalResponse[] = approvals;
  messages.push({ role: "tool", content: typed });
}

export async function openAIAgents(agent: Agent): Promise<void> {
  const result = await run(agent, "hello");
  await resolveInterruptions(result);
  const final: RunResult<any, any> = await runWithGatehouse((input) => run(agent, input), "hello");
  void final;
}

export async function core(): Promise<boolean> {
  const res: HookResult = await gate({ tool_name: "deploy", tool_args: { env: "prod" } }, { client: new Gatehouse() });
  const deploy = requireApproval(async (a: { env: string }) => a.env.length, { toolName: "deploy" });
  const n: number = await deploy({ env: "prod" });
  return res.allow && n > 0;
}

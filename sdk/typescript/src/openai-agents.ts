/**
 * Gatehouse for the OpenAI Agents SDK's human in the loop: a tool with
 * `needsApproval` interrupts the run; resolveInterruptions asks Gatehouse
 * about each interruption and approves or rejects it on the run's state,
 * and runWithGatehouse runs an agent to the end that way.
 *
 * ```ts
 * import { Agent, run, tool } from "@openai/agents";
 * const deploy = tool({ name: "deploy", parameters, needsApproval: true, execute });
 * const result = await runWithGatehouse((input) => run(agent, input), "Deploy to prod");
 * ```
 *
 * No dependency on @openai/agents: its objects are used by shape.
 *
 * @module
 */

import { type GateRequest, type Gatehouse, type HookResult, allowsAsIs, denyReason, gate, newKey } from "./index.js";

/**
 * keys holds, for each run's state, the idempotency key of each tool call
 * asked about and not yet given a verdict: asked again in this process (a
 * retry after an abort or a failure), the call re-attaches to its request. (The
 * interruption items are made anew at each read of result.interruptions;
 * the state is one object.) The model's call id alone is no key: providers
 * that number calls afresh in each run (call_0 again) would have a later
 * run's call get an earlier approval; and once a call is answered on the
 * state, its id may come again for another call.
 */
const keys = new WeakMap<object, Map<string, string>>();

function keyOf(state: object, callId: string | undefined): string {
  if (callId === undefined) {
    return `openai-agents:${newKey()}`;
  }
  let calls = keys.get(state);
  if (calls === undefined) {
    calls = new Map();
    keys.set(state, calls);
  }
  let key = calls.get(callId);
  if (key === undefined) {
    key = `openai-agents:${newKey()}`;
    calls.set(callId, key);
  }
  return key;
}

/** A tool approval interruption (RunToolApprovalItem), by shape. */
export interface ApprovalItem {
  type: string;
  name?: string;
  arguments?: string;
  rawItem?: { callId?: string; id?: string; name?: string; arguments?: string };
}

/** A run's state (RunState), by shape. */
export interface ApprovalState<I> {
  approve(item: I, options?: { alwaysApprove?: boolean }): void;
  reject(item: I, options?: { alwaysReject?: boolean; message?: string }): void;
}

/** A run result, by shape. */
export interface InterruptedResult<I, S> {
  interruptions?: I[];
  state: S;
}

/** Options of resolveInterruptions and runWithGatehouse. */
export interface ResolveOptions<I extends ApprovalItem = ApprovalItem> {
  client?: Gatehouse;
  /** One line for the approver, per call. */
  summary?: (toolName: string, input: unknown) => string | undefined;
  /** Other request fields (route, agent_id, session_id, ...). */
  request?: Omit<GateRequest, "tool_name" | "tool_args" | "summary" | "tool_call_id" | "idempotency_key">;
  onVerdict?: (item: I, result: HookResult) => void;
  signal?: AbortSignal;
}

/** What became of one interruption. */
export interface Resolution<I> {
  item: I;
  approved: boolean;
  result: HookResult;
}

function parseArgs(s: string | undefined): unknown {
  if (s === undefined || s === "") {
    return {};
  }
  try {
    return JSON.parse(s);
  } catch {
    return s; // shown to the approver as it came
  }
}

/**
 * The call as the approver must see it and as policies, grants and edits
 * compare it: a function call's arguments; for the SDK's other approval
 * items (shell, apply_patch, computer, hosted MCP), which carry no
 * `arguments` but an action, operation or providerData, the raw item
 * without its per-call ids. Never {} for a call that does something.
 */
function inputOf(item: ApprovalItem): unknown {
  const raw = item.rawItem as (Record<string, unknown> & { type?: unknown }) | undefined;
  const args = item.arguments ?? item.rawItem?.arguments;
  if (args !== undefined || raw === undefined || raw.type === "function_call") {
    return parseArgs(args);
  }
  const { id: _id, callId: _callId, status: _status, ...call } = raw;
  const pd = call.providerData;
  if (pd !== null && typeof pd === "object" && !Array.isArray(pd)) {
    // The Responses model keeps the item's id in providerData as well.
    const { id: _pid, ...rest } = pd as Record<string, unknown>;
    call.providerData = rest;
  }
  return call;
}

/**
 * Asks Gatehouse about every tool approval interruption of `result`, all
 * at once, and approves or rejects each on `result.state`; run the agent
 * again with that state to go on. A call is approved only when Gatehouse
 * allows it with the arguments the model gave; every failure, and an
 * approval of edited arguments, rejects it with a message the model sees.
 */
export async function resolveInterruptions<I extends ApprovalItem, S extends ApprovalState<I>>(
  result: InterruptedResult<I, S>,
  options: ResolveOptions<I> = {},
): Promise<Resolution<I>[]> {
  const items = (result.interruptions ?? []).filter((i) => i.type === "tool_approval_item");
  const verdicts = await Promise.all(
    items.map(async (item) => {
      const toolName = item.name ?? item.rawItem?.name ?? "unknown_tool";
      const input = inputOf(item);
      const callId = item.rawItem?.callId ?? item.rawItem?.id;
      const res = await gate(
        {
          ...options.request,
          tool_name: toolName,
          tool_args: input,
          summary: options.summary?.(toolName, input),
          tool_call_id: callId,
          idempotency_key: keyOf(result.state, callId),
        },
        { client: options.client, signal: options.signal },
      );
      options.onVerdict?.(item, res);
      return { item, input, res, callId };
    }),
  );
  return verdicts.map(({ item, input, res, callId }) => {
    if (callId !== undefined && ["approved", "rejected", "expired", "cancelled"].includes(res.status)) {
      // Answered for good: the id is free for another call. (One that
      // failed, or was aborted, keeps its key, and its request waits.)
      keys.get(result.state)?.delete(callId);
    }
    const approved = allowsAsIs(res, input);
    if (approved) {
      result.state.approve(item);
    } else {
      result.state.reject(item, { message: denyReason(res, input) });
    }
    return { item, approved, result: res };
  });
}

/**
 * Runs an agent to its end: `runOnce` runs it (the SDK's
 * `(input) => run(agent, input)`) on `input`, then every tool approval
 * interruption is resolved through Gatehouse and it runs again on the
 * state, until a run ends without one (at most maxRounds rounds, 20 by
 * default).
 */
export async function runWithGatehouse<I extends ApprovalItem, S extends ApprovalState<I>, R extends InterruptedResult<I, S>>(
  // any: the first input, then the run's state
  runOnce: (input: any) => Promise<R>,
  input: unknown,
  options: ResolveOptions<I> & { maxRounds?: number } = {},
): Promise<R> {
  const max = options.maxRounds ?? 20;
  let result = await runOnce(input);
  for (let round = 0; (result.interruptions?.length ?? 0) > 0; round++) {
    if (round >= max) {
      throw new Error(`gatehouse: still interrupted after ${max} rounds of approvals`);
    }
    await resolveInterruptions(result, options);
    result = await runOnce(result.state);
  }
  return result;
}

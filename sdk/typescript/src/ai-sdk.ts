/**
 * Gatehouse for the Vercel AI SDK's tool execution approval: a tool with
 * `needsApproval` makes generateText (or streamText) return
 * `tool-approval-request` parts; approvalResponses asks Gatehouse about each
 * and returns the `tool-approval-response` parts to add to the messages as
 * a `tool` message before calling the model again.
 *
 * ```ts
 * const result = await generateText({ model, tools, messages });
 * messages.push(...result.response.messages);
 * const approvals = await approvalResponses(result.content);
 * if (approvals.length > 0) {
 *   messages.push({ role: "tool", content: approvals });
 *   const next = await generateText({ model, tools, messages }); // runs the approved calls
 * }
 * ```
 *
 * No dependency on the `ai` package: the parts are matched by shape.
 *
 * @module
 */

import { type GateRequest, type Gatehouse, type HookResult, allowsAsIs, denyReason, gate, newKey } from "./index.js";

/** A `tool-approval-request` content part, as the AI SDK returns it. */
export interface ToolApprovalRequestPart {
  type: "tool-approval-request";
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown };
}

/** A `tool-approval-response` part, as the AI SDK takes it. */
export interface ToolApprovalResponsePart {
  type: "tool-approval-response";
  approvalId: string;
  approved: boolean;
  reason?: string;
}

/** Options of approvalResponses. */
export interface ApprovalOptions {
  /** The client (default: one from GATEHOUSE_URL and GATEHOUSE_TOKEN). */
  client?: Gatehouse;
  /** One line for the approver, per call. */
  summary?: (toolName: string, input: unknown) => string | undefined;
  /** Other request fields (route, agent_id, session_id, ...). */
  request?: Omit<GateRequest, "tool_name" | "tool_args" | "summary" | "tool_call_id" | "idempotency_key">;
  /** Hears each verdict (for logs and UIs). */
  onVerdict?: (part: ToolApprovalRequestPart, result: HookResult) => void;
  signal?: AbortSignal;
}

function isApprovalRequest(p: unknown): p is ToolApprovalRequestPart {
  const x = p as ToolApprovalRequestPart | undefined;
  return x?.type === "tool-approval-request" && typeof x.approvalId === "string" && typeof x.toolCall?.toolName === "string";
}

/**
 * Asks Gatehouse about every tool-approval-request part in `content` (a
 * result's content, or any list of parts; others are skipped), all at
 * once, and returns one tool-approval-response per request. A call is
 * approved only when Gatehouse allows it with the arguments the model gave;
 * every failure, and an approval of edited arguments, is a denial whose
 * reason the model sees.
 */
export async function approvalResponses(content: readonly unknown[], options: ApprovalOptions = {}): Promise<ToolApprovalResponsePart[]> {
  const requests = content.filter(isApprovalRequest);
  return Promise.all(
    requests.map(async (part): Promise<ToolApprovalResponsePart> => {
      const { toolCallId, toolName, input } = part.toolCall;
      const res = await gate(
        {
          ...options.request,
          tool_name: toolName,
          tool_args: input ?? {},
          summary: options.summary?.(toolName, input),
          tool_call_id: toolCallId,
          // The approval request's own id, which the ai package makes at
          // random for each: asked again (a retry, a process resuming its
          // messages), it re-attaches to its request instead of asking
          // twice, while a later conversation whose provider numbers its
          // calls afresh (call_0 again) never gets an earlier approval, as
          // it would keyed by the tool call's id.
          idempotency_key: part.approvalId ? `ai-sdk:${part.approvalId}` : `ai-sdk:${newKey()}`,
        },
        { client: options.client, signal: options.signal },
      );
      options.onVerdict?.(part, res);
      if (allowsAsIs(res, input)) {
        return { type: "tool-approval-response", approvalId: part.approvalId, approved: true, reason: res.side_effects[0] };
      }
      return { type: "tool-approval-response", approvalId: part.approvalId, approved: false, reason: denyReason(res, input) };
    }),
  );
}

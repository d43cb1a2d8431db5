package mcpserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type tools struct {
	gate Gate
	log  *slog.Logger
}

// ApprovalInput is request_approval's input.
type ApprovalInput struct {
	ToolName string         `json:"tool_name" jsonschema:"the name of the tool call that needs approval"`
	ToolArgs map[string]any `json:"tool_args,omitempty" jsonschema:"the call's arguments, as a JSON object"`
	Summary  string         `json:"summary,omitempty" jsonschema:"one line for the approver: what the call does and why"`
	// IdempotencyKey is not in the contract's three fields; it is how a
	// client re-attaches to a request whose wait it lost.
	// Only a key of the form request_approval gives (issuedKey) is used:
	// a model fills optional fields with names of its own (pay-acme-60000),
	// and the same name for the same call in another conversation would
	// re-attach to the first one's approval, with nobody asked.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"optional: only the idempotency_key an earlier pending answer gave, to keep waiting on that request; any other value is not used, and a new request is made"`
}

// ApprovalOutput is request_approval's result: the gate's hook result and
// the key to call again with while it is pending.
type ApprovalOutput struct {
	RequestID      string   `json:"request_id"`
	Status         string   `json:"status" jsonschema:"approved, rejected, expired, cancelled, pending or error"`
	Allow          bool     `json:"allow" jsonschema:"true only when the call may run"`
	Error          string   `json:"error" jsonschema:"why the call may not run, when it may not"`
	ModifiedArgs   any      `json:"modified_args" jsonschema:"the approver's edited arguments, to run the call with instead, or null"`
	SideEffects    []string `json:"side_effects"`
	IdempotencyKey string   `json:"idempotency_key"`
}

func (t *tools) requestApproval(ctx context.Context, req *mcp.CallToolRequest, in ApprovalInput) (*mcp.CallToolResult, ApprovalOutput, error) {
	a := Ask{ToolName: strings.TrimSpace(in.ToolName), Summary: in.Summary, IdempotencyKey: in.IdempotencyKey,
		Metadata: json.RawMessage(`{"mcp_tool":"request_approval"}`)}
	if !issuedKey(a.IdempotencyKey) {
		a.IdempotencyKey = newKey()
	}
	out := ApprovalOutput{IdempotencyKey: a.IdempotencyKey, SideEffects: []string{}}
	if a.ToolName == "" {
		out.Status, out.Error = "error", "gatehouse: tool_name is required (denied: the gate fails closed)"
		return &mcp.CallToolResult{IsError: true}, out, nil
	}
	if in.ToolArgs != nil {
		b, err := json.Marshal(in.ToolArgs)
		if err != nil {
			out.Status, out.Error = "error", "gatehouse: tool_args: "+err.Error()+" (denied: the gate fails closed)"
			return &mcp.CallToolResult{IsError: true}, out, nil
		}
		a.ToolArgs = b
	}
	res, err := t.gate.Ask(ctx, caller(req), a, notifier(ctx, req, "request_approval "+a.ToolName))
	if err != nil {
		t.log.Warn("mcp request_approval failed", "tool", a.ToolName, "err", err)
		res = failed(res.RequestID, err)
	}
	out.RequestID, out.Status, out.Allow, out.Error, out.SideEffects = res.RequestID, res.Status, res.Allow, res.Error, res.SideEffects
	if out.SideEffects == nil {
		out.SideEffects = []string{}
	}
	if len(res.ModifiedArgs) > 0 && string(res.ModifiedArgs) != "null" {
		out.ModifiedArgs = res.ModifiedArgs
	}
	if res.Status == "pending" && out.Error == "" {
		out.Error = "still pending: call request_approval again with the same idempotency_key to keep waiting"
	}
	return &mcp.CallToolResult{IsError: res.Status == "error"}, out, nil
}

// PromptInput is what Claude Code sends its --permission-prompt-tool.
type PromptInput struct {
	ToolName  string         `json:"tool_name" jsonschema:"the tool Claude wants to run"`
	Input     map[string]any `json:"input" jsonschema:"the tool's input"`
	ToolUseID string         `json:"tool_use_id,omitempty" jsonschema:"the tool use's id"`
}

// PromptOutput is Claude Code's permission decision.
type PromptOutput struct {
	Behavior     string         `json:"behavior" jsonschema:"allow or deny"`
	UpdatedInput map[string]any `json:"updatedInput,omitzero" jsonschema:"with allow: the input to run the tool with"`
	Message      string         `json:"message,omitempty" jsonschema:"with deny: why"`
}

func (t *tools) approvalPrompt(ctx context.Context, req *mcp.CallToolRequest, in PromptInput) (*mcp.CallToolResult, PromptOutput, error) {
	deny := func(msg string) (*mcp.CallToolResult, PromptOutput, error) {
		return nil, PromptOutput{Behavior: "deny", Message: msg}, nil
	}
	name := strings.TrimSpace(in.ToolName)
	if name == "" {
		return deny("Gatehouse: the permission prompt named no tool (denied: the gate fails closed)")
	}
	args, err := json.Marshal(in.Input)
	if err != nil || in.Input == nil {
		args = []byte("{}")
	}
	// A key of its own for each prompt: the call's id is recorded, not
	// re-attached to. It names no session or project, and clients whose
	// model numbers its calls afresh (call_0 again) would have a later,
	// identical call re-attach to an earlier approval, with nobody asked.
	// Within the call, the key re-attaches through restarts (Remote).
	a := Ask{ToolName: name, ToolArgs: args, ToolCallID: in.ToolUseID, IdempotencyKey: newKey(),
		Metadata: json.RawMessage(`{"mcp_tool":"approval_prompt"}`)}
	res, err := t.gate.Ask(ctx, caller(req), a, notifier(ctx, req, "approval_prompt "+name))
	if err != nil {
		t.log.Warn("mcp approval_prompt failed", "tool", name, "err", err)
		return deny(failed(res.RequestID, err).Error)
	}
	switch {
	case res.Status == "pending":
		return deny("Gatehouse: no verdict yet for request " + res.RequestID + " (the server is restarting or the wait was cut); denied for now, try again")
	case !res.Allow:
		return deny(cmp.Or(res.Error, "Gatehouse: denied ("+res.Status+")"))
	}
	updated := in.Input
	if len(res.ModifiedArgs) > 0 && string(res.ModifiedArgs) != "null" {
		// The approver edited the arguments: run with theirs, which must be
		// an object like the tool's input. Anything else is refused, not
		// passed on.
		var edited map[string]any
		if err := json.Unmarshal(res.ModifiedArgs, &edited); err != nil || edited == nil {
			return deny("Gatehouse: approved with edited arguments that are not a JSON object; denied")
		}
		updated = edited
	}
	if updated == nil {
		updated = map[string]any{}
	}
	return nil, PromptOutput{Behavior: "allow", UpdatedInput: updated}, nil
}

// caller is the token the tool call was authenticated with, over HTTP.
func caller(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil {
		return req.Extra.TokenInfo.UserID
	}
	return ""
}

// failed is the deny of a gate that could not answer.
func failed(id string, err error) Result {
	msg := strings.TrimPrefix(err.Error(), "gatehouse: ")
	return Result{RequestID: id, Status: "error", Allow: false, SideEffects: []string{},
		Error: "gatehouse: " + msg + " (denied: the gate fails closed)"}
}

// newKey is a random idempotency key for a call that brought none.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "mcp-" + hex.EncodeToString(b)
}

// issuedKey says a key has newKey's form: mcp- and 32 lower-case hex digits
// (a program may make its own so, to re-attach after losing the first answer).
func issuedKey(k string) bool {
	h, ok := strings.CutPrefix(k, "mcp-")
	if !ok || len(h) != 32 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

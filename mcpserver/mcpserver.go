// Package mcpserver serves Gatehouse's gate over the Model Context
// Protocol, with the official Go SDK. Two tools:
//
//   - request_approval {tool_name, tool_args, summary}: asks a person and
//     waits for the verdict, answering the gate's hook result;
//   - approval_prompt: Claude Code's --permission-prompt-tool, answering
//     {"behavior":"allow","updatedInput":…} or {"behavior":"deny","message":…}.
//
// The tools ask through a Gate: the HTTP API (gatehouse mcp, over stdio) or
// the service itself (POST /mcp inside gatehouse serve). Every failure is a
// deny.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ask is one call for approval.
type Ask struct {
	ToolName string
	ToolArgs json.RawMessage
	Summary  string
	// IdempotencyKey re-attaches a retried call to its request.
	IdempotencyKey string
	ToolCallID     string
	Metadata       json.RawMessage
}

// Result is the gate's hook result: Allow is true only for an approval (or
// a route whose timeout verdict is allow).
type Result struct {
	RequestID    string          `json:"request_id"`
	Status       string          `json:"status"`
	Allow        bool            `json:"allow"`
	Error        string          `json:"error"`
	ModifiedArgs json.RawMessage `json:"modified_args"`
	SideEffects  []string        `json:"side_effects"`
}

// Gate is where the tools ask.
type Gate interface {
	// Ask creates the request, or re-attaches to it by its idempotency key,
	// and waits for its verdict. It returns the request still pending when
	// ctx ends or the server is shutting down; while it waits it calls
	// progress now and then. caller is the API token the MCP client
	// authenticated with (HTTP), or "" where the gate knows it (stdio).
	Ask(ctx context.Context, caller string, a Ask, progress func()) (Result, error)
}

// Options configure the MCP server.
type Options struct {
	Version string
	Logger  *slog.Logger
}

// New returns an MCP server with the two tools, asking through g.
func New(g Gate, o Options) *mcp.Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "gatehouse", Title: "Gatehouse", Version: o.Version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{gate: g, log: o.Logger}
	mcp.AddTool(s, &mcp.Tool{
		Name:  "request_approval",
		Title: "Ask a person to approve a tool call",
		Description: "Ask a human approver before running a sensitive tool call, and wait for the verdict. " +
			"Run the call only when the result says \"allow\": true, with modified_args instead of your arguments when " +
			"they are set. Anything else is a no: do not run the call. If the result's status is \"pending\", " +
			"call again with the same idempotency_key to keep waiting.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, t.requestApproval)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "approval_prompt",
		Title: "Claude Code permission prompt",
		Description: "Claude Code's --permission-prompt-tool: asks a human approver whether a tool call may run. " +
			"Input {tool_name, input, tool_use_id}; answers {\"behavior\":\"allow\",\"updatedInput\":{...}} or " +
			"{\"behavior\":\"deny\",\"message\":\"...\"}.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
	}, t.approvalPrompt)
	return s
}

const instructions = "Gatehouse asks people to approve sensitive tool calls. Before a call that spends money, " +
	"deploys, deletes or sends something on someone's behalf, call request_approval and run the call only if it " +
	"answers allow: true."

func ptr[T any](v T) *T { return &v }

// HTTPHandler serves the MCP streamable HTTP transport, stateless: every
// POST stands alone, and the caller of each tool call is the token that
// sent it (the TokenInfo's UserID, which the caller's middleware sets).
func HTTPHandler(g Gate, o Options) http.Handler {
	s := New(g, o)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: o.Logger})
}

// ProgressEvery is how often a Gate calls progress while it waits: well
// under the 60 s request timeout MCP clients use by default, which a
// progress notification resets (when the client asks for that).
const ProgressEvery = 20 * time.Second

// notifier returns a progress function for the call: a progress
// notification with the wait so far, when the client sent a progress token.
func notifier(ctx context.Context, req *mcp.CallToolRequest, what string) func() {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	start, n := time.Now(), 0
	return func() {
		n++
		msg := fmt.Sprintf("%s: waiting for a person's verdict (%s so far)", what, time.Since(start).Round(time.Second))
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
	}
}

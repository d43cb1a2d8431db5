package mcpserver

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/client"
)

// Remote asks a Gatehouse server through its HTTP API (POST /api/v1/gate),
// as `gatehouse mcp` does over stdio. It re-attaches by idempotency key
// through dropped connections and server restarts until a verdict comes or
// ctx ends; the server knows the caller from the client's token.
type Remote struct {
	Client *client.Client
	// AgentID labels the requests (default: the token's name).
	AgentID string
}

// Ask implements Gate.
func (r Remote) Ask(ctx context.Context, _ string, a Ask, progress func()) (Result, error) {
	c := *r.Client // a copy per call: OnPending is this call's
	c.Wait = ProgressEvery
	c.OnPending = func(client.Result) { progress() }
	res, err := c.Gate(ctx, client.Request{ToolName: a.ToolName, ToolArgs: a.ToolArgs, Summary: a.Summary,
		AgentID: r.AgentID, ToolCallID: a.ToolCallID, Metadata: a.Metadata, IdempotencyKey: a.IdempotencyKey})
	out := Result{RequestID: res.RequestID, Status: res.Status, Allow: res.Allow && err == nil, Error: res.Error,
		ModifiedArgs: res.ModifiedArgs, SideEffects: res.SideEffects}
	if err != nil && ctx.Err() != nil {
		// The client gave up the call (cancelled it or went away): the
		// request stays pending, and the same key re-attaches to it.
		return Result{RequestID: res.RequestID, Status: "pending", SideEffects: []string{}}, nil
	}
	return out, err
}

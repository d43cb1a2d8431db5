package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/mcpserver"
)

// mcpRoute mounts POST /mcp: the MCP streamable HTTP transport (stateless),
// with the tools request_approval and approval_prompt. It takes the agent
// API's bearer tokens: requireToken refuses a missing or wrong one in the
// API's error shape, and the SDK then learns the token's name as the
// caller of each tool call, which scopes its requests like the API's.
func (s *Server) mcpRoute(e *echo.Echo) {
	open := mcpserver.HTTPHandler(mcpGate{s}, mcpserver.Options{Version: s.opts.Version, Logger: s.log})
	withToken := auth.RequireBearerToken(s.mcpToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(open)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// requireToken ran first; its verdict says whether this server
		// (as it was configured for this call) has tokens at all.
		if a, ok := r.Context().Value(authedKey{}).(authed); ok && a.open {
			open.ServeHTTP(w, r)
			return
		}
		withToken.ServeHTTP(w, r)
	})
	e.POST("/mcp", echo.WrapHandler(carryRequest(h)), s.requireToken)
}

// httpRequestKey holds the HTTP request's own context in the contexts the
// SDK gives tool handlers: those keep its values but not its cancellation
// (the SDK cuts that, but for a newer protocol version than clients speak
// today), so a client that hung up would leave its call waiting until the
// verdict. mcpGate.Ask ends the wait when the request's context ends.
type httpRequestKey struct{}

func carryRequest(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), httpRequestKey{}, r.Context())))
	})
}

// mcpToken is the SDK's token verifier: the caller is the token's name.
func (s *Server) mcpToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	who, ok := s.auth.Load().caller(token)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: who.Name}, nil
}

// mcpGate asks the service directly: create or attach by idempotency key,
// like POST /api/v1/gate, then wait until the verdict, the MCP client's
// going away, or the server's shutting down (the request stays pending
// then, and the same key re-attaches to it).
type mcpGate struct{ s *Server }

func (g mcpGate) Ask(ctx context.Context, caller string, a mcpserver.Ask, progress func()) (mcpserver.Result, error) {
	s := g.s
	if hc, ok := ctx.Value(httpRequestKey{}).(context.Context); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(hc, cancel)()
	}
	b := SubmitBody{ToolName: a.ToolName, ToolArgs: a.ToolArgs, Summary: a.Summary, ToolCallID: a.ToolCallID,
		Metadata: a.Metadata, IdempotencyKey: a.IdempotencyKey}
	r, _, err := s.svc.Submit(ctx, b.Submission(caller))
	if err != nil {
		return mcpserver.Result{}, s.mcpError(err)
	}
	for !r.Status.Final() && ctx.Err() == nil && !closed(s.svc.Stopping()) {
		id := r.ID
		if r, err = s.svc.Wait(ctx, id, mcpserver.ProgressEvery); err != nil {
			return mcpserver.Result{RequestID: id}, s.mcpError(err)
		}
		if !r.Status.Final() && ctx.Err() == nil && !closed(s.svc.Stopping()) {
			progress()
		}
	}
	res := ResultOf(r, s.now())
	return mcpserver.Result{RequestID: res.RequestID, Status: res.Status, Allow: res.Allow,
		Error: res.Error, ModifiedArgs: res.ModifiedArgs, SideEffects: res.SideEffects}, nil
}

// mcpError is what an MCP client is told of a failure: the caller-facing
// message, never a database's words; internal failures are logged.
func (s *Server) mcpError(err error) error {
	code := gate.ErrorCode(err)
	if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
		s.log.Error("mcp call failed", "err", err)
	}
	return errors.New(gate.ErrorMessage(err))
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

var _ mcpserver.Gate = mcpGate{}

package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// HookWait is how long POST /hooks/{client} holds a call for its verdict
// when ?wait= is absent: a little under Claude Code's and Codex's 600 s
// default hook timeout, so the client hears an explicit deny rather than
// timing the hook out (which they treat as "proceed").
const HookWait = 590 * time.Second

// hookGrace is how far past its wait a hook call may run before it is
// answered with a deny, whatever it waits on.
const hookGrace = 2 * time.Second

// hookRoutes mounts POST /hooks/{client}: a target for Claude Code's (and
// Codex's) http hooks, and for any of the five clients' input posted by a
// script. Claude Code runs the tool when an http hook answers anything but a
// 2xx it can read, so this route never goes through the API's error path:
// a bad token, a body over the limit, bad JSON, a database error or a panic
// all answer 200 with the client's explicit deny.
func (s *Server) hookRoutes(e *echo.Echo) {
	e.POST("/hooks/:client", s.hookCall, s.hookToken)
}

// hookToken is requireToken for hook clients: the same check, but a failure
// is a deny they obey, not a 401 they would ignore.
func (s *Server) hookToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := s.authenticate(c)
		if err != nil {
			name := c.Param("client")
			s.log.Warn("hook call refused", "client", name, "err", err)
			// The body's first 64 KiB are read for its event alone (the
			// deny must be in that event's shape for the client to read
			// it): no more of an unauthenticated caller's input.
			body, _ := io.ReadAll(io.LimitReader(c.Request().Body, 64<<10))
			if hook.LooksLikeReport(name, body) {
				return s.hookNoted(c) // the tool ran; nothing to refuse
			}
			return s.hookFailed(c, hook.FailedCall(name, body, c.QueryParam("event")),
				hook.Failure(gate.ErrorMessage(err)+": set GATEHOUSE_TOKEN (sent as Authorization: Bearer) to one of the server's auth.api_tokens"))
		}
		s.admit(c, who)
		return next(c)
	}
}

// hookCall is POST /hooks/{client}?wait=590s: map the client's input to a
// request (create or attach by the call's key), hold until the verdict or
// the wait, and answer in the client's words.
func (s *Server) hookCall(c echo.Context) (err error) {
	name := c.Param("client")
	call := hook.Call{Client: name, Event: hook.PreToolUse}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("hook handler panicked", "client", name, "panic", p, "stack", string(debug.Stack()))
			err = s.hookFailed(c, call, hook.Failure("internal error"))
		}
	}()
	body, rerr := io.ReadAll(c.Request().Body)
	if rerr != nil && hook.LooksLikeReport(name, body) {
		s.log.Warn("a report of what ran was not recorded", "client", name, "err", rerr)
		return s.hookNoted(c)
	}
	if rerr != nil {
		msg := "reading the request failed"
		if tooLarge(rerr) {
			msg = "the tool call is larger than 1 MiB, too large to show an approver"
		}
		// What was read shows the event, for the deny's shape.
		return s.hookFailed(c, hook.FailedCall(name, body, c.QueryParam("event")), hook.Failure(msg))
	}
	// ?event= names the event for clients whose input does not (Copilot),
	// as the command hook's --event does.
	call, perr := hook.ParseAs(name, body, c.QueryParam("event"))
	if perr != nil {
		c.Response().Header().Set(HookStatusHeader, HookStatusError)
		return c.JSONBlob(http.StatusOK, hook.Invalid(call, perr).Stdout)
	}
	if call.Report() {
		s.hookReport(c.Request().Context(), s.access(c), call)
		return s.hookNoted(c)
	}
	wait, werr := s.parseWait(c, HookWait)
	if werr != nil {
		return s.hookFailed(c, call, hook.Failure(gate.ErrorMessage(werr)))
	}
	ctx := c.Request().Context()
	start := s.now()
	agent := agentName(c)
	if a := c.QueryParam("agent"); a != "" {
		agent = text.EllipsisBytes(a, 256) // a label (agent_id); routes match the token
	}
	// Nothing the settling waits on (a database lock, a pool with no free
	// connection) may hold the answer past the wait: the client's timeout,
	// set just above it, would run out, and the client runs the tool.
	ctx, cancel := context.WithDeadline(ctx, start.Add(wait+hookGrace))
	defer cancel()
	o, ferr := s.hookSettle(ctx, call, agent, s.caller(c), start.Add(wait))
	if ferr != nil {
		code := gate.ErrorCode(ferr)
		if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
			s.log.Error("hook call failed", "client", name, "tool", call.ToolName, "err", ferr)
		}
		return s.hookFailed(c, call, hook.Failure(gate.ErrorMessage(ferr)))
	}
	return s.hookAnswer(c, call, hook.VerdictOf(o, s.now().Sub(start)), o.Status)
}

// hookSettle finds the call's request along its keys (see hook.Call.Key) and
// waits for it until the deadline: the hook's wait counts from the call's
// arrival, so that time spent finding the request (a slow database) does
// not carry the answer past the client's own timeout, which most clients
// take as leave to run the tool. The walk past earlier identical calls only
// reads; the one submission is for the request that answers this call, new
// or found.
func (s *Server) hookSettle(ctx context.Context, call hook.Call, agent, caller string, deadline time.Time) (hook.Outcome, error) {
	// Where the requests along the keys stand, in one read: a call its
	// session has made 64 times over would otherwise walk 64 reads.
	keys := call.Keys(hook.MaxChain)
	used, err := s.svc.KeyStates(ctx, gate.Caller{Name: caller}, keys)
	if err != nil {
		return hook.Outcome{}, err
	}
	for n := 0; ; n++ {
		last := n >= len(keys)
		if !last {
			prev, ok := used[keys[n]]
			if ok && !call.Reusable(hook.Outcome{Status: string(prev.Status), DecidedAt: prev.DecidedAt, ToolCallID: prev.ToolCallID}, s.now()) {
				continue // an earlier identical call's request
			}
		}
		sub := HookSubmission(call.Ask(n))
		sub.AgentID, sub.Caller = agent, caller
		if last {
			// This exact call has been made over and over; give this one a
			// request of its own rather than walk further.
			sub.IdempotencyKey = call.PastKey(s.now())
		}
		// Creates the request, or attaches to the one found (or made
		// meanwhile by a concurrent hook call), checking it is this call.
		r, _, err := s.svc.Submit(ctx, sub)
		if gate.ErrorCode(err) == gate.EIDEMPOTENCY && !last {
			continue // the key's request, made meanwhile, is another call's
		}
		if err != nil {
			return hook.Outcome{}, err
		}
		if !last && !call.Reusable(outcomeOf(r, s.now()), s.now()) {
			continue
		}
		id := r.ID
		if r.Status.Final() {
			return outcomeOf(r, s.now()), nil // also a record: false allow, which is never stored
		}
		if r, err = s.svc.Wait(ctx, id, max(deadline.Sub(s.now()), 0)); err != nil {
			return hook.Outcome{RequestID: id}, err
		}
		return outcomeOf(r, s.now()), nil
	}
}

// HookSubmission turns a hook's ask into the gate's submission (also what
// `gatehouse policy test --hook` decides). A hook does not ask for
// confirmation itself: the config decides (see hook.Call.Ask).
func HookSubmission(a hook.Ask) gate.Submission {
	no := false
	return gate.Submission{ToolName: a.ToolName, ToolArgs: a.ToolArgs, RequiresConfirmation: &no, Summary: a.Summary,
		SessionID: a.SessionID, ToolCallID: a.ToolCallID, Metadata: a.Metadata, IdempotencyKey: a.IdempotencyKey, MCPServer: a.MCPServer}
}

// outcomeOf reads a request as a hook's answer depends on it.
func outcomeOf(r *gate.Request, now time.Time) hook.Outcome {
	return hook.Outcome{RequestID: r.ID, Status: string(r.Status), Allow: r.Allowed(), AgentDecided: r.DecidedBy == gate.ActorAgent,
		Explain: r.Explain(now), ModifiedArgs: hook.Edits(r.ModifiedArgs), DecidedAt: r.DecidedAt, ToolCallID: r.ToolCallID}
}

// The hook endpoint's answer names the request's status in a header, for
// the command hook (gatehouse hook), which prints the body: pending means
// the wait ended before a verdict (ask again to keep waiting), error a
// failure the body denies, noted a report of what ran.
const (
	HookStatusHeader = "Gatehouse-Status"
	HookStatusError  = "error"
	HookStatusNoted  = "noted" // a report of what ran, taken or not
)

// hookNoted answers a report of what ran (PostToolUse): nothing to decide.
func (s *Server) hookNoted(c echo.Context) error {
	c.Response().Header().Set(HookStatusHeader, HookStatusNoted)
	return c.JSONBlob(http.StatusOK, hook.Noted().Stdout)
}

// hookFailed answers a failure: the client's explicit deny.
func (s *Server) hookFailed(c echo.Context, call hook.Call, v hook.Verdict) error {
	return s.hookAnswer(c, call, v, HookStatusError)
}

// hookAnswer writes a verdict as the client's JSON, always with 200.
func (s *Server) hookAnswer(c echo.Context, call hook.Call, v hook.Verdict, status string) error {
	c.Response().Header().Set(HookStatusHeader, status)
	if v.Kind == hook.Deny {
		s.log.Info("hook call denied", "client", call.Client, "tool", call.ToolName, "request_id", v.RequestID, "reason", v.Reason)
	}
	if v.RequestID != "" {
		c.Response().Header().Set("Gatehouse-Request-Id", v.RequestID)
	}
	return c.JSONBlob(http.StatusOK, hook.Render(call, v).Stdout)
}

// hookReport records what ran on the request the token made for the call:
// found by the client's call id (tool_use_id) in its session, or else along
// the call's keys (a PermissionRequest carries no call id). A report for a
// call Gatehouse never saw, of another token's request, or of a request
// that was not approved writes nothing. The tool's output is redacted
// before it is written: the trail is sealed as written.
func (s *Server) hookReport(ctx context.Context, who gate.Caller, call hook.Call) {
	ask := call.Ask(0)
	r, err := s.svc.ByCall(ctx, who, ask.SessionID, ask.ToolCallID)
	if gate.ErrorCode(err) == gate.ENOTFOUND {
		r, err = s.reportByKey(ctx, who, call)
	}
	if err != nil {
		if gate.ErrorCode(err) != gate.ENOTFOUND {
			s.log.Warn("what ran was not recorded", "client", call.Client, "tool", call.ToolName, "err", err)
		}
		return
	}
	if r.ToolName != call.ToolName {
		return
	}
	// What ran must be what was approved: the approver's edit when there
	// is one, else the call as asked. A report of other input (another
	// hook's updatedInput, a client that ignored the edit) is not this
	// approval's outcome.
	approved := r.ToolArgs
	if jsonx.Edited(r.ModifiedArgs, r.ToolArgs) {
		approved = r.ModifiedArgs
	}
	if !jsonx.Same(call.Ask(0).ToolArgs, approved) {
		s.log.Warn("what ran was not recorded: the client ran other arguments than were approved", "request_id", r.ID, "tool", call.ToolName)
		return
	}
	rd := s.opts.Present.Redactor()
	var detail string
	if call.Ran.Failed {
		detail = rd.Text(call.Ran.Error)
		if call.Ran.Interrupted {
			detail += " (interrupted)"
		}
	} else {
		detail = outcomeText(rd.JSON(call.Ran.Output))
	}
	if _, err := s.svc.Ran(ctx, who, r.ID, call.Ran.Failed, detail); err != nil {
		s.log.Warn("what ran was not recorded", "request_id", r.ID, "err", err)
	}
}

// reportByKey finds the newest request along the call's keys (see
// hook.Call.Key), one that no other call id claims.
func (s *Server) reportByKey(ctx context.Context, who gate.Caller, call hook.Call) (*gate.Request, error) {
	keys := call.Keys(hook.MaxChain)
	used, err := s.svc.KeyStates(ctx, who, keys)
	if err != nil {
		return nil, err
	}
	last := ""
	for _, k := range keys {
		if _, ok := used[k]; !ok {
			break
		}
		last = k
	}
	if last == "" || (used[last].ToolCallID != "" && used[last].ToolCallID != call.CallID()) {
		return nil, gate.Errorf(gate.ENOTFOUND, "no request for this call")
	}
	return s.svc.ByKey(ctx, who, last)
}

// outcomeText is a tool's output as the trail keeps it: a string as its
// text, anything else as one line of JSON with strings as written.
func outcomeText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	if out, _, err := jsonx.Rewrite(raw, nil, nil, ""); err == nil {
		return string(out)
	}
	return string(raw)
}

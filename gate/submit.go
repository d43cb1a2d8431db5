package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Submission is what an agent asks for.
type Submission struct {
	ToolName string
	ToolArgs json.RawMessage
	// RequiresConfirmation nil means true: the gate fails closed.
	RequiresConfirmation *bool
	Summary              string
	// AgentID labels the request (history, cards). It is what the agent
	// says; routes match Caller instead.
	AgentID string
	// Caller is the authenticated agent (the API token's name), which
	// routes' agent globs match, so an agent cannot pick its own route by
	// naming itself, and to which idempotency keys, reads and cancels are
	// scoped. Empty on a server without tokens: AgentID stands in for routing.
	Caller         string
	UserID         string
	SessionID      string
	ToolCallID     string
	Metadata       json.RawMessage
	Route          string
	Timeout        time.Duration
	IdempotencyKey string
}

// Field limits, so that one request can never bloat the table or a card.
const (
	maxNameLen = 256
	maxTextLen = 4096
	maxArgsLen = 256 << 10
)

func (s *Service) validate(in *Submission) error {
	in.ToolName = strings.TrimSpace(in.ToolName)
	if in.ToolName == "" {
		return Errorf(EINVALID, "tool_name: required")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"tool_name", &in.ToolName}, {"agent_id", &in.AgentID}, {"user_id", &in.UserID}, {"session_id", &in.SessionID},
		{"tool_call_id", &in.ToolCallID}, {"route", &in.Route}, {"idempotency_key", &in.IdempotencyKey}} {
		if len(*f.v) > maxNameLen {
			return Errorf(EINVALID, "%s: longer than %d bytes", f.name, maxNameLen)
		}
		if text.Clean(*f.v) != *f.v {
			return Errorf(EINVALID, "%s: not valid UTF-8 text", f.name)
		}
	}
	if len(in.Summary) > maxTextLen {
		return Errorf(EINVALID, "summary: longer than %d bytes", maxTextLen)
	}
	in.Summary = text.Clean(in.Summary)
	args, err := compactJSON(in.ToolArgs, "{}")
	if err != nil {
		return Errorf(EINVALID, "tool_args: not valid JSON: %v", err)
	}
	if len(args) > maxArgsLen {
		return Errorf(EINVALID, "tool_args: larger than %d KiB", maxArgsLen>>10)
	}
	in.ToolArgs = args
	meta, err := compactJSON(in.Metadata, "{}")
	if err != nil || meta[0] != '{' {
		return Errorf(EINVALID, "metadata: must be a JSON object")
	}
	if len(meta) > maxArgsLen {
		return Errorf(EINVALID, "metadata: larger than %d KiB", maxArgsLen>>10)
	}
	in.Metadata = meta
	if in.Timeout < 0 || (in.Timeout > 0 && in.Timeout < time.Second) {
		return Errorf(EINVALID, "timeout_seconds: must be at least 1")
	}
	if in.Timeout > s.defaults.MaxTimeout {
		return Errorf(EINVALID, "timeout_seconds: must be at most %d", int(s.defaults.MaxTimeout.Seconds()))
	}
	return nil
}

// compactJSON checks raw is one JSON value and returns it compacted, or def
// when raw is empty or null.
func compactJSON(raw json.RawMessage, def string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(def), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// route picks the request's route: the first that matches, else the
// defaults. A route the caller names must be that one: naming a broader
// route would let it dodge the stricter one's approvers.
func (s *Service) route(in *Submission) (Route, bool, error) {
	caller := in.Caller
	if caller == "" {
		caller = in.AgentID
	}
	rt, matched := Route{}, false
	for _, r := range s.routes {
		if r.Matches(in.ToolName, caller) {
			rt, matched = r, true
			break
		}
	}
	if !matched {
		d := s.defaults
		rt = Route{Name: "default", Channels: d.Channels, Approvers: d.Approvers, Timeout: d.Timeout, OnTimeout: d.OnTimeout}
	}
	if in.Route != "" && in.Route != rt.Name {
		return Route{}, false, Errorf(EINVALID, "route: tool %q goes to route %q, not %q (routes are chosen by the server)", in.ToolName, rt.Name, in.Route)
	}
	return rt, matched, nil
}

// Submit records a request, or returns the one its caller already recorded
// under its idempotency key (created false). A call that needs no human is
// approved at once by policy and recorded as such; any other goes to its
// channels.
func (s *Service) Submit(ctx context.Context, in Submission) (*Request, bool, error) {
	if err := s.validate(&in); err != nil {
		return nil, false, err
	}
	rt, matched, err := s.route(&in)
	if err != nil {
		return nil, false, err
	}
	now := s.stamp()
	timeout := rt.Timeout
	if timeout <= 0 {
		timeout = s.defaults.Timeout
	}
	onTimeout := rt.OnTimeout
	if onTimeout == "" {
		onTimeout = s.defaults.OnTimeout
	}
	if in.Timeout > 0 {
		// On a route whose silence means allow, a shorter wait would be an
		// allow the agent grants itself.
		if onTimeout == VerdictAllow && in.Timeout < timeout {
			return nil, false, Errorf(EINVALID, "timeout_seconds: route %q allows on timeout, so its %s wait cannot be shortened", rt.Name, timeout)
		}
		timeout = in.Timeout
	}
	r := &Request{
		ID: s.newID(), Status: StatusPending, ToolName: in.ToolName, ToolArgs: in.ToolArgs,
		RequiresConfirmation: in.RequiresConfirmation == nil || *in.RequiresConfirmation,
		Summary:              in.Summary, AgentID: agentLabel(&in), UserID: in.UserID, SessionID: in.SessionID,
		ToolCallID: in.ToolCallID, Metadata: in.Metadata, Route: rt.Name, Caller: in.Caller, IdempotencyKey: in.IdempotencyKey,
		Channels: rt.Channels, Approvers: rt.Approvers, Quorum: max(rt.Quorum, 1), OnTimeout: onTimeout,
		CreatedAt: now, ExpiresAt: now.Add(timeout),
	}
	var events []Event
	if r.RequiresConfirmation || (matched && rt.Confirm) {
		events = []Event{{Type: EventCreated, At: now, Actor: actorOf(r),
			Detail: fmt.Sprintf("route %s; channels %s; expires %s; on timeout %s", r.Route, strings.Join(r.Channels, ", "), r.ExpiresAt.Format(time.RFC3339), r.OnTimeout)}}
	} else {
		r.Status = StatusApproved
		r.DecidedAt = &now
		r.DecidedBy = ActorSystem
		r.DecidedVia = ViaPolicy
		r.Reason = "no confirmation required"
		r.Channels = nil
		events = []Event{{Type: EventAutoAllowed, At: now, Actor: ActorSystem, Channel: ViaPolicy,
			Detail: fmt.Sprintf("route %s: no confirmation required", r.Route)}}
	}
	got, created, err := s.store.Create(ctx, r, events)
	if err != nil {
		return nil, false, err
	}
	if !created {
		return s.attach(got, r)
	}
	s.obs.RequestCreated(got.Route)
	if got.Status.Final() {
		s.obs.RequestFinished(got.Route, got.Status, 0)
	}
	s.log.Info("request created", "request_id", got.ID, "tool", got.ToolName, "route", got.Route, "status", got.Status)
	if len(got.Channels) > 0 && !got.Status.Final() {
		s.kickWork()
	}
	return got, true, nil
}

// attach answers a submission whose idempotency key its caller used before.
// The key stands for one tool call: the same tool with the same arguments,
// by the same agent, on the same route, asking the same thing; an approval
// is for that call and never answers another.
func (s *Service) attach(r, in *Request) (*Request, bool, error) {
	conflict := func(what string) (*Request, bool, error) {
		return nil, false, Errorf(EIDEMPOTENCY, "idempotency_key: already used by request %s %s", r.ID, what)
	}
	switch {
	case r.Caller != in.Caller: // the store matches by caller; this is a second lock on the door
		return conflict("of another token")
	case r.ToolName != in.ToolName:
		return conflict(fmt.Sprintf("for tool %q", r.ToolName))
	case !bytes.Equal(r.ToolArgs, in.ToolArgs):
		return conflict("with other arguments")
	case r.AgentID != in.AgentID:
		return conflict("of another agent")
	case r.Route != in.Route:
		return conflict(fmt.Sprintf("on route %q, not %q", r.Route, in.Route))
	case r.RequiresConfirmation != in.RequiresConfirmation:
		return conflict(fmt.Sprintf("with requires_confirmation %v", r.RequiresConfirmation))
	}
	return r, false, nil
}

// agentLabel is the agent id a request records: what the agent says, else
// the authenticated caller.
func agentLabel(in *Submission) string {
	if in.AgentID != "" {
		return in.AgentID
	}
	return in.Caller
}

func actorOf(r *Request) string {
	if r.AgentID != "" {
		return "agent:" + r.AgentID
	}
	return "agent"
}

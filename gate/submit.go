package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/text"
	"github.com/gatehouse-dev/gatehouse/policy"
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
	// MCPServer: a Cursor MCP call (set by the hook's reading of the
	// client's input, never from a request body): its bare tool name is
	// its server's, to which no Bash(…) or path rule applies.
	MCPServer bool `json:"-"`
}

// Field limits, so that one request can never bloat the table or a card.
const (
	maxNameLen = 256
	maxTextLen = 4096
	maxArgsLen = 256 << 10
)

func validate(in *Submission, maxTimeout time.Duration) error {
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
	if k, dup := keyTwice(args); dup {
		// The policy reads the last value; a tool may run with the first.
		return Errorf(EINVALID, "tool_args: the key %q appears twice in one object "+giveOnce, k)
	}
	in.ToolArgs = args
	meta, err := compactJSON(in.Metadata, "{}")
	if err != nil {
		return Errorf(EINVALID, "metadata: not valid JSON: %v", err)
	}
	if meta[0] != '{' {
		return Errorf(EINVALID, "metadata: must be a JSON object")
	}
	if len(meta) > maxArgsLen {
		return Errorf(EINVALID, "metadata: larger than %d KiB", maxArgsLen>>10)
	}
	if k, dup := keyTwice(meta); dup {
		return Errorf(EINVALID, "metadata: the key %q appears twice in one object "+giveOnce, k)
	}
	in.Metadata = meta
	if in.Timeout < 0 || (in.Timeout > 0 && in.Timeout < time.Second) {
		return Errorf(EINVALID, "timeout_seconds: must be at least 1")
	}
	if in.Timeout > maxTimeout {
		return Errorf(EINVALID, "timeout_seconds: must be at most %d", int(maxTimeout.Seconds()))
	}
	return nil
}

// compactJSON checks raw is one JSON value and returns it compacted, or def
// when raw is empty or null.
// keyTwice is a key some object of raw holds twice (jsonx.DuplicateKey),
// cut for an error.
func keyTwice(raw []byte) (string, bool) {
	k, dup := jsonx.DuplicateKey(raw)
	k, _ = text.CutRunes(k, 100)
	return k, dup
}

// giveOnce ends the error of a key given twice.
const giveOnce = "(keys that differ only in case count as one): give it once"

func compactJSON(raw json.RawMessage, def string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(def), nil
	}
	if !utf8.Valid(raw) {
		// JSON is UTF-8; the stored text, and the digest the audit chain
		// seals of it, must be the bytes the call holds, not a reading
		// of them in which every invalid byte is the same U+FFFD.
		return nil, errors.New("not valid UTF-8")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	if loneSurrogate(buf.Bytes()) {
		// Go reads every unpaired surrogate escape as U+FFFD: two calls
		// the tool tells apart would be one call to a grant's hash.
		return nil, errors.New(`an unpaired surrogate escape (\ud800-\udfff) is not text`)
	}
	return buf.Bytes(), nil
}

// loneSurrogate reports whether compact JSON holds a \uD800-\uDFFF escape
// that is not a high surrogate followed by a low one.
func loneSurrogate(b []byte) bool {
	hex4 := func(i int) (int, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return int(v), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if v, ok := hex4(i); ok && v >= 0xD800 && v <= 0xDFFF {
			if w, ok := hex4(i + 6); v <= 0xDBFF && ok && w >= 0xDC00 && w <= 0xDFFF {
				i += 11
				continue
			}
			return true
		}
		i++ // skip the escaped character
	}
	return false
}

// decision is what the policy made of a submission.
type decision struct {
	route   Route
	matched bool
	action  policy.Action // ask, allow or deny: the agent's flag already applied
	byAgent bool          // the agent's requires_confirmation made the action
	raised  bool          // the agent's requires_confirmation raised an allow to an ask
	unread  bool          // the call, or a part of it, cannot be read (policy.Result.Unread)
	byError bool          // the route matched because its condition failed (policy.Result.ByError)
	errors  []string      // conditions that failed to evaluate on the way
	steps   []policy.Step // every route tried, when explaining
}

// askedAlone says why the call is asked about for itself and a person only,
// with none of its route's lenient terms; "" when it is not.
func (d decision) askedAlone() string {
	switch {
	case d.unread:
		return "the call cannot be read in full"
	case d.byError:
		return "the route's condition failed on the call"
	}
	return ""
}

// decide runs the policy over a submission. The route a caller names must
// be the one the policy picks: naming a broader route would let it dodge
// the stricter one's approvers.
func (rs *rules) decide(in *Submission, now time.Time, explain bool) (decision, error) {
	c := policy.NewCall(in.ToolName, in.ToolArgs, in.Metadata)
	c.MCPServer = in.MCPServer
	c.Agent, c.AgentLabel, c.User, c.Session, c.Now = agentKey(in.Caller, in.AgentID), agentLabel(in), in.UserID, in.SessionID, now
	res := rs.policy.Evaluate(c, explain)
	d := decision{errors: res.Errors, action: rs.defaults.Action, steps: res.Steps, unread: res.Unread, byError: res.ByError}
	if res.Route >= 0 {
		d.route, d.matched, d.action = rs.routes[res.Route], true, res.Action
	} else {
		df := rs.defaults
		d.route = Route{Name: "default", Channels: df.Channels, Approvers: df.Approvers, Timeout: df.Timeout, OnTimeout: df.OnTimeout}
	}
	if in.Route != "" && in.Route != d.route.Name {
		return d, Errorf(EINVALID, "route: tool %q goes to route %q, not %q (routes are chosen by the server)", in.ToolName, d.route.Name, in.Route)
	}
	asked := in.RequiresConfirmation == nil || *in.RequiresConfirmation
	switch {
	case d.action == "" || d.action == policy.Agent:
		// The agent's flag decides, failing closed when it says nothing.
		d.action, d.byAgent = policy.Allow, true
		if asked {
			d.action = policy.Ask
		}
	case d.action == policy.Allow && in.RequiresConfirmation != nil && *in.RequiresConfirmation:
		// An agent may ask for a person where the policy would allow;
		// nothing it sends turns an ask or a deny into an allow.
		d.action, d.raised = policy.Ask, true
	}
	return d, nil
}

// Submit records a request, or returns the one its caller already recorded
// under its idempotency key (created false). The policy decides first: a
// deny route, a rate limit over its count, an allow route or a grant
// decide at once, and the request is recorded with that verdict; any other
// call waits for a person, through its route's channels.
func (s *Service) Submit(ctx context.Context, in Submission) (*Request, bool, error) {
	rs := s.rules.Load()
	if gen, ok := ctx.Value(generationKey{}).(uint64); ok && gen != rs.gen {
		return nil, false, Errorf(EUNAVAILABLE, "the config was reloaded while this call was read: send it again")
	}
	if err := validate(&in, rs.defaults.MaxTimeout); err != nil {
		return nil, false, err
	}
	now := s.stamp()
	d, err := rs.decide(&in, now, false)
	if err != nil {
		return nil, false, err
	}
	rt := d.route
	timeout, onTimeout := rs.waitOf(rt)
	remember := rt.Remember
	if d.askedAlone() != "" {
		// A call the policy cannot read, or one its route's condition
		// failed on, is asked about for itself and a person only: a
		// route's lenient terms (silence allows, approve for a while,
		// grants) are for the calls it names, and no one knows this is one.
		onTimeout, remember = VerdictDeny, 0
	}
	if in.Timeout > 0 {
		// On a route whose silence means allow, a shorter wait would be an
		// allow the agent grants itself.
		if onTimeout == VerdictAllow && in.Timeout < timeout {
			return nil, false, Errorf(EINVALID, "timeout_seconds: route %q allows on timeout, so its %s wait cannot be shortened", rt.Name, timeout)
		}
		timeout = in.Timeout
	}
	var sent *bool // the agent's word as it sent it, absent kept absent
	if in.RequiresConfirmation != nil {
		v := *in.RequiresConfirmation
		sent = &v
	}
	r := &Request{
		ID: s.newID(), Status: StatusPending, ToolName: in.ToolName, ToolArgs: in.ToolArgs,
		RequiresConfirmation: sent,
		Summary:              in.Summary, AgentID: agentLabel(&in), UserID: in.UserID, SessionID: in.SessionID,
		ToolCallID: in.ToolCallID, Metadata: in.Metadata, Route: rt.Name, Caller: in.Caller, IdempotencyKey: in.IdempotencyKey,
		Channels: rt.Channels, Approvers: rt.Approvers, Quorum: max(rt.Quorum, 1), OnTimeout: onTimeout,
		CreatedAt: now, ExpiresAt: now.Add(timeout),
		RememberSeconds: int64(remember / time.Second), RememberAnyArgs: rt.RememberAny,
		Person: rs.people.asker(in.Caller, in.UserID), Plan: rt.Plan, MCPServer: in.MCPServer,
	}
	if rt.RememberAny {
		r.Plan.Matched = rt.matchKey()
	}
	var events []Event
	for _, e := range d.errors {
		e, _ = text.CutBytes(text.Clean(e), maxTextLen)
		events = append(events, Event{Type: EventPolicyError, At: now, Actor: ActorSystem, Channel: ViaPolicy, Detail: e})
	}
	if in.IdempotencyKey != "" && d.action != policy.Deny && (rt.Rate != nil || rt.NoRecord) {
		// A retry under a key already used gets what the key holds (or
		// is refused when the call changed), and is not counted again.
		// It must be answered here: on a record: false route an allow is
		// never stored, so no Create would find what the key holds, and a
		// call the limit denied, or one the agent raised to an ask that a
		// person rejected, would be allowed on its retry.
		prev, err := s.store.ByKey(ctx, in.Caller, in.IdempotencyKey)
		if err == nil {
			return s.attach(prev, r, d.action)
		} else if ErrorCode(err) != ENOTFOUND {
			return nil, false, err
		}
	}
	if d.action != policy.Deny && rt.Rate != nil {
		over, err := s.overRate(ctx, &in, rt, now)
		if err != nil {
			return nil, false, err
		}
		if over != "" {
			return s.record(ctx, r, events, StatusRejected, ActorSystem, ViaPolicy, over)
		}
	}
	switch d.action {
	case policy.Deny:
		reason := routeReason("denied", rt)
		if d.unread {
			reason += " (the call cannot be read, so it may be what this route denies)"
		}
		return s.record(ctx, r, events, StatusRejected, ActorSystem, ViaPolicy, reason)
	case policy.Allow:
		if d.byAgent {
			return s.record(ctx, r, events, StatusApproved, ActorAgent, ViaPolicy,
				"no confirmation required: the agent sent requires_confirmation false and route "+rt.Name+" does not ask")
		}
		if rt.NoRecord && len(events) == 0 {
			// Unless a condition failed on the way: its error belongs in
			// a trail, so that call is recorded.
			return s.unrecorded(r, rt), true, nil
		}
		return s.record(ctx, r, events, StatusApproved, ActorSystem, ViaPolicy, routeReason("allowed", rt))
	}
	if remember > 0 {
		g, err := s.store.FindGrant(ctx, rt.Name, grantKey(in.Caller, in.AgentID), in.ToolName, grantHash(r), now)
		if err != nil {
			return nil, false, err
		}
		if g != nil && s.grantHolds(g, r, rt, rs.people, now) {
			events = append(events, Event{Type: EventGrantUsed, At: now, Actor: g.GivenBy, Channel: ViaGrant,
				Detail: fmt.Sprintf("grant %s, given by %s via %s on request %s, until %s", g.ID, g.GivenBy, g.GivenVia, g.RequestID,
					g.ExpiresAt.Format(time.RFC3339))})
			r.ByGrant = g.ID // Create checks it is still active as it writes
			return s.record(ctx, r, events, StatusApproved, g.GivenBy, ViaGrant,
				fmt.Sprintf("grant %s given by %s until %s", g.ID, g.GivenBy, g.ExpiresAt.Format(time.RFC3339)))
		}
	}
	events = append(events, Event{Type: EventCreated, At: now, Actor: actorOf(r),
		Detail: fmt.Sprintf("route %s; channels %s; expires %s; on timeout %s", r.Route, strings.Join(r.Channels, ", "), r.ExpiresAt.Format(time.RFC3339), r.OnTimeout)})
	if r.Person != "" {
		events[len(events)-1].Detail += "; asked by person " + r.Person
	}
	if why := d.askedAlone(); why != "" {
		events[len(events)-1].Detail += "; " + why + ", so no grant covers it and silence denies it"
	}
	var note string
	r.NewCards, note = s.firstCards(r, rs.people)
	if note != "" {
		events[len(events)-1].Detail += "; " + note
	}
	r.NextStepAt = nextStep(r, nil)
	sealCall(r, events)
	got, created, err := s.store.Create(ctx, r, events)
	if err != nil {
		return nil, false, err
	}
	if !created {
		return s.attach(got, r, policy.Ask)
	}
	s.obs.RequestCreated(got.Route)
	s.log.Info("request created", "request_id", got.ID, "tool", got.ToolName, "route", got.Route, "status", got.Status)
	if len(got.Channels) > 0 {
		s.kickWork()
	}
	return got, true, nil
}

// routeReason names the route (and its message) in a policy verdict.
func routeReason(verb string, rt Route) string {
	reason := verb + " by route " + rt.Name
	if rt.Name == "default" {
		reason = verb + " by the defaults"
	}
	if rt.Message != "" {
		reason += ": " + rt.Message
	}
	return reason
}

// record stores a request decided without asking anyone, with its verdict.
func (s *Service) record(ctx context.Context, r *Request, events []Event, status Status, by, via, reason string) (*Request, bool, error) {
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = status, &r.CreatedAt, by, via, reason
	r.Channels = nil
	if via == ViaPolicy {
		events = append(events, Event{Type: EventPolicy, At: r.CreatedAt, Actor: ActorSystem, Channel: ViaPolicy,
			Detail: string(status) + ": " + reason})
	}
	sealCall(r, events)
	got, created, err := s.store.Create(ctx, r, events)
	if err != nil {
		return nil, false, err
	}
	if !created {
		now := policy.Allow
		if status != StatusApproved {
			now = policy.Deny // denied, or over its rate limit
		}
		return s.attach(got, r, now)
	}
	s.obs.RequestCreated(got.Route)
	s.obs.RequestFinished(got.Route, got.Status, 0)
	s.obs.Decided(got.Route, got.Status, via, true)
	// A policy or grant allow comes with every harmless tool call: at
	// debug, so the log keeps what people and denials decided.
	level := slog.LevelInfo
	if got.Status == StatusApproved {
		level = slog.LevelDebug
	}
	s.log.Log(ctx, level, "request "+string(got.Status), "request_id", got.ID, "tool", got.ToolName, "route", got.Route, "via", via)
	return got, true, nil
}

// unrecorded answers a call a route allows without keeping it (record:
// false): the request is never stored, only counted.
func (s *Service) unrecorded(r *Request, rt Route) *Request {
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia = StatusApproved, &r.CreatedAt, ActorSystem, ViaPolicy
	r.Reason, r.Channels = routeReason("allowed", rt)+" (not recorded)", nil
	s.obs.RequestCreated(r.Route)
	s.obs.RequestFinished(r.Route, r.Status, 0)
	s.obs.Decided(r.Route, r.Status, ViaPolicy, false)
	return r
}

// attach answers a submission whose idempotency key its caller used before.
// The key stands for one tool call: the same tool with the same arguments,
// by the same agent, on the same route, asking the same thing; an approval
// is for that call and never answers another. What the key holds answers
// the call only as far as the rules as they are now (which decide now)
// agree: a call they deny is not allowed, nor left waiting for a person,
// by what earlier rules did (a reload that tightened a route holds at once,
// also for a hook's repeated call, which reuses its key for a minute), and
// a call they ask about is not allowed by an earlier policy allow or grant,
// though a person's approval of this very call still answers it, and so
// does its expiry when the route still allows on timeout (in.OnTimeout is
// what the rules give now): the agent that reconnects after the deadline,
// or after a restart past it, gets the verdict its route gave.
func (s *Service) attach(r, in *Request, now policy.Action) (*Request, bool, error) {
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
	case !samePlace(r.Metadata, in.Metadata):
		return conflict("in another working directory or for another MCP server")
	case r.ToolCallID != "" && in.ToolCallID != "" && r.ToolCallID != in.ToolCallID:
		return conflict(fmt.Sprintf("for call %q", r.ToolCallID))
	case r.AgentID != in.AgentID:
		return conflict("of another agent")
	case r.Route != in.Route:
		return conflict(fmt.Sprintf("on route %q, not %q", r.Route, in.Route))
	case r.Asked() != in.Asked(): // absent and true ask alike, as they always have
		return conflict(fmt.Sprintf("with requires_confirmation %v", r.Asked()))
	case now == policy.Deny && (r.Allowed() || r.Status == StatusPending):
		return conflict(fmt.Sprintf("(%s) for a call the rules now deny", r.Status))
	case now == policy.Ask && r.Allowed() && !byPerson(r) && !(r.Status == StatusExpired && in.OnTimeout == VerdictAllow):
		return conflict(fmt.Sprintf("(%s by %s via %s) for a call the rules now ask a person about", r.Status, r.DecidedBy, r.DecidedVia))
	}
	return r, false, nil
}

// byPerson says a person decided r: not a route, the agent's own word, a
// grant or the deadline.
func byPerson(r *Request) bool {
	switch {
	case r.DecidedBy == ActorSystem || r.DecidedBy == ActorAgent:
		return false
	case r.DecidedVia == ViaPolicy || r.DecidedVia == ViaGrant:
		return false
	}
	return r.DecidedBy != ""
}

// samePlace reports whether two calls' metadata say they run in the same
// place (placeOf): the same directory, and the same MCP server.
func samePlace(a, b []byte) bool {
	return slices.EqualFunc(placeOf(a), placeOf(b), bytes.Equal)
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

// sealCall puts the digest of what r asks for (audit.Call), and of its
// verdict when the policy decided it at once, into the detail of the last
// event its creation writes, the one that says what became of it: the
// audit chain then holds them, and `gatehouse audit verify` finds a row
// whose arguments or verdict were changed afterwards.
func sealCall(r *Request, events []Event) {
	if len(events) > 0 {
		e := &events[len(events)-1]
		e.Detail += "; " + r.Call().Mark()
		if r.Status.Final() {
			SealVerdict(e, r) // decided at once: the same event says how
		}
	}
}

package gate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
)

// Defaults apply to requests that match no route.
type Defaults struct {
	Timeout    time.Duration // how long a request waits; 10m when zero
	MaxTimeout time.Duration // the longest timeout a caller may ask for; 24h when zero
	OnTimeout  Verdict       // deny when empty
	Channels   []string      // the web channel when empty
	Approvers  []string
}

// Options configure a Service. Store is required; the rest has defaults.
type Options struct {
	Store    Store
	Routes   []Route
	Defaults Defaults
	Now      func() time.Time
	Logger   *slog.Logger
	Notifier Notifier
	Observer Observer
	// SafetyInterval is how often waited-on rows are re-read in one batch, in
	// case a wake-up was lost (another replica without a Notifier, a dropped
	// NOTIFY). 2s when zero.
	SafetyInterval time.Duration
	// SweepInterval is how often overdue requests are expired. 1s when zero.
	SweepInterval time.Duration
	// CardLease is how long a worker holds a card it posts or updates. 1m when zero.
	CardLease time.Duration
	// CardAttempts is how many times a card's post or update is tried before
	// it is abandoned (and the trail says so). 10 when zero.
	CardAttempts int
	// CardWorkers bounds concurrent posts and updates. 64 when zero: a
	// platform call takes 100-500 ms, so this is what bounds how fast a
	// burst of requests gets its cards.
	CardWorkers int
}

// Service runs the life cycle of approval requests: submit, wait, decide,
// cancel, expire, and the cards that announce them.
type Service struct {
	store    Store
	routes   []Route
	defaults Defaults
	now      func() time.Time
	log      *slog.Logger
	notifier Notifier
	obs      Observer
	opts     Options

	channels map[string]Channel
	hub      *hub
	rows     *rowCache
	kick     chan struct{}
	run      atomic.Value   // the context.Context of Start
	busy     atomic.Int64   // card workers at work or reserved
	starved  atomic.Bool    // the card worker stopped because none was free
	backlog  atomic.Bool    // cards may be waiting in the database for a worker
	workers  sync.WaitGroup // the same, for Drain
	stopping chan struct{}
	stopOnce sync.Once
	owner    string

	// changing counts this process's transitions under way, by request:
	// the NOTIFY of one can arrive before it returns, and the wake-up it
	// makes itself, with the row in hand, makes the re-read that the
	// NOTIFY would start pointless. A wake-up that arrives meanwhile is
	// put off (missed) until the last of them ends, not dropped: it may be
	// another replica's change, after one here that did not take.
	changingMu sync.Mutex
	changing   map[string]change

	idMu sync.Mutex
	ids  *ulid.MonotonicEntropy
}

// NewService builds a service. Register channels, then Start it.
func NewService(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Defaults.Timeout <= 0 {
		o.Defaults.Timeout = 10 * time.Minute
	}
	if o.Defaults.MaxTimeout <= 0 {
		o.Defaults.MaxTimeout = 24 * time.Hour
	}
	if o.Defaults.OnTimeout == "" {
		o.Defaults.OnTimeout = VerdictDeny
	}
	if len(o.Defaults.Channels) == 0 {
		o.Defaults.Channels = []string{WebChannel}
	}
	if o.SafetyInterval <= 0 {
		o.SafetyInterval = 2 * time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Second
	}
	if o.CardLease <= 0 {
		o.CardLease = time.Minute
	}
	if o.CardAttempts <= 0 {
		o.CardAttempts = 10
	}
	if o.CardWorkers <= 0 {
		o.CardWorkers = 64
	}
	return &Service{
		store: o.Store, routes: o.Routes, defaults: o.Defaults, now: o.Now, log: o.Logger,
		notifier: o.Notifier, obs: o.Observer, opts: o, changing: map[string]change{},
		channels: map[string]Channel{},
		hub:      newHub(),
		rows:     newRowCache(),
		kick:     make(chan struct{}, 1),
		stopping: make(chan struct{}),
		owner:    ulid.Make().String(),
		ids:      ulid.Monotonic(rand.Reader, 0),
	}
}

// Register adds a channel. Call it before Start.
func (s *Service) Register(ch Channel) { s.channels[ch.Name()] = ch }

// Start runs the background loops (expiry sweeper, card worker, safety-net
// re-reads, cross-replica listener) until ctx ends. It first expires what
// became overdue while the server was down.
func (s *Service) Start(ctx context.Context) {
	s.run.Store(ctx)
	s.sweep(ctx)
	go s.loop(ctx, s.opts.SweepInterval, nil, s.sweep)
	go s.loop(ctx, s.opts.SafetyInterval, nil, s.recheck)
	go s.loop(ctx, time.Second, s.kick, s.work)
	if s.notifier != nil {
		go func() {
			for ctx.Err() == nil {
				err := s.notifier.Listen(ctx, s.Wake)
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("notifier stopped; relying on re-reads until it reconnects", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				// Signals sent while no one listened are lost: re-read now
				// rather than at the next safety tick.
				s.recheck(ctx)
			}
		}()
	}
	s.kickWork()
}

// Stop tells every waiter to return now with what it has, so long-polling
// agents come back (to this replica after a restart, or to another) instead
// of being cut off.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		for _, p := range s.hub.parked() {
			p.stop()
		}
	})
}

func (s *Service) loop(ctx context.Context, every time.Duration, extra <-chan struct{}, fn func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-extra:
		}
		fn(ctx)
	}
}

func (s *Service) newID() string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return ulid.MustNew(ulid.Timestamp(time.Now()), s.ids).String()
}

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
	// naming itself. Empty (no tokens configured): AgentID stands in.
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
	for name, v := range map[string]string{"tool_name": in.ToolName, "agent_id": in.AgentID, "user_id": in.UserID,
		"session_id": in.SessionID, "tool_call_id": in.ToolCallID, "route": in.Route, "idempotency_key": in.IdempotencyKey} {
		if len(v) > maxNameLen {
			return Errorf(EINVALID, "%s: longer than %d bytes", name, maxNameLen)
		}
	}
	if len(in.Summary) > maxTextLen {
		return Errorf(EINVALID, "summary: longer than %d bytes", maxTextLen)
	}
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

// route picks the request's route: the one it names (which must cover the
// tool, so naming a route can never dodge a stricter one's approvers), else
// the first that matches, else the defaults.
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
	// A named route is an assertion, never a choice: letting the caller pick
	// a broader route would let it dodge the stricter one's approvers.
	if in.Route != "" && in.Route != rt.Name {
		return Route{}, false, Errorf(EINVALID, "route: tool %q goes to route %q, not %q (routes are chosen by the server)", in.ToolName, rt.Name, in.Route)
	}
	return rt, matched, nil
}

// Submit records a request, or returns the one already recorded under its
// idempotency key (created false). A call that needs no human is approved
// at once by policy and recorded as such; any other goes to its channels.
func (s *Service) Submit(ctx context.Context, in Submission) (*Request, bool, error) {
	return s.submit(ctx, in, nil)
}

// submit is Submit; before, when set, is called with the new request's id
// just before it is recorded.
func (s *Service) submit(ctx context.Context, in Submission, before func(id string)) (*Request, bool, error) {
	if err := s.validate(&in); err != nil {
		return nil, false, err
	}
	rt, matched, err := s.route(&in)
	if err != nil {
		return nil, false, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
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
	quorum := max(rt.Quorum, 1)
	r := &Request{
		ID: s.newID(), Status: StatusPending, ToolName: in.ToolName, ToolArgs: in.ToolArgs,
		RequiresConfirmation: in.RequiresConfirmation == nil || *in.RequiresConfirmation,
		Summary:              in.Summary, AgentID: agentLabel(&in), UserID: in.UserID, SessionID: in.SessionID,
		ToolCallID: in.ToolCallID, Metadata: in.Metadata, Route: rt.Name, IdempotencyKey: in.IdempotencyKey,
		Channels: rt.Channels, Approvers: rt.Approvers, Quorum: quorum, OnTimeout: onTimeout,
		CreatedAt: now, ExpiresAt: now.Add(timeout),
	}
	needsHuman := r.RequiresConfirmation || (matched && rt.Confirm)
	var events []Event
	var channels []string
	if needsHuman {
		channels = r.Channels
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
	if before != nil {
		before(r.ID)
	}
	// The new cards go to this replica's free card workers at once.
	claim := s.claimFor(len(channels))
	got, created, cards, err := s.store.Create(ctx, r, channels, events, claim)
	if err != nil {
		cards = nil // nothing was written, nothing leased
	}
	if run := s.runCtx(); run != nil {
		s.startClaimed(run, claim.Max, cards)
	}
	if err != nil {
		return nil, false, err
	}
	if !created {
		return s.attach(got, &in)
	}
	if len(channels) > 0 {
		s.rows.put(got)
	}
	s.obs.RequestCreated(got.Route)
	if got.Status.Final() {
		s.obs.RequestFinished(got.Route, got.Status, 0)
	}
	s.log.Info("request created", "request_id", got.ID, "tool", got.ToolName, "route", got.Route, "status", got.Status)
	if len(cards) < len(channels) {
		s.kickWork()
	}
	return got, true, nil
}

// attach answers a submission whose idempotency key names an existing
// request. The key must stand for the same tool call by the same agent:
// an approval is for those arguments, and never answers other ones.
func (s *Service) attach(r *Request, in *Submission) (*Request, bool, error) {
	switch {
	case r.ToolName != in.ToolName:
		return nil, false, Errorf(EIDEMPOTENCY, "idempotency_key: already used by request %s for tool %q", r.ID, r.ToolName)
	case !bytes.Equal(r.ToolArgs, in.ToolArgs):
		return nil, false, Errorf(EIDEMPOTENCY, "idempotency_key: already used by request %s with other arguments", r.ID)
	case r.AgentID != agentLabel(in):
		return nil, false, Errorf(EIDEMPOTENCY, "idempotency_key: already used by request %s of another agent", r.ID)
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

// Get returns a request.
func (s *Service) Get(ctx context.Context, id string) (*Request, error) {
	return s.store.Get(ctx, id)
}

// List returns the history.
func (s *Service) List(ctx context.Context, f Filter) ([]*Request, string, error) {
	return s.store.List(ctx, f)
}

// Events returns a request's audit trail.
func (s *Service) Events(ctx context.Context, id string) ([]Event, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return nil, err
	}
	return s.store.Events(ctx, id)
}

// Cards returns the cards posted (or to be posted) for a request.
func (s *Service) Cards(ctx context.Context, id string) ([]Card, error) {
	return s.store.Cards(ctx, id)
}

// Ping checks the database.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// Wait returns the request once it leaves pending, or as it is when d
// passes, ctx ends or the server stops. It wakes the moment the row
// changes; at the deadline it expires the request itself rather than wait
// for the sweeper.
func (s *Service) Wait(ctx context.Context, id string, d time.Duration) (*Request, error) {
	w := s.hub.add(id)
	s.obs.WaitersChanged(1)
	defer func() { s.hub.remove(id, w); s.obs.WaitersChanged(-1) }()
	r, err := s.store.Get(ctx, id)
	if err != nil || r.Status.Final() || d <= 0 {
		return r, err
	}
	limit := time.NewTimer(d)
	defer limit.Stop()
	for {
		expiry := time.NewTimer(max(r.ExpiresAt.Sub(s.now()), 0))
		select {
		case <-w.ch:
		case <-expiry.C:
			// Another caller (the sweeper, a replica) may have got there
			// first; only a failure to reach the database matters here.
			if _, err := s.Expire(ctx, id); err != nil && (ErrorCode(err) == EINTERNAL || ErrorCode(err) == EUNAVAILABLE) {
				expiry.Stop()
				return r, err
			}
		case <-limit.C:
			expiry.Stop()
			return r, nil
		case <-ctx.Done():
			expiry.Stop()
			return r, nil
		case <-s.stopping:
			expiry.Stop()
			return r, nil
		}
		expiry.Stop()
		if h := w.handed(); h != nil {
			// A transition on this process handed its row over with the
			// wake-up: no second read, and no wait behind the card work.
			cp := *h
			return &cp, nil
		}
		if r, err = s.store.Get(ctx, id); err != nil || r.Status.Final() {
			return r, err
		}
	}
}

// Decide applies a person's verdict. The first verdict wins; a second gets
// ECONFLICT, one after the deadline EEXPIRED, one from someone the route
// does not name EFORBIDDEN. Refusals are audited. With a quorum above one,
// approvals are counted and the request is approved by the last one needed.
func (s *Service) Decide(ctx context.Context, d Decision) (*Request, error) {
	// A vote is recorded before any compare-and-set, so an approval toward
	// a quorum is checked against the row as it stands, never a cached one.
	r, ok := s.rows.get(d.RequestID)
	var err error
	if !ok || (d.Approve && r.Quorum > 1 && !r.Status.Final()) {
		if r, err = s.store.Get(ctx, d.RequestID); err != nil {
			return nil, err
		}
	}
	refuse := func(e *Error) (*Request, error) {
		s.obs.DecisionRefused(d.Via, e.Code)
		s.addEvent(ctx, Event{RequestID: r.ID, Type: EventRefused, Actor: d.Actor, Channel: d.Via,
			Detail: fmt.Sprintf("%s: %s", verb(d.Approve), e.Message)})
		return r, e
	}
	if r.Status.Final() {
		return refuse(finalError(r))
	}
	if !s.now().Before(r.ExpiresAt) {
		if got, err := s.Expire(ctx, r.ID); err == nil || ErrorCode(err) == ECONFLICT {
			r = got
		}
		return refuse(finalError(r))
	}
	if !MayDecide(r.Approvers, append([]string{d.Actor}, d.Identities...)...) {
		return refuse(Errorf(EFORBIDDEN, "%s is not an approver of this request", d.Actor))
	}
	if len(r.Approvers) == 0 && !slices.Contains(r.Channels, d.Via) {
		// "Anyone who can see the card" means the card's audience: with no
		// approvers list, a verdict counts only through the request's channels.
		return refuse(Errorf(EFORBIDDEN, "this request was sent to %s, not %s; only its audience there (or a listed approver) may decide", strings.Join(r.Channels, ", "), d.Via))
	}
	var args json.RawMessage
	if d.Approve && len(d.ModifiedArgs) > 0 {
		if r.Quorum > 1 {
			// Earlier voters approved the proposed arguments; the last one
			// must not swap in others.
			return refuse(Errorf(EINVALID, "edited arguments need a single approver; this route needs %d approvals", r.Quorum))
		}
		if args, err = compactJSON(d.ModifiedArgs, ""); err != nil || len(args) == 0 {
			return refuse(Errorf(EINVALID, "modified arguments are not valid JSON"))
		}
	}
	if len(d.Reason) > maxTextLen {
		d.Reason = d.Reason[:maxTextLen]
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	if d.Approve && r.Quorum > 1 {
		n, fresh, err := s.store.AddVote(ctx, r.ID, d.Actor, d.Via, now)
		if err != nil {
			return nil, err
		}
		if !fresh {
			return refuse(Errorf(ECONFLICT, "%s already approved; %d of %d approvals so far", d.Actor, n, r.Quorum))
		}
		s.addEvent(ctx, Event{RequestID: r.ID, At: now, Type: EventVote, Actor: d.Actor, Channel: d.Via,
			Detail: fmt.Sprintf("approval %d of %d", n, r.Quorum)})
		if n < r.Quorum {
			return r, nil
		}
	}
	to, typ := StatusRejected, "rejected"
	if d.Approve {
		to, typ = StatusApproved, "approved"
	}
	detail := typ
	if d.Reason != "" {
		detail += ": " + d.Reason
	}
	if args != nil {
		detail += " (with edited arguments)"
	}
	t := Transition{ID: r.ID, To: to, Kind: BeforeDeadline, At: now, By: d.Actor, Via: d.Via, Reason: d.Reason,
		ModifiedArgs: args, Event: Event{Type: EventDecided, Actor: d.Actor, Channel: d.Via, Detail: detail}, Pending: r}
	if d.CardUpdated {
		t.InlineCard = d.Via
	}
	got, err := s.transition(ctx, t)
	if err != nil {
		if e := (*Error)(nil); errors.As(err, &e) && got != nil {
			r = got // as it stands, which the row read above may not have been
			return refuse(e)
		}
		return nil, err
	}
	return got, nil
}

func verb(approve bool) string {
	if approve {
		return "approve"
	}
	return "reject"
}

// finalError says why a request that already left pending cannot be decided.
func finalError(r *Request) *Error {
	switch r.Status {
	case StatusExpired:
		return Errorf(EEXPIRED, "expired at %s", r.ExpiresAt.UTC().Format(time.RFC3339))
	case StatusCancelled:
		return Errorf(ECONFLICT, "already cancelled by %s", r.DecidedBy)
	default:
		return Errorf(ECONFLICT, "already %s by %s", r.Status, r.DecidedBy)
	}
}

// Cancel withdraws a pending request on its agent's behalf.
func (s *Service) Cancel(ctx context.Context, id, by, reason string) (*Request, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	detail := "cancelled by the agent"
	if reason != "" {
		detail += ": " + reason
	}
	got, err := s.transition(ctx, Transition{ID: id, To: StatusCancelled, Kind: BeforeDeadline, At: now, By: by, Via: "api",
		Reason: reason, Event: Event{Type: EventCancelled, Actor: by, Channel: "api", Detail: detail}})
	if e := (*Error)(nil); errors.As(err, &e) && got != nil {
		s.addEvent(ctx, Event{RequestID: id, Type: EventRefused, Actor: by, Channel: "api", Detail: "cancel: " + e.Message})
	}
	return got, err
}

// Expire moves an overdue pending request to expired. It is idempotent
// across replicas: the compare-and-set lets exactly one caller do it.
func (s *Service) Expire(ctx context.Context, id string) (*Request, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	r, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	reason := fmt.Sprintf("no verdict within %s; on timeout: %s", r.ExpiresAt.Sub(r.CreatedAt).Round(time.Second), r.OnTimeout)
	return s.transition(ctx, Transition{ID: id, To: StatusExpired, Kind: AfterDeadline, At: now, By: ActorSystem, Via: "timeout",
		Reason: reason, Event: Event{Type: EventExpired, Actor: ActorSystem, Detail: reason}, Pending: r})
}

// transition runs a compare-and-set and, when it took, wakes the waiters
// everywhere and queues the card updates. When it did not take, the error
// says what the request became instead.
func (s *Service) transition(ctx context.Context, t Transition) (*Request, error) {
	t.Event.RequestID, t.Event.At = t.ID, t.At
	s.changeBegins(t.ID)
	defer s.changeEnds(t.ID)
	got, changed, err := s.store.Transition(ctx, t)
	if err != nil {
		// If it committed all the same (a connection lost after the
		// COMMIT), its NOTIFY wakes the waiters, now or when this ends.
		return nil, err
	}
	if !changed {
		s.rows.drop(t.ID) // whatever was cached is behind
		if got.Status.Final() {
			s.rows.put(got)
			// Changed elsewhere, and that NOTIFY may have arrived while
			// this was under way: the waiters here get the row.
			s.hub.wakeWith(got.ID, got)
			return got, finalError(got)
		}
		if t.Kind == BeforeDeadline && !t.At.Before(got.ExpiresAt) {
			if exp, err := s.Expire(ctx, t.ID); err == nil {
				got = exp
			}
			return got, finalError(got)
		}
		return got, Errorf(ECONFLICT, "not yet due to expire")
	}
	s.settled(got)
	return got, nil
}

// settled wakes the request's waiters (answering the parked ones first of
// all), keeps the row for the card updates and kicks the card worker.
func (s *Service) settled(r *Request) {
	s.hub.wakeWith(r.ID, r)
	if len(r.Channels) > 0 {
		s.rows.put(r) // for the cards' final update
	}
	s.obs.RequestFinished(r.Route, r.Status, r.Waited(s.now()))
	s.log.Info("request "+string(r.Status), "request_id", r.ID, "by", r.DecidedBy, "via", r.DecidedVia)
	if len(r.Channels) > 0 {
		s.kickWork()
	}
}

// Refuse audits a callback that was not accepted.
func (s *Service) Refuse(ctx context.Context, requestID, channel, actor, detail string) {
	s.log.Warn("callback refused", "request_id", requestID, "channel", channel, "actor", actor, "detail", detail)
	s.obs.CallbackRefused(channel)
	if requestID == "" {
		return
	}
	if _, err := s.row(ctx, requestID); err != nil {
		return
	}
	s.addEvent(ctx, Event{RequestID: requestID, Type: EventCallbackRefused, Actor: actor, Channel: channel, Detail: detail})
}

func (s *Service) addEvent(ctx context.Context, e Event) {
	if e.At.IsZero() {
		e.At = s.now().UTC().Truncate(time.Microsecond)
	}
	if err := s.store.AddEvent(ctx, e); err != nil {
		s.log.Error("audit event lost", "request_id", e.RequestID, "type", e.Type, "err", err)
	}
}

// sweep expires every overdue request, oldest deadline first.
func (s *Service) sweep(ctx context.Context) {
	for {
		ids, err := s.store.Overdue(ctx, s.now(), 200)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("expiry sweep failed", "err", err)
			}
			return
		}
		for _, id := range ids {
			if _, err := s.Expire(ctx, id); err != nil && ErrorCode(err) != ECONFLICT && ErrorCode(err) != EEXPIRED {
				s.log.Error("expire failed", "request_id", id, "err", err)
			}
		}
		if len(ids) < 200 {
			return
		}
	}
}

// recheck is the safety net under the wake-ups: one batched read of every
// row somebody waits on, waking the waiters of those that settled.
func (s *Service) recheck(ctx context.Context) {
	ids := s.hub.ids()
	for len(ids) > 0 {
		n := min(len(ids), 500)
		done, err := s.store.Settled(ctx, ids[:n])
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("safety re-read failed", "err", err)
			}
			return
		}
		for _, id := range done {
			s.hub.wake(id)
		}
		ids = ids[n:]
	}
}

// Wake wakes the local waiters of a request; the cross-replica listener and
// tests call it. A change this process is making wakes them itself when it
// returns, with the row; a final row it knows answers them at once; any
// other wake-up has them read the row.
func (s *Service) Wake(id string) {
	s.changingMu.Lock()
	if c, ok := s.changing[id]; ok {
		c.missed = true // for changeEnds
		s.changing[id] = c
		s.changingMu.Unlock()
		return
	}
	s.changingMu.Unlock()
	if r, ok := s.rows.get(id); ok {
		if r.Status.Final() {
			s.hub.wakeWith(id, r)
			return
		}
		s.rows.drop(id) // changed elsewhere; a final row cannot change
	}
	s.hub.wake(id)
}

// change is one request's transitions under way in this process, and
// whether a wake-up for it came meanwhile.
type change struct {
	n      int
	missed bool
}

func (s *Service) changeBegins(id string) {
	s.changingMu.Lock()
	c := s.changing[id]
	c.n++
	s.changing[id] = c
	s.changingMu.Unlock()
}

func (s *Service) changeEnds(id string) {
	s.changingMu.Lock()
	c := s.changing[id]
	c.n--
	missed := false
	if c.n > 0 {
		s.changing[id] = c
	} else {
		delete(s.changing, id)
		missed = c.missed
	}
	s.changingMu.Unlock()
	if missed {
		// After a change that took, its waiters are answered already and
		// this finds none; after one that did not, they learn now.
		s.Wake(id)
	}
}

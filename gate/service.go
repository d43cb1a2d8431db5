package gate

import (
	"context"
	"crypto/rand"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/gatehouse-dev/gatehouse/policy"
)

// Defaults apply to requests that match no route.
type Defaults struct {
	// Action is what happens to calls no route matches. Empty: the
	// agent's requires_confirmation decides (true or absent: ask).
	Action     policy.Action
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
	// People says who is who; nil: nobody is known as a person, and every
	// identity counts on its own.
	People   *People
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
	// CardTick is how often the card worker looks for due work it was not
	// told about (retries whose time came, leases that ran out). 1s when zero.
	CardTick time.Duration
	// CardWorkers bounds concurrent posts and updates. 64 when zero: a
	// platform call takes 100-500 ms, so this is what bounds how fast a
	// burst of requests gets its cards.
	CardWorkers int
	// StepTick is how often reminders and escalations that came due are
	// looked for. 1s when zero.
	StepTick time.Duration
}

// Service runs the life cycle of approval requests: submit (submit.go),
// decide, cancel and expire (decide.go), wait (wait.go), and the cards that
// announce them (cards.go). Its background loops are here.
type Service struct {
	store    Store
	rules    atomic.Pointer[rules] // routes, defaults and people, swapped whole (Reconfigure)
	now      func() time.Time
	log      *slog.Logger
	notifier Notifier
	obs      Observer
	opts     Options
	channels map[string]Channel
	waiters  *hub
	owner    string // this process, as the card leases name it

	// webGiver says whether a web user may still approve (SetWebGiverCheck).
	webGiver atomic.Pointer[func(user string) bool]

	kick      chan struct{}   // asks the card worker to look for work now
	busy      atomic.Int64    // card workers at work
	saturated atomic.Bool     // the card worker stopped with work maybe left
	workers   sync.WaitGroup  // card workers at work, for Drain
	stopCtx   context.Context // cancelled by Stop
	stop      context.CancelFunc
	stopMu    sync.Mutex // held to cancel stopCtx, and to start card workers

	idMu sync.Mutex
	ids  *ulid.MonotonicEntropy
}

// rules are the routes and defaults in force, with the policy compiled
// from them. They are replaced whole, never changed in place.
type rules struct {
	routes   []Route
	policy   *policy.Policy
	defaults Defaults
	// people are held with the routes, so that a call is decided by one
	// config's routes and people, never the old routes with the new people
	// (a grant honoured, a direct card sent, by a mix neither config gives).
	people *People
	// gen counts the configs put in force (Reconfigure): the web server
	// notes it with the tokens it reads callers by (WithGeneration).
	gen uint64
}

// NewService builds a service. Register channels, then Start it. Its
// routes must compile (config validation compiles them first); a route
// that does not is a programming error.
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
	if o.CardTick <= 0 {
		o.CardTick = time.Second
	}
	if o.CardWorkers <= 0 {
		o.CardWorkers = 64
	}
	if o.StepTick <= 0 {
		o.StepTick = time.Second
	}
	s := &Service{
		store: o.Store, now: o.Now, log: o.Logger,
		notifier: o.Notifier, obs: o.Observer, opts: o,
		channels: map[string]Channel{},
		waiters:  newHub(),
		owner:    ulid.Make().String(),
		kick:     make(chan struct{}, 1),
		ids:      ulid.Monotonic(rand.Reader, 0),
	}
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	if err := s.Reconfigure(o.Routes, o.Defaults, o.People); err != nil {
		panic("gate: routes that do not compile: " + err.Error())
	}
	return s
}

// Reconfigure puts new routes, defaults and people in force at once (a
// config reload): every call and every verdict is decided by the old
// config or the new one, never a mix. Routes that do not compile are
// refused and the config in force stays.
func (s *Service) Reconfigure(routes []Route, d Defaults, p *People) error {
	rs, err := newRules(routes, d)
	if err != nil {
		return err
	}
	if p == nil {
		p = NewPeople(nil, nil)
	}
	rs.people = p
	for {
		old := s.rules.Load()
		if old != nil {
			rs.gen = old.gen + 1
		}
		if s.rules.CompareAndSwap(old, rs) {
			return nil
		}
	}
}

// Generation is the number of the config in force: one more at every
// Reconfigure.
func (s *Service) Generation() uint64 { return s.rules.Load().gen }

type generationKey struct{}

// WithGeneration marks ctx as a call whose caller was read by the tokens of
// config generation gen. The tokens and the routes are put in force one
// after the other, and routes match a token's name: a call whose token was
// read by one config and whose routes are another's could match neither's
// route for it (a token renamed with its route) and be allowed by the
// defaults. Submit refuses such a call, to be sent again.
func WithGeneration(ctx context.Context, gen uint64) context.Context {
	return context.WithValue(ctx, generationKey{}, gen)
}

// peopleNow are the people in force.
func (s *Service) peopleNow() *People { return s.rules.Load().people }

// route is the configured route named name, as the config has it now;
// false when no route has the name (the default route is none).
func (rs *rules) route(name string) (Route, bool) {
	for _, rt := range rs.routes {
		if rt.Name == name {
			return rt, true
		}
	}
	return Route{}, false
}

// waitOf is how long a request on rt waits for a person, and what its
// silence then means: the route's own, else the defaults'.
func (rs *rules) waitOf(rt Route) (time.Duration, Verdict) {
	timeout, onTimeout := rt.Timeout, rt.OnTimeout
	if timeout <= 0 {
		timeout = rs.defaults.Timeout
	}
	if onTimeout == "" {
		onTimeout = rs.defaults.OnTimeout
	}
	return timeout, onTimeout
}

// approversOf is everyone the route named so may ever ask, as it is now:
// its approvers and its escalations' (which a request's list gains as
// they come due), or defaults.approvers for "default", the route of calls
// no route claims; nil (anyone the request's own list admits) when no
// route has the name or the route has no list.
func (rs *rules) approversOf(name string) []string {
	if name == "default" {
		return rs.defaults.Approvers
	}
	rt, ok := rs.route(name)
	if !ok || len(rt.Approvers) == 0 {
		return nil
	}
	all := slices.Clone(rt.Approvers)
	for _, e := range rt.Plan.Escalate {
		all = append(all, e.Approvers...)
	}
	return all
}

// SetPeople puts new people in force (a config reload). Who an identity
// is, is read when a verdict comes: a person's identities removed from the
// config no longer decide as them, on requests already made too.
func (s *Service) SetPeople(p *People) {
	if p == nil {
		p = NewPeople(nil, nil)
	}
	for {
		old := s.rules.Load()
		rs := *old
		rs.people = p
		if s.rules.CompareAndSwap(old, &rs) {
			return
		}
	}
}

// SetRoutes puts new routes and defaults in force (a config reload),
// atomically: every call is decided by the old rules or the new ones,
// never a mix. Requests already made keep what their route gave them
// (approvers, quorum, channels, deadline). Routes that do not compile are
// refused and the rules in force stay.
func (s *Service) SetRoutes(routes []Route, d Defaults) error {
	rs, err := newRules(routes, d)
	if err != nil {
		return err
	}
	for {
		old := s.rules.Load()
		rs.people, rs.gen = old.people, old.gen
		if s.rules.CompareAndSwap(old, rs) {
			return nil
		}
	}
}

// newRules compiles routes and fills d: the rules Submit decides by, and
// Explain too.
func newRules(routes []Route, d Defaults) (*rules, error) {
	p, err := compile(routes)
	if err != nil {
		return nil, err
	}
	return &rules{routes: routes, policy: p, defaults: d.filled()}, nil
}

// filled is d with what it leaves unset at the built-in defaults.
func (d Defaults) filled() Defaults {
	if d.Timeout <= 0 {
		d.Timeout = 10 * time.Minute
	}
	if d.MaxTimeout <= 0 {
		d.MaxTimeout = 24 * time.Hour
	}
	if d.OnTimeout == "" {
		d.OnTimeout = VerdictDeny
	}
	if len(d.Channels) == 0 {
		d.Channels = []string{WebChannel}
	}
	return d
}

// Register adds a channel. Call it before Start.
func (s *Service) Register(ch Channel) { s.channels[ch.Name()] = ch }

// Start runs the background loops until ctx ends: the expiry sweeper, the
// card worker, the reminders and escalations, the safety re-read of
// waited-on rows and the cross-replica listener. It first expires what
// became overdue while the server was down.
func (s *Service) Start(ctx context.Context) {
	s.sweep(ctx)
	go s.every(ctx, s.opts.SweepInterval, nil, s.sweep)
	go s.every(ctx, s.opts.SafetyInterval, nil, s.recheck)
	go s.every(ctx, s.opts.CardTick, s.kick, s.work)
	go s.every(ctx, s.opts.StepTick, nil, s.advance)
	if s.notifier != nil {
		go s.listen(ctx)
	}
	s.kickWork()
}

// Stop tells every waiter to return now with what it has, so long-polling
// agents come back (to this replica after a restart, or to another) instead
// of being cut off, and stops the card worker from taking new work. Drain
// then waits for the work in flight.
func (s *Service) Stop() {
	s.stopMu.Lock()
	s.stop()
	s.stopMu.Unlock()
}

// Stopping is closed once Stop is called. A wait of its own that loops over
// Wait (an MCP tool call) ends there, since Wait then returns at once.
func (s *Service) Stopping() <-chan struct{} { return s.stopCtx.Done() }

func (s *Service) stopped() bool { return s.stopCtx.Err() != nil }

// every runs fn at each tick and each signal on extra, until ctx ends.
func (s *Service) every(ctx context.Context, d time.Duration, extra <-chan struct{}, fn func(context.Context)) {
	t := time.NewTicker(d)
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

// listen wakes local waiters on other replicas' changes, reconnecting when
// the notifier's connection drops. Signals sent while nothing listened are
// lost: once it listens again, it re-reads what its waiters wait for
// rather than leave them to the next safety tick.
func (s *Service) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := s.notifier.Listen(ctx, func() { s.recheck(ctx) }, s.waiters.wake)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("notifier stopped; relying on re-reads until it reconnects", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
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
	ids := s.waiters.ids()
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
			s.waiters.wake(id)
		}
		ids = ids[n:]
	}
}

// Wake wakes the local waiters of a request, which then read its row. The
// cross-replica listener calls it; so may tests.
func (s *Service) Wake(id string) { s.waiters.wake(id) }

func (s *Service) newID() string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return ulid.MustNew(ulid.Timestamp(time.Now()), s.ids).String()
}

// stamp is the service's clock as stored: UTC, to the microsecond (what
// PostgreSQL keeps), so a row reads back equal to what was written.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

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

// Votes returns a request's approvals toward its quorum.
func (s *Service) Votes(ctx context.Context, id string) (Votes, error) { return s.store.Votes(ctx, id) }

// Cards returns the cards posted (or to be posted) for a request.
func (s *Service) Cards(ctx context.Context, id string) ([]Card, error) {
	return s.store.Cards(ctx, id)
}

// Ping checks the database.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

func (s *Service) addEvent(ctx context.Context, e Event) {
	if e.At.IsZero() {
		e.At = s.stamp()
	}
	if err := s.store.AddEvent(ctx, e); err != nil {
		s.log.Error("audit event lost", "request_id", e.RequestID, "type", e.Type, "err", err)
	}
}

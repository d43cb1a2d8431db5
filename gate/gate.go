package gate

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps requests, their audit trail and their cards durably. Every
// transition is a compare-and-set in SQL; the store never decides anything
// on its own.
type Store interface {
	// Create inserts a request with a card row for each channel and its first
	// events, in one transaction. When the request's idempotency key is
	// already taken it inserts nothing and returns the existing request with
	// created false. It leases up to claim.Max of the new cards to
	// claim.Owner, as ClaimCards would, and returns those.
	Create(ctx context.Context, r *Request, channels []string, events []Event, claim Claim) (got *Request, created bool, claimed []Card, err error)
	// Get returns one request, or an ENOTFOUND error.
	Get(ctx context.Context, id string) (*Request, error)
	// List returns requests newest first and the cursor of the next page ("" at the end).
	List(ctx context.Context, f Filter) ([]*Request, string, error)
	// Transition moves a pending request to a final state when it is still
	// pending and its deadline allows it, marks its cards for their final
	// update and appends the transition's event, in one transaction. It
	// returns the request as it stands afterwards and whether this call made
	// the change. A store shared by replicas also signals the change to
	// their Notifiers' listeners in that transaction, so the signal goes
	// out exactly when the change commits.
	Transition(ctx context.Context, t Transition) (*Request, bool, error)
	// AddEvent appends one event to a request's audit trail.
	AddEvent(ctx context.Context, e Event) error
	// Events returns a request's audit trail, oldest first.
	Events(ctx context.Context, requestID string) ([]Event, error)
	// AddVote records one approver's approval toward a quorum. It returns the
	// number of distinct approvals so far and whether this vote was new.
	AddVote(ctx context.Context, requestID, actor, via string, at time.Time) (count int, fresh bool, err error)
	// Overdue returns ids of pending requests whose deadline has passed.
	Overdue(ctx context.Context, now time.Time, limit int) ([]string, error)
	// Settled returns those of ids that are no longer pending.
	Settled(ctx context.Context, ids []string) ([]string, error)
	// Cards returns the cards of a request.
	Cards(ctx context.Context, requestID string) ([]Card, error)
	// ClaimCards leases up to limit cards whose platform copy lags behind
	// (want != have) and whose retry time has come, so that exactly one
	// worker, on any replica, posts or updates each.
	ClaimCards(ctx context.Context, now time.Time, lease time.Duration, owner string, limit int) ([]Card, error)
	// FinishCard records the outcome of a claimed card's work and releases
	// it. due reports that the card still lags behind its request and may be
	// worked on now (its request ended while it was being posted): the
	// caller looks for work again rather than waiting for its next tick.
	FinishCard(ctx context.Context, res CardResult) (due bool, err error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// TransitionKind says which deadline rule a transition obeys.
type TransitionKind int

// Decisions and cancellations must come before the deadline; expiry after it.
const (
	BeforeDeadline TransitionKind = iota
	AfterDeadline
)

// Transition is one compare-and-set from pending to a final state.
type Transition struct {
	ID           string
	To           Status
	Kind         TransitionKind
	At           time.Time
	By           string
	Via          string
	Reason       string
	ModifiedArgs json.RawMessage
	// InlineCard names a channel whose card already shows the final state
	// (its callback answer carried the new card), so no update is queued for it.
	InlineCard string
	Event      Event
	// Pending, when not nil, is the request as the caller read it, pending.
	// Only the compare-and-set changes a request, once, and only the
	// columns it sets, so when it takes the store may build the result
	// from this row instead of reading it back.
	Pending *Request
}

// Claim asks Create to lease the new request's cards to the caller's card
// workers at once, saving the claim they would make next. Max 0 claims
// nothing. (A verdict claims nothing: measured, leasing the updates in its
// transaction cost the verdict's latency more than it saved.)
type Claim struct {
	Owner string
	Until time.Time
	Max   int
}

// CardResult is the outcome of one claimed card's post or update.
type CardResult struct {
	ID          int64
	Owner       string
	Have        string // what the platform shows now
	Ref         string // set after a successful post
	Err         string // the failure, when the attempt failed
	NextAttempt time.Time
	Abandoned   bool
	At          time.Time
	// Event, when set, is appended to the request's trail in the same
	// transaction (posted, updated, failed, ...).
	Event *Event
}

// Channel posts approval cards to a chat platform and keeps them current.
// Channels that receive verdicts (HTTP callbacks, sockets) turn a verified
// callback into a Decision and hand it to a Decider.
type Channel interface {
	// Name is the channel's name in the config ("ops-slack").
	Name() string
	// Post sends the card for a pending request and returns the platform's
	// reference to it, which Update gets back later.
	Post(ctx context.Context, r *Request) (ref string, err error)
	// Update replaces the card with its final form: who decided, when, why,
	// and no buttons.
	Update(ctx context.Context, r *Request, ref string) error
}

// Runner is implemented by channels that hold a connection of their own
// (Slack Socket Mode, Feishu's long connection). Run blocks until ctx ends;
// the server owns its lifetime.
type Runner interface {
	Run(ctx context.Context) error
}

// Decider is what channels call with verified verdicts. *Service implements it.
type Decider interface {
	// Get returns a request, to check its state before acting on a tap.
	Get(ctx context.Context, id string) (*Request, error)
	// Decide applies a verdict through the compare-and-set: the first wins.
	Decide(ctx context.Context, d Decision) (*Request, error)
	// Refuse audits a callback that was not accepted (bad signature, unknown
	// request, ...) against the request it named, when it named one.
	Refuse(ctx context.Context, requestID, channel, actor, detail string)
}

// Decision is a verdict from a person, through a channel.
type Decision struct {
	RequestID string
	Approve   bool
	// Actor is the canonical identity: "slack:T1/U2", "feishu:ou_x", "web:alice".
	Actor string
	// Identities are other names of the same person that an approvers list
	// may use ("feishu:union:on_x").
	Identities   []string
	Via          string // the channel's name
	Reason       string
	ModifiedArgs json.RawMessage
	// CardUpdated says the channel's card already shows the final state.
	CardUpdated bool
}

// Notifier carries "request changed" signals between replicas so that a
// waiter on one wakes when another decides; the store's Transition sends
// them. Without one, waking is in-process only (and the periodic re-read
// catches the rest).
type Notifier interface {
	// Listen calls fn for every changed request's id until ctx ends.
	Listen(ctx context.Context, fn func(requestID string)) error
}

// Observer receives the service's measurements (Prometheus, in production).
// Every method must be cheap and safe for concurrent use.
type Observer interface {
	RequestCreated(route string)
	RequestFinished(route string, status Status, waited time.Duration)
	WaitersChanged(delta int)
	CardDone(channel, op string, err error, took time.Duration)
	// CallbackRefused counts a channel callback that was not accepted
	// (replayed, malformed, naming an unknown request).
	CallbackRefused(channel string)
	// DecisionRefused counts a verdict the gate did not take, by the
	// error code that says why (ECONFLICT, EEXPIRED, EFORBIDDEN, ...).
	DecisionRefused(channel, code string)
}

type nopObserver struct{}

func (nopObserver) RequestCreated(string)                         {}
func (nopObserver) RequestFinished(string, Status, time.Duration) {}
func (nopObserver) WaitersChanged(int)                            {}
func (nopObserver) CardDone(string, string, error, time.Duration) {}
func (nopObserver) CallbackRefused(string)                        {}
func (nopObserver) DecisionRefused(string, string)                {}

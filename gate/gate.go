package gate

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps requests, their audit trail and their cards durably. Every
// change of a request's status is a compare-and-set in SQL; the store never
// decides anything on its own.
type Store interface {
	// Create inserts a request, its first events and, when it is pending,
	// a card row for each of its channels, in one transaction. When the
	// request's caller already used its idempotency key it inserts nothing
	// and returns that caller's request with created false. When r.ByGrant
	// is set and that grant is revoked or expired at r.CreatedAt, it
	// inserts nothing and fails with EUNAVAILABLE.
	Create(ctx context.Context, r *Request, events []Event) (got *Request, created bool, err error)
	// Get returns one request, or an ENOTFOUND error.
	Get(ctx context.Context, id string) (*Request, error)
	// ByKey returns the request a caller made under an idempotency key, or
	// an ENOTFOUND error.
	ByKey(ctx context.Context, caller, key string) (*Request, error)
	// KeyStates returns, for those of keys the caller has used, where the
	// request under each stands: one read for a hook's walk along a call's
	// keys (hook.Call.Key), however long the walk.
	KeyStates(ctx context.Context, caller string, keys []string) (map[string]KeyState, error)
	// List returns requests newest first and the cursor of the next page ("" at the end).
	List(ctx context.Context, f Filter) ([]*Request, string, error)
	// Transition applies t in one transaction; see Transition.
	Transition(ctx context.Context, t Transition) (Outcome, error)
	// AddEvent appends one event to a request's audit trail.
	AddEvent(ctx context.Context, e Event) error
	// Votes returns a request's approvals so far, toward its quorum.
	Votes(ctx context.Context, id string) (Votes, error)
	// AddOutcome appends e, a tool_ran or tool_failed event, unless the
	// request's trail holds one of those already; checked and written under
	// the request's row lock, so of two reports at once one is added.
	AddOutcome(ctx context.Context, e Event) (added bool, err error)
	// Events returns a request's audit trail, oldest first.
	Events(ctx context.Context, requestID string) ([]Event, error)
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
	// worked on now (its request ended while it was being posted).
	FinishCard(ctx context.Context, res CardResult) (due bool, err error)
	// FindGrant returns an active grant covering a call, or nil: one for
	// these exact arguments (argsHash) or for any arguments.
	FindGrant(ctx context.Context, route, caller, tool, argsHash string, now time.Time) (*Grant, error)
	// Grants lists grants, newest first: of one caller when caller is not
	// nil, and only those active at now when active is set.
	Grants(ctx context.Context, caller *string, active bool, now time.Time) ([]Grant, error)
	// RevokeGrant ends a grant at once, and appends the event to the trail
	// of the request that gave it; ENOTFOUND for an unknown grant.
	RevokeGrant(ctx context.Context, id, by string, at time.Time) (*Grant, error)
	// CountCall adds one call to a rate counter's window and returns the
	// count in that window, across replicas; windows that started before
	// keep may be dropped on the way.
	CountCall(ctx context.Context, key string, window, keep time.Time) (int, error)
	// DueSteps returns ids of pending requests whose next reminder or
	// escalation is due at now, the longest due first.
	DueSteps(ctx context.Context, now time.Time, limit int) ([]string, error)
	// Advance takes a request's due step in one transaction that holds its
	// row: when the row is pending and its next step is due at now, plan is
	// called with the row, its steps and its cards, and what it returns is
	// written (the step under its unique number, the request's new
	// approvers and channels, the cards, the events, when the next step is
	// due). Whoever comes second finds the step taken and the next one not
	// due, and writes nothing. It returns what was written.
	Advance(ctx context.Context, id string, now time.Time, plan func(StepState) StepWork) (StepWork, error)
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

// Transition moves a pending request to a final state. The store applies
// it in one transaction that holds the request's row (SQLite's write
// transaction holds the database; PostgreSQL locks the row):
//
//  1. read the row; Admit, when set, may refuse the transition on it;
//  2. if the row is no longer pending, or on the wrong side of its deadline,
//     change nothing and return it;
//  3. with Vote set and a quorum above one, record the vote (once per
//     voter) and count the votes: below the quorum, stop there;
//  4. the compare-and-set on the row (still pending, deadline respected),
//     the cards marked for their final update, the event appended, and on
//     a store shared by replicas the signal to their Notifiers, which is
//     sent when the transaction commits and never for one rolled back.
//
// So approvers tapping at once are counted one after another and can never
// each see "1 of 2", and what Admit checked is what the write changes.
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
	// (its callback answer carried the new card), so no update is queued for
	// it: the card whose reference is InlineRef, or, without one, the
	// channel's own card (not the direct cards it sent).
	InlineCard string
	InlineRef  string
	Event      Event
	// Vote is the approver of an approval; it counts toward the request's
	// quorum when that is above one.
	Vote *Vote
	// Admit, when set, is called with the row as it stands (pending or
	// not) before anything is written; its error refuses the transition,
	// which writes nothing and returns that error with the row.
	Admit func(r *Request) error
	// Grant, when set, gives the grant an approval writes (with its event)
	// from the row it approves, in the approval's transaction: a grant
	// exists exactly when the approval that gave it does.
	Grant func(r *Request) (*Grant, Event)
}

// Votes are a request's approvals so far toward its quorum: who each one
// counts for (a person's key, a Feishu union_id, or the identity that
// tapped), and every identity that tapped one.
type Votes struct {
	Voters  []string
	Tappers []string
}

// Vote is one approval toward a quorum.
type Vote struct {
	// Voter is who the vote counts for: one voter counts once, whatever
	// identity or channel they tap from.
	Voter string
	Actor string
	Via   string
	// Identities are the identities the approver tapped with (Actor, the
	// Voter and the platform's other names for them); the store keeps them
	// with the vote, so that later votes are told apart by person as the
	// people are then.
	Identities []string
	// Tally, set by Decide under the row's lock, says whether this vote is
	// fresh among the earlier ones and how many approvers the votes count
	// now. Nil: votes count by Voter alone.
	Tally func(earlier []Cast) (fresh bool, votes int)
}

// Cast is a vote as the store keeps it.
type Cast struct {
	Voter      string
	Identities []string
}

// Outcome is what a Transition did.
type Outcome struct {
	// Request is the row as it stands afterwards.
	Request *Request
	// Changed says this transition made the change.
	Changed bool
	// Votes is the number of distinct voters so far (with Vote, on a
	// request whose quorum is above one).
	Votes int
	// Fresh says the voter had not voted before (likewise).
	Fresh bool
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

// Directer is implemented by channels that can send a card to one person
// rather than to their chat (Slack and Feishu direct messages). Direct
// cards are updated to the final state with Update, like any other.
type Directer interface {
	// Reaches reports whether the channel can send a direct card to the
	// identity ("slack:T1/U2", "feishu:ou_x").
	Reaches(identity string) bool
	// PostDirect sends the card for a pending request to the identity and
	// returns its reference.
	PostDirect(ctx context.Context, r *Request, identity string) (ref string, err error)
}

// Replier is implemented by channels that can reply in a card's thread,
// where reminders go.
type Replier interface {
	// Remind replies in the thread of the card ref that the request still
	// waits, naming those of the identities in mention it can, and returns
	// the reply's reference. step numbers the reminder among the request's
	// steps (a platform that de-duplicates posts keys them by it).
	Remind(ctx context.Context, r *Request, ref string, step int, mention []string) (string, error)
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
	Identities []string
	// Voter is who an approval toward a quorum counts for, when it is not
	// Actor: an identity that stays the same for one person across apps
	// (Feishu's union_id, where Feishu sends one), so that one person
	// cannot meet a quorum alone by tapping through two apps.
	Voter        string
	Via          string // the channel's name
	Reason       string
	ModifiedArgs json.RawMessage
	// CardUpdated says the channel's card already shows the final state:
	// the card CardRef names (its platform reference), or, without one,
	// the channel's own card.
	CardUpdated bool
	CardRef     string
	// Elsewhere says the tap came from another chat than the channel's own
	// (a direct message, a forwarded card). It counts only for a listed
	// approver: "anyone who sees the card" means the channel's audience.
	Elsewhere bool
	// Remember asks for an approval that is also a grant ("approve for
	// D"), on a request whose route allows it.
	Remember bool
	// Entitled, when set, is the channel's word that the person may still
	// decide: asked under the row's lock, before the verdict is written
	// (a web user's role and session, as the config in force has them).
	// An error (EFORBIDDEN) refuses the verdict; a reload that demoted or
	// removed the user while the tap was on its way is seen here.
	Entitled func() error
}

// voter is who the decision's vote counts for.
func (d *Decision) voter() string {
	if d.Voter != "" {
		return d.Voter
	}
	return d.Actor
}

// Notifier carries "request changed" signals between replicas so that a
// waiter on one wakes when another decides; the store's Transition sends
// them. Without one, waking is in-process only (and the periodic re-read
// catches the rest).
type Notifier interface {
	// Listen calls listening each time it is in place (at first and after
	// each reconnection, before any id), then fn for every changed
	// request's id, until ctx ends (nil) or its connection fails. Signals
	// sent while nothing listened are lost, so listening re-reads.
	Listen(ctx context.Context, listening func(), fn func(requestID string)) error
}

// Observer receives the service's measurements (Prometheus, in production).
// Every method must be cheap and safe for concurrent use.
type Observer interface {
	RequestCreated(route string)
	RequestFinished(route string, status Status, waited time.Duration)
	// WaitersChanged moves the count of waits that have read their row and
	// wait for it to change (+1 once a wait first waits, -1 when it ends).
	WaitersChanged(delta int)
	CardDone(channel, op string, err error, took time.Duration)
	// CallbackRefused counts a channel callback that was not accepted
	// (replayed, malformed, naming an unknown request).
	CallbackRefused(channel string)
	// DecisionRefused counts a verdict the gate did not take, by the
	// error code that says why (ECONFLICT, EEXPIRED, EFORBIDDEN, ...).
	DecisionRefused(channel, code string)
	// Decided counts a call decided without a person: by a route's action
	// (via policy), a grant (via grant), or the agent's own flag on a
	// route that leaves it to the agent (via policy, by agent). recorded
	// is false for a route's record: false allows, which only this counts.
	Decided(route string, status Status, via string, recorded bool)
}

type nopObserver struct{}

func (nopObserver) RequestCreated(string)                         {}
func (nopObserver) RequestFinished(string, Status, time.Duration) {}
func (nopObserver) WaitersChanged(int)                            {}
func (nopObserver) CardDone(string, string, error, time.Duration) {}
func (nopObserver) CallbackRefused(string)                        {}
func (nopObserver) DecisionRefused(string, string)                {}
func (nopObserver) Decided(string, Status, string, bool)          {}

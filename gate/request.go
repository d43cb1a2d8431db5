// Package gate is Gatehouse's domain: approval requests, their life cycle, and
// the interfaces the store and the channels implement. It imports none of the
// adapters; they import it.
package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
)

// Status is where a request stands in its life cycle.
type Status string

// The life cycle: pending, then exactly one final state.
const (
	StatusPending   Status = "pending"
	StatusApproved  Status = "approved"
	StatusRejected  Status = "rejected"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// Final reports whether s is a terminal state.
func (s Status) Final() bool { return s != StatusPending && s != "" }

// Valid reports whether s is one of the five known states.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusApproved, StatusRejected, StatusExpired, StatusCancelled:
		return true
	}
	return false
}

// Verdict is what an expired request tells its agent.
type Verdict string

// The two verdicts a route may give on timeout.
const (
	VerdictDeny  Verdict = "deny"
	VerdictAllow Verdict = "allow"
)

// Actors and channels that are not people or adapters.
const (
	// ActorSystem decides requests a route decides alone (allow, deny, a
	// rate limit) and expires requests nobody answered.
	ActorSystem = "gatehouse"
	// ActorAgent allows a call on the agent's own word: it sent
	// requires_confirmation false and nothing in the config asks about the
	// call. Hooks answer it by leaving the call to the client's own prompt.
	ActorAgent = "agent"
	// ViaPolicy marks a verdict that a route gave without asking anyone.
	ViaPolicy = "policy"
	// ViaTimeout marks a verdict given at the deadline of a request that
	// people were asked about: expired, its route's on_timeout, or that
	// allow refused by the policy in force.
	ViaTimeout = "timeout"
	// WebChannel is the built-in channel: the web page's pending queue.
	WebChannel = "web"
)

// Request is one approval request: what an agent asked, for whom, and what
// became of it. It is a durable row; every field the API shows is here.
type Request struct {
	ID       string          `json:"id"`
	Status   Status          `json:"status"`
	ToolName string          `json:"tool_name"`
	ToolArgs json.RawMessage `json:"tool_args"`
	// RequiresConfirmation is the agent's own word, nil when it sent
	// none (the gate then asks where the config leaves it to the agent:
	// Asked).
	RequiresConfirmation *bool           `json:"requires_confirmation"`
	Summary              string          `json:"summary"`
	AgentID              string          `json:"agent_id"`
	UserID               string          `json:"user_id"`
	SessionID            string          `json:"session_id"`
	ToolCallID           string          `json:"tool_call_id"`
	Metadata             json.RawMessage `json:"metadata"`
	Route                string          `json:"route"`
	// Caller is the API token the request was made with ("" on a server
	// without tokens). Its idempotency key, reads and cancels are scoped to it.
	Caller         string   `json:"caller"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	Channels       []string `json:"channels"`
	Approvers      []string `json:"approvers"`
	Quorum         int      `json:"quorum"`
	OnTimeout      Verdict  `json:"on_timeout"`
	// RememberSeconds, when set, lets an approver "approve for" that long:
	// a grant for the same agent, tool and route, and the same arguments
	// unless RememberAnyArgs.
	RememberSeconds int64           `json:"remember_seconds,omitempty"`
	RememberAnyArgs bool            `json:"remember_any_args,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	ExpiresAt       time.Time       `json:"expires_at"`
	DecidedAt       *time.Time      `json:"decided_at"`
	DecidedBy       string          `json:"decided_by"`
	DecidedVia      string          `json:"decided_via"`
	Reason          string          `json:"reason"`
	ModifiedArgs    json.RawMessage `json:"modified_args"`
	// Person is who asked: the person the API token belongs to, else the
	// one whose user_id the agent sent; "" when neither is known.
	Person string `json:"person,omitempty"`
	// Plan is what the route asks beyond the first cards: self-approval,
	// direct cards, reminders and escalation. It is kept with the request,
	// so a config reload changes only requests made after it.
	Plan Plan `json:"-"`
	// NextStepAt is when the request's next reminder or escalation is due;
	// nil when none is.
	NextStepAt *time.Time `json:"-"`
	// MCPServer: the call is a Cursor MCP server's (Submission.MCPServer),
	// kept so that an approval is judged by the policy as the call was.
	MCPServer bool `json:"-"`
	// NewCards are the cards Store.Create inserts for a pending request;
	// nil means one card a channel. Not stored on the request (the cards are).
	NewCards []Card `json:"-"`
	// ByGrant is the grant that approves a request Submit records as
	// approved by one: Store.Create writes the request only while that
	// grant is active, in its own transaction, so a revocation that
	// committed first is never followed by an approval through the grant.
	// Not stored (the trail names the grant).
	ByGrant string `json:"-"`
}

// Plan is what a request's route asks of people beyond its first cards,
// and what it matched when the request was made.
type Plan struct {
	// Matched is the route's matchKey when the request was made, on a
	// route that remembers any arguments: the grant an approval of the
	// request gives covers calls only while the route matches the same.
	Matched string `json:"matched,omitempty"`
	// ForbidSelf refuses an approval by the person who asked (self_approval: forbid).
	ForbidSelf bool `json:"forbid_self,omitempty"`
	// Notify is where the cards go: NotifyChannel (""), NotifyDM or NotifyBoth.
	Notify string `json:"notify,omitempty"`
	// Remind re-notifies the approvers this often while the request waits.
	Remind time.Duration `json:"remind,omitempty"`
	// Escalate are the steps that widen a request nobody answered.
	Escalate []Escalation `json:"escalate,omitempty"`
}

// Escalation is one step of escalation: After the request was made, its
// card goes to Channels and Approvers may decide too.
type Escalation struct {
	After     time.Duration `json:"after"`
	Channels  []string      `json:"channels,omitempty"`
	Approvers []string      `json:"approvers,omitempty"`
}

// Where a route's cards go.
const (
	NotifyChannel = ""     // to the route's channels
	NotifyDM      = "dm"   // to each approver directly, where a channel can reach them
	NotifyBoth    = "both" // both
)

// Steps are what happens to a request while it waits for its verdict.
const (
	StepRemind   = "remind"
	StepEscalate = "escalate"
)

// Step is one reminder or escalation that happened to a request.
type Step struct {
	N    int       // 1, 2, … in the order they happened
	Kind string    // StepRemind or StepEscalate
	Due  time.Time // when it was due
	At   time.Time // when it was done
}

// Allowed reports whether the agent may run the tool call: approved, or
// expired on a route whose timeout verdict is allow. Everything else denies.
func (r *Request) Allowed() bool {
	switch r.Status {
	case StatusApproved:
		return true
	case StatusExpired:
		return r.OnTimeout == VerdictAllow
	}
	return false
}

// RememberFor is how long an approver's "approve for" lasts on this
// request; zero when its route does not remember.
func (r *Request) RememberFor() time.Duration { return time.Duration(r.RememberSeconds) * time.Second }

// Waited is how long the request waited for its verdict (or has waited so far).
func (r *Request) Waited(now time.Time) time.Duration {
	end := now
	if r.DecidedAt != nil {
		end = *r.DecidedAt
	}
	return end.Sub(r.CreatedAt)
}

// EffectiveArgs are the arguments the tool should run with: the approver's
// edits when there are any, the proposed ones otherwise.
func (r *Request) EffectiveArgs() json.RawMessage {
	if len(r.ModifiedArgs) > 0 && string(r.ModifiedArgs) != "null" {
		return r.ModifiedArgs
	}
	return r.ToolArgs
}

// Event is one line of a request's append-only audit trail. Seq, PrevHash
// and Hash place it in the tamper-evident chain of all events (package
// audit); the sealer sets them within moments of the event's write, and
// until then Seq is 0 and the hashes are empty.
type Event struct {
	ID        int64     `json:"id"`
	RequestID string    `json:"request_id"`
	At        time.Time `json:"at"`
	Type      string    `json:"type"`
	Actor     string    `json:"actor,omitempty"`
	Channel   string    `json:"channel,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Seq       int64     `json:"seq"`
	PrevHash  string    `json:"prev_hash"`
	Hash      string    `json:"hash"`
}

// Event types of the audit trail.
const (
	EventCreated         = "created"
	EventAutoAllowed     = "auto_allowed"
	EventPosted          = "card_posted"
	EventPostFailed      = "card_post_failed"
	EventPostAbandoned   = "card_post_abandoned"
	EventUpdated         = "card_updated"
	EventUpdateFailed    = "card_update_failed"
	EventUpdateAbandoned = "card_update_abandoned"
	EventVote            = "vote"
	EventDecided         = "decided"
	EventExpired         = "expired"
	EventCancelled       = "cancelled"
	EventRefused         = "decision_refused"
	EventCallbackRefused = "callback_refused"
	EventPolicy          = "policy_verdict" // allowed or denied by a route, or over a rate limit
	EventPolicyError     = "policy_error"   // a condition failed to evaluate on the way
	EventGrantGiven      = "grant_given"
	EventGrantUsed       = "grant_used"
	EventGrantRevoked    = "grant_revoked"
	// EventToolRan and EventToolFailed record what became of an approved
	// call, as the agent's client reported it after running the tool.
	EventToolRan    = "tool_ran"
	EventToolFailed = "tool_failed"
	EventReminded   = "reminded"  // the approvers were reminded of a request still pending
	EventEscalated  = "escalated" // the request went to more channels or approvers
)

// AnyArgsPrefix begins the args_hash of a grant for any arguments: the
// hash is of what its route matched and the call's place (anyArgsHash).
const AnyArgsPrefix = "any:"

// AnyArgs says the grant covers any arguments, in the place it was given
// when that call named one. An args_hash of "" is a grant for any
// arguments given before grants named their route's match; it covers
// nothing now.
func (g Grant) AnyArgs() bool {
	return g.ArgsHash == "" || strings.HasPrefix(g.ArgsHash, AnyArgsPrefix)
}

// ViaGrant marks a verdict that a grant gave without asking anyone.
const ViaGrant = "grant"

// Grant is an approver's "approve for D": for its duration, calls of the
// same agent (token) to the same tool on the same route, in the same place
// (working directory, MCP server), with the same arguments unless it is for
// any arguments (AnyArgs), are approved at once. It never crosses agents,
// tools, routes or places.
type Grant struct {
	ID        string     `json:"id"`
	Route     string     `json:"route"`
	Caller    string     `json:"caller"` // the token, or on a server without tokens the agent_id
	Tool      string     `json:"tool"`
	ArgsHash  string     `json:"args_hash,omitempty"` // AnyArgsPrefix… (or "", older): any arguments (AnyArgs)
	GivenBy   string     `json:"given_by"`
	GivenIDs  []string   `json:"given_ids,omitempty"` // every identity the giver tapped with, GivenBy first
	GivenVia  string     `json:"given_via"`
	RequestID string     `json:"request_id"` // the approval that gave it
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	RevokedBy string     `json:"revoked_by,omitempty"`
}

// identities are the giver's: every identity they tapped with, or the
// giver alone for a grant given before grants kept them.
func (g *Grant) identities() []string {
	if len(g.GivenIDs) == 0 {
		return []string{g.GivenBy}
	}
	return g.GivenIDs
}

// Active reports whether the grant covers calls at now.
func (g *Grant) Active(now time.Time) bool { return g.RevokedAt == nil && now.Before(g.ExpiresAt) }

// Card is what a channel posted (or is to post) for a request, and how far
// its platform copy has caught up with the request's state.
type Card struct {
	ID        int64     `json:"id"`
	RequestID string    `json:"request_id"`
	Channel   string    `json:"channel"`
	Kind      string    `json:"kind"`             // CardChannel, CardDirect or CardReminder
	Target    string    `json:"target,omitempty"` // a direct card's identity; a reminder's card reference
	Step      int       `json:"step,omitempty"`   // a reminder's step
	Ref       string    `json:"ref"`              // the platform's message reference, opaque to the gate
	Want      string    `json:"want"`             // "posted" or the request's final status
	Have      string    `json:"have"`             // what the platform shows: "", "posted" or a final status
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	Abandoned bool      `json:"abandoned"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CardPosted is the Want/Have value of a card that shows the open request.
const CardPosted = "posted"

// Kinds of card.
const (
	// CardChannel is the card in a channel's chat.
	CardChannel = "card"
	// CardDirect is a card sent to one approver; Target is their identity.
	CardDirect = "dm"
	// CardReminder is a reminder posted in the thread of a card (channel or
	// direct); Target is that card's reference, Step the reminder's step.
	// It is posted once and never updated.
	CardReminder = "reminder"
)

// Filter selects requests for the history.
type Filter struct {
	Status    []Status
	Tool      string // a glob (path.Match syntax) or an exact name
	Agent     string
	DecidedBy string
	Route     string
	// Caller, when set, keeps the requests made with that API token only.
	Caller *string
	Since  time.Time
	Until  time.Time
	Query  string // free text over tool, summary, arguments, agent and decider
	// ToolCallID and SessionID, when set, keep the requests of that call
	// (the client's tool_use_id) in that session.
	ToolCallID string
	SessionID  string
	// Policy says whether requests a route decided without a person
	// (decided_via policy) are shown: "" or "include" all, "exclude"
	// people's decisions only, "only" those alone.
	Policy string
	Limit  int    // see PageSize
	Cursor string // the id of the last request of the previous page
}

// PageSize is how many requests a page of f holds: Limit, 50 when it is
// not set, at most 1,000.
func (f Filter) PageSize() int {
	if f.Limit <= 0 {
		return 50
	}
	return min(f.Limit, 1000)
}

// Explain says in one line what became of the request, for agents, their
// users and the logs: "rejected by feishu:ou_abc via ops-feishu after 42s: over budget".
func (r *Request) Explain(now time.Time) string {
	after := r.Waited(now).Round(time.Second)
	withReason := func(s string) string {
		if r.Reason != "" {
			return s + ": " + r.Reason
		}
		return s
	}
	switch {
	case r.DecidedVia == ViaPolicy && r.Reason != "":
		return r.Reason // names the route and its message
	case r.Status == StatusApproved && r.DecidedVia == ViaGrant:
		return "approved at once: " + r.Reason
	}
	switch r.Status {
	case StatusApproved:
		return withReason(fmt.Sprintf("approved by %s via %s after %s", r.DecidedBy, r.DecidedVia, after))
	case StatusRejected:
		return withReason(fmt.Sprintf("rejected by %s via %s after %s", r.DecidedBy, r.DecidedVia, after))
	case StatusExpired:
		return fmt.Sprintf("expired: no verdict within %s (on timeout: %s)", r.ExpiresAt.Sub(r.CreatedAt).Round(time.Second), r.OnTimeout)
	case StatusCancelled:
		return withReason(fmt.Sprintf("cancelled by %s after %s", r.DecidedBy, after))
	}
	return fmt.Sprintf("waiting for approval (expires in %s)", max(r.ExpiresAt.Sub(now), 0).Round(time.Second))
}

// Verdict is how the request ended, as the audit chain seals it in the
// event that records its end (audit.Verdict).
func (r *Request) Verdict() audit.Verdict {
	v := audit.Verdict{Status: string(r.Status), By: r.DecidedBy, Via: r.DecidedVia, Reason: r.Reason, ModifiedArgs: string(r.ModifiedArgs)}
	if r.DecidedAt != nil {
		v.At = *r.DecidedAt
	}
	return v
}

// SealVerdict puts the digest of how r ended into the detail of the event
// that records it, written with the row in one transaction (the store's
// Transition, or Create for a call decided at once).
func SealVerdict(e *Event, r *Request) {
	e.Detail += "; " + r.Verdict().Mark()
}

// Asked is the agent's requires_confirmation as the gate reads it: true
// or absent (the gate fails closed) asks.
func (r *Request) Asked() bool { return r.RequiresConfirmation == nil || *r.RequiresConfirmation }

// Call is what the request asked for, as the audit chain seals it in the
// event that records its creation (audit.Call).
func (r *Request) Call() audit.Call {
	return audit.Call{Tool: r.ToolName, Args: string(r.ToolArgs), Summary: r.Summary, Metadata: string(r.Metadata),
		Agent: r.AgentID, User: r.UserID, Session: r.SessionID, ToolCallID: r.ToolCallID, Caller: r.Caller, Route: r.Route,
		CreatedAt: r.CreatedAt}
}

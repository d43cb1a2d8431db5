package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/internal/text"
	"github.com/gatehouse-dev/gatehouse/policy"
)

// Decide applies a person's verdict. The first verdict wins; a second gets
// ECONFLICT, one after the deadline EEXPIRED, one from someone the route
// does not name EFORBIDDEN. Refusals are audited. With a quorum above one,
// each approval is a vote and the vote that meets the quorum approves.
//
// Who may decide is checked on the row the store's transaction holds, and
// that transaction writes the verdict: nothing can change in between.
func (s *Service) Decide(ctx context.Context, d Decision) (*Request, error) {
	t := Transition{ID: d.RequestID, To: StatusRejected, Kind: BeforeDeadline, At: s.stamp(), By: d.Actor, Via: d.Via,
		Reason: text.Clean(d.Reason)}
	t.Reason, _ = text.CutBytes(t.Reason, maxTextLen)
	tapped := append([]string{d.Actor}, d.Identities...)
	if d.Voter != "" && !slices.Contains(tapped, d.Voter) {
		tapped = append(tapped, d.Voter)
	}
	var argsErr error // what is wrong with the edited arguments
	matched := ""     // what the route matches now, for a grant on a request made before plans kept it
	if d.Approve {
		t.To = StatusApproved
		t.Vote = &Vote{Actor: d.Actor, Via: d.Via, Identities: tapped} // who it counts for: Admit
		if len(d.ModifiedArgs) > 0 {
			var err error
			t.ModifiedArgs, err = compactJSON(d.ModifiedArgs, "")
			switch k, dup := keyTwice(t.ModifiedArgs); {
			case err != nil || len(t.ModifiedArgs) == 0 || len(t.ModifiedArgs) > maxArgsLen:
				argsErr = Errorf(EINVALID, "modified arguments are not valid JSON of at most %d KiB", maxArgsLen>>10)
			case dup:
				// As on submission: the page shows one value, a tool may
				// run with the other.
				argsErr = Errorf(EINVALID, "modified arguments give the key %q twice in one object "+giveOnce, k)
			}
		}
	}
	t.Admit = func(r *Request) error {
		if r.Status.Final() {
			return nil // the store reports it as it stands
		}
		if d.Entitled != nil {
			// The tap was judged when it arrived; a reload since may have
			// taken the right to decide away (a web user demoted, removed,
			// or given a new password).
			if err := d.Entitled(); err != nil {
				return err
			}
		}
		// Who decides: their identities, and the people those belong to,
		// by the people in force now, under the row's lock (a reload
		// between a read of the people and the write would let an
		// identity just taken from a person decide as them). An approvers
		// list may name either; a person's approvals count once toward a
		// quorum, whichever identity they tap with. The voter comes first:
		// where a platform knows an identity that is stable across its
		// apps (Feishu's union_id), that one says who the person is.
		rs := s.rules.Load()
		people := rs.people
		// The approvers: the request's list, and for an approval its
		// route's list as it is now, so an identity a reload took off the
		// route approves no more (additions reach only the requests made
		// after). A request made with no list stays its channels'
		// audience's. Its own approvers may still reject it: a route
		// renamed and its name given to another with other approvers must
		// not leave it with no one who may stop it.
		lists := [][]string{r.Approvers}
		if len(r.Approvers) > 0 && d.Approve {
			lists = append(lists, rs.approversOf(r.Route))
		}
		// Self-approval is off if the request's plan or its route as it is
		// now says so: a reload that turns it off reaches the requests
		// already made, as one that takes an approver off the list does.
		inForce, _ := rs.route(r.Route)
		forbidSelf := r.Plan.ForbidSelf || inForce.Plan.ForbidSelf
		// A request made before its plan kept what its route matched
		// (Plan.Matched) gives its grant for any arguments under the route
		// as it is now, as such a grant was before: one for "" covers nothing.
		matched = r.Plan.Matched
		if matched == "" && r.RememberAnyArgs && r.Route == inForce.Name {
			matched = inForce.matchKey()
		}
		persons := people.of(append([]string{d.Voter, d.Actor}, d.Identities...)...)
		ids := append([]string{d.Actor}, d.Identities...)
		for _, p := range persons {
			ids = append(ids, PersonPrefix+p)
		}
		if t.Vote != nil {
			t.Vote.Voter = d.voter()
			if len(persons) > 0 {
				t.Vote.Voter = PersonPrefix + persons[0]
			}
			mine := Cast{Voter: t.Vote.Voter, Identities: tapped}
			var askers []string
			if forbidSelf {
				askers = people.askers(r)
			}
			t.Vote.Tally = func(earlier []Cast) (bool, int) {
				return people.tally(mine, s.webStill(people.deciding(lists, askers, earlier)))
			}
		}
		if slices.ContainsFunc(lists, func(approvers []string) bool { return !MayDecide(approvers, ids...) }) {
			return Errorf(EFORBIDDEN, "%s is not an approver of this request", d.Actor)
		}
		if len(r.Approvers) == 0 && !slices.Contains(r.Channels, d.Via) {
			// "Anyone who can see the card" means the card's audience: with
			// no approvers list, a verdict counts only through the request's
			// channels.
			return Errorf(EFORBIDDEN, "this request was sent to %s, not %s; only its audience there (or a listed approver) may decide", strings.Join(r.Channels, ", "), d.Via)
		}
		if len(r.Approvers) == 0 && d.Elsewhere {
			// The same audience, on a platform that told us the tap came
			// from another chat than the channel's (a card forwarded).
			return Errorf(EFORBIDDEN, "this card can only be used where it was posted: %s", d.Via)
		}
		if d.Approve && forbidSelf {
			for _, asker := range people.askers(r) {
				if slices.Contains(persons, asker) {
					return Errorf(ESELF, "you asked for this; someone else must approve (self-approval is off on route %s)", r.Route)
				}
			}
		}
		if d.Remember {
			switch {
			case !d.Approve:
				return Errorf(EINVALID, "only an approval can be remembered")
			case r.RememberSeconds <= 0:
				return Errorf(EINVALID, "route %s does not let approvers approve for a while", r.Route)
			case len(d.ModifiedArgs) > 0:
				return Errorf(EINVALID, "an approval for a while covers the arguments as proposed: approve edited arguments once")
			case r.Quorum > 1:
				return Errorf(EINVALID, "an approval for a while needs a single approver; this route needs %d", r.Quorum)
			}
		}
		if d.Approve && argsErr == nil && len(t.ModifiedArgs) > 0 && bytes.HasPrefix(r.ToolArgs, []byte("{")) && t.ModifiedArgs[0] != '{' {
			// A tool's input is an object; clients apply no other edit.
			argsErr = Errorf(EINVALID, "modified arguments must be a JSON object, as the call's are")
		}
		if d.Approve {
			if err := rs.stillAsked(r, t.ModifiedArgs, argsErr == nil, t.At); err != nil {
				return err
			}
		}
		if d.Approve && len(d.ModifiedArgs) > 0 {
			if r.Quorum > 1 {
				// Earlier voters approved the proposed arguments; the last
				// one must not swap in others.
				return Errorf(EINVALID, "edited arguments need a single approver; this route needs %d approvals", r.Quorum)
			}
			if argsErr != nil {
				return argsErr
			}
		}
		return nil
	}
	detail := string(t.To)
	if d.Remember {
		detail += " (and remembered: a grant)"
		t.Grant = func(r *Request) (*Grant, Event) {
			cp := *r
			cp.Plan.Matched = matched
			return s.grantFor(&cp, d.Actor, tapped, d.Via, t.At)
		}
	}
	if t.Reason != "" {
		detail += ": " + t.Reason
	}
	if t.ModifiedArgs != nil {
		detail += " (with edited arguments)"
	}
	t.Event = Event{Type: EventDecided, Actor: d.Actor, Channel: d.Via, Detail: detail}
	if d.CardUpdated {
		t.InlineCard, t.InlineRef = d.Via, d.CardRef
	}
	out, err := s.transition(ctx, t)
	if e := (*Error)(nil); errors.As(err, &e) && out.Request != nil {
		s.obs.DecisionRefused(d.Via, e.Code)
		s.addEvent(ctx, Event{RequestID: out.Request.ID, Type: EventRefused, Actor: d.Actor, Channel: d.Via,
			Detail: fmt.Sprintf("%s: %s", verb(d.Approve), e.Message)})
		return out.Request, err
	}
	if err != nil {
		return nil, err
	}
	return out.Request, nil
}

// webStill drops the votes cast on the web page by a user who may no
// longer approve there (a reload demoted or removed them): as their grants
// stop approving calls (grantHolds), their earlier approvals stop counting
// toward a quorum.
func (s *Service) webStill(casts []Cast) []Cast {
	return slices.DeleteFunc(casts, func(c Cast) bool {
		return slices.ContainsFunc(append([]string{c.Voter}, c.Identities...), func(id string) bool {
			user, web := strings.CutPrefix(id, WebChannel+":")
			return web && !s.webMayApprove(user)
		})
	})
}

// stillAsked refuses an approval of a call the policy in force would not
// have a person approve here: the call the agent will run (the edited
// arguments, when there are any and they read) is judged as if the agent
// sent it now. A call the policy denies cannot be approved, whatever it
// asked before (a reload made it so; the agent sending it again under its
// key is refused too). Edited arguments must stay the route's call, or be
// one the policy allows outright: an approver of small payments must not
// turn one into a large payment that only others may approve, or that the
// policy denies. (An allow the agent raised to an ask, by requires_confirmation,
// is still one the policy gives.)
func (rs *rules) stillAsked(r *Request, edited json.RawMessage, editRead bool, now time.Time) error {
	edit := len(edited) > 0 && editRead
	args := r.ToolArgs
	if edit {
		args = edited
	}
	d, err := rs.judge(r, args, now)
	// asked: a person decides the call the agent will run, on its route.
	asked := d.action != policy.Allow && !d.raised
	switch {
	case err != nil:
		return err
	case d.action == policy.Deny:
		return Errorf(EFORBIDDEN, "the policy in force denies this call (route %s): it cannot be approved", d.route.Name)
	case !edit:
		return nil
	case asked && d.route.Name != r.Route:
		return Errorf(EFORBIDDEN, "the edited arguments make a call of route %s, not %s, whose approvers decide it: approve the call as proposed, or reject it", d.route.Name, r.Route)
	case asked && !rs.sameRouteNow(r, d, now):
		return Errorf(EFORBIDDEN, "route %s now takes other calls than this one, which goes elsewhere: approve the call as proposed, or reject it", r.Route)
	case d.route.Name != r.Route && d.route.Rate != nil:
		// The policy allows route d.route's calls only up to its rate
		// limit, which an approval of another route's call does not count.
		return Errorf(EFORBIDDEN, "the edited arguments make a call of route %s, not %s, which allows its calls only up to a rate limit: approve the call as proposed, or reject it", d.route.Name, r.Route)
	}
	return nil
}

// sameRouteNow says the policy in force puts r's call as proposed on the
// route it puts the edited call on (d): a reload that gave r's route name
// to other calls makes that name no longer say the edit stayed r's call.
func (rs *rules) sameRouteNow(r *Request, d decision, now time.Time) bool {
	p, err := rs.judge(r, r.ToolArgs, now)
	return err == nil && p.route.Name == d.route.Name
}

// judge is what the policy in force makes of r's call with args, as if
// the agent sent it at now.
func (rs *rules) judge(r *Request, args json.RawMessage, now time.Time) (decision, error) {
	call := Submission{Caller: r.Caller, AgentID: r.AgentID, UserID: r.UserID, SessionID: r.SessionID, ToolName: r.ToolName,
		ToolArgs: args, Metadata: r.Metadata, RequiresConfirmation: r.RequiresConfirmation, MCPServer: r.MCPServer}
	return rs.decide(&call, now, false)
}

func verb(approve bool) string {
	if approve {
		return "approve"
	}
	return "reject"
}

// finalError says why a request cannot be decided any more.
func finalError(r *Request) *Error {
	switch r.Status {
	case StatusPending, StatusExpired:
		// Pending: past its deadline, and its expiry is not recorded yet
		// (it may have failed): too late all the same.
		return Errorf(EEXPIRED, "expired at %s", r.ExpiresAt.UTC().Format(time.RFC3339))
	case StatusCancelled:
		return Errorf(ECONFLICT, "already cancelled by %s", r.DecidedBy)
	default:
		return Errorf(ECONFLICT, "already %s by %s", r.Status, r.DecidedBy)
	}
}

// Caller is an authenticated API token as the gate sees it: the name that
// its requests, idempotency keys, reads and cancels are scoped to, and the
// scopes that widen its reads and cancels to every token's requests.
type Caller struct {
	// Name is the token's name; "" on a server without tokens, where every
	// request has the caller "".
	Name string
	// ReadAll lets the token read, list, follow and re-attach to every
	// request (the config's read_all scope).
	ReadAll bool
	// CancelAll lets the token cancel every request (cancel_all). The
	// answer to a cancel is the request it cancelled.
	CancelAll bool
}

// Owned returns a request the caller may read: one made with its token, or
// any with ReadAll. Any other request is ENOTFOUND, so a token cannot even
// learn that another's exists.
func (s *Service) Owned(ctx context.Context, c Caller, id string) (*Request, error) {
	r, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Caller != c.Name && !c.ReadAll {
		return nil, Errorf(ENOTFOUND, "no request %q", id)
	}
	return r, nil
}

// Cancel withdraws a pending request on its agent's behalf. Only the token
// that made the request may cancel it, or one with CancelAll; to any other
// it does not exist. The check runs on the row the transaction holds.
func (s *Service) Cancel(ctx context.Context, c Caller, id, by, reason string) (*Request, error) {
	reason, _ = text.CutBytes(text.Clean(reason), maxTextLen)
	detail := "cancelled by the agent"
	if reason != "" {
		detail += ": " + reason
	}
	out, err := s.transition(ctx, Transition{ID: id, To: StatusCancelled, Kind: BeforeDeadline, At: s.stamp(), By: by, Via: "api",
		Reason: reason, Event: Event{Type: EventCancelled, Actor: by, Channel: "api", Detail: detail},
		Admit: func(r *Request) error {
			if r.Caller != c.Name && !c.CancelAll {
				return Errorf(ENOTFOUND, "no request %q", id)
			}
			return nil
		}})
	if e := (*Error)(nil); errors.As(err, &e) && out.Request != nil {
		if e.Code == ENOTFOUND {
			return nil, err
		}
		s.addEvent(ctx, Event{RequestID: id, Type: EventRefused, Actor: by, Channel: "api", Detail: "cancel: " + e.Message})
	}
	return out.Request, err
}

// Expire moves an overdue pending request to expired. It is idempotent
// across replicas: the compare-and-set lets exactly one caller do it, and
// the others get ECONFLICT (or EEXPIRED) with the row as it stands.
func (s *Service) Expire(ctx context.Context, id string) (*Request, error) {
	r, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status.Final() {
		return r, finalError(r)
	}
	reason := audit.ExpiryReason(r.ExpiresAt.Sub(r.CreatedAt).Round(time.Second), string(r.OnTimeout))
	at := s.stamp()
	for range 3 {
		// Judged by the rules in force, and written only if they are still
		// in force on the row the transaction holds (as Decide judges an
		// approval there): a reload that lands while the expiry waits for
		// the row is judged again.
		rs := s.rules.Load()
		t := Transition{ID: id, To: StatusExpired, Kind: AfterDeadline, At: at, By: ActorSystem, Via: ViaTimeout,
			Reason: reason, Event: Event{Type: EventExpired, Actor: ActorSystem, Detail: reason},
			Admit: func(*Request) error {
				if s.rules.Load() != rs {
					return errRejudge
				}
				return nil
			}}
		why := ""
		if r.OnTimeout == VerdictAllow {
			why = rs.silenceRefused(r, at)
		}
		if why != "" {
			// Still via the deadline: people were asked about it, and a
			// verdict via policy is one given without asking anyone,
			// which the people-first history and export leave out. The
			// reason and the trail's policy event name the route.
			t.To = StatusRejected
			t.Reason = reason + "; " + why
			t.Event = Event{Type: EventPolicy, Actor: ActorSystem, Channel: ViaPolicy, Detail: string(StatusRejected) + ": " + t.Reason}
		}
		out, err := s.transition(ctx, t)
		if errors.Is(err, errRejudge) {
			continue
		}
		return out.Request, err
	}
	return nil, Errorf(EUNAVAILABLE, "the config was reloaded while request %s expired, again and again: try again", id)
}

// errRejudge refuses an expiry judged by rules no longer in force.
var errRejudge = errors.New("the rules changed while the expiry was judged")

// silenceRefused says why the rules in force refuse the allow of a
// request's silence ("" when they do not): silence allows only a call the
// policy in force does not deny, on a route that still allows on timeout
// (as attach answers a key after the expiry). A call the policy cannot
// judge is refused too (an error never allows).
func (rs *rules) silenceRefused(r *Request, at time.Time) string {
	d, err := rs.judge(r, r.ToolArgs, at)
	switch {
	case err != nil:
		return "the policy in force could not judge the call: " + err.Error()
	case d.action == policy.Deny:
		return routeReason("denied", d.route) + " (the policy in force)"
	case d.action == policy.Allow:
		return ""
	}
	if _, onTimeout := rs.waitOf(d.route); onTimeout != VerdictAllow || d.askedAlone() != "" {
		return "route " + d.route.Name + " now denies on timeout (the policy in force)"
	}
	return ""
}

// transition runs a compare-and-set and, when it took, wakes the local
// waiters and the card worker (the store's Notifier wakes other replicas').
// When it did not take, the error says what the request became instead; a
// vote that did not yet meet its quorum is no error.
func (s *Service) transition(ctx context.Context, t Transition) (Outcome, error) {
	t.Event.RequestID, t.Event.At = t.ID, t.At
	out, err := s.store.Transition(ctx, t)
	if err != nil {
		return out, err // refused by Admit (with the row), or the database failed
	}
	r := out.Request
	switch {
	case out.Changed:
		s.settled(r)
		return out, nil
	case r.Status.Final():
		return out, finalError(r)
	case t.Kind == BeforeDeadline && !t.At.Before(r.ExpiresAt):
		// Too late: expire it now rather than at the sweeper's next round.
		if exp, err := s.Expire(ctx, t.ID); exp != nil && (err == nil || exp.Status.Final()) {
			out.Request = exp
		}
		return out, finalError(out.Request)
	case t.Vote != nil && r.Quorum > 1 && !out.Fresh:
		return out, Errorf(ECONFLICT, "%s already approved; %d of %d approvals so far", t.Vote.Voter, out.Votes, r.Quorum)
	case t.Vote != nil && r.Quorum > 1:
		return out, nil // counted; more approvals are needed
	}
	return out, Errorf(ECONFLICT, "not yet due to expire")
}

// settled answers the request's waiters here, hands the final row to them,
// and starts its cards' final update.
func (s *Service) settled(r *Request) {
	s.waiters.settle(r)
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
	if _, err := s.store.Get(ctx, requestID); err != nil {
		return
	}
	detail, _ = text.CutBytes(text.Clean(detail), maxTextLen)
	s.addEvent(ctx, Event{RequestID: requestID, Type: EventCallbackRefused, Actor: actor, Channel: channel, Detail: detail})
}

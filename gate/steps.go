package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// The steps of a request while it waits: reminders and escalations. Each
// is taken by one replica in one transaction (Store.Advance) that holds the
// request's row, records the step under a unique (request, step) key, and
// writes what the step changes: the request's approvers and channels, the
// cards to post, the event on the trail, and when the next step is due.
// The cards are then posted by the card worker, like any other, so a
// reminder or an escalated card goes out once across replicas and an
// escalated card is updated to the final state with the others.

// StepState is what Advance shows the gate of a request whose step is due:
// the row as the transaction holds it, its steps so far, its cards and who
// approved it so far toward its quorum.
type StepState struct {
	Request *Request
	Steps   []Step
	Cards   []Card
	Votes   Votes
}

// StepWork is what a due step does; Store.Advance writes it in the
// transaction that read the StepState.
type StepWork struct {
	// Step is the step taken; its Kind is "" when none is due (another
	// replica took it, or the plan changed), and then only Next is written.
	Step Step
	// Approvers and Channels, when not nil, replace the request's.
	Approvers []string
	Channels  []string
	// Cards are added (a card that exists is left alone).
	Cards  []Card
	Events []Event
	// Next is when the request's next step is due; nil: none is.
	Next *time.Time
}

// nextStep is when r's next step is due after steps: its next escalation,
// or its next reminder (Remind after the last one, or after it was made),
// whichever comes first; nil when neither comes before its deadline.
func nextStep(r *Request, steps []Step) *time.Time {
	var next time.Time
	if n := countSteps(steps, StepEscalate); n < len(r.Plan.Escalate) {
		next = r.CreatedAt.Add(r.Plan.Escalate[n].After)
	}
	if r.Plan.Remind > 0 {
		last := r.CreatedAt
		for _, st := range steps {
			if st.Kind == StepRemind {
				last = st.At
			}
		}
		if t := last.Add(r.Plan.Remind); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if next.IsZero() || !next.Before(r.ExpiresAt) {
		return nil
	}
	next = next.UTC().Truncate(time.Microsecond)
	return &next
}

func countSteps(steps []Step, kind string) int {
	n := 0
	for _, st := range steps {
		if st.Kind == kind {
			n++
		}
	}
	return n
}

// advance takes the steps that came due, across replicas: each due
// request's step in a transaction of its own.
func (s *Service) advance(ctx context.Context) {
	if s.stopped() {
		return // a server shutting down takes no new steps: another replica, or this one restarted, will
	}
	ids, err := s.store.DueSteps(ctx, s.now(), 100)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("looking for due reminders and escalations failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		// A request late by more than one step (the server was down)
		// catches up one step a transaction, the escalations in order.
		for range 100 {
			took, err := s.Advance(ctx, id)
			if err != nil && ctx.Err() == nil {
				s.log.Error("reminder or escalation failed", "request_id", id, "err", err)
			}
			if err != nil || !took {
				break
			}
		}
	}
}

// Advance takes the request's step that is due now, if one is, and says
// whether it took one. Across replicas exactly one caller takes each step.
func (s *Service) Advance(ctx context.Context, id string) (bool, error) {
	now := s.stamp()
	work, err := s.store.Advance(ctx, id, now, func(st StepState) StepWork { return s.plan(st, now) })
	if err != nil || work.Step.Kind == "" {
		return false, err
	}
	s.log.Info("request "+work.Step.Kind+"ed", "request_id", id, "step", work.Step.N)
	if len(work.Cards) > 0 {
		s.kickWork()
	}
	return true, nil
}

// plan decides what the request's due step does, from the row and the
// steps the transaction holds.
func (s *Service) plan(st StepState, now time.Time) StepWork {
	r := st.Request
	var w StepWork
	if r.Status != StatusPending || !now.Before(r.ExpiresAt) {
		return w
	}
	due := nextStep(r, st.Steps)
	if due == nil || due.After(now) {
		w.Next = due
		return w
	}
	w.Step = Step{N: len(st.Steps) + 1, Due: *due, At: now}
	esc := countSteps(st.Steps, StepEscalate)
	if esc < len(r.Plan.Escalate) && !r.CreatedAt.Add(r.Plan.Escalate[esc].After).After(now) {
		// Escalations first: they widen what a reminder then names.
		w.Step.Kind, w.Step.Due = StepEscalate, r.CreatedAt.Add(r.Plan.Escalate[esc].After)
		s.escalate(&w, st, r.Plan.Escalate[esc], esc+1)
	} else {
		w.Step.Kind = StepRemind
		s.remind(&w, st, countSteps(st.Steps, StepRemind)+1)
	}
	w.Next = nextStep(r, append(slices.Clone(st.Steps), w.Step))
	for i := range w.Events {
		w.Events[i].RequestID, w.Events[i].At, w.Events[i].Actor = r.ID, now, ActorSystem
		w.Events[i].Detail, _ = text.CutBytes(w.Events[i].Detail, maxTextLen) // long approvers lists
	}
	return w
}

// remind replies in the thread of every card the request's channels show
// now (those that can take a reply), naming its approvers.
func (s *Service) remind(w *StepWork, st StepState, n int) {
	var where []string
	for _, c := range st.Cards {
		if c.Kind == CardReminder || c.Have != CardPosted || c.Ref == "" {
			continue
		}
		if _, ok := s.channels[c.Channel].(Replier); !ok {
			continue
		}
		w.Cards = append(w.Cards, Card{Channel: c.Channel, Kind: CardReminder, Target: c.Ref, Step: w.Step.N})
		where = append(where, c.Channel)
	}
	r := st.Request
	who := "its approvers"
	if len(r.Approvers) > 0 {
		people := s.peopleNow()
		var left []string
		for _, a := range r.Approvers {
			if !people.votedAs(a, st.Votes) {
				left = append(left, a)
			}
		}
		who = strings.Join(left, ", ")
		if len(left) == 0 {
			who = "no one (every approver listed has approved)"
		}
		if v := st.Votes.Voters; len(v) > 0 {
			who += fmt.Sprintf(" (%d of %d approvals so far, by %s)", len(v), r.Quorum, strings.Join(v, ", "))
		}
	} else if len(r.Channels) > 0 {
		who = "whoever sees its cards in " + strings.Join(r.Channels, ", ")
	}
	detail := fmt.Sprintf("reminder %d: still pending; %s reminded", n, who)
	if len(where) > 0 {
		detail += fmt.Sprintf(" in the thread of %d card(s)", len(where))
	} else {
		detail += " (no posted card to reply to: the request page and queue show it)"
	}
	w.Events = append(w.Events, Event{Type: EventReminded, Detail: detail})
}

// escalate widens the request by one step: more channels, more approvers,
// and the cards that brings (a channel card in each new channel, a direct
// card to each new approver when the route sends them).
func (s *Service) escalate(w *StepWork, st StepState, e Escalation, n int) {
	r := *st.Request
	var addCh, addAp []string
	for _, ch := range e.Channels {
		if !slices.Contains(r.Channels, ch) {
			addCh = append(addCh, ch)
		}
	}
	for _, a := range e.Approvers {
		if !slices.Contains(r.Approvers, a) {
			addAp = append(addAp, a)
		}
	}
	r.Channels = append(slices.Clone(r.Channels), addCh...)
	if len(r.Approvers) > 0 {
		// An empty list is everyone who sees a card, which no list widens.
		r.Approvers = append(slices.Clone(r.Approvers), addAp...)
	} else {
		addAp = nil
	}
	w.Channels, w.Approvers = r.Channels, r.Approvers
	for _, ch := range addCh {
		w.Cards = append(w.Cards, Card{Channel: ch, Kind: CardChannel})
	}
	w.Cards = append(w.Cards, s.directCards(&r, st.Cards, s.peopleNow())...)
	detail := fmt.Sprintf("escalation %d, %s after the request:", n, e.After)
	if len(addCh) > 0 {
		detail += " cards to " + strings.Join(addCh, ", ") + ";"
	}
	if len(addAp) > 0 {
		detail += " approvers now include " + strings.Join(addAp, ", ") + ";"
	}
	if len(addCh) == 0 && len(addAp) == 0 {
		detail += " nothing new (its channels and approvers were there already);"
	}
	w.Events = append(w.Events, Event{Type: EventEscalated, Detail: strings.TrimSuffix(detail, ";")})
}

// directCards are the direct cards r's plan sends that have does not hold
// yet: one to each person (or lone identity) asked, through the first of
// their identities that one of r's channels can reach, by the first such
// channel.
func (s *Service) directCards(r *Request, have []Card, people *People) []Card {
	if r.Plan.Notify != NotifyDM && r.Plan.Notify != NotifyBoth {
		return nil
	}
	var out []Card
	for _, ids := range people.asked(r) {
		if slices.ContainsFunc(have, func(c Card) bool { return c.Kind == CardDirect && slices.Contains(ids, c.Target) }) {
			continue
		}
		if c, ok := s.direct(r, ids); ok {
			out = append(out, c)
		}
	}
	return out
}

// direct is the direct card to the first of ids a channel of r reaches.
func (s *Service) direct(r *Request, ids []string) (Card, bool) {
	for _, id := range ids {
		for _, name := range r.Channels {
			if d, ok := s.channels[name].(Directer); ok && d.Reaches(id) {
				return Card{Channel: name, Kind: CardDirect, Target: id}, true
			}
		}
	}
	return Card{}, false
}

// firstCards are the cards a new pending request gets: a card in each of
// its channels, direct cards to its approvers when its route sends them,
// or, for direct cards only, the channel cards all the same when no
// approver can be reached directly (somebody must see the request). The
// note, when not empty, says so for the trail.
func (s *Service) firstCards(r *Request, people *People) (cards []Card, note string) {
	directs := s.directCards(r, nil, people)
	if r.Plan.Notify != NotifyDM || len(directs) == 0 {
		for _, ch := range r.Channels {
			cards = append(cards, Card{Channel: ch, Kind: CardChannel})
		}
	}
	if r.Plan.Notify == NotifyDM && len(directs) == 0 {
		note = "no approver can be reached directly through " + strings.Join(r.Channels, ", ") + ", so the cards went to the channels"
	}
	return append(cards, directs...), note
}

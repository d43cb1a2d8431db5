package gate

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// kickWork asks the card worker to look for due work now rather than at its
// next tick.
func (s *Service) kickWork() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// work claims the cards whose platform copy lags behind their request and
// posts or updates them, at most CardWorkers at a time. It claims only as
// many cards as it has free workers, so no lease is held by a card waiting
// for a worker. Claims are leases in the database, so across replicas each
// card is worked on by one worker at a time.
//
// Only this loop starts workers, so the free count it reads can only grow
// under it. When it stops for want of a free worker, the next worker to
// finish kicks it: saturated is set before the count is read, so a worker
// finishing in between either frees a slot this round sees or finds the
// mark and kicks.
func (s *Service) work(ctx context.Context) {
	for ctx.Err() == nil && !s.stopped() {
		s.saturated.Store(true)
		free := s.opts.CardWorkers - int(s.busy.Load())
		if free <= 0 {
			return
		}
		s.saturated.Store(false)
		// Reserve the workers before claiming, under the lock Stop takes:
		// once Stop has returned nothing new starts, and Drain's wait
		// covers everything that did.
		s.stopMu.Lock()
		if s.stopped() {
			s.stopMu.Unlock()
			return
		}
		s.workers.Add(free)
		s.stopMu.Unlock()
		cards, err := s.store.ClaimCards(ctx, s.now(), s.opts.CardLease, s.owner, free)
		if err != nil && ctx.Err() == nil {
			s.log.Error("claiming card work failed", "err", err)
		}
		for _, c := range cards {
			s.busy.Add(1)
			go func() {
				defer s.workers.Done()
				s.workCard(ctx, c)
				s.busy.Add(-1)
				if s.saturated.CompareAndSwap(true, false) {
					s.kickWork()
				}
			}()
		}
		for range free - len(cards) {
			s.workers.Done()
		}
		if err != nil || len(cards) < free {
			return // nothing more is due now
		}
	}
}

// Drain waits, at most until ctx ends, for the card posts and updates in
// flight, so their outcome is recorded before the database closes (an
// unrecorded post would be posted again when its lease runs out). Call it
// after Stop and before cancelling the context Start was given: the work in
// flight runs on that context.
func (s *Service) Drain(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// workCard brings one card up to date with its request: post it, update it
// to its final form, or, for a request that ended before its card went out,
// record that no card is needed.
func (s *Service) workCard(ctx context.Context, c Card) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CardLease*3/4)
	defer cancel()
	res := CardResult{ID: c.ID, Owner: s.owner}
	defer func() {
		res.At = s.stamp()
		if res.Event != nil {
			res.Event.At = res.At
		}
		// Recorded even when ctx ended: an unrecorded post is posted again.
		due, err := s.store.FinishCard(context.WithoutCancel(ctx), res)
		if err != nil {
			s.log.Error("recording card outcome failed", "request_id", c.RequestID, "channel", c.Channel, "err", err)
		}
		if due {
			s.kickWork()
		}
	}()
	r, err := s.store.Get(ctx, c.RequestID)
	if err != nil {
		res.Have, res.Err = c.Have, err.Error()
		res.NextAttempt = s.now().Add(backoff(c.Attempts))
		return
	}
	ch, ok := s.channels[c.Channel]
	if !ok {
		res.Have, res.Err, res.Abandoned = c.Have, "channel "+c.Channel+" is not configured", true
		res.Event = &Event{RequestID: r.ID, Type: EventPostAbandoned, Channel: c.Channel, Detail: res.Err}
		return
	}
	op, what := "post", "card"
	switch c.Kind {
	case CardDirect:
		what = "direct card to " + c.Target
	case CardReminder:
		op, what = "remind", fmt.Sprintf("reminder (step %d)", c.Step)
	}
	start := time.Now()
	switch {
	case c.Kind == CardReminder && c.Have != "":
		// Posted; reminders are never updated.
		res.Have = c.Want
		return
	case c.Have == "" && r.Status.Final() && (c.Kind == CardReminder || c.Attempts <= 1):
		// Ended before its card went out: nothing to announce or update.
		res.Have = string(r.Status)
		return
	case c.Have == "":
		// Not posted yet; or the request ended after a claim that tried to
		// post the card and never heard back (a timeout, a 5xx, a replica
		// killed), so the card may be on the platform with its buttons.
		// Posting under a later claim finds an earlier card where the
		// platform allows (Slack's search, Feishu's de-duplication) or
		// posts one, and the final update follows either way.
		var ref string
		ref, err = s.guarded(c, op, func() (string, error) { return s.post(ctx, ch, c, r) })
		res.Have, res.Ref = CardPosted, ref
	case r.Status.Final():
		op = "update"
		_, err = s.guarded(c, op, func() (string, error) { return "", ch.Update(ctx, r, c.Ref) })
		res.Have = string(r.Status)
	default:
		// Posted and still pending: nothing due (a stale claim).
		res.Have = c.Have
		return
	}
	s.obs.CardDone(c.Channel, op, err, time.Since(start))
	if err == nil {
		res.Event = &Event{RequestID: r.ID, Type: EventPosted, Channel: c.Channel, Detail: what + " posted"}
		switch {
		case op == "update":
			res.Event.Type, res.Event.Detail = EventUpdated, what+" updated to "+string(r.Status)
		case c.Kind == CardReminder:
			res.Event.Detail = what + " posted in the thread of card " + c.Target
		}
		return
	}
	res.Have, res.Err = c.Have, err.Error()
	typ := EventPostFailed
	if op == "update" {
		typ = EventUpdateFailed
	}
	if c.Attempts >= s.opts.CardAttempts {
		res.Abandoned = true
		typ = EventPostAbandoned
		if op == "update" {
			typ = EventUpdateAbandoned
		}
		s.log.Error(what+" "+op+" abandoned", "request_id", r.ID, "channel", c.Channel, "attempts", c.Attempts, "err", err)
	} else {
		res.NextAttempt = s.now().Add(backoff(c.Attempts))
		s.log.Warn(what+" "+op+" failed; will retry", "request_id", r.ID, "channel", c.Channel, "attempt", c.Attempts, "err", err)
	}
	res.Event = &Event{RequestID: r.ID, Type: typ, Channel: c.Channel, Detail: fmt.Sprintf("%s: attempt %d: %v", what, c.Attempts, err)}
}

// guarded makes a channel's call, turning a panic in it (a platform's SDK
// meeting an answer it did not expect) into that attempt's error. The card
// is then retried and in the end abandoned like any failed post, and the
// request goes on to its verdict or its expiry. Left alone, the panic would
// take the server down with every agent waiting on it, and do so again on
// every replica that claimed the card after the restart.
func (s *Service) guarded(c Card, op string, call func() (string, error)) (ref string, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, _ := text.CutBytes(text.Clean(fmt.Sprint(p)), 200)
			s.log.Error("a channel panicked", "channel", c.Channel, "op", op, "request_id", c.RequestID,
				"panic", msg, "stack", string(debug.Stack()))
			ref, err = "", fmt.Errorf("channel %s failed unexpectedly (panic: %s)", c.Channel, msg)
		}
	}()
	return call()
}

// post sends a card of any kind for the first time: the channel card, a
// direct card, or a reminder in the thread of a card. ctx carries the
// claim's attempt number (CardAttempt).
func (s *Service) post(ctx context.Context, ch Channel, c Card, r *Request) (string, error) {
	ctx = WithCardAttempt(ctx, c.Attempts)
	switch c.Kind {
	case CardDirect:
		d, ok := ch.(Directer)
		if !ok {
			return "", fmt.Errorf("channel %s cannot send direct cards", c.Channel)
		}
		return d.PostDirect(ctx, r, c.Target)
	case CardReminder:
		rp, ok := ch.(Replier)
		if !ok {
			return "", fmt.Errorf("channel %s cannot reply in a card's thread", c.Channel)
		}
		votes, err := s.store.Votes(ctx, r.ID)
		if err != nil {
			return "", err
		}
		return rp.Remind(ctx, r, c.Target, c.Step, s.peopleNow().mentions(r, votes))
	}
	return ch.Post(ctx, r)
}

type cardAttemptKey struct{}

// WithCardAttempt returns ctx carrying the number of the claim under which
// a card is posted. The card worker sets it; tests of channels do too.
func WithCardAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, cardAttemptKey{}, n)
}

// CardAttempt is the number of the claim under which the card being posted
// in ctx is posted: 1 for the first, more when an earlier claim failed or
// its replica died, in which case that claim's post may have reached the
// platform without Gatehouse hearing the answer. A platform without an
// idempotency key (Slack) looks for that card before posting again. 0
// outside the card worker.
func CardAttempt(ctx context.Context) int {
	n, _ := ctx.Value(cardAttemptKey{}).(int)
	return n
}

// backoff is the wait before retry n+1: 1s, 2s, 4s, … capped at 5 minutes.
func backoff(attempts int) time.Duration {
	d := time.Second << min(max(attempts-1, 0), 9)
	return min(d, 5*time.Minute)
}

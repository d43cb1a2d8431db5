package gate

import (
	"context"
	"fmt"
	"time"
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
// many as it has free workers, so a lease is never held by a card waiting
// for a worker, and a worker that finishes while all were busy asks for
// more at once: a pipeline, not batch after batch. Claims are leases in the
// database, so across replicas each card is worked on by one worker.
func (s *Service) work(ctx context.Context) {
	for ctx.Err() == nil {
		s.starved.Store(true)
		n := s.reserveWorkers(s.opts.CardWorkers)
		if n == 0 {
			s.backlog.Store(true)
			return // the next worker to finish kicks
		}
		s.starved.Store(false)
		cards, err := s.store.ClaimCards(ctx, s.now(), s.opts.CardLease, s.owner, n)
		if err != nil {
			s.releaseWorkers(n)
			if ctx.Err() == nil {
				s.log.Error("claiming card work failed", "err", err)
			}
			return
		}
		s.startClaimed(ctx, n, cards)
		if len(cards) < n {
			// Nothing more is due now. Work that comes due later kicks
			// (a new request, a verdict, a card released still lagging)
			// or waits for the tick (a retry's time).
			s.backlog.Store(false)
			return
		}
		s.backlog.Store(true)
	}
}

// reserveWorkers takes up to n free card workers.
func (s *Service) reserveWorkers(n int) int {
	for {
		busy := s.busy.Load()
		k := min(n, s.opts.CardWorkers-int(busy))
		if k <= 0 {
			return 0
		}
		if s.busy.CompareAndSwap(busy, busy+int64(k)) {
			s.workers.Add(k)
			return k
		}
	}
}

// releaseWorkers gives back n reserved workers, and kicks the card worker
// if it last stopped for want of one (it may have left work due). Only
// then: a kick for every release would make the worker's own empty claims
// kick it again, in a loop.
func (s *Service) releaseWorkers(n int) {
	if n <= 0 {
		return
	}
	s.workers.Add(-n)
	s.busy.Add(-int64(n))
	if s.starved.CompareAndSwap(true, false) {
		s.kickWork()
	}
}

// startClaimed puts reserved workers on claimed cards and gives back the
// rest of the reservation.
func (s *Service) startClaimed(ctx context.Context, reserved int, cards []Card) {
	for _, c := range cards[:min(len(cards), reserved)] {
		go func() {
			defer s.releaseWorkers(1)
			s.workCard(ctx, c)
		}()
	}
	s.releaseWorkers(reserved - len(cards))
}

// claimFor reserves workers for up to n cards that a write is about to
// make due, and says so in a Claim for the store. Not before Start, and
// not while cards wait in the database for a worker: new ones queue
// behind them rather than jump ahead.
func (s *Service) claimFor(n int) Claim {
	if s.runCtx() == nil || n <= 0 || s.backlog.Load() {
		return Claim{}
	}
	select {
	case <-s.stopping: // shutting down: Drain may be waiting on the workers
		return Claim{}
	default:
	}
	return Claim{Owner: s.owner, Until: s.now().Add(s.opts.CardLease), Max: s.reserveWorkers(n)}
}

// runCtx is the context Start was given, nil before Start.
func (s *Service) runCtx() context.Context {
	if c, ok := s.run.Load().(context.Context); ok {
		return c
	}
	return nil
}

// Drain waits, at most until ctx ends, for the card posts and updates in
// flight, so their outcome is recorded before the database closes (an
// unrecorded post would be posted again when its lease runs out).
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
	finish := func() {
		res.At = s.now().UTC().Truncate(time.Microsecond)
		if res.Event != nil {
			res.Event.At = res.At
		}
		due, err := s.store.FinishCard(context.WithoutCancel(ctx), res)
		if err != nil {
			s.log.Error("recording card outcome failed", "request_id", c.RequestID, "channel", c.Channel, "err", err)
		}
		if due {
			s.kickWork()
		}
	}
	// A cached row serves when it cannot mislead: a final one, or a
	// pending one for a card that is to be posted.
	r, ok := s.rows.get(c.RequestID)
	var err error
	if !ok || !(r.Status.Final() || c.Want == CardPosted) {
		r, err = s.store.Get(ctx, c.RequestID)
	}
	if err != nil {
		res.Have, res.Err = c.Have, err.Error()
		res.NextAttempt = s.now().Add(backoff(c.Attempts))
		finish()
		return
	}
	ch, ok := s.channels[c.Channel]
	if !ok {
		res.Have, res.Err, res.Abandoned = c.Have, "channel "+c.Channel+" is not configured", true
		s.addEvent(ctx, Event{RequestID: r.ID, Type: EventPostAbandoned, Channel: c.Channel, Detail: res.Err})
		finish()
		return
	}
	op := "post"
	start := time.Now()
	switch {
	case c.Have == "" && r.Status.Final():
		// Ended before its card went out: nothing to announce or update.
		res.Have = string(r.Status)
		s.rows.drop(r.ID)
		finish()
		return
	case c.Have == "":
		var ref string
		ref, err = ch.Post(ctx, r)
		res.Have, res.Ref = CardPosted, ref
	case r.Status.Final():
		op = "update"
		err = ch.Update(ctx, r, c.Ref)
		res.Have = string(r.Status)
	default:
		// Posted and still pending: nothing due (a stale claim).
		res.Have = c.Have
		finish()
		return
	}
	s.obs.CardDone(c.Channel, op, err, time.Since(start))
	if err == nil {
		typ, detail := EventPosted, "card posted"
		if op == "update" {
			typ, detail = EventUpdated, "card updated to "+string(r.Status)
		}
		res.Event = &Event{RequestID: r.ID, Type: typ, Channel: c.Channel, Detail: detail}
		if op == "update" {
			s.rows.drop(r.ID)
		}
		finish()
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
		s.log.Error("card "+op+" abandoned", "request_id", r.ID, "channel", c.Channel, "attempts", c.Attempts, "err", err)
	} else {
		res.NextAttempt = s.now().Add(backoff(c.Attempts))
		s.log.Warn("card "+op+" failed; will retry", "request_id", r.ID, "channel", c.Channel, "attempt", c.Attempts, "err", err)
	}
	res.Event = &Event{RequestID: r.ID, Type: typ, Channel: c.Channel,
		Detail: fmt.Sprintf("attempt %d: %v", c.Attempts, err)}
	finish()
}

// backoff is the wait before retry n+1: 1s, 2s, 4s, … capped at 5 minutes.
func backoff(attempts int) time.Duration {
	d := time.Second << min(max(attempts-1, 0), 9)
	return min(d, 5*time.Minute)
}

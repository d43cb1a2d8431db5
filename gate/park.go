package gate

import (
	"context"
	"sync"
	"time"
)

// parkOpTimeout bounds each database call a parked waiter makes on its own
// (re-reads, its expiry), which no request context bounds any more.
const parkOpTimeout = 10 * time.Second

// Parked is a waiter without a goroutine of its own: what Wait does, with
// the answer delivered to a callback. The HTTP layer parks long polls on
// it, so 10,000 waiting agents hold 10,000 small structs and timers rather
// than 20,000 goroutines and their buffers.
//
// Park registers it and reads the row; Arm gives it its callback and its
// timer; from then on a wake-up, the wait limit, the request's deadline or
// Stop calls the callback, exactly once, from a short-lived goroutine.
type Parked struct {
	s     *Service
	id    string
	w     *waiter
	limit time.Time // when the caller stops waiting
	mu    sync.Mutex
	r     *Request // the last row read
	fn    func(*Request, error)
	armed bool
	woken bool // signalled before Arm
	done  bool // fn called, or cancelled
	busy  bool // a re-read in flight
	again bool // signalled during that re-read
	timer *time.Timer
}

// Park starts waiting on a request, as Wait does, without blocking. When
// the request is already final, does not exist, d is not positive or the
// read fails, it returns a nil *Parked with what Wait would have returned;
// otherwise the pending row and a *Parked on which the caller must call Arm
// or Cancel. Wake-ups that come in between are not lost.
func (s *Service) Park(ctx context.Context, id string, d time.Duration) (*Parked, *Request, error) {
	p := s.register(id, d)
	r, err := s.store.Get(ctx, id)
	if err != nil || r.Status.Final() || d <= 0 {
		p.unregister()
		return nil, r, err
	}
	p.r = r
	return p, r, nil
}

// SubmitAndPark is Submit, then Park on the request, with the waiter in
// place before the row is written: no verdict can slip in between, and a
// request created here needs no read back. A submission that attaches to
// an existing request parks on it as Park does.
func (s *Service) SubmitAndPark(ctx context.Context, in Submission, d time.Duration) (*Parked, *Request, error) {
	var p *Parked
	r, created, err := s.submit(ctx, in, func(id string) {
		if d > 0 {
			p = s.register(id, d)
		}
	})
	if p != nil && (err != nil || !created || r.Status.Final()) {
		p.unregister()
		p = nil
	}
	switch {
	case err != nil:
		return nil, nil, err
	case !created && d > 0:
		pp, got, err := s.Park(ctx, r.ID, d)
		if got == nil {
			got = r // for the error's answer
		}
		return pp, got, err
	case p == nil:
		return nil, r, nil
	}
	p.r = r
	return p, r, nil
}

// register puts a new waiter for id in the hub.
func (s *Service) register(id string, d time.Duration) *Parked {
	p := &Parked{s: s, id: id, limit: s.now().Add(d)}
	p.w = &waiter{park: p}
	s.hub.put(id, p.w)
	s.obs.WaitersChanged(1)
	return p
}

// unregister takes back a waiter that never got to Arm.
func (p *Parked) unregister() {
	p.s.hub.remove(p.id, p.w)
	p.s.obs.WaitersChanged(-1)
}

// Cancel unregisters a parked waiter that was never armed (the caller
// could not take the connection over and waits the blocking way).
func (p *Parked) Cancel() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	p.mu.Unlock()
	p.s.hub.remove(p.id, p.w)
	p.s.obs.WaitersChanged(-1)
}

// Arm hands the waiter its callback. fn is called exactly once with what
// Wait would return: the final row, the pending row at the wait limit or at
// Stop, or an error reaching the database.
func (p *Parked) Arm(fn func(*Request, error)) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.fn, p.armed = fn, true
	stopping := false
	select {
	case <-p.s.stopping:
		stopping = true
	default:
	}
	switch {
	case stopping:
		r := p.r
		p.mu.Unlock()
		go p.fire(r, nil)
		return
	case p.w.handed() != nil:
		p.mu.Unlock()
		go p.fire(p.w.handed(), nil)
		return
	case p.woken:
		p.busy = true
		p.mu.Unlock()
		go p.reread()
	default:
		p.mu.Unlock()
	}
	p.arm()
}

// arm sets the one timer: the wait limit or the request's deadline,
// whichever comes first.
func (p *Parked) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	now := p.s.now()
	at := p.limit
	if p.r.ExpiresAt.Before(at) {
		at = p.r.ExpiresAt
	}
	d := max(at.Sub(now), 0)
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(d, p.onTimer)
}

// signal is the hub's wake-up (under the hub's lock: it only starts work).
// true means "answer with r now", which the hub does once it has let go of
// its lock.
func (p *Parked) signal(r *Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.done:
	case !p.armed:
		p.woken = true
	case r != nil:
		return true
	case p.busy:
		p.again = true
	default:
		p.busy = true
		go p.reread()
	}
	return false
}

// reread reads the row after a wake-up without a row: answers when it is
// final, stays parked when not.
func (p *Parked) reread() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), parkOpTimeout)
		r, err := p.s.store.Get(ctx, p.id)
		cancel()
		if err != nil || r.Status.Final() {
			p.fire(r, err)
			return
		}
		p.mu.Lock()
		p.r = r
		if p.again {
			p.again = false
			p.mu.Unlock()
			continue
		}
		p.busy = false
		p.mu.Unlock()
		return
	}
}

// onTimer runs at the wait limit (answer with the pending row) or at the
// request's deadline (expire it, as Wait does, then answer with the row).
func (p *Parked) onTimer() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	r := p.r
	p.mu.Unlock()
	if !p.s.now().Before(p.limit) {
		p.fire(r, nil)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), parkOpTimeout)
	defer cancel()
	// Another caller (the sweeper, a replica) may have got there first;
	// only a failure to reach the database matters here.
	if _, err := p.s.Expire(ctx, p.id); err != nil && (ErrorCode(err) == EINTERNAL || ErrorCode(err) == EUNAVAILABLE) {
		p.fire(r, err)
		return
	}
	if h := p.w.handed(); h != nil {
		p.fire(h, nil)
		return
	}
	got, err := p.s.store.Get(ctx, p.id)
	if err != nil || got.Status.Final() {
		p.fire(got, err)
		return
	}
	p.mu.Lock()
	p.r = got
	p.mu.Unlock()
	// Not yet due by the database's clock: look again shortly.
	p.mu.Lock()
	if !p.done {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(min(50*time.Millisecond, max(p.limit.Sub(p.s.now()), 0)), p.onTimer)
	}
	p.mu.Unlock()
}

// stop answers with the row as it stands (Stop).
func (p *Parked) stop() {
	p.mu.Lock()
	if p.done || !p.armed {
		// Not armed: Arm sees the service stopping and answers.
		p.mu.Unlock()
		return
	}
	r := p.r
	p.mu.Unlock()
	go p.fire(r, nil)
}

// fire calls the callback, once.
func (p *Parked) fire(r *Request, err error) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
	}
	fn := p.fn
	p.mu.Unlock()
	p.s.hub.remove(p.id, p.w)
	p.s.obs.WaitersChanged(-1)
	if r != nil && err == nil {
		cp := *r // the handed-over row is shared with other waiters
		r = &cp
	}
	fn(r, err)
}

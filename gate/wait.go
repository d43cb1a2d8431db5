package gate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// hub wakes the local waiters of a request the moment its row changes. A
// change made in this process hands its final row over with the wake-up (a
// final row never changes, so it cannot mislead), and the waiter answers
// without reading it back; any other wake-up (another replica's change,
// through the Notifier, or the safety re-read) makes the waiter read the row.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
}

// waiter is one wait's registration: wake is called (under the hub's lock,
// so it must not block) at every change, final holds the row handed over,
// if any.
type waiter struct {
	wake  func()
	final atomic.Pointer[Request]
}

func newHub() *hub { return &hub{waiters: map[string]map[*waiter]struct{}{}} }

// add registers a waiter for id. Register before reading the row: a change
// between the read and the wait then still wakes it.
func (h *hub) add(id string, wake func()) *waiter {
	w := &waiter{wake: wake}
	h.mu.Lock()
	set := h.waiters[id]
	if set == nil {
		set = map[*waiter]struct{}{}
		h.waiters[id] = set
	}
	set[w] = struct{}{}
	h.mu.Unlock()
	return w
}

func (h *hub) remove(id string, w *waiter) {
	h.mu.Lock()
	if set := h.waiters[id]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(h.waiters, id)
		}
	}
	h.mu.Unlock()
}

// wake signals every waiter of id to read its row.
func (h *hub) wake(id string) { h.signal(id, nil) }

// settle signals every waiter of r's request with r, its final row.
func (h *hub) settle(r *Request) { h.signal(r.ID, r) }

func (h *hub) signal(id string, final *Request) {
	h.mu.Lock()
	for w := range h.waiters[id] {
		if final != nil {
			w.final.Store(final)
		}
		w.wake()
	}
	h.mu.Unlock()
}

// ids lists the requests that have waiters now.
func (h *hub) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.waiters))
	for id := range h.waiters {
		out = append(out, id)
	}
	return out
}

// Wait returns the request once it leaves pending, or as it is when d
// passes, ctx ends or the server stops. It wakes the moment the row changes
// on any replica; at the deadline it expires the request itself rather than
// wait for the sweeper. An error means the row could not be read or the
// expiry could not be written: callers answer it with a deny.
func (s *Service) Wait(ctx context.Context, id string, d time.Duration) (*Request, error) {
	type answer struct {
		r   *Request
		err error
	}
	got := make(chan answer, 1)
	s.WaitFunc(ctx, id, d, func(r *Request, err error) { got <- answer{r, err} })
	a := <-got
	return a.r, a.err
}

// WaitFunc is Wait without a goroutine held for it: it returns at once and
// calls done exactly once, on a goroutine of its own, with what Wait would
// return. Between wake-ups a wait is only its registration and two timers,
// so an agent parked for hours costs no goroutine stack (web/longpoll.go).
func (s *Service) WaitFunc(ctx context.Context, id string, d time.Duration, done func(*Request, error)) {
	// Running from the start: what the registration, the timers and the
	// contexts post while the wait is set up is only recorded, and the
	// goroutine started last looks with every field set.
	w := &wait{s: s, ctx: ctx, id: id, d: d, done: done, running: true, pending: lookRead}
	// Registered before the first read: a change between the read and
	// the wait still wakes it.
	w.reg = s.waiters.add(id, func() { w.post(lookRead) })
	if d > 0 {
		w.limit = time.AfterFunc(d, func() { w.post(lookEnd) })
	}
	w.stops = []func() bool{
		context.AfterFunc(ctx, func() { w.post(lookEnd) }),
		context.AfterFunc(s.stopCtx, func() { w.post(lookEnd) }),
	}
	go w.run()
}

// look is what a wait has to look at, a set of flags.
type look uint8

const (
	lookRead   look = 1 << iota // the row may have changed: read it (also the first look)
	lookExpiry                  // the request's deadline came: expire it
	lookEnd                     // d passed, ctx ended or the server stops
)

// wait is one WaitFunc. Wake-ups and timers post what happened; one
// goroutine at a time (started by post, gone when nothing is left) looks.
type wait struct {
	s    *Service
	ctx  context.Context
	id   string
	d    time.Duration
	done func(*Request, error)
	reg  *waiter

	mu      sync.Mutex
	pending look // posted, not yet looked at
	running bool // a goroutine is looking; stays true once done was called

	// Touched only by the goroutine looking.
	r             *Request // the row as last read
	limit, expiry *time.Timer
	stops         []func() bool
	counted       bool // WaitersChanged(1) was reported: the wait read its row and waits
	finished      bool // done was called
}

// post records what happened and starts a goroutine to look, unless one
// is looking already (it then sees this too) or the wait is over.
func (w *wait) post(l look) {
	w.mu.Lock()
	w.pending |= l
	if w.running {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	go w.run()
}

// run looks until nothing is left to look at. A bug in a look must not take
// the server down, and the waiter gets an error (a deny), never silence.
func (w *wait) run() {
	defer func() {
		if v := recover(); v != nil {
			w.s.log.Error("wait failed", "request_id", w.id, "panic", v)
			if !w.finished {
				w.finish(nil, Errorf(EINTERNAL, "internal error"))
			}
		}
	}()
	for {
		w.mu.Lock()
		l := w.pending
		w.pending = 0
		if l == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if w.step(l) {
			return // done: running stays true, so nothing looks again
		}
	}
}

// step looks at what was posted and says whether the wait is over. A
// verdict handed over beats everything; the end of the wait answers the
// row as last read, without reading it again.
func (w *wait) step(l look) bool {
	s := w.s
	if final := w.reg.final.Load(); final != nil {
		cp := *final // shared with the other waiters
		return w.finish(&cp, nil)
	}
	if l&lookEnd != 0 && w.r != nil {
		return w.finish(w.r, nil)
	}
	if l&lookExpiry != 0 {
		// Another caller (the sweeper, a replica) may have got there
		// first; only a failure to reach the database matters here.
		if _, err := s.Expire(w.ctx, w.id); err != nil && (ErrorCode(err) == EINTERNAL || ErrorCode(err) == EUNAVAILABLE) {
			return w.finish(w.r, err)
		}
		if final := w.reg.final.Load(); final != nil {
			cp := *final
			return w.finish(&cp, nil)
		}
	}
	r, err := s.store.Get(w.ctx, w.id)
	if err != nil || r.Status.Final() || w.d <= 0 || l&lookEnd != 0 {
		return w.finish(r, err)
	}
	w.r = r
	if !w.counted {
		w.counted = true
		s.obs.WaitersChanged(1) // it waits now: its first read is done
	}
	until := max(r.ExpiresAt.Sub(s.now()), 0)
	if w.expiry == nil {
		w.expiry = time.AfterFunc(until, func() { w.post(lookExpiry) })
	} else {
		w.expiry.Reset(until) // one that fired already at most posts a spare look
	}
	return false
}

// finish ends the wait: it lets go of the registration and the timers and
// answers.
func (w *wait) finish(r *Request, err error) bool {
	w.finished = true
	w.s.waiters.remove(w.id, w.reg)
	if w.counted {
		w.s.obs.WaitersChanged(-1)
	}
	for _, t := range []*time.Timer{w.limit, w.expiry} {
		if t != nil {
			t.Stop()
		}
	}
	for _, stop := range w.stops {
		stop()
	}
	w.done(r, err)
	return true
}

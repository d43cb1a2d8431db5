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

// waiter is one Wait: woken is signalled (a level, not an edge), final holds
// the row handed over, if any.
type waiter struct {
	woken chan struct{}
	final atomic.Pointer[Request]
}

func newHub() *hub { return &hub{waiters: map[string]map[*waiter]struct{}{}} }

// add registers a waiter for id. Register before reading the row: a change
// between the read and the wait then still wakes it.
func (h *hub) add(id string) *waiter {
	w := &waiter{woken: make(chan struct{}, 1)}
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
		select {
		case w.woken <- struct{}{}:
		default:
		}
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
	w := s.waiters.add(id)
	s.obs.WaitersChanged(1)
	defer func() { s.waiters.remove(id, w); s.obs.WaitersChanged(-1) }()
	r, err := s.store.Get(ctx, id)
	if err != nil || r.Status.Final() || d <= 0 {
		return r, err
	}
	limit := time.NewTimer(d)
	defer limit.Stop()
	for {
		expiry := time.NewTimer(max(r.ExpiresAt.Sub(s.now()), 0))
		select {
		case <-w.woken:
		case <-expiry.C:
			// Another caller (the sweeper, a replica) may have got there
			// first; only a failure to reach the database matters here.
			if _, err := s.Expire(ctx, id); err != nil && (ErrorCode(err) == EINTERNAL || ErrorCode(err) == EUNAVAILABLE) {
				return r, err
			}
		case <-limit.C:
			expiry.Stop()
			return r, nil
		case <-ctx.Done():
			expiry.Stop()
			return r, nil
		case <-s.stopping:
			expiry.Stop()
			return r, nil
		}
		expiry.Stop()
		if final := w.final.Load(); final != nil {
			cp := *final // shared with the other waiters
			return &cp, nil
		}
		if r, err = s.store.Get(ctx, id); err != nil || r.Status.Final() {
			return r, err
		}
	}
}

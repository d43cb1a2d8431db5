package gate

import "sync"

// hub wakes the waiters of a request the moment its row changes. It is
// in-process; a Notifier carries the same signal between replicas.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
}

// waiter is one agent waiting on a request: a blocking Wait (ch) or a
// parked one (park), which has no goroutine of its own.
type waiter struct {
	ch   chan struct{}
	park *Parked

	mu  sync.Mutex
	row *Request // the settled row handed over with the wake-up, if any
}

// handed returns the settled row a wake-up carried, if any.
func (w *waiter) handed() *Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.row
}

func newHub() *hub { return &hub{waiters: map[string]map[*waiter]struct{}{}} }

func (h *hub) add(id string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	h.put(id, w)
	return w
}

func (h *hub) put(id string, w *waiter) {
	h.mu.Lock()
	set := h.waiters[id]
	if set == nil {
		set = map[*waiter]struct{}{}
		h.waiters[id] = set
	}
	set[w] = struct{}{}
	h.mu.Unlock()
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

// wake signals every waiter of id. The signal is a level, not an edge: a
// waiter busy re-reading the row sees it on its next select.
func (h *hub) wake(id string) { h.wakeWith(id, nil) }

// wakeWith signals every waiter of id and, when r is the row as a
// transition on this process left it (final), hands it over so the waiter
// answers without reading the database again.
func (h *hub) wakeWith(id string, r *Request) {
	if r != nil && !r.Status.Final() {
		r = nil
	}
	var answer []*Parked
	h.mu.Lock()
	for w := range h.waiters[id] {
		if r != nil {
			w.mu.Lock()
			w.row = r
			w.mu.Unlock()
		}
		if w.park != nil {
			if w.park.signal(r) {
				answer = append(answer, w.park)
			}
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
	// Parked agents with the final row in hand are answered right here, on
	// the goroutine that made the verdict: no hand-off between the commit
	// and the agent's socket. Answering is an encode and a write into the
	// socket's buffer; a second and later waiter on one request (rare) get
	// goroutines of their own, so one slow reader cannot hold up another.
	if len(answer) == 0 {
		return
	}
	for _, p := range answer[1:] {
		go p.fire(r, nil)
	}
	answer[0].fire(r, nil)
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

// parked lists the parked waiters now.
func (h *hub) parked() []*Parked {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Parked
	for _, set := range h.waiters {
		for w := range set {
			if w.park != nil {
				out = append(out, w.park)
			}
		}
	}
	return out
}

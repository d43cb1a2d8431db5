package gate

import "sync"

// hub wakes the waiters of a request the moment its row changes. It is
// in-process; a Notifier carries the same signal between replicas.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}
}

type waiter struct{ ch chan struct{} }

func newHub() *hub { return &hub{waiters: map[string]map[*waiter]struct{}{}} }

func (h *hub) add(id string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
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

// wake signals every waiter of id. The signal is a level, not an edge: a
// waiter busy re-reading the row sees it on its next select.
func (h *hub) wake(id string) {
	h.mu.Lock()
	for w := range h.waiters[id] {
		select {
		case w.ch <- struct{}{}:
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

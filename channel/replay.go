package channel

import (
	"sync"
	"time"
)

// ReplayCache remembers the signatures of verified callbacks while their
// timestamps are within the signature window, so a captured callback cannot
// be played again while it would still verify. It is per process: a replay
// sent to another replica gets through, and is then refused by the gate's
// compare-and-set like any second verdict. Safe for concurrent use.
type ReplayCache struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	seen   map[string]time.Time // signature → its request's timestamp
	order  []string             // insertion order, oldest first
}

// NewReplayCache remembers signatures for window past their timestamps,
// and at most max of them (far above any real callback rate).
func NewReplayCache(window time.Duration, max int) *ReplayCache {
	return &ReplayCache{window: window, max: max, seen: map[string]time.Time{}}
}

// Seen records sig, of a request stamped at, and reports whether it had
// been recorded already. Entries leave once their timestamp is out of the
// window (the signature check refuses those anyway) or, past max entries,
// oldest first.
func (c *ReplayCache) Seen(sig string, at, now time.Time) (replayed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.order) > 0 {
		first := c.order[0]
		if t, ok := c.seen[first]; ok && now.Sub(t) <= c.window && len(c.order) < c.max {
			break
		}
		delete(c.seen, first)
		c.order = c.order[1:]
	}
	if _, ok := c.seen[sig]; ok {
		return true
	}
	c.seen[sig] = at
	c.order = append(c.order, sig)
	return false
}

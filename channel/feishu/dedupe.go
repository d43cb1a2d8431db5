package feishu

import (
	"sync"
	"time"
)

// The event_id cache remembers the ids of accepted callbacks long enough
// that a replay inside the timestamp window is caught (older ones fail the
// window check), and never more than dedupeSize of them.
const (
	dedupeSize = 10000
	dedupeTTL  = 15 * time.Minute
)

// dedupe is a bounded set of recently seen event ids, oldest evicted first.
type dedupe struct {
	mu    sync.Mutex
	size  int
	ttl   time.Duration
	seen  map[string]time.Time
	order []string // insertion order; a ring would do, a slice is simpler
}

func newDedupe(size int, ttl time.Duration) *dedupe {
	return &dedupe{size: size, ttl: ttl, seen: make(map[string]time.Time, 64)}
}

// firstTime records id and reports whether it was new. Ids seen more than
// ttl ago count as new again.
func (d *dedupe) firstTime(id string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if at, ok := d.seen[id]; ok && now.Sub(at) < d.ttl {
		return false
	}
	for len(d.order) > 0 && (len(d.order) >= d.size || now.Sub(d.seen[d.order[0]]) >= d.ttl) {
		delete(d.seen, d.order[0])
		d.order = d.order[1:]
	}
	if _, ok := d.seen[id]; !ok {
		d.order = append(d.order, id)
	}
	d.seen[id] = now
	return true
}

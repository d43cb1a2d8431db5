package gate

import (
	"context"
	"sync"
)

// rowCache keeps the rows of requests this process created or settled, so
// the steps that follow in the same process (the card post, the verdict,
// the card's final update) need not read them back.
//
// Only what cannot go wrong is read from it. A request's fields are fixed
// at creation except its status and verdict, and a final row never changes
// again; a verdict checked against a pending row that is stale (decided on
// another replica a moment ago) still meets the compare-and-set, which
// refuses it with the row as it really stands. Rows changed elsewhere are
// dropped when the cross-replica signal arrives, rows whose cards are done
// are dropped then, and the cache is bounded in rows and bytes, oldest out
// first.
type rowCache struct {
	mu    sync.Mutex
	m     map[string]cachedRow
	order []cacheKey // insertion order, for eviction; stale keys are skipped
	head  int
	seq   uint64
	bytes int
}

type cachedRow struct {
	r    *Request
	seq  uint64
	size int
}

type cacheKey struct {
	id  string
	seq uint64
}

// Bounds of the row cache.
const (
	rowCacheRows  = 20000
	rowCacheBytes = 32 << 20
)

func newRowCache() *rowCache { return &rowCache{m: map[string]cachedRow{}} }

func rowSize(r *Request) int {
	return 512 + len(r.ToolArgs) + len(r.Summary) + len(r.Metadata) + len(r.ModifiedArgs) + len(r.Reason)
}

// put stores a copy of r, replacing what was there for its id.
func (c *rowCache) put(r *Request) {
	size := rowSize(r)
	if size > rowCacheBytes/64 {
		c.drop(r.ID) // a large request is read back when needed
		return
	}
	cp := *r
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[r.ID]; ok {
		if old.r.Status.Final() && !r.Status.Final() {
			return // a final row is never replaced by an older, pending one
		}
		c.bytes -= old.size
	}
	c.seq++
	c.m[r.ID] = cachedRow{r: &cp, seq: c.seq, size: size}
	c.bytes += size
	c.order = append(c.order, cacheKey{r.ID, c.seq})
	for len(c.m) > rowCacheRows || c.bytes > rowCacheBytes {
		c.evictOldest()
	}
	if len(c.order)-c.head > 2*len(c.m)+1024 {
		c.compact()
	}
}

// compact rebuilds the eviction order from the live rows, dropping the
// keys of rows dropped or replaced since (most rows leave by drop, which
// leaves their key behind).
func (c *rowCache) compact() {
	live := c.order[:0:0]
	for _, k := range c.order[c.head:] {
		if e, ok := c.m[k.id]; ok && e.seq == k.seq {
			live = append(live, k)
		}
	}
	c.order, c.head = live, 0
}

func (c *rowCache) evictOldest() {
	for c.head < len(c.order) {
		k := c.order[c.head]
		c.order[c.head] = cacheKey{}
		c.head++
		if e, ok := c.m[k.id]; ok && e.seq == k.seq {
			delete(c.m, k.id)
			c.bytes -= e.size
			return
		}
	}
}

// get returns a copy of the cached row of id, if any.
func (c *rowCache) get(id string) (*Request, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	cp := *e.r
	return &cp, true
}

func (c *rowCache) drop(id string) {
	c.mu.Lock()
	if e, ok := c.m[id]; ok {
		delete(c.m, id)
		c.bytes -= e.size
	}
	c.mu.Unlock()
}

// len is the number of cached rows (tests).
func (c *rowCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// row is the request as far as a verdict or a card needs it: fixed fields
// exact, status possibly behind (see rowCache). It reads the database when
// the row is not cached.
func (s *Service) row(ctx context.Context, id string) (*Request, error) {
	if r, ok := s.rows.get(id); ok {
		return r, nil
	}
	return s.store.Get(ctx, id)
}

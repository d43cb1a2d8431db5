package gate

import (
	"fmt"
	"strings"
	"testing"
)

func TestRowCacheBounds(t *testing.T) {
	c := newRowCache()
	for i := range rowCacheRows + 500 {
		c.put(&Request{ID: fmt.Sprint(i), Status: StatusPending})
	}
	if n := c.len(); n != rowCacheRows {
		t.Fatalf("%d rows cached, want the bound %d", n, rowCacheRows)
	}
	if _, ok := c.get("0"); ok {
		t.Fatal("the oldest row outlived the bound")
	}
	if r, ok := c.get(fmt.Sprint(rowCacheRows + 499)); !ok || r.Status != StatusPending {
		t.Fatal("the newest row is missing")
	}

	// Bytes: rows of 100 KB each stop at the byte bound, long before the row bound.
	c = newRowCache()
	big := `"` + strings.Repeat("x", 100<<10) + `"`
	for i := range 1000 {
		c.put(&Request{ID: fmt.Sprint(i), ToolArgs: []byte(big)})
	}
	if c.bytes > rowCacheBytes {
		t.Fatalf("%d bytes cached, over the bound %d", c.bytes, rowCacheBytes)
	}
	if n := c.len(); n == 0 || n*(100<<10) > rowCacheBytes {
		t.Fatalf("%d rows of 100 KB cached", n)
	}
	// A row past the per-row bound is not kept, and drops an older copy.
	c.put(&Request{ID: "huge"})
	c.put(&Request{ID: "huge", ToolArgs: make([]byte, rowCacheBytes/32)})
	if _, ok := c.get("huge"); ok {
		t.Fatal("a huge row was cached")
	}

	// Replacing a row keeps one entry, with the new status; a copy is handed out.
	c = newRowCache()
	c.put(&Request{ID: "r", Status: StatusPending})
	c.put(&Request{ID: "r", Status: StatusApproved})
	r, _ := c.get("r")
	r.Status = StatusRejected
	if got, _ := c.get("r"); c.len() != 1 || got.Status != StatusApproved {
		t.Fatalf("after replace: %d rows, status %s", c.len(), got.Status)
	}
	// A final row is not replaced by a pending one.
	c.put(&Request{ID: "r", Status: StatusPending})
	if got, _ := c.get("r"); got.Status != StatusApproved {
		t.Fatalf("a pending row replaced the final one: %s", got.Status)
	}
	c.drop("r")
	if _, ok := c.get("r"); ok || c.bytes != 0 {
		t.Fatalf("after drop: cached %v, %d bytes", ok, c.bytes)
	}

	// Rows that come and go (put, settle, drop) leave no trail behind.
	c = newRowCache()
	for i := range 100000 {
		id := fmt.Sprint(i)
		c.put(&Request{ID: id, Status: StatusPending})
		c.put(&Request{ID: id, Status: StatusApproved})
		c.drop(id)
	}
	if n := len(c.order) - c.head; c.len() != 0 || n > 2048 {
		t.Fatalf("after 100,000 requests came and went: %d rows, %d keys kept", c.len(), n)
	}
}

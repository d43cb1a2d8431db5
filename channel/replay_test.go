package channel

import (
	"fmt"
	"testing"
	"time"
)

func TestReplayCacheIsBounded(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	rc := NewReplayCache(5*time.Minute, 3)
	for i := range 5 {
		if rc.Seen(fmt.Sprint(i), t0, t0) {
			t.Fatalf("fresh signature %d seen as replay", i)
		}
	}
	if len(rc.seen) > 3 || len(rc.order) > 3 {
		t.Errorf("cache holds %d/%d entries, max 3", len(rc.seen), len(rc.order))
	}
	if !rc.Seen("4", t0, t0) {
		t.Error("recent signature not caught")
	}
	// Entries leave once their timestamps are out of the window.
	later := t0.Add(5*time.Minute + time.Second)
	rc.Seen("new", later, later)
	if _, ok := rc.seen["4"]; ok {
		t.Error("stale entry kept")
	}
}

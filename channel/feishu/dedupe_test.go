package feishu

import (
	"fmt"
	"testing"
	"time"
)

func TestDedupeIsBounded(t *testing.T) {
	d := newDedupe(3, time.Minute)
	now := testNow
	for i := range 5 {
		if !d.firstTime(fmt.Sprint("ev_", i), now) {
			t.Fatalf("ev_%d seen before", i)
		}
	}
	if d.firstTime("ev_4", now) {
		t.Error("a recent id counted as new")
	}
	if len(d.seen) > 3 || len(d.order) > 3 {
		t.Errorf("cache holds %d ids, want at most 3", len(d.seen))
	}
	if !d.firstTime("ev_0", now) {
		t.Error("the oldest id was not evicted")
	}
	if !d.firstTime("ev_4", now.Add(2*time.Minute)) {
		t.Error("an id older than the TTL still counts as seen")
	}
}

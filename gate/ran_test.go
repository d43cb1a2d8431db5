package gate_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// What ran is recorded once, on an approved request, for the token that
// made it; a call is found by its id in its session, on both databases.
func TestRan(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		h := newService(t, db, svcOpts{})
		a, b := gate.Caller{Name: "agent-a"}, gate.Caller{Name: "agent-b", ReadAll: true}
		r := submit(t, h, gate.Submission{Caller: "agent-a", SessionID: "s1", ToolCallID: "toolu_1", IdempotencyKey: "k1"})
		for _, tc := range []struct {
			who           gate.Caller
			session, call string
			found         bool
		}{
			{a, "s1", "toolu_1", true}, {a, "", "toolu_1", true}, {a, "s2", "toolu_1", false}, {a, "s1", "toolu_2", false},
			{a, "s1", "", false}, {b, "s1", "toolu_1", false},
		} {
			got, err := h.ByCall(ctx, tc.who, tc.session, tc.call)
			if found := err == nil && got.ID == r.ID; found != tc.found || (!found && gate.ErrorCode(err) != gate.ENOTFOUND) {
				t.Errorf("ByCall(%s, %q, %q) = %v, %v; want found %v", tc.who.Name, tc.session, tc.call, got, err, tc.found)
			}
		}
		if ok, err := h.Ran(ctx, a, r.ID, false, "ran"); ok || err != nil {
			t.Fatalf("recorded on a pending request: %v %v", ok, err)
		}
		if _, err := h.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "fake"}); err != nil {
			t.Fatal(err)
		}
		if ok, _ := h.Ran(ctx, b, r.ID, false, "ran"); ok {
			t.Fatal("another token's report was recorded")
		}
		long := strings.Repeat("é", gate.MaxOutcome)
		if ok, err := h.Ran(ctx, a, r.ID, true, long); !ok || err != nil {
			t.Fatalf("not recorded: %v %v", ok, err)
		}
		if ok, _ := h.Ran(ctx, a, r.ID, false, "again"); ok {
			t.Fatal("a second report was recorded")
		}
		evs, _ := h.Events(ctx, r.ID)
		var got []gate.Event
		for _, e := range evs {
			if e.Type == gate.EventToolRan || e.Type == gate.EventToolFailed {
				got = append(got, e)
			}
		}
		if len(got) != 1 || got[0].Type != gate.EventToolFailed || len(got[0].Detail) > gate.MaxOutcome || !utf8.ValidString(got[0].Detail) ||
			!strings.HasSuffix(got[0].Detail, "…") {
			t.Fatalf("outcomes %d, %q…", len(got), got[0].Detail[:20])
		}
		if _, err := h.Ran(ctx, a, "01JNOSUCHREQUEST0000000000", false, "x"); gate.ErrorCode(err) != gate.ENOTFOUND {
			t.Errorf("unknown request: %v", err)
		}
	})
}

// Of reports that arrive at once (a client retrying, or two hooks on one
// call), exactly one is recorded: the check for an earlier one and the
// write are one step under the request's row lock.
func TestRanAtOnceRecordsOne(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		h := newService(t, db, svcOpts{})
		a := gate.Caller{Name: "agent-a"}
		for range 5 {
			r := submit(t, h, gate.Submission{Caller: "agent-a"})
			if _, err := h.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: "fake"}); err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var recorded atomic.Int32
			for i := range 8 {
				wg.Go(func() {
					<-start
					ok, err := h.Ran(ctx, a, r.ID, i%2 == 1, fmt.Sprintf("report %d", i))
					if err != nil {
						t.Errorf("report %d: %v", i, err)
					}
					if ok {
						recorded.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			evs, err := h.Events(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range evs {
				if e.Type == gate.EventToolRan || e.Type == gate.EventToolFailed {
					n++
				}
			}
			if n != 1 || recorded.Load() != 1 {
				t.Fatalf("%d outcomes in the trail, %d reports told recorded; want 1 and 1", n, recorded.Load())
			}
		}
	})
}

package gate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

func TestListFilters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}})
		ctx := context.Background()
		var ids []string
		for i := range 7 {
			r := submit(t, svc, gate.Submission{ToolName: []string{"oa__purchase_pay", "deploy"}[i%2], AgentID: fmt.Sprintf("bot%d", i%3),
				Summary: fmt.Sprintf("item %d 100%% sure", i), Caller: []string{"a", "b"}[i%2]})
			ids = append(ids, r.ID)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: ids[0], Approve: false, Actor: "slack:T1/U9", Via: "fake", Reason: "Over Budget"}); err != nil {
			t.Fatal(err)
		}
		count := func(f gate.Filter) int {
			rs, _, err := svc.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return len(rs)
		}
		callerB := "b"
		for _, tc := range []struct {
			name string
			f    gate.Filter
			want int
		}{
			{"all", gate.Filter{}, 7},
			{"status", gate.Filter{Status: []gate.Status{gate.StatusRejected}}, 1},
			{"two statuses", gate.Filter{Status: []gate.Status{gate.StatusRejected, gate.StatusPending}}, 7},
			{"tool", gate.Filter{Tool: "deploy"}, 3},
			{"tool glob", gate.Filter{Tool: "oa__*"}, 4},
			{"agent", gate.Filter{Agent: "bot1"}, 2},
			{"caller", gate.Filter{Caller: &callerB}, 3},
			{"decided_by", gate.Filter{DecidedBy: "slack:T1/U9"}, 1},
			{"free text in reason, any case", gate.Filter{Query: "over budget"}, 1},
			{"free text with a literal %", gate.Filter{Query: "100%"}, 7},
			{"free text by id", gate.Filter{Query: ids[3]}, 1},
			{"until before all", gate.Filter{Until: time.Now().Add(-time.Hour)}, 0},
			{"since before all", gate.Filter{Since: time.Now().Add(-time.Hour)}, 7},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if n := count(tc.f); n != tc.want {
					t.Fatalf("got %d, want %d", n, tc.want)
				}
			})
		}
		// Pages of 3, newest first, cover everything once.
		var seen []string
		cursor := ""
		for {
			rs, next, err := svc.List(ctx, gate.Filter{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				seen = append(seen, r.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if len(seen) != 7 || seen[0] != ids[6] || seen[6] != ids[0] {
			t.Fatalf("pagination: %v (created %v)", seen, ids)
		}
	})
}

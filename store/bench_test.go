package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

// BenchmarkVerdictSQLite times the verdict's write on SQLite (the
// compare-and-set, its event and its cards' new want, one transaction),
// alone, on a table that already holds settled requests:
//
//	go test ./store -run '^$' -bench VerdictSQLite -benchtime 3000x
func BenchmarkVerdictSQLite(b *testing.B) {
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{DSN: filepath.Join(b.TempDir(), "bench.db"), Migrate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	mk := func(i int) *gate.Request {
		now := time.Now().UTC()
		r := &gate.Request{ID: fmt.Sprintf("%s-%08d", run, i), Status: gate.StatusPending, ToolName: "oa__purchase_pay",
			ToolArgs: []byte(`{"vendor":"ACME","amount":60000}`), Channels: []string{"slack"}, Quorum: 1,
			OnTimeout: "deny", CreatedAt: now, ExpiresAt: now.Add(time.Hour), IdempotencyKey: fmt.Sprintf("%s-%d", run, i)}
		got, _, _, err := db.Create(ctx, r, []string{"slack"}, []gate.Event{{Type: gate.EventCreated, At: now}}, gate.Claim{})
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	// The gate passes the pending row it holds (Transition.Pending).
	decide := func(r *gate.Request) {
		now := time.Now().UTC()
		_, ok, err := db.Transition(ctx, gate.Transition{ID: r.ID, To: gate.StatusApproved, Kind: gate.BeforeDeadline, At: now,
			By: "slack:T1/U1", Via: "slack", Pending: r, Event: gate.Event{RequestID: r.ID, At: now, Type: gate.EventDecided, Actor: "slack:T1/U1", Channel: "slack"}})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	for i := range 2000 { // history
		decide(mk(i))
	}
	rs := make([]*gate.Request, b.N)
	for i := range rs {
		rs[i] = mk(2000 + i)
	}
	b.ResetTimer()
	for _, r := range rs {
		decide(r)
	}
}

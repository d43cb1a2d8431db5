package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestVerdictPathFailuresDeny: each store call on the way to a verdict
// (a grant's lookup and use, a key's lookup, the expiry of a route whose
// silence allows, the waiter's read) fails in turn; no answer allows.
func TestVerdictPathFailuresDeny(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clk := newClock()
		fs := &faultStore{DB: db}
		svc := newService(t, fs, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
			{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Remember: time.Hour},
			{Name: "lenient", Tool: "read", Channels: []string{"fake"}, OnTimeout: gate.VerdictAllow, Timeout: time.Minute},
		}})
		args := json.RawMessage(`{"env":"staging"}`)
		first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot"})
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"findgrant", "create"} {
			fs.fail.Store(op)
			r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot", IdempotencyKey: "g-" + op})
			if err == nil && r.Allowed() {
				t.Fatalf("%s failing: allowed %s via %s", op, r.Status, r.DecidedVia)
			}
		}
		fs.fail.Store("")
		r := submit(t, svc, gate.Submission{ToolName: "read", ToolArgs: json.RawMessage(`{"op":1}`), Caller: "bot"})
		clk.Add(2 * time.Minute)
		fs.fail.Store("transition")
		if got, err := svc.Expire(ctx, r.ID); err == nil || got != nil && got.Allowed() {
			t.Fatalf("the expiry failing: %+v, %v", got, err)
		}
		fs.fail.Store("get")
		if got, err := svc.Wait(ctx, r.ID, time.Hour); err == nil || got != nil && got.Allowed() {
			t.Fatalf("the waiter's read failing: %+v, %v", got, err)
		}
		fs.fail.Store("")
	})
}

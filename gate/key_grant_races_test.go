package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestKeyRaces: one key sent at once by two tokens, and by one token
// with other arguments: each token gets its own request, and a call with
// other arguments never gets the first call's request.
func TestKeyRaces(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")},
			routes: []gate.Route{{Name: "pay", Tool: "pay", Channels: []string{"fake"}}}})
		for round := 0; round < 30; round++ {
			key := fmt.Sprintf("k%d", round)
			sub := func(caller, args string) func() (*gate.Request, error) {
				return func() (*gate.Request, error) {
					r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "pay", ToolArgs: json.RawMessage(args), Caller: caller, IdempotencyKey: key})
					return r, err
				}
			}
			got, errs := raceRound(sub("a", `{"n":1}`), sub("b", `{"n":1}`), sub("a", `{"n":2}`), sub("a", `{"n":1}`))
			if errs[1] != nil {
				t.Fatalf("round %d: b: %v", round, errs[1])
			}
			// Of token a's calls, the key holds one arguments: the calls
			// with them share its request, the others are refused.
			win, lose := []int{0, 3}, []int{2}
			if errs[0] != nil {
				win, lose = lose, win
			}
			for _, i := range win {
				if errs[i] != nil || got[i].ID != got[win[0]].ID || got[i].ID == got[1].ID || got[i].Caller != "a" {
					t.Fatalf("round %d: call %d: %+v %v", round, i, got[i], errs[i])
				}
			}
			for _, i := range lose {
				if gate.ErrorCode(errs[i]) != gate.EIDEMPOTENCY {
					t.Fatalf("round %d: call %d with other arguments: %+v %v", round, i, got[i], errs[i])
				}
			}
			got[0] = got[win[0]]
			if _, err := svc.Decide(ctx, gate.Decision{RequestID: got[0].ID, Approve: true, Actor: "web:x", Via: "fake"}); err != nil {
				t.Fatal(err)
			}
			if r, err := sub("b", `{"n":1}`)(); err != nil || r.Allowed() {
				t.Fatalf("round %d: b after a's approval: %+v %v", round, r, err)
			}
		}
	})
}

// TestGrantRevokedWhileUsed: a revocation and uses of the grant at once:
// each use is approved by it or refused, and once the revocation returns none is.
func TestGrantRevokedWhileUsed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")},
			routes: []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Remember: time.Hour}}})
		for round := 0; round < 20; round++ {
			args := json.RawMessage(fmt.Sprintf(`{"r":%d}`, round))
			first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot"})
			if _, err := svc.Decide(ctx, gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
				t.Fatal(err)
			}
			gs, _ := svc.Grants(ctx, nil, true)
			var gid string
			for _, g := range gs {
				if g.RequestID == first.ID {
					gid = g.ID
				}
			}
			fns := []func() (*gate.Request, error){func() (*gate.Request, error) {
				_, err := svc.RevokeGrant(ctx, gid, "web:admin")
				return nil, err
			}}
			for range 6 {
				fns = append(fns, func() (*gate.Request, error) {
					r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot"})
					return r, err
				})
			}
			_, errs := raceRound(fns...)
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			for i, err := range errs[1:] {
				if err != nil && gate.ErrorCode(err) != gate.EUNAVAILABLE {
					t.Fatalf("round %d: use %d: %v", round, i, err)
				}
			}
			if r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "bot"}); err != nil || r.Allowed() {
				t.Fatalf("after the revocation: %+v %v", r, err)
			}
		}
	})
}

package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// The transactions that make card work due lease it to the caller, exactly
// as ClaimCards would, and never take a card another worker holds.
func TestCardLeasesInTransactions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		newReq := func(id string) *gate.Request {
			return &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "t", ToolArgs: json.RawMessage(`{}`), Metadata: json.RawMessage(`{}`),
				Route: "default", Channels: []string{"a"}, Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		l := gate.Lease{Owner: "me", Until: now.Add(time.Minute)}

		// Create leases the new card: ClaimCards finds nothing more.
		_, created, cards, err := db.CreateLeased(ctx, newReq("R1"), []string{"a"}, []gate.Event{{Type: gate.EventCreated, At: now}}, l)
		if err != nil || !created || len(cards) != 1 || cards[0].Attempts != 1 || cards[0].Want != gate.CardPosted {
			t.Fatalf("create leased: %v %v %+v", err, created, cards)
		}
		if got, _ := db.ClaimCards(ctx, now, time.Minute, "other", 10); len(got) != 0 {
			t.Fatalf("a leased card was claimed again: %+v", got)
		}
		// Settled while the post is in flight: the transition cannot lease
		// the held card; finishing the post keeps it leased for the update.
		tr := gate.Transition{ID: "R1", To: gate.StatusApproved, At: now, By: "web:a", Via: "web", Event: gate.Event{RequestID: "R1", At: now, Type: gate.EventDecided}}
		_, changed, leased, err := db.TransitionLeased(ctx, tr, gate.Lease{Owner: "me", Until: now.Add(2 * time.Minute)})
		if err != nil || !changed || len(leased) != 0 {
			t.Fatalf("transition over a held card: %v %v %+v", err, changed, leased)
		}
		next, err := db.FinishCardLeased(ctx, gate.CardResult{ID: cards[0].ID, Owner: "me", Have: gate.CardPosted, Ref: "m1", At: now,
			Event: &gate.Event{RequestID: "R1", At: now, Type: gate.EventPosted}}, l)
		if err != nil || next == nil || next.Want != string(gate.StatusApproved) || next.Have != gate.CardPosted || next.Ref != "m1" || next.Attempts != 1 {
			t.Fatalf("finish leased: %v %+v", err, next)
		}
		if got, _ := db.ClaimCards(ctx, now, time.Minute, "other", 10); len(got) != 0 {
			t.Fatalf("a re-leased card was claimed again: %+v", got)
		}
		done, err := db.FinishCardLeased(ctx, gate.CardResult{ID: next.ID, Owner: "me", Have: string(gate.StatusApproved), At: now}, l)
		if err != nil || done != nil {
			t.Fatalf("finishing the update: %v %+v", err, done)
		}

		// Posted first, settled after: the transition leases the update.
		_, _, cards, _ = db.CreateLeased(ctx, newReq("R2"), []string{"a"}, nil, l)
		if next, err := db.FinishCardLeased(ctx, gate.CardResult{ID: cards[0].ID, Owner: "me", Have: gate.CardPosted, Ref: "m2", At: now}, l); err != nil || next != nil {
			t.Fatalf("finish a post of a pending request: %v %+v", err, next)
		}
		tr.ID, tr.Event.RequestID = "R2", "R2"
		_, changed, leased, err = db.TransitionLeased(ctx, tr, gate.Lease{Owner: "me", Until: now.Add(2 * time.Minute)})
		if err != nil || !changed || len(leased) != 1 || leased[0].Want != string(gate.StatusApproved) || leased[0].Attempts != 1 {
			t.Fatalf("transition leasing: %v %v %+v", err, changed, leased)
		}
		if got, _ := db.ClaimCards(ctx, now, time.Minute, "other", 10); len(got) != 0 {
			t.Fatalf("a card leased by a transition was claimed again: %+v", got)
		}
		evs, _ := db.Events(ctx, "R1")
		if len(evs) != 3 {
			t.Fatalf("events: %+v", evs)
		}
	})
}

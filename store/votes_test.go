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

// Migration 8 gives the votes cast before it the identity their event
// recorded, so a request pending across the upgrade counts its approvers
// by person as later votes are counted (found by a second reader: an old
// vote counted for person:alice, and alice then removed from people, let
// her tap again and meet a quorum of 2 alone).
func TestMigrationGivesOldVotesTheirIdentity(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		r, _, err := db.Create(ctx, &gate.Request{ID: "r1", Status: gate.StatusPending, ToolName: "pay", ToolArgs: []byte(`{}`),
			Metadata: []byte(`{}`), Route: "pay", Channels: []string{"web"}, Quorum: 2, OnTimeout: gate.VerdictDeny,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, []gate.Event{{Type: gate.EventCreated, At: now}})
		if err != nil {
			t.Fatal(err)
		}
		actor := `slack:T1/"U1\`
		if _, err := db.Transition(ctx, gate.Transition{ID: r.ID, To: gate.StatusApproved, At: now, By: actor, Via: "web",
			Vote:  &gate.Vote{Voter: "person:alice", Actor: actor, Via: "web", Identities: []string{"x"}},
			Event: gate.Event{Type: gate.EventDecided, RequestID: r.ID, At: now}}); err != nil {
			t.Fatal(err)
		}
		// As a vote from before the migration; then the migration's update.
		backfill, err := store.VoteBackfill()
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm().Exec(`UPDATE votes SET identities = ''`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm().Exec(backfill).Error; err != nil {
			t.Fatal(err)
		}
		var ids string
		if err := db.Gorm().Raw(`SELECT identities FROM votes WHERE request_id = 'r1'`).Scan(&ids).Error; err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := json.Unmarshal([]byte(ids), &got); err != nil || len(got) != 1 || got[0] != actor {
			t.Fatalf("the old vote's identities: %q (%v)", ids, err)
		}
	})
}

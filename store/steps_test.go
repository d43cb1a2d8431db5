package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// Advance takes a due step once: a second plan for the same step (as a
// replica racing would make) writes nothing; a request not yet due, or no
// longer pending, is left alone. Retention cuts a request's steps with it.
func TestAdvanceTakesAStepOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		at := time.Now().UTC().Add(-500 * 24 * time.Hour).Truncate(time.Microsecond)
		due := at.Add(time.Minute)
		r := &gate.Request{ID: "stepped", Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`), Metadata: []byte(`{}`),
			Route: "r", Channels: []string{"ops"}, Approvers: []string{"person:bob"}, Quorum: 1, OnTimeout: gate.VerdictDeny,
			CreatedAt: at, ExpiresAt: at.Add(time.Hour), NextStepAt: &due, Person: "alice", Plan: gate.Plan{ForbidSelf: true, Remind: time.Minute},
			MCPServer: true}
		if _, _, err := db.Create(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get(ctx, r.ID)
		if err != nil || got.Person != "alice" || !got.Plan.ForbidSelf || !got.MCPServer || got.Plan.Remind != time.Minute || got.NextStepAt == nil || !got.NextStepAt.Equal(due) {
			t.Fatalf("read back: %v %+v", err, got)
		}
		plans := 0
		plan := func(st gate.StepState) gate.StepWork {
			plans++
			next := st.Request.NextStepAt.Add(time.Minute)
			return gate.StepWork{Step: gate.Step{N: len(st.Steps) + 1, Kind: gate.StepEscalate, Due: due, At: due},
				Channels: []string{"ops", "cfo"}, Approvers: []string{"person:bob", "person:carol"},
				Cards:  []gate.Card{{Channel: "cfo", Kind: gate.CardChannel}, {Channel: "ops", Kind: gate.CardReminder, Target: "ref", Step: 1}},
				Events: []gate.Event{{Type: gate.EventEscalated, At: due, Detail: "escalation 1"}}, Next: &next}
		}
		if w, err := db.Advance(ctx, r.ID, due.Add(-time.Second), plan); err != nil || w.Step.Kind != "" || plans != 0 {
			t.Fatalf("before it is due: %+v %v (%d plans)", w, err, plans)
		}
		if w, err := db.Advance(ctx, r.ID, due, plan); err != nil || w.Step.Kind != gate.StepEscalate {
			t.Fatalf("when due: %+v %v", w, err)
		}
		if w, err := db.Advance(ctx, r.ID, due, plan); err != nil || w.Step.Kind != "" || plans != 1 {
			t.Fatalf("again: %+v %v (%d plans)", w, err, plans)
		}
		// A step planned twice under its number (a plan that forgot a step)
		// is refused by the key and writes nothing.
		twice := func(st gate.StepState) gate.StepWork {
			w := plan(st)
			w.Step.N = 1
			return w
		}
		if w, err := db.Advance(ctx, r.ID, due.Add(time.Minute), twice); err != nil || w.Step.Kind != "" {
			t.Fatalf("a step taken twice: %+v %v", w, err)
		}
		got, _ = db.Get(ctx, r.ID)
		cards, _ := db.Cards(ctx, r.ID)
		if len(got.Channels) != 2 || len(got.Approvers) != 2 || len(cards) != 3 || cards[2].Kind != gate.CardReminder || cards[2].Target != "ref" ||
			count(t, db, `SELECT COUNT(*) FROM steps WHERE request_id = 'stepped'`) != 1 ||
			count(t, db, `SELECT COUNT(*) FROM events WHERE request_id = 'stepped' AND type = 'escalated'`) != 1 {
			t.Fatalf("after one step: %+v; cards %+v", got, cards)
		}
		if ids, err := db.DueSteps(ctx, due.Add(time.Hour), 10); err != nil || len(ids) != 1 {
			t.Fatalf("due: %v %v", ids, err)
		}
		if _, err := db.Transition(ctx, gate.Transition{ID: r.ID, To: gate.StatusApproved, At: due, By: "web:bob", Via: "web",
			Event: gate.Event{Type: gate.EventDecided}}); err != nil {
			t.Fatal(err)
		}
		if ids, _ := db.DueSteps(ctx, due.Add(time.Hour), 10); len(ids) != 0 {
			t.Fatalf("a decided request is still due: %v", ids)
		}
		if w, err := db.Advance(ctx, r.ID, due.Add(time.Hour), plan); err != nil || w.Step.Kind != "" {
			t.Fatalf("after the verdict: %+v %v", w, err)
		}
		sealAll(t, db)
		if cut, err := db.Prune(ctx, time.Now().Add(-24*time.Hour), time.Now(), 10, nil); err != nil || cut.Requests != 1 ||
			count(t, db, `SELECT COUNT(*) FROM steps`) != 0 {
			t.Fatalf("retention: %+v %v", cut, err)
		}
	})
}

// Migration 7 rebuilds SQLite's cards table (so a request may have several
// cards in one channel: its own, direct cards, reminders). Cards made
// before keep their rows and ids, as channel cards, and their sequence
// goes on.
func TestMigrationSevenKeepsTheCards(t *testing.T) {
	for _, driver := range []string{store.SQLite, store.Postgres} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			old, dsn := oldDatabase(t, driver, 6)
			now := time.Now().UTC().Truncate(time.Second)
			for _, q := range []string{
				`INSERT INTO requests (id, status, tool_name, tool_args, requires_confirmation, route, on_timeout, created_at, expires_at)
				 VALUES ('r1', 'pending', 'deploy', '{}', TRUE, 'default', 'deny', @now, @now)`,
				`INSERT INTO cards (request_id, channel, ref, want, have, next_attempt_at, lease_until, updated_at)
				 VALUES ('r1', 'ops', 'C1:1.1', 'posted', 'posted', @now, @now, @now)`,
			} {
				if err := old.Gorm().Exec(q, map[string]any{"now": now}).Error; err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			old.Close()
			db := storetest.Open(t, driver, dsn)
			r, err := db.Get(ctx, "r1")
			if err != nil || r.Person != "" || r.NextStepAt != nil || r.Plan.ForbidSelf {
				t.Fatalf("the old request: %+v %v", r, err)
			}
			if err := db.Gorm().Exec(`INSERT INTO cards (request_id, channel, kind, target, want, next_attempt_at, lease_until, updated_at)
				VALUES ('r1', 'ops', 'dm', 'slack:T1/U1', 'posted', @now, @now, @now)`, map[string]any{"now": now}).Error; err != nil {
				t.Fatal(err)
			}
			cards, _ := db.Cards(ctx, "r1")
			if len(cards) != 2 || cards[0].ID != 1 || cards[0].Kind != gate.CardChannel || cards[0].Ref != "C1:1.1" || cards[1].ID != 2 || cards[1].Kind != gate.CardDirect {
				t.Fatalf("cards after migration 7: %+v", cards)
			}
			if err := db.Gorm().Exec(`INSERT INTO cards (request_id, channel, want, next_attempt_at, lease_until, updated_at)
				VALUES ('r1', 'ops', 'posted', @now, @now, @now)`, map[string]any{"now": now}).Error; err == nil {
				t.Fatal("a second channel card for one request and channel was accepted")
			}
		})
	}
}

// oldDatabase is a fresh database of driver migrated to version only, as
// an older binary left it, and its DSN.
func oldDatabase(t *testing.T, driver string, version int) (*store.DB, string) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "m.db")
	if driver == store.Postgres {
		dsn = storetest.PostgresDSN(t)
	}
	old, err := store.OpenAt(context.Background(), driver, dsn, version)
	if err != nil {
		t.Fatal(err)
	}
	return old, dsn
}

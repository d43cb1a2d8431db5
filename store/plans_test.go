package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// The hot statements on PostgreSQL reach their rows through the primary
// key even with generic plans on analysed tables, which is what a
// long-running server gets: pgx prepares each statement once per
// connection, and after five runs PostgreSQL plans it without looking at
// the arguments. The planner once preferred the sweeper's partial index
// for a verdict (scanning every pending request) and a sequential scan of
// cards for a claim.
func TestPostgresPlansUseThePrimaryKey(t *testing.T) {
	db := storetest.Postgres(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	var pending *gate.Request
	for i := range 20 {
		r := &gate.Request{ID: fmt.Sprintf("plan-%03d", i), Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`),
			Metadata: []byte(`{}`), Route: "default", OnTimeout: gate.VerdictDeny, Quorum: 1, Channels: []string{"slack"},
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		got, _, _, err := db.Create(ctx, r, []string{"slack"}, nil, gate.Claim{})
		if err != nil {
			t.Fatal(err)
		}
		pending = got
		if i%4 == 0 {
			if _, _, err := db.Transition(ctx, transitionOf(got, now)); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := db.Gorm()
	// A history: 20,000 settled requests and their cards, as a server that
	// has run a while holds (and as the sequential scans would read).
	for _, q := range []string{
		`INSERT INTO requests (id, status, tool_name, tool_args, requires_confirmation, route, on_timeout, created_at, expires_at,
			decided_at, decided_by, decided_via) SELECT 'old-' || n, 'approved', 'deploy', '{}', TRUE, 'default', 'deny', now(),
			now() + interval '1 hour', now(), 'web:a', 'web' FROM generate_series(1, 20000) n`,
		`INSERT INTO cards (request_id, channel, ref, want, have, next_attempt_at, lease_until, updated_at)
			SELECT 'old-' || n, 'slack', 'ts', 'approved', 'approved', now(), now(), now() FROM generate_series(1, 20000) n`,
	} {
		if err := g.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"requests", "cards", "events"} {
		if err := g.Exec("ANALYZE " + table).Error; err != nil {
			t.Fatal(err)
		}
	}
	channel := "gatehouse_test"
	statements := map[string]func() (string, []any){
		"verdict, row known": func() (string, []any) { return store.TransitionStatementPG(transitionOf(pending, now), true, &channel) },
		"verdict, inline card": func() (string, []any) {
			tr := transitionOf(pending, now)
			tr.InlineCard = "slack"
			return store.TransitionStatementPG(tr, false, nil)
		},
		"expiry": func() (string, []any) {
			tr := transitionOf(pending, now)
			tr.Kind, tr.To = gate.AfterDeadline, gate.StatusExpired
			return store.TransitionStatementPG(tr, false, &channel)
		},
		"card claim": func() (string, []any) { return store.ClaimStatementPG("w1", now, time.Minute, 8) },
	}
	for name, stmt := range statements {
		q, args := stmt()
		var plan []string
		err := g.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL plan_cache_mode = force_generic_plan").Error; err != nil {
				return err
			}
			if err := tx.Exec("PREPARE hot AS " + store.Dollars(q)).Error; err != nil {
				return err
			}
			lits := make([]string, len(args))
			for i, a := range args {
				lits[i] = literal(a)
			}
			if err := tx.Raw("EXPLAIN EXECUTE hot(" + strings.Join(lits, ", ") + ")").Scan(&plan).Error; err != nil {
				return err
			}
			return tx.Exec("DEALLOCATE hot").Error
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := strings.Join(plan, "\n")
		for _, bad := range []string{"Seq Scan on requests", "Seq Scan on cards", "requests_pending_expires"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: the generic plan uses %s:\n%s", name, bad, text)
			}
		}
	}
}

func transitionOf(r *gate.Request, at time.Time) gate.Transition {
	return gate.Transition{ID: r.ID, To: gate.StatusApproved, Kind: gate.BeforeDeadline, At: at, By: "web:a", Via: "web", Pending: r,
		Event: gate.Event{RequestID: r.ID, At: at, Type: gate.EventDecided, Actor: "web:a"}}
}

// literal writes an argument as an SQL literal for EXECUTE.
func literal(a any) string {
	switch v := a.(type) {
	case nil:
		return "NULL"
	case *string:
		if v == nil {
			return "NULL"
		}
		return literal(*v)
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format(time.RFC3339Nano) + "'::timestamptz"
	case bool, int, int64:
		return fmt.Sprint(v)
	}
	panic(fmt.Sprintf("no literal for %T", a))
}

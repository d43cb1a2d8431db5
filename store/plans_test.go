package store_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// The life cycle's statements on PostgreSQL reach their rows through the
// primary key even with generic plans on analysed tables, which is what a
// long-running server gets: pgx prepares each statement once per
// connection, and after five runs PostgreSQL plans it without looking at
// the arguments. The planner once preferred the sweeper's partial index
// for a verdict (scanning every pending request) and a sequential scan of
// cards for a claim.
func TestPostgresPlans(t *testing.T) {
	db := storetest.Postgres(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range 20 {
		r := &gate.Request{ID: fmt.Sprintf("plan-%03d", i), Status: gate.StatusPending, ToolName: "deploy", ToolArgs: []byte(`{}`),
			Metadata: []byte(`{}`), Route: "default", OnTimeout: gate.VerdictDeny, Quorum: 1, Channels: []string{"slack"},
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if _, _, err := db.Create(ctx, r, nil); err != nil {
			t.Fatal(err)
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
	p := "plan-003"
	for name, stmt := range map[string]struct {
		q    string
		args []any
	}{
		"verdict":     {store.Decide, []any{"approved", now, "web:a", "web", "", nil, p}},
		"expiry":      {store.Expire, []any{"expired", now, "gatehouse", "timeout", "", nil, p}},
		"lock":        {store.LockPostgres, []any{p}},
		"final cards": {store.FinalCards, []any{"approved", now, p}},
		"card claim":  {store.ClaimPostgres, []any{"w1", now.Add(time.Minute), now, 8}},
		"card finish": {store.FinishCard, []any{"posted", "ts", "", false, now, now, true, now, 1, "w1"}},
	} {
		var plan []string
		err := g.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL plan_cache_mode = force_generic_plan").Error; err != nil {
				return err
			}
			if err := tx.Exec("PREPARE hot AS " + stmt.q).Error; err != nil {
				return err
			}
			lits := make([]string, len(stmt.args))
			for i, a := range stmt.args {
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

// literal writes an argument as an SQL literal for EXECUTE.
func literal(a any) string {
	switch v := a.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case time.Time:
		return "'" + v.Format(time.RFC3339Nano) + "'::timestamptz"
	case bool, int, int64:
		return fmt.Sprint(v)
	}
	panic(fmt.Sprintf("no literal for %T", a))
}

// One statement text serves both drivers: PostgreSQL's $n placeholders,
// which SQLite numbers in order of first appearance, so $n must come before
// $n+1 in every statement, or SQLite binds the wrong values.
func TestStatementPlaceholders(t *testing.T) {
	placeholder := regexp.MustCompile(`\$(\d+)`)
	for _, driver := range []string{store.SQLite, store.Postgres} {
		for _, q := range store.LifecycleStatements(driver) {
			next := 1
			for _, m := range placeholder.FindAllStringSubmatch(q, -1) {
				n, _ := strconv.Atoi(m[1])
				if n > next {
					t.Errorf("$%d is used before $%d in:\n%s", n, next, q)
					break
				}
				if n == next {
					next++
				}
			}
		}
	}
}

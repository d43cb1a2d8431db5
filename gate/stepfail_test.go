package gate_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// eachRaw runs fn on a fresh database of each driver, with a raw handle on
// the same database for breaking it behind the store's back.
func eachRaw(t *testing.T, fn func(t *testing.T, db *store.DB, raw *sql.DB, driver string)) {
	open := func(t *testing.T, driver, dsn, rawDriver, rawDSN string) {
		db := storetest.Open(t, driver, dsn)
		raw, err := sql.Open(rawDriver, rawDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		fn(t, db, raw, driver)
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		open(t, store.SQLite, path, "sqlite3", path+"?_busy_timeout=10000")
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := storetest.PostgresDSN(t)
		open(t, store.Postgres, dsn, "pgx", dsn)
	})
}

// failWrites makes every insert into and update of table fail inside the
// statement, as a full disk or an I/O error does: SQLite reports such an
// error while the statement steps, after the query call returned.
func failWrites(t *testing.T, raw *sql.DB, driver, table string) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER fail_ins BEFORE INSERT ON ` + table + ` BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
		`CREATE TRIGGER fail_upd BEFORE UPDATE ON ` + table + ` BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`}
	if driver == store.Postgres {
		stmts = []string{`CREATE FUNCTION fail_write() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER fail_write BEFORE INSERT OR UPDATE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION fail_write()`}
	}
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestRateCounterThatFailsNeverAllows: on SQLite the counter's error came
// while its row was read, which the store took for "no row", count 0: a
// call over the limit was allowed, uncounted, for as long as the error
// lasted (on a record: false route nothing else is written to fail).
// Found by a reader.
func TestRateCounterThatFailsNeverAllows(t *testing.T) {
	eachRaw(t, func(t *testing.T, db *store.DB, raw *sql.DB, driver string) {
		routes := []gate.Route{{Name: "reads", Tool: "Read", Action: policy.Allow, NoRecord: true,
			Rate: &gate.Rate{Limit: 1, Per: time.Hour, By: "agent"}}}
		svc := newService(t, db, svcOpts{routes: routes})
		ctx := context.Background()
		if r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "Read", Caller: "bot"}); err != nil || !r.Allowed() {
			t.Fatalf("the first call, within the limit: %+v %v", r, err)
		}
		failWrites(t, raw, driver, "rate_counts")
		for i := 2; i <= 3; i++ {
			if r, _, err := svc.Submit(ctx, gate.Submission{ToolName: "Read", Caller: "bot"}); err == nil && r.Allowed() {
				t.Fatalf("call %d, over a limit of 1 with its counter failing: %s (%s); want an error or a denial", i, r.Status, r.Reason)
			}
		}
	})
}

// TestRevocationThatFailsSaysSo: a revocation whose write failed as it
// stepped was answered "no active grant" on SQLite, though the grant
// stands; the operator must see the failure and try again.
func TestRevocationThatFailsSaysSo(t *testing.T) {
	eachRaw(t, func(t *testing.T, db *store.DB, raw *sql.DB, driver string) {
		routes := []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Remember: time.Hour, Timeout: time.Hour}}
		svc := newService(t, db, svcOpts{routes: routes})
		ctx := context.Background()
		first, _, err := svc.Submit(ctx, gate.Submission{ToolName: "deploy", Caller: "bot"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Decide(ctx, gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
			t.Fatal(err)
		}
		gs, err := svc.Grants(ctx, nil, true)
		if err != nil || len(gs) != 1 {
			t.Fatalf("grants: %+v %v", gs, err)
		}
		failWrites(t, raw, driver, "grants")
		_, err = svc.RevokeGrant(ctx, gs[0].ID, "web:admin")
		if err == nil || gate.ErrorCode(err) == gate.ENOTFOUND {
			t.Fatalf("a revocation whose write failed: %v; want the failure, not success or 'no active grant'", err)
		}
		if gs, err := svc.Grants(ctx, nil, true); err != nil || len(gs) != 1 {
			t.Fatalf("after the failed revocation: %+v %v; want the grant still listed", gs, err)
		}
	})
}

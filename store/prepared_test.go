package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
)

// countingDriver is go-sqlite3 with a count of what reaches it: statements
// prepared, and statements run without one (ad hoc, compiled each time).
type countingDriver struct {
	sqlite3.SQLiteDriver
	prepares, adhoc atomic.Int64
}

func (d *countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.SQLiteDriver.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{SQLiteConn: c.(*sqlite3.SQLiteConn), d: d}, nil
}

type countingConn struct {
	*sqlite3.SQLiteConn
	d *countingDriver
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.d.prepares.Add(1)
	return c.SQLiteConn.PrepareContext(ctx, q)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.d.adhoc.Add(1)
	return c.SQLiteConn.ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.d.adhoc.Add(1)
	return c.SQLiteConn.QueryContext(ctx, q, args)
}

var counting = &countingDriver{}

func init() { sql.Register("sqlite3-counting", counting) }

// The life cycle's statements are prepared once per connection and reused:
// compiling them afresh was most of a verdict's write on SQLite (README,
// "Speed mechanisms"). Requests' whole lives run here without one statement
// compiled on the way, and without a new preparation beyond the read pool's
// first use of each of its connections.
func TestLifeCycleRunsOnPreparedStatements(t *testing.T) {
	defer store.UseSQLiteDriver("sqlite3-counting")()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{DSN: filepath.Join(t.TempDir(), "p.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prepares, adhoc := counting.prepares.Load(), counting.adhoc.Load()
	for i := range 50 {
		now := time.Now().UTC().Truncate(time.Microsecond)
		r, _, err := db.Create(ctx, &gate.Request{ID: fmt.Sprintf("r%03d", i), Status: gate.StatusPending, ToolName: "deploy",
			ToolArgs: []byte(`{}`), Metadata: []byte(`{}`), Route: "default", Channels: []string{"slack"}, Quorum: 2,
			OnTimeout: gate.VerdictDeny, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, []gate.Event{{Type: gate.EventCreated, At: now}})
		if err != nil {
			t.Fatal(err)
		}
		cards, err := db.ClaimCards(ctx, now, time.Minute, "w", 8) // this card's post, the last one's update
		if err != nil || len(cards) == 0 {
			t.Fatalf("claim: %v %v", cards, err)
		}
		for _, c := range cards {
			if _, err := db.FinishCard(ctx, gate.CardResult{ID: c.ID, Owner: "w", Have: c.Want, Ref: "ts", At: now,
				Event: &gate.Event{RequestID: c.RequestID, At: now, Type: gate.EventPosted}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, who := range []string{"web:a", "web:b"} {
			if _, err := db.Transition(ctx, gate.Transition{ID: r.ID, To: gate.StatusApproved, At: now, By: who, Via: "web",
				Vote: &gate.Vote{Voter: who, Actor: who, Via: "web"}, Event: gate.Event{Type: gate.EventDecided, RequestID: r.ID, At: now}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.AddEvent(ctx, gate.Event{RequestID: r.ID, At: now, Type: gate.EventRefused}); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Get(ctx, r.ID); err != nil || got.Status != gate.StatusApproved {
			t.Fatalf("get: %+v %v", got, err)
		}
	}
	if n := counting.adhoc.Load() - adhoc; n != 0 {
		t.Errorf("50 life cycles ran %d statements compiled on the way, want 0", n)
	}
	if n := counting.prepares.Load() - prepares; n > 8 {
		t.Errorf("50 life cycles prepared %d statements, want at most one per read connection", n)
	}
}

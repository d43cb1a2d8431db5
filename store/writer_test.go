package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

func openSQLite(t *testing.T) *DB {
	t.Helper()
	return openSQLiteAt(t, filepath.Join(t.TempDir(), "w.db"))
}

func openSQLiteAt(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{Driver: SQLite, DSN: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustCreate records a pending request with no cards.
func mustCreate(t *testing.T, db *DB, id string, now time.Time) {
	t.Helper()
	r := &gate.Request{ID: id, Status: gate.StatusPending, ToolName: "t", ToolArgs: []byte(`{}`), Metadata: []byte(`{}`),
		Route: "default", OnTimeout: gate.VerdictDeny, Quorum: 1, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, _, _, err := db.Create(context.Background(), r, nil, nil, gate.Claim{}); err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, db *DB, table, where string, args ...any) int {
	t.Helper()
	var n int64
	if err := db.rdb.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// Writes queued behind a busy writer share one transaction; one that fails
// (a foreign key violation after a good insert of its own) is rolled back
// alone and reports its error, and every other write commits.
func TestWriterGroupCommitIsolatesFailures(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	now := time.Now()
	mustCreate(t, db, "req-1", now)

	// Hold the writer inside a write so the next ones queue up.
	entered, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.w.do(ctx, func(*wtx) error { close(entered); <-release; return nil })
	}()
	<-entered

	const n = 60
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.w.do(ctx, func(t *wtx) error {
				if err := insertEvent(t, &eventRow{RequestID: "req-1", At: now, Type: "note", Detail: fmt.Sprint("good ", i)}); err != nil {
					return err
				}
				if i%3 == 0 {
					// Its own good insert above must not survive this.
					return insertEvent(t, &eventRow{RequestID: "no-such-request", At: now, Type: "note"})
				}
				return nil
			})
		}()
	}
	// All n queued behind the held write.
	deadline := time.Now().Add(5 * time.Second)
	for db.w.queued() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if db.w.queued() < n {
		t.Fatalf("only %d writes queued", db.w.queued())
	}
	batchesBefore := db.w.batches.Load()
	close(release)
	wg.Wait()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if got := db.w.batches.Load() - batchesBefore; got != 1 {
		t.Errorf("%d queued writes took %d transactions, want 1", n, got)
	}
	for i, err := range errs {
		if i%3 == 0 && err == nil {
			t.Errorf("write %d violated a foreign key and reported success", i)
		}
		if i%3 != 0 && err != nil {
			t.Errorf("write %d failed with its batch: %v", i, err)
		}
	}
	if got, want := countRows(t, db, "events", "type = 'note'"), n-n/3; got != want {
		t.Errorf("%d notes committed, want %d (the failed writes' own inserts rolled back)", got, want)
	}
	for i := 0; i < n; i += 3 {
		if countRows(t, db, "events", "detail = ?", fmt.Sprint("good ", i)) != 0 {
			t.Errorf("write %d failed but its first insert was committed", i)
		}
	}
}

// A write whose context ended before its batch began is not run; Close
// finishes the writes already queued and refuses new ones.
func TestWriterContextAndClose(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	go func() { _ = db.w.do(ctx, func(*wtx) error { close(entered); <-release; return nil }) }()
	<-entered

	cctx, cancel := context.WithCancel(ctx)
	ran := false
	cancelled := make(chan error, 1)
	go func() { cancelled <- db.w.do(cctx, func(*wtx) error { ran = true; return nil }) }()
	queued := make(chan error, 1)
	did := false
	go func() { queued <- db.w.do(ctx, func(*wtx) error { did = true; return nil }) }()
	for db.w.queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	closed := make(chan struct{})
	go func() { db.w.close(); close(closed) }()
	close(release)
	if err := <-cancelled; !errors.Is(err, context.Canceled) || ran {
		t.Errorf("cancelled write: err %v, ran %v; want context.Canceled and not run", err, ran)
	}
	if err := <-queued; err != nil || !did {
		t.Errorf("queued write at close: err %v, ran %v; want it done", err, did)
	}
	<-closed
	if err := db.w.do(ctx, func(*wtx) error { return nil }); !errors.Is(err, errWriterClosed) {
		t.Errorf("write after close: %v, want %v", err, errWriterClosed)
	}
}

// Commits never checkpoint below walSafetyPages; the background
// checkpointer copies the WAL back into the database file all the same.
func TestBackgroundCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	db := openSQLiteAt(t, path)
	var auto int
	if err := db.db.Raw("PRAGMA wal_autocheckpoint").Scan(&auto).Error; err != nil || auto != walSafetyPages {
		t.Fatalf("writer's wal_autocheckpoint = %d (%v), want %d", auto, err, walSafetyPages)
	}
	ctx := context.Background()
	now := time.Now()
	mustCreate(t, db, "req-1", now)
	time.Sleep(2 * checkpointEvery)
	before := fileSize(t, path)
	detail := strings.Repeat("x", 400)
	for i := range 1500 { // ~600 KB of rows, thousands of WAL frames
		if err := db.AddEvent(ctx, gate.Event{RequestID: "req-1", At: now, Type: "note", Detail: fmt.Sprint(i, detail)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * checkpointEvery)
	if after := fileSize(t, path); after < before+400<<10 {
		t.Fatalf("database file %d bytes before, %d after 600 KB of commits: the WAL was not checkpointed", before, after)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A write that panics fails alone; the writer goes on.
func TestWriterSurvivesAPanic(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	err := db.w.do(ctx, func(*wtx) error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking write: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- db.w.do(ctx, func(*wtx) error { return nil }) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer is stuck after a panic")
	}
}

// A batch that panics in the writer's own code, inside its transaction,
// neither takes the server down nor leaves SQLite's write lock held.
func TestWriterEndsAnAbandonedTransaction(t *testing.T) {
	db := openSQLite(t)
	ctx := context.Background()
	mustCreate(t, db, "req-1", time.Now().UTC())
	err := db.w.onConn(ctx, func() {
		if _, err := (&wtx{w: db.w}).exec(qBegin); err != nil {
			t.Fatal(err)
		}
		panic("boom")
	})
	if err == nil || !strings.Contains(err.Error(), "the writer panicked: boom") {
		t.Fatalf("onConn = %v, want the panic as an error", err)
	}
	start := time.Now()
	if err := db.w.do(ctx, func(tx *wtx) error {
		return insertEvent(tx, &eventRow{RequestID: "req-1", At: time.Now().UTC(), Type: "note"})
	}); err != nil {
		t.Fatalf("the next write failed: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the next write waited %v for a lock", d)
	}
}

package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// groupDB opens a SQLite store with two scratch tables: gc_rows, and
// gc_child whose foreign key is checked at COMMIT (so a write can pass its
// own statements and still make the COMMIT fail).
func groupDB(t *testing.T) *DB {
	t.Helper()
	s, err := Open(context.Background(), Options{Driver: SQLite, DSN: filepath.Join(t.TempDir(), "gc.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, q := range []string{`CREATE TABLE gc_rows (k TEXT PRIMARY KEY)`, `CREATE TABLE gc_parent (k TEXT PRIMARY KEY)`,
		`CREATE TABLE gc_child (k TEXT REFERENCES gc_parent (k) DEFERRABLE INITIALLY DEFERRED)`} {
		if err := s.db.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func insert(k string) func(t *wtx) error {
	return func(t *wtx) error {
		_, err := t.tx.ExecContext(t.ctx, `INSERT INTO gc_rows (k) VALUES (?)`, k)
		return err
	}
}

func rows(t *testing.T, s *DB) string {
	t.Helper()
	var ks []string
	if err := s.db.Raw(`SELECT k FROM gc_rows ORDER BY k`).Scan(&ks).Error; err != nil {
		t.Fatal(err)
	}
	return strings.Join(ks, ",")
}

// batch holds the writer in a first write while the others queue, then
// lets it go: the queued writes are one batch. It returns their errors.
func batch(t *testing.T, s *DB, fns ...func(t *wtx) error) []error {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(context.Background(), func(*wtx) error { close(held); <-hold; return nil })
	}()
	<-held
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.write(context.Background(), fn) }()
	}
	awaitQueued(t, s, len(fns))
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// awaitQueued polls until n writes wait in the writer's queue.
func awaitQueued(t *testing.T, s *DB, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(s.group.queue) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d writes queued", len(s.group.queue), n)
		}
	}
}

// TestGroupCommit: writes that queue while the writer is busy commit in
// one transaction, each as if alone: its own error undoes only its own
// writes; a COMMIT that fails fails every write of the batch (the gate then
// answers deny); a panic comes back to its own caller.
func TestGroupCommit(t *testing.T) {
	t.Run("one commit for the queued writes", func(t *testing.T) {
		s := groupDB(t)
		before := s.group.commits.Load()
		for _, err := range batch(t, s, insert("a"), insert("b"), insert("c")) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := s.group.commits.Load() - before; got != 2 {
			t.Errorf("4 writes took %d commits, want 2 (the holder's, then the three queued behind it)", got)
		}
		if got := rows(t, s); got != "a,b,c" {
			t.Errorf("rows %q", got)
		}
	})
	t.Run("a failing write undoes only itself", func(t *testing.T) {
		s := groupDB(t)
		boom := errors.New("boom")
		errs := batch(t, s, insert("a"), func(w *wtx) error {
			if err := insert("x")(w); err != nil {
				return err
			}
			return boom // after a write of its own, which must be undone
		}, insert("c"), insert("dup"), insert("dup"))
		if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil || (errs[3] == nil) == (errs[4] == nil) {
			t.Fatalf("errors %v: want nil, boom, nil, and one of the two dup writes refused", errs)
		}
		if got := rows(t, s); got != "a,c,dup" {
			t.Errorf("rows %q, want a,c,dup", got)
		}
	})
	t.Run("a failed COMMIT fails every write", func(t *testing.T) {
		s := groupDB(t)
		orphan := func(w *wtx) error { // passes its statement; the COMMIT refuses it
			_, err := w.tx.ExecContext(w.ctx, `INSERT INTO gc_child (k) VALUES ('nobody')`)
			return err
		}
		for i, err := range batch(t, s, insert("a"), orphan, insert("c")) {
			if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
				t.Errorf("write %d: %v, want the COMMIT's error", i, err)
			}
		}
		if got := rows(t, s); got != "" {
			t.Errorf("rows %q after a failed COMMIT, want none", got)
		}
		if err := s.write(context.Background(), insert("d")); err != nil || rows(t, s) != "d" {
			t.Errorf("the writer after a failed COMMIT: %v, rows %q", err, rows(t, s))
		}
	})
	t.Run("a panic goes back to its caller", func(t *testing.T) {
		s := groupDB(t)
		for _, err := range batch(t, s, insert("a"), insert("c")) {
			if err != nil {
				t.Fatal(err)
			}
		}
		func() {
			defer func() {
				if p := recover(); p != "kaboom" {
					t.Errorf("recovered %v, want the write's panic", p)
				}
			}()
			_ = s.write(context.Background(), func(w *wtx) error {
				_ = insert("p")(w)
				panic("kaboom")
			})
		}()
		if got := rows(t, s); got != "a,c" {
			t.Errorf("rows %q, want the panicking write undone", got)
		}
	})
	t.Run("a write whose caller gave up writes nothing", func(t *testing.T) {
		s := groupDB(t)
		ctx, cancel := context.WithCancel(context.Background())
		hold, held := make(chan struct{}), make(chan struct{})
		go func() { _ = s.write(context.Background(), func(*wtx) error { close(held); <-hold; return nil }) }()
		<-held
		done := make(chan error, 1)
		go func() { done <- s.write(ctx, insert("late")) }()
		awaitQueued(t, s, 1)
		cancel() // while it waits in the queue: its caller returns at once
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
		close(hold)
		if err := s.write(context.Background(), func(*wtx) error { return nil }); err != nil {
			t.Fatal(err) // the writer has passed the abandoned write
		}
		if got := rows(t, s); got != "" {
			t.Errorf("rows %q, want none", got)
		}
	})
	t.Run("a write after Close fails at once", func(t *testing.T) {
		s := groupDB(t)
		s.Close()
		if err := s.write(context.Background(), insert("after")); err == nil {
			t.Fatal("a write after Close succeeded")
		}
	})
	t.Run("a deadline holds while the write connection is busy", func(t *testing.T) {
		s := groupDB(t)
		held, err := s.wdb.BeginTx(context.Background(), nil) // as the sealer or a gorm write holds it
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.write(ctx, insert("late")); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err %v, want the caller's deadline", err)
		}
		if err := held.Rollback(); err != nil {
			t.Fatal(err)
		}
		if err := s.write(context.Background(), insert("next")); err != nil {
			t.Fatal(err)
		}
		if got := rows(t, s); got != "next" {
			t.Errorf("rows %q, want only next: the abandoned write must not run", got)
		}
	})
}

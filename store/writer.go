package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// writer is SQLite's group commit. SQLite has one writer at a time, and on
// the hot path a write transaction is a few short statements around a
// COMMIT that writes every page it touched to the WAL. Writes queue; the
// caller that finds nobody writing becomes the leader and runs whatever is
// queued (its own write first) in one transaction, each write inside its
// own savepoint, and commits once; then it hands the lead to the first
// write that queued meanwhile. Under load n writes share one BEGIN, one
// COMMIT and the index pages they touch; alone, a write runs at once on
// its caller's goroutine, with no hand-off to wait for.
//
// Its statements are prepared once on the write connection and reused.
// A write that fails rolls back to its savepoint and fails alone; a batch
// that cannot commit fails every write in it. No write is reported done
// before its COMMIT returned.
type writer struct {
	db    *sql.DB // the pool of one write connection
	stmts map[string]*sql.Stmt

	mu      sync.Mutex
	queue   []*writeJob
	leading bool // a caller is running a batch; it hands over or clears this
	closed  bool
	idle    *sync.Cond // signalled when leading clears
	// batches counts the transactions begun, for tests.
	batches atomic.Int64
}

type writeJob struct {
	ctx context.Context
	fn  func(*wtx) error
	err error
	// wake says "done" (false) or "lead now" (true) to a queued write.
	wake chan bool
}

// wtx is a write's view of the batch transaction.
type wtx struct {
	w  *writer
	tx *sql.Tx
}

// maxBatch bounds the writes sharing one transaction, so that one COMMIT
// never waits on an unbounded amount of work.
const maxBatch = 128

// errWriterClosed answers writes made after Close.
var errWriterClosed = errors.New("the database is closed")

// newWriter prepares the hot statements on db's connection.
func newWriter(ctx context.Context, db *sql.DB, queries []string) (*writer, error) {
	w := &writer{db: db, stmts: make(map[string]*sql.Stmt, len(queries))}
	w.idle = sync.NewCond(&w.mu)
	for _, q := range append([]string{"SAVEPOINT w", "ROLLBACK TO w", "RELEASE w"}, queries...) {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("preparing %q: %w", q, err)
		}
		w.stmts[q] = st
	}
	return w, nil
}

// do runs fn in a batch and returns once that batch has committed (nil) or
// fn or the batch failed (the error).
func (w *writer) do(ctx context.Context, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &writeJob{ctx: ctx, fn: fn, wake: make(chan bool, 1)}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errWriterClosed
	}
	w.queue = append(w.queue, j)
	lead := !w.leading
	w.leading = true
	w.mu.Unlock()
	// Once queued a write is waited for even if ctx ends: it may already
	// be in a transaction that commits, and the caller must know.
	if !lead && !<-j.wake {
		return j.err
	}
	// Leading: nobody was writing, or the last leader handed over. Either
	// way j is first in the queue, so the batch taken here holds it.
	w.mu.Lock()
	n := min(len(w.queue), maxBatch)
	batch := w.queue[:n:n]
	w.queue = w.queue[n:]
	w.mu.Unlock()
	w.run(batch)
	for _, o := range batch[1:] {
		o.wake <- false
	}
	w.mu.Lock()
	if len(w.queue) > 0 {
		next := w.queue[0]
		w.mu.Unlock()
		next.wake <- true
	} else {
		w.leading = false
		w.queue = nil
		w.idle.Broadcast()
		w.mu.Unlock()
	}
	return j.err
}

// queued is how many writes wait for a batch (tests).
func (w *writer) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// close stops taking writes, waits for the queued ones and releases the
// statements.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	for w.leading {
		w.idle.Wait()
	}
	w.mu.Unlock()
	w.closeStmts()
}

func (w *writer) closeStmts() {
	for _, st := range w.stmts {
		st.Close()
	}
}

// run executes one batch. Statements run under a context of their own: a
// caller's cancelled context would interrupt the whole transaction.
func (w *writer) run(batch []*writeJob) {
	w.batches.Add(1)
	tx, err := w.db.BeginTx(context.Background(), nil)
	if err != nil {
		for _, j := range batch {
			j.err = err
		}
		return
	}
	// Writes whose callers gave up while waiting (for the batch before,
	// or for the connection) are not run.
	live := batch[:0:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		_ = tx.Rollback()
		return
	}
	t := &wtx{w: w, tx: tx}
	if len(live) == 1 {
		j := live[0]
		if j.err = j.call(t); j.err != nil {
			_ = tx.Rollback()
			return
		}
		if err := tx.Commit(); err != nil {
			j.err = err
		}
		return
	}
	ok := 0
	for _, j := range live {
		if _, err := t.exec("SAVEPOINT w"); err != nil {
			w.abort(tx, live, err)
			return
		}
		if j.err = j.call(t); j.err != nil {
			if _, err := t.exec("ROLLBACK TO w"); err != nil {
				// SQLite rolls back the whole transaction after some
				// errors (disk full, I/O); nothing in it may be reported.
				w.abort(tx, live, err)
				return
			}
		} else {
			ok++
		}
		if _, err := t.exec("RELEASE w"); err != nil {
			w.abort(tx, live, err)
			return
		}
	}
	if ok == 0 {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		for _, j := range live {
			if j.err == nil {
				j.err = err
			}
		}
	}
}

// call runs the write's function; a panic in it fails that write (its
// savepoint is rolled back like any failure) instead of unwinding the
// leader, which would leave every other write waiting for ever.
func (j *writeJob) call(t *wtx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("write panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return j.fn(t)
}

// abort rolls a batch back and fails every write in it: none committed.
func (w *writer) abort(tx *sql.Tx, live []*writeJob, err error) {
	_ = tx.Rollback()
	for _, j := range live {
		j.err = err
	}
}

func (t *wtx) exec(q string, args ...any) (sql.Result, error) {
	if st, ok := t.w.stmts[q]; ok {
		return t.tx.Stmt(st).Exec(args...)
	}
	return t.tx.Exec(q, args...)
}

func (t *wtx) query(q string, args ...any) (*sql.Rows, error) {
	if st, ok := t.w.stmts[q]; ok {
		return t.tx.Stmt(st).Query(args...)
	}
	return t.tx.Query(q, args...)
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// writer is SQLite's group commit. SQLite has one writer at a time, and on
// the hot path a write transaction is a few short statements around a
// COMMIT that writes every page it touched to the WAL. The writer is one
// goroutine that takes whatever writes are queued, runs them in one
// transaction, each inside its own savepoint, and commits once: under load
// n writes share one BEGIN, one COMMIT and the index pages they both touch;
// alone, a write runs at once, as before.
//
// Its statements are prepared once on the write connection and reused.
// A write that fails rolls back to its savepoint and fails alone; a batch
// that cannot commit fails every write in it. No write is reported done
// before its COMMIT returned.
type writer struct {
	db    *sql.DB // the pool of one write connection
	stmts map[string]*sql.Stmt
	jobs  chan *writeJob
	// batches counts the transactions begun, for tests.
	batches atomic.Int64

	mu     sync.RWMutex // closed and sends on jobs
	closed bool
	done   chan struct{}
}

type writeJob struct {
	ctx  context.Context
	fn   func(*wtx) error
	err  error
	done chan struct{}
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

// newWriter prepares the hot statements on db's connection and starts the
// writer goroutine.
func newWriter(ctx context.Context, db *sql.DB, queries []string) (*writer, error) {
	w := &writer{db: db, stmts: make(map[string]*sql.Stmt, len(queries)), jobs: make(chan *writeJob, 1024), done: make(chan struct{})}
	for _, q := range append([]string{"SAVEPOINT w", "ROLLBACK TO w", "RELEASE w"}, queries...) {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			w.closeStmts()
			return nil, fmt.Errorf("preparing %q: %w", q, err)
		}
		w.stmts[q] = st
	}
	go w.loop()
	return w, nil
}

// do runs fn in the next batch and returns once that batch has committed
// (nil) or fn or the batch failed (the error).
func (w *writer) do(ctx context.Context, fn func(*wtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := &writeJob{ctx: ctx, fn: fn, done: make(chan struct{})}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errWriterClosed
	}
	w.jobs <- j
	w.mu.RUnlock()
	// Once queued a write is waited for even if ctx ends: it may already
	// be in a transaction that commits, and the caller must know.
	<-j.done
	return j.err
}

// close stops taking writes, finishes the queued ones and releases the
// statements.
func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.jobs)
	w.mu.Unlock()
	<-w.done
	w.closeStmts()
}

func (w *writer) closeStmts() {
	for _, st := range w.stmts {
		st.Close()
	}
}

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]*writeJob, 0, maxBatch)
	for j := range w.jobs {
		batch = append(batch[:0], j)
	more:
		for len(batch) < maxBatch {
			select {
			case j, ok := <-w.jobs:
				if !ok {
					break more
				}
				batch = append(batch, j)
			default:
				break more
			}
		}
		w.run(batch)
		for i := range batch {
			close(batch[i].done)
			batch[i] = nil
		}
	}
}

// run executes one batch. Statements run under a context of their own: a
// caller's cancelled context would interrupt the whole transaction.
func (w *writer) run(batch []*writeJob) {
	live := batch[:0:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	w.batches.Add(1)
	tx, err := w.db.BeginTx(context.Background(), nil)
	if err != nil {
		for _, j := range live {
			j.err = err
		}
		return
	}
	t := &wtx{w: w, tx: tx}
	if len(live) == 1 {
		j := live[0]
		if j.err = j.fn(t); j.err != nil {
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
		if j.err = j.fn(t); j.err != nil {
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

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	sqlite3 "github.com/mattn/go-sqlite3"
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
// It works on the pool's one write connection below database/sql (see
// sqliteraw.go), with its statements prepared once on that connection and
// reused. A write that fails rolls back to its savepoint and fails alone; a batch
// that cannot commit fails every write in it. No write is reported done
// before its COMMIT returned.
type writer struct {
	db      *sql.DB // the pool of one write connection
	queries []string
	// The statements prepared on conn, the connection the pool holds;
	// only the leader touches them.
	conn  *sqlite3.SQLiteConn
	stmts map[string]driver.Stmt

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
	w *writer
}

// maxBatch bounds the writes sharing one transaction, so that one COMMIT
// never waits on an unbounded amount of work.
const maxBatch = 128

// errWriterClosed answers writes made after Close.
var errWriterClosed = errors.New("the database is closed")

// The writer's own statements.
const (
	qBegin      = "BEGIN IMMEDIATE"
	qCommit     = "COMMIT"
	qRollback   = "ROLLBACK"
	qSavepoint  = "SAVEPOINT w"
	qRollbackTo = "ROLLBACK TO w"
	qRelease    = "RELEASE w"
)

// newWriter prepares the hot statements on db's connection, which must be
// the pool's only one and must not be closed for idleness: the statements
// live on it.
func newWriter(ctx context.Context, db *sql.DB, queries []string) (*writer, error) {
	w := &writer{db: db, queries: append([]string{qBegin, qCommit, qRollback, qSavepoint, qRollbackTo, qRelease}, queries...)}
	w.idle = sync.NewCond(&w.mu)
	if err := w.onConn(ctx, func() {}); err != nil {
		w.closeStmts()
		return nil, err
	}
	return w, nil
}

// onConn runs fn on the write connection, with the statements prepared on
// it (again, if the pool replaced the connection).
//
// The connection goes back to the pool with no transaction open, whatever
// fn did: a panic, or a COMMIT and a ROLLBACK that both failed, would
// otherwise leave SQLite's write lock held for every later write. A panic
// does not escape either: database/sql would discard the connection with
// the statements still open on it, which keeps its file open for good.
// If the transaction cannot be ended, the statements are closed and the
// connection discarded; the next batch prepares on a new one.
func (w *writer) onConn(ctx context.Context, fn func()) error {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) (err error) {
		sc, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("the SQLite driver's connection is a %T", dc)
		}
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("the writer panicked: %v\n%s", v, debug.Stack())
			}
			if w.conn == sc && !sc.AutoCommit() {
				w.rollback()
				if !sc.AutoCommit() {
					w.closeStmts()
					err = errors.Join(err, driver.ErrBadConn)
				}
			}
		}()
		if sc != w.conn {
			w.closeStmts()
			w.stmts = make(map[string]driver.Stmt, len(w.queries))
			for _, q := range w.queries {
				st, err := sc.Prepare(q)
				if err != nil {
					w.closeStmts()
					return fmt.Errorf("preparing %q: %w", q, err)
				}
				w.stmts[q] = st
			}
			w.conn = sc
		}
		fn()
		return nil
	})
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
	w.stmts, w.conn = nil, nil
}

// run executes one batch, on the write connection.
func (w *writer) run(batch []*writeJob) {
	w.batches.Add(1)
	err := w.onConn(context.Background(), func() { w.runOn(batch) })
	if err != nil {
		for _, j := range batch {
			if j.err == nil {
				j.err = err
			}
		}
	}
}

// runOn executes one batch: BEGIN, each write in its savepoint, COMMIT.
// Statements run on the leader's goroutine with no context (a caller's
// cancelled context must not interrupt the whole transaction).
func (w *writer) runOn(batch []*writeJob) {
	t := &wtx{w: w}
	if _, err := t.exec(qBegin); err != nil {
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
		w.rollback()
		return
	}
	if len(live) == 1 {
		j := live[0]
		if j.err = j.call(t); j.err != nil {
			w.rollback()
			return
		}
		j.err = w.commit()
		return
	}
	ok := 0
	for _, j := range live {
		if _, err := t.exec(qSavepoint); err != nil {
			w.abort(live, err)
			return
		}
		if j.err = j.call(t); j.err != nil {
			if _, err := t.exec(qRollbackTo); err != nil {
				// SQLite rolls back the whole transaction after some
				// errors (disk full, I/O); nothing in it may be reported.
				w.abort(live, err)
				return
			}
		} else {
			ok++
		}
		if _, err := t.exec(qRelease); err != nil {
			w.abort(live, err)
			return
		}
	}
	if ok == 0 {
		w.rollback()
		return
	}
	if err := w.commit(); err != nil {
		for _, j := range live {
			if j.err == nil {
				j.err = err
			}
		}
	}
}

// commit ends the transaction. A COMMIT that fails may leave it open (as
// the driver's own Commit knows): roll it back, so the connection goes back
// to the pool clean.
func (w *writer) commit() error {
	if _, err := (&wtx{w: w}).exec(qCommit); err != nil {
		w.rollback()
		return err
	}
	return nil
}

// rollback ends the transaction without keeping anything. It fails only
// when there is no transaction left to roll back.
func (w *writer) rollback() { _, _ = (&wtx{w: w}).exec(qRollback) }

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
func (w *writer) abort(live []*writeJob, err error) {
	w.rollback()
	for _, j := range live {
		j.err = err
	}
}

// exec runs one of the prepared statements.
func (t *wtx) exec(q string, args ...any) (driver.Result, error) {
	st, vals, err := t.stmt(q, args)
	if err != nil {
		return nil, err
	}
	return st.Exec(vals) // no context: runs on this goroutine
}

// query runs one of the prepared statements that return rows; the caller
// closes them.
func (t *wtx) query(q string, args ...any) (*rawRows, error) {
	st, vals, err := t.stmt(q, args)
	if err != nil {
		return nil, err
	}
	rows, err := st.Query(vals)
	if err != nil {
		return nil, err
	}
	return newRawRows(rows), nil
}

func (t *wtx) stmt(q string, args []any) (driver.Stmt, []driver.Value, error) {
	st, ok := t.w.stmts[q]
	if !ok {
		return nil, nil, fmt.Errorf("store: the writer has no prepared statement %q", q)
	}
	vals, err := driverArgs(args)
	return st, vals, err
}

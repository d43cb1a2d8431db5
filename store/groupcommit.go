package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit, SQLite only. SQLite has one writer, and a gate call that
// policy decides is one write: with a transaction each, the writer spent
// most of its time beginning and committing, and the same index pages
// were appended to the WAL once per call. The writer goroutine instead
// takes every write waiting when it is free, runs each in a savepoint of
// one transaction, and commits once (docs/benchmark.md has the A/B).
//
// What each caller sees is what its own transaction would have given:
//   - its writes run alone and in order, after the writes queued before
//     it, so each sees what the earlier ones wrote (SQLite's single
//     writer serialises them either way);
//   - its error rolls back its own savepoint and nothing else;
//   - it returns only after the COMMIT, and when the COMMIT fails every
//     write of the batch returns that error (the gate then answers deny);
//   - a panic in its function is rolled back and re-raised in its own
//     goroutine.
//
// PostgreSQL keeps a transaction per write: its writers run in parallel.

// A write's savepoint.
const (
	qSavepoint  = `SAVEPOINT w`
	qRollbackTo = `ROLLBACK TO w`
	qRelease    = `RELEASE w`
)

// maxGroup bounds a batch: a long batch delays its first write's answer.
const maxGroup = 64

type groupWrite struct {
	ctx context.Context
	fn  func(t *wtx) error
	// state: queued, then running (the writer took it) or abandoned (its
	// caller's context ended first); whoever moves it from queued decides.
	state atomic.Int32
	err   error
	pan   any // a panic in fn, re-raised by the caller
	done  chan struct{}
}

const (
	queued int32 = iota
	running
	abandoned
)

type groupCommitter struct {
	db    *sql.DB
	p     *prepared
	queue chan *groupWrite
	stop  chan struct{}
	ended chan struct{}
	once  sync.Once
	// commits counts the transactions committed (tests).
	commits atomic.Int64
}

var errWriterClosed = errors.New("the database is closing")

func newGroupCommitter(db *sql.DB, p *prepared) *groupCommitter {
	g := &groupCommitter{db: db, p: p, queue: make(chan *groupWrite, maxGroup), stop: make(chan struct{}), ended: make(chan struct{})}
	go g.run()
	return g
}

// write hands fn to the writer and waits for the batch's COMMIT. While fn
// waits in the queue (the write connection busy), the caller's deadline
// holds: it abandons fn, which then never runs. Once the writer has begun
// fn, the caller waits for its outcome even if ctx ends: returning early
// could report a failure for a write that commits.
func (g *groupCommitter) write(ctx context.Context, fn func(t *wtx) error) error {
	w := &groupWrite{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case g.queue <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stop:
		return errWriterClosed
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		if w.state.CompareAndSwap(queued, abandoned) {
			return ctx.Err()
		}
		<-w.done // begun: its outcome comes
	case <-g.ended:
		// The writer has stopped. It finishes every write it took before
		// it stops, so a write not done now was never taken: nothing of
		// it was written.
		select {
		case <-w.done:
		default:
			return errWriterClosed
		}
	}
	if w.pan != nil {
		panic(w.pan)
	}
	return w.err
}

func (g *groupCommitter) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.ended
}

func (g *groupCommitter) run() {
	defer close(g.ended)
	for {
		var batch []*groupWrite
		select {
		case w := <-g.queue:
			batch = append(batch, w)
		case <-g.stop:
			return
		}
	more:
		for len(batch) < maxGroup {
			select {
			case w := <-g.queue:
				batch = append(batch, w)
			default:
				break more
			}
		}
		g.commit(batch)
		for _, w := range batch {
			close(w.done)
		}
	}
}

// commit runs a batch in one transaction, each write in its savepoint.
// Statements run under a context of their own: cancelling one caller's
// context mid-statement would interrupt SQLite, which rolls back the
// whole transaction.
func (g *groupCommitter) commit(batch []*groupWrite) {
	ctx := context.Background()
	fail := func(err error) {
		for _, w := range batch {
			if w.err == nil && w.pan == nil {
				w.err = err
			}
		}
	}
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	t := &wtx{ctx: ctx, tx: tx, p: g.p}
	ran := 0
	for _, w := range batch {
		if !w.state.CompareAndSwap(queued, running) {
			w.err = w.ctx.Err() // its caller gave up before it ran: it writes nothing
			continue
		}
		if _, err := t.exec(qSavepoint); err != nil {
			_ = tx.Rollback()
			fail(err)
			return
		}
		w.pan, w.err = g.run1(w, t)
		var err error
		if w.err != nil || w.pan != nil {
			_, err = t.exec(qRollbackTo)
		} else {
			ran++
		}
		if err == nil {
			_, err = t.exec(qRelease)
		}
		if err != nil {
			_ = tx.Rollback()
			fail(fmt.Errorf("end a write's savepoint: %w", err))
			return
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		_ = tx.Rollback()
		fail(err)
		return
	}
	g.commits.Add(1)
}

func (g *groupCommitter) run1(w *groupWrite, t *wtx) (pan any, err error) {
	defer func() {
		if p := recover(); p != nil {
			pan = p
		}
	}()
	return nil, w.fn(t)
}

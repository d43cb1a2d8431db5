package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// SQLite in WAL mode appends every commit to the WAL and copies the WAL
// back into the database file at a checkpoint. By default the commit that
// takes the WAL past 1,000 pages runs that checkpoint itself, fsync
// included: every few hundred life cycles one verdict waited milliseconds
// for it. Gatehouse checkpoints in the background instead, on a reading
// connection, without blocking the writer (PASSIVE), several times a
// second; a commit checkpoints only if the WAL has grown past
// walSafetyPages anyway (a reader held the old pages too long), and a WAL
// file that grew is cut back to walKeepBytes once it is reset.
const (
	sqliteDriver    = "gatehouse-sqlite3"
	checkpointEvery = 250 * time.Millisecond
	walSafetyPages  = 20000
	walKeepBytes    = 64 << 20
)

var registerDriver sync.Once

// registerSQLite registers the SQLite driver with the per-connection
// settings that a DSN cannot carry.
func registerSQLite() {
	registerDriver.Do(func() {
		sql.Register(sqliteDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			for _, p := range []string{fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walSafetyPages), fmt.Sprintf("PRAGMA journal_size_limit = %d", walKeepBytes)} {
				if _, err := c.Exec(p, nil); err != nil {
					return err
				}
			}
			return nil
		}})
	})
}

// checkpointer runs passive checkpoints until stop is closed. It also keeps
// the planner's statistics current (PRAGMA optimize, at start and hourly,
// as SQLite advises for long-lived connections): without them SQLite reads
// the pending queue through the primary key, not its partial index.
func checkpointer(db *sql.DB, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	exec := func(q string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = db.ExecContext(ctx, q)
		cancel()
	}
	exec("PRAGMA optimize=0x10002")
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	lastOptimize := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		exec("PRAGMA wal_checkpoint(PASSIVE)")
		if time.Since(lastOptimize) > time.Hour {
			exec("PRAGMA optimize")
			lastOptimize = time.Now()
		}
	}
}

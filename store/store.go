// Package store keeps Gatehouse's rows with gorm, on SQLite (the embedded
// default, in WAL mode) or PostgreSQL. It implements gate.Store; every
// transition is a compare-and-set in SQL.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Drivers.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// opTimeout bounds every operation of the store but those at startup
// (migrations, the schema's version), Ping (its callers bound it) and
// PostgreSQL's LISTEN connection, which waits by design: each
// transaction of store.write (the life cycle's writes: create, decide,
// expire, cards, steps, grants, rate counts), each read a gate call makes
// (a request by id or key, a grant, a list, a trail, votes), and what the
// background loops do (the sweeper's and the steps' scans, the safety
// re-read, sealing, retention, the audit chain's reads, sign-in sessions).
// A database that stops answering (packets to PostgreSQL dropped, where its
// port neither closes nor refuses) fails the gate call that needs it within
// this time, and the gate answers deny, rather than holding the call for as
// long as TCP retries, a quarter of an hour; a loop fails its round and
// tries again at the next, on a fresh connection. It is above SQLite's 10 s
// busy timeout, so a write waiting for another process's lock keeps that
// chance. Tests change it.
var opTimeout = 30 * time.Second

// sqliteDriver is the database/sql driver SQLite is opened with (tests
// wrap it to count what reaches it).
var sqliteDriver = "gatehouse-sqlite3"

// walCheckpointPages is how many pages SQLite's write-ahead log may hold
// before a commit copies them into the database file (SQLite's default is
// 1,000). The commit that crosses the mark does the copy and its fsyncs,
// and every gate call waiting on that commit waits for them; at 200 pages
// each such stall is shorter. Verdict p99 3.0–4.2 ms against 3.8–5.4 ms at
// 1,000 pages, p50 unchanged (docs/benchmark.md, "Speed mechanisms").
const walCheckpointPages = 200

func init() {
	// The setting belongs to a connection, so every connection the pools
	// open gets it, including one reopened after an error.
	sql.Register("gatehouse-sqlite3", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if _, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", walCheckpointPages), nil); err != nil {
			return err
		}
		return c.RegisterFunc("gh_lower", strings.ToLower, true) // the history's search (searchLower)
	}})
}

// Options configure Open.
type Options struct {
	Driver string
	DSN    string
	// MaxOpenConns bounds the pool on PostgreSQL. 20 when zero.
	MaxOpenConns int
	// Migrate runs pending migrations at open (serve does; tools may not).
	Migrate bool
	Logger  *slog.Logger
}

// DB is the gate.Store. The request life cycle's writes are the prepared
// statements of lifecycle.go, run in database/sql transactions on both
// drivers; gorm opens the databases, runs the migrations, keeps the web
// sessions and builds the history's queries.
type DB struct {
	db *gorm.DB // migrations, sessions
	// rdb reads outside transactions: on SQLite a pool of its own, since
	// in WAL mode readers never wait for the writer; db on PostgreSQL.
	rdb    *gorm.DB
	wdb    *sql.DB                // db's pool: the life cycle's write transactions (lifecycle.go)
	group  *groupCommitter        // SQLite: the life cycle's writes, committed in groups (groupcommit.go)
	prep   *prepared              // the life cycle's statements
	notify atomic.Pointer[string] // PostgreSQL: the NOTIFY channel of transitions, once a notifier exists
	driver string
	dsn    string
	log    *slog.Logger
}

var _ gate.Store = (*DB)(nil)

// open connects and checks the connection.
func open(ctx context.Context, o Options) (*DB, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var dial func() gorm.Dialector
	switch o.Driver {
	case SQLite, "":
		o.Driver = SQLite
		dial = func() gorm.Dialector {
			return sqlite.New(sqlite.Config{DriverName: sqliteDriver, DSN: sqliteDSN(o.DSN)})
		}
	case Postgres:
		dial = func() gorm.Dialector { return postgres.Open(o.DSN) }
	default:
		return nil, fmt.Errorf("store: unknown driver %q (sqlite or postgres)", o.Driver)
	}
	unreachable := func(err error) error {
		return fmt.Errorf("store: cannot reach the %s database: %w", o.Driver, redact(err, o.DSN))
	}
	db, err := gorm.Open(dial(), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, unreachable(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &DB{db: db, rdb: db, wdb: sqlDB, driver: o.Driver, dsn: o.DSN, log: o.Logger}
	if o.Driver == SQLite {
		// SQLite has one writer at a time. Give writes exactly one
		// connection, so they queue in Go instead of colliding on the file
		// lock, where SQLite's busy handler sleeps between tries. Reads get
		// a pool of their own, with statements prepared once per connection.
		sqlDB.SetMaxOpenConns(1)
		if s.rdb, err = gorm.Open(dial(), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, PrepareStmt: true}); err != nil {
			sqlDB.Close()
			return nil, unreachable(err)
		}
		if rsql, err := s.rdb.DB(); err == nil {
			rsql.SetMaxOpenConns(8)
			rsql.SetMaxIdleConns(8)
			rsql.SetConnMaxIdleTime(5 * time.Minute)
		}
	} else {
		n := o.MaxOpenConns
		if n <= 0 {
			n = 20
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		s.Close()
		return nil, unreachable(err)
	}
	return s, nil
}

// Open connects, checks the connection and the schema version, and runs
// migrations when asked to.
func Open(ctx context.Context, o Options) (*DB, error) {
	s, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	if o.Migrate {
		err = s.Migrate(ctx)
	} else {
		err = s.checkVersion(ctx)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	rsql, err := s.rdb.DB()
	if err == nil {
		s.prep, err = prepare(ctx, s.driver, s.wdb, rsql)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.driver == SQLite {
		s.group = newGroupCommitter(s.wdb, s.prep)
		// The planner's statistics, as SQLite advises for long-lived
		// connections: without them it reads the pending queue through the
		// primary key rather than its partial index.
		s.rdb.WithContext(ctx).Exec("PRAGMA optimize=0x10002")
	}
	return s, nil
}

// sqliteDSN adds the settings Gatehouse relies on to a file path: WAL for
// concurrent readers, a busy timeout instead of instant "database is locked",
// foreign keys, and immediate transactions so that a read-then-write
// transaction never deadlocks on lock upgrade.
func sqliteDSN(dsn string) string {
	if dsn == "" {
		dsn = "gatehouse.db"
	}
	params := map[string]string{
		"_journal_mode": "WAL",
		"_busy_timeout": "10000",
		"_foreign_keys": "on",
		"_txlock":       "immediate",
		"_synchronous":  "NORMAL",
	}
	path, query, _ := strings.Cut(dsn, "?")
	q, _ := url.ParseQuery(query)
	for k, v := range params {
		if q.Get(k) == "" {
			q.Set(k, v)
		}
	}
	if !strings.HasPrefix(path, "file:") {
		// A plain path becomes a URI, where "#" would end the file name
		// (and "%" start an escape): "/tmp/Test#00/gh.db" would open
		// "/tmp/Test". Escape them, so the file is the one named.
		path = "file:" + strings.NewReplacer("%", "%25", "#", "%23").Replace(path)
	}
	return path + "?" + q.Encode()
}

// redact keeps a password in a DSN out of error messages.
func redact(err error, dsn string) error {
	var secret string
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		secret, _ = u.User.Password()
	} else if m := kvPassword.FindStringSubmatch(dsn); m != nil {
		secret = strings.Trim(m[1], "'")
	}
	if secret == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "***"))
}

// kvPassword finds the password of a key=value DSN ("host=db password=x").
var kvPassword = regexp.MustCompile(`(?:^|\s)password=('[^']*'|\S+)`)

// Driver names the database in use.
func (s *DB) Driver() string { return s.driver }

// Gorm exposes the connection to sibling packages' tests and tools.
func (s *DB) Gorm() *gorm.DB { return s.db }

// Ping checks that the database answers.
func (s *DB) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Close closes the pools.
func (s *DB) Close() error {
	if s.group != nil {
		s.group.close()
	}
	if s.prep != nil {
		s.prep.close()
	}
	if s.rdb != s.db {
		if r, err := s.rdb.DB(); err == nil {
			r.Close()
		}
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// utc normalises a time for storage: UTC, microseconds (PostgreSQL's
// precision), so a row reads back equal to what was written on both drivers.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

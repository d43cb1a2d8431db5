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
	"sync"
	"sync/atomic"
	"time"

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

// DB is the gorm-backed gate.Store.
type DB struct {
	db     *gorm.DB // writes (and reads inside write transactions)
	rdb    *gorm.DB // reads outside transactions: its own pool on SQLite, db on PostgreSQL
	w      *writer  // SQLite: the group-commit writer of the life-cycle writes
	pool   *sql.DB  // the write pool below gorm (PostgreSQL's life-cycle writes)
	get    *sql.Stmt
	notify atomic.Pointer[string] // PostgreSQL: the NOTIFY channel of transitions, once a notifier exists

	stopCkpt, ckptDone chan struct{} // SQLite: the background checkpointer
	ckptOnce           sync.Once
	driver             string
	dsn                string
	log                *slog.Logger
}

var _ gate.Store = (*DB)(nil)

// Open connects, checks the connection and the schema version, and runs
// migrations when asked to.
func Open(ctx context.Context, o Options) (*DB, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var dial gorm.Dialector
	switch o.Driver {
	case SQLite, "":
		o.Driver = SQLite
		registerSQLite()
		dial = sqlite.New(sqlite.Config{DriverName: sqliteDriver, DSN: sqliteDSN(o.DSN)})
	case Postgres:
		dial = postgres.New(postgres.Config{DSN: o.DSN})
	default:
		return nil, fmt.Errorf("store: unknown driver %q (sqlite or postgres)", o.Driver)
	}
	cfg := func(prepare bool) *gorm.Config {
		return &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, PrepareStmt: prepare}
	}
	// gorm's statement cache stays off for writes: it prepares under a
	// lock on a connection of its own choosing, and with SQLite's single
	// writer connection held by a transaction that needs the same lock,
	// the two wait for each other forever. pgx caches prepared statements
	// per connection by itself, so PostgreSQL needs none either.
	db, err := gorm.Open(dial, cfg(false))
	if err != nil {
		return nil, fmt.Errorf("store: cannot reach the %s database: %w", o.Driver, redact(err, o.DSN))
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	rdb := db
	if o.Driver == SQLite {
		// SQLite has one writer at a time. Give it exactly one connection,
		// so writers queue in Go (a channel hand-off) instead of colliding
		// on the file lock, where SQLite's busy handler sleeps 1, 2, 5, 10
		// … 100 ms between tries. Reads go to a pool of their own: in WAL
		// mode they never wait for the writer.
		// The writer's statements live on that connection, so it is
		// never closed for idleness (nor given a lifetime).
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		// Reads are prepared once per connection and reused (preparing was
		// a seventh of the server's CPU); no transaction holds a reader.
		if rdb, err = gorm.Open(sqlite.New(sqlite.Config{DriverName: sqliteDriver, DSN: sqliteDSN(o.DSN)}), cfg(true)); err != nil {
			sqlDB.Close()
			return nil, fmt.Errorf("store: cannot reach the %s database: %w", o.Driver, redact(err, o.DSN))
		}
		if rsql, err := rdb.DB(); err == nil {
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
	s := &DB{db: db, rdb: rdb, pool: sqlDB, driver: o.Driver, dsn: o.DSN, log: o.Logger}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: cannot reach the %s database: %w", o.Driver, redact(err, o.DSN))
	}
	if o.Migrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	} else if err := s.checkVersion(ctx); err != nil {
		s.Close()
		return nil, err
	}
	get := qRequest
	if o.Driver == Postgres {
		get = dollars(get)
	}
	rsql, err := rdb.DB()
	if err == nil {
		s.get, err = rsql.PrepareContext(pctx, get)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	if o.Driver == SQLite {
		if s.w, err = newWriter(pctx, sqlDB, hotQueries); err != nil {
			s.Close()
			return nil, fmt.Errorf("store: %w", err)
		}
		s.stopCkpt, s.ckptDone = make(chan struct{}), make(chan struct{})
		go checkpointer(rsql, s.stopCkpt, s.ckptDone)
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
		path = "file:" + path
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

// Close finishes the queued writes and closes the pools.
func (s *DB) Close() error {
	if s.stopCkpt != nil {
		s.ckptOnce.Do(func() { close(s.stopCkpt) })
		<-s.ckptDone
	}
	if s.w != nil {
		s.w.close()
	}
	if s.get != nil {
		s.get.Close()
	}
	if s.rdb != nil && s.rdb != s.db {
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

// never is the zero lease and the "no retry pending" time.
var never = time.Unix(0, 0).UTC()

package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// For the external tests.

// The statements whose PostgreSQL plans TestPostgresPlans checks.
const (
	Decide        = qDecide
	Expire        = qExpire
	LockPostgres  = qLockPostgres
	FinalCards    = qFinalCards
	ClaimPostgres = qClaimPostgres
	FinishCard    = qFinishCard
)

// MigrationCount is how many steps the migrations hold.
var MigrationCount = len(migrations)

// LifecycleStatements lists the life cycle's statements on a driver.
var LifecycleStatements = lifecycleStatements

// OpenAt opens a database and migrates it to version only, as an older
// binary left it.
func OpenAt(ctx context.Context, driver, dsn string, version int) (*DB, error) {
	s, err := open(ctx, Options{Driver: driver, DSN: dsn})
	if err != nil {
		return nil, err
	}
	if err := s.migrateTo(ctx, version); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// UseSQLiteDriver makes Open use the database/sql driver registered as
// name until restore is called.
func UseSQLiteDriver(name string) (restore func()) {
	old := sqliteDriver
	sqliteDriver = name
	return func() { sqliteDriver = old }
}

// SetOpTimeout changes the bound on one database operation until restore
// is called.
func SetOpTimeout(d time.Duration) (restore func()) {
	old := opTimeout
	opTimeout = d
	return func() { opTimeout = old }
}

// VoteBackfill is migration 8's update of the votes cast before it.
func VoteBackfill() (string, error) {
	m := migrations[7]
	steps := strings.SplitN(m.sql, ";\n", 2)
	if m.version != 8 || len(steps) != 2 {
		return "", fmt.Errorf("migration 8 is not where the test looks: %d %q", m.version, m.name)
	}
	return steps[1], nil
}

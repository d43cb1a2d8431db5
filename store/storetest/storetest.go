// Package storetest opens real databases for tests: a SQLite file in the
// test's temp dir, and a fresh schema on the PostgreSQL server named by
// GATEHOUSE_TEST_POSTGRES (CI sets it; without it PostgreSQL tests skip).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gatehouse-dev/gatehouse/store"
)

// EnvPostgres names the variable holding the test PostgreSQL DSN.
const EnvPostgres = "GATEHOUSE_TEST_POSTGRES"

// SQLite opens a migrated SQLite database in a new file.
func SQLite(t testing.TB) *store.DB {
	t.Helper()
	return Open(t, store.SQLite, filepath.Join(t.TempDir(), "gatehouse.db"))
}

// PostgresDSN returns a DSN for a fresh, empty schema (dropped when the
// test ends), or skips the test when no server is configured.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skip(EnvPostgres + " is not set; PostgreSQL tests skipped")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "gh_test_" + hex.EncodeToString(b)
	raw, err := gorm.Open(postgres.Open(base), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	if err := raw.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("postgres: create schema: %v", err)
	}
	t.Cleanup(func() {
		_ = raw.Exec("DROP SCHEMA " + schema + " CASCADE").Error
		if sqlDB, err := raw.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath points a DSN (URL or key=value) at a schema.
func WithSearchPath(dsn, schema string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "search_path=" + schema
	}
	return dsn + " search_path=" + schema
}

// Postgres opens a migrated database in a fresh schema.
func Postgres(t testing.TB) *store.DB {
	t.Helper()
	return Open(t, store.Postgres, PostgresDSN(t))
}

// Open opens and migrates a database, closing it when the test ends.
func Open(t testing.TB, driver, dsn string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Options{Driver: driver, DSN: dsn, Migrate: true})
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Each runs fn against SQLite and against PostgreSQL, as named subtests, so
// one suite proves both.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

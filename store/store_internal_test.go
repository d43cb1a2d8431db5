package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for dsn, msg := range map[string]string{
		"postgres://gate:s3cret@db:5432/gate":        "dial gate:s3cret@db failed",
		"host=db user=gate password=s3cret dbname=x": "auth failed for password=s3cret",
		"host=db password='s3cret' dbname=x":         "auth failed for s3cret",
	} {
		if got := redact(errors.New(msg), dsn).Error(); strings.Contains(got, "s3cret") {
			t.Errorf("redact(%q) left the password: %q", dsn, got)
		}
	}
}

// Branches add steps independently, so a database may have had a step
// above one that joins the list later (5 before 4, once both are merged).
// Migrate applies every step not yet applied, not only those above the
// highest; the version check refuses the database until it has them all;
// and a database with a step this binary does not know is refused as newer.
// The steps here are the test's own, so it holds whatever the real list is.
func TestMigrateAppliesAStepThatJoinedBelow(t *testing.T) {
	ctx := context.Background()
	s, err := open(ctx, Options{DSN: filepath.Join(t.TempDir(), "gap.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	saved := migrations
	defer func() { migrations = saved }()
	one := migration{version: 1, name: "one", sql: `CREATE TABLE one (x INTEGER)`}
	two := migration{version: 2, name: "two", sql: `CREATE TABLE two (x INTEGER)`}
	three := migration{version: 3, name: "three", sql: `CREATE TABLE three (x INTEGER)`}
	migrations = []migration{one, three}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	migrations = []migration{one, two, three}
	if err := s.checkVersion(ctx); err == nil || !strings.Contains(err.Error(), "lacks version 2") {
		t.Fatalf("the version check without step 2: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := s.db.Raw(`SELECT COUNT(*) FROM two`).Scan(&n).Error; err != nil {
		t.Fatalf("step 2 was not applied: %v", err)
	}
	if err := s.checkVersion(ctx); err != nil {
		t.Fatal(err)
	}
	migrations = []migration{one, three}
	if err := s.checkVersion(ctx); err == nil || !strings.Contains(err.Error(), "version 2, which this binary (version 3) does not know") {
		t.Fatalf("a binary without step 2 opened a database that had it: %v", err)
	}
	if err := s.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "does not know") {
		t.Fatalf("a binary without step 2 migrated a database that had it: %v", err)
	}
}

// A file path with "#" or "%" in it opens that file, not a truncated or
// unescaped one ("/tmp/TestX#00/gh.db" used to open "/tmp/TestX").
func TestSQLitePathsAreTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a#b%41c")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gh.db")
	s, err := Open(context.Background(), Options{DSN: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		entries, _ := os.ReadDir(filepath.Dir(dir))
		t.Fatalf("the database is not at %s: %v (the parent holds %v)", path, err, entries)
	}
}

// The write-ahead log is copied into the database every walCheckpointPages
// pages, not at SQLite's default 1,000: the commit that crosses the mark
// copies them and waits for the disk, and a gate call waiting on that
// commit waits with it, so shorter copies cut the verdict's p99 (README,
// "Speed mechanisms"). With no reader holding an old snapshot, the log
// then never grows much past the mark; at 1,000 pages it would reach 4 MB.
func TestWriteAheadLogIsCopiedOften(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	s, err := Open(ctx, Options{DSN: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.wdb.ExecContext(ctx, `CREATE TABLE filler (x BLOB)`); err != nil {
		t.Fatal(err)
	}
	blob := make([]byte, 3000) // about a page a row
	for range 1500 {
		if _, err := s.wdb.ExecContext(ctx, `INSERT INTO filler (x) VALUES (?)`, blob); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	const frame = 4096 + 24 // a page and its frame header
	if pages := info.Size() / frame; pages > walCheckpointPages+50 {
		t.Errorf("the log holds %d pages after 1,500 writes; it should be copied at %d", pages, walCheckpointPages)
	}
}

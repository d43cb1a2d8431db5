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

// TestSQLitePathWithURICharacters: a plain path with '#' or '%' in it is the
// file it names, not the part before the '#' (a file: URI's fragment).
func TestSQLitePathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a#1 100%")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gh.db")
	db, err := Open(context.Background(), Options{Driver: SQLite, DSN: path, Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "a")); err == nil {
		t.Fatal("the database went to the path cut at '#'")
	}
}

package store

import (
	"errors"
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

package store

import "testing"

func TestDollars(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                     "SELECT 1",
		"WHERE id = ? AND x = ?::text": "WHERE id = $1 AND x = $2::text",
		"SET a = CASE WHEN ? <> '' THEN ? ELSE a END": "SET a = CASE WHEN $1 <> '' THEN $2 ELSE a END",
		"SELECT '?', 'it''s ?', ?":                    "SELECT '?', 'it''s ?', $1",
	} {
		if got := dollars(in); got != want {
			t.Errorf("dollars(%q) = %q, want %q", in, got, want)
		}
	}
}

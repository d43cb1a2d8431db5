package store

import (
	"strings"
	"testing"
	"time"
)

// The writer's scanner stores what the driver returns, including
// timestamps that come back as text (no declared type to parse them by),
// and names what it cannot store.
func TestAssign(t *testing.T) {
	at := time.Date(2026, 11, 21, 9, 30, 0, 123456000, time.UTC)
	var (
		s   string
		ps  *string
		i   int
		i64 int64
		b   bool
		tm  time.Time
		ptm *time.Time
	)
	for _, c := range []struct {
		dst, v any
		check  func() bool
	}{
		{&s, "x", func() bool { return s == "x" }},
		{&s, []byte("y"), func() bool { return s == "y" }},
		{&ps, nil, func() bool { return ps == nil }},
		{&ps, "z", func() bool { return ps != nil && *ps == "z" }},
		{&i, int64(7), func() bool { return i == 7 }},
		{&i64, int64(8), func() bool { return i64 == 8 }},
		{&b, int64(1), func() bool { return b }},
		{&b, false, func() bool { return !b }},
		{&tm, at, func() bool { return tm.Equal(at) }},
		{&tm, "2026-11-21 09:30:00.123456+00:00", func() bool { return tm.Equal(at) }},
		{&tm, "2026-11-21T09:30:00.123456Z", func() bool { return tm.Equal(at) }},
		{&ptm, nil, func() bool { return ptm == nil }},
		{&ptm, at, func() bool { return ptm != nil && ptm.Equal(at) }},
	} {
		if err := assign(c.dst, c.v); err != nil || !c.check() {
			t.Errorf("assign(%T, %#v): err %v, or the value did not arrive", c.dst, c.v, err)
		}
	}
	for _, c := range []struct {
		dst, v any
		want   string
	}{
		{&s, int64(1), "int64 is not text"},
		{&i, "1", "string is not an integer"},
		{&b, "yes", "string is not a boolean"},
		{&tm, "yesterday", `"yesterday" is not a timestamp`},
		{&tm, int64(5), "int64 is not a time"},
		{new(float64), 1.5, "unsupported destination *float64"},
	} {
		if err := assign(c.dst, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("assign(%T, %#v) = %v, want an error saying %q", c.dst, c.v, err, c.want)
		}
	}
}

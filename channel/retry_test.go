package channel

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	p := RetryPolicy{Attempts: 3, Base: time.Millisecond, Budget: time.Second}
	boom := errors.New("boom")
	tests := []struct {
		name  string
		errs  []error
		calls int
		want  error
	}{
		{"success", []error{nil}, 1, nil},
		{"temporary then success", []error{Temporary(boom, 0), nil}, 2, nil},
		{"permanent", []error{boom}, 1, boom},
		{"tries run out", []error{Temporary(boom, 0), Temporary(boom, 0), Temporary(boom, 0)}, 3, boom},
		{"wait beyond the budget", []error{Temporary(boom, time.Hour)}, 1, boom},
		{"timeout", []error{context.DeadlineExceeded, nil}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := Retry(context.Background(), p, func(context.Context) error {
				n++
				return tt.errs[n-1]
			})
			if n != tt.calls || !errors.Is(err, tt.want) {
				t.Errorf("calls %d err %v, want %d %v", n, err, tt.calls, tt.want)
			}
			var te *TemporaryError
			if errors.As(err, &te) {
				t.Errorf("Retry returned the TemporaryError wrapper")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
		cut  bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"¥¥¥¥", 2, "¥¥", true},
		{"x", 0, "", true},
	}
	for _, tt := range tests {
		if got, cut := Truncate(tt.in, tt.max); got != tt.want || cut != tt.cut {
			t.Errorf("Truncate(%q, %d) = %q, %v; want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.cut)
		}
	}
}

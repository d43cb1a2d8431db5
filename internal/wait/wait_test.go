package wait

import (
	"math"
	"testing"
	"time"
)

// TestParse: a wait reads the same to the server's ?wait= and the hook's
// GATEHOUSE_HOOK_WAIT. Before they shared it, 2562048h (a Go duration just
// past what a time.Duration holds) was the longest wait to the server and
// "not a positive duration" to the hook, which then denied every call.
func TestParse(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "30": 30 * time.Second, "1.5": 1500 * time.Millisecond, "0": 0,
		"1e10": math.MaxInt64, "9223372037": math.MaxInt64, "1e400": math.MaxInt64, "2562048h": math.MaxInt64,
		"-2562048h": math.MinInt64, "-1e400": math.MinInt64, "-5s": -5 * time.Second,
	} {
		if d, err := Parse(v); err != nil || d != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", v, d, err, want)
		}
	}
	for _, v := range []string{"Inf", "+Inf", "-inf", "NaN", "soon", "30 s", "", "1h-"} {
		if d, err := Parse(v); err == nil {
			t.Errorf("Parse(%q) = %v, no error", v, d)
		}
	}
}

func TestSeconds(t *testing.T) {
	for n, want := range map[float64]time.Duration{
		2: 2 * time.Second, 1e10: math.MaxInt64, -1e10: math.MinInt64, math.NaN(): math.MinInt64,
	} {
		if got := Seconds(n); got != want {
			t.Errorf("Seconds(%v) = %v, want %v", n, got, want)
		}
	}
}

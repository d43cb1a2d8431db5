package hookcmd

import (
	"testing"
	"time"
)

// TestParseHookWaitHolds: GATEHOUSE_HOOK_WAIT=1e10 wrapped negative on
// the way to a time.Duration, and the hook denied every call with
// "--wait must be positive". Seconds past what a time.Duration holds are
// the longest wait; infinities and NaN are no wait. Found by a reader.
func TestParseHookWaitHolds(t *testing.T) {
	for _, v := range []string{"1e10", "9223372037", "1e300", "2562048h"} {
		if d, err := parseHookWait(v); err != nil || d < 290*365*24*time.Hour {
			t.Errorf("%s: %v, %v; want the longest wait", v, d, err)
		}
	}
	for _, v := range []string{"Inf", "+Inf", "NaN", "-1e10", "0"} {
		if d, err := parseHookWait(v); err == nil {
			t.Errorf("%s: %v, no error", v, d)
		}
	}
	if d, err := parseHookWait("590"); err != nil || d != 590*time.Second {
		t.Errorf("590: %v, %v", d, err)
	}
}

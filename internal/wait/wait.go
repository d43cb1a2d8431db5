// Package wait reads how long to wait, as the server's ?wait= and the
// hook's GATEHOUSE_HOOK_WAIT write it: a Go duration ("30s") or a number
// of seconds ("30"). Both read it here, so a value means one wait to both.
package wait

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxSeconds is the most whole seconds a time.Duration holds (about 292
// years).
const maxSeconds = math.MaxInt64 / int64(time.Second)

// Seconds is n seconds as a time.Duration, held within what one holds.
// Converted as is, seconds past maxSeconds wrap around, and a huge wait or
// timeout would read as a negative one and be refused for the wrong
// reason. NaN, which no JSON number is, reads as negative: refused.
func Seconds(n float64) time.Duration {
	switch {
	case n >= float64(maxSeconds):
		return math.MaxInt64
	case n <= -float64(maxSeconds) || math.IsNaN(n):
		return math.MinInt64
	}
	return time.Duration(n * float64(time.Second))
}

// durationSyntax is a Go duration as time.ParseDuration reads one; a value
// of this form that it refuses is too long for a time.Duration. It is
// compiled when first needed, not when the hook process starts.
var durationSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
})

// Parse reads v as a Go duration or as seconds. A wait too long for a
// time.Duration (1e10, 2562048h, 1e400) is the longest one, as the longer
// wait it is (and a negative one the most negative); NaN and infinities are
// no number of seconds. The sign is the caller's to check.
func Parse(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err == nil:
		return d, nil
	case durationSyntax().MatchString(v):
		if strings.HasPrefix(v, "-") {
			return math.MinInt64, nil
		}
		return math.MaxInt64, nil
	}
	// A number too large for a float64 (1e400) is ±Inf with ErrRange: a
	// long wait (or a negative one), as written.
	n, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is not a duration such as 30s", v)
	case math.IsNaN(n) || math.IsInf(n, 0) && err == nil:
		return 0, fmt.Errorf("%q is not a finite number of seconds", v)
	}
	return Seconds(n), nil
}

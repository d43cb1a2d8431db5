//go:build faults || load

package main

import (
	"slices"
	"time"
)

// percentile is the p-th percentile (0-100) of ds, nearest rank: the
// latency figures of the fault tests and the load test.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

package policy_test

import (
	"testing"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/policy/policybench"
)

// BenchmarkEvaluate200Routes times one policy decision over 200 routes,
// building the call from its JSON (arguments decoded, a shell command
// parsed) included, and reports p50 and p99 (the target: p99 ≤ 20 µs).
// gatehouse-bench --parts policy prints the same figures.
//
//	go test ./policy -run '^$' -bench Evaluate200Routes -benchtime 20000x
func BenchmarkEvaluate200Routes(b *testing.B) {
	real, err := policy.Compile(policybench.Realistic())
	if err != nil {
		b.Fatal(err)
	}
	worst, err := policy.Compile(policybench.Unfiltered())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range policybench.Cases {
		p := real
		if c.Unfiltered {
			p = worst
		}
		b.Run(c.Name, func(b *testing.B) {
			took, err := policybench.Measure(p, c, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(policybench.Quantile(took, .99).Nanoseconds())/1000, "p99-µs")
			b.ReportMetric(float64(policybench.Quantile(took, .5).Nanoseconds())/1000, "p50-µs")
		})
	}
}

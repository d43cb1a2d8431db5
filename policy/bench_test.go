package policy_test

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

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

// BenchmarkBashCallParts times the three steps of config/bash apart, each
// with its p50 and p99: decoding the arguments, reading the command (the
// shell parser), and deciding a call whose command was read already (the
// 200 routes' tests). The steps that allocate set the tail: deciding a
// read call allocates nothing and keeps its p99 near its p50, while
// reading the command, which allocates most of a Bash call's bytes, has a
// p99 ten times its p50 (docs/benchmark.md).
//
//	go test ./policy -run '^$' -bench BashCallParts -benchtime 20000x -benchmem
func BenchmarkBashCallParts(b *testing.B) {
	p, err := policy.Compile(policybench.Realistic())
	if err != nil {
		b.Fatal(err)
	}
	i := slices.IndexFunc(policybench.Cases, func(c policybench.Case) bool { return c.Name == "config/bash" })
	c := policybench.Cases[i]
	var cmd struct{ Command string }
	if err := json.Unmarshal([]byte(c.Args), &cmd); err != nil || cmd.Command == "" {
		b.Fatalf("config/bash has no command: %v", err)
	}
	read := policy.NewCall(c.Tool, json.RawMessage(c.Args), nil)
	read.Agent, read.Now = "build-agent", time.Now()
	if got := p.Evaluate(read, false).Route; got != c.Route { // reads the command, once
		b.Fatalf("route %d, want %d", got, c.Route)
	}
	steps := []struct {
		name string
		f    func()
	}{
		{"decode", func() { policy.NewCall(c.Tool, json.RawMessage(c.Args), nil) }},
		{"read", func() { policy.ReadShell(cmd.Command) }},
		{"decide-read-call", func() { p.Evaluate(read, false) }},
	}
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				s.f()
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(policybench.Quantile(took, .99).Nanoseconds())/1000, "p99-µs")
			b.ReportMetric(float64(policybench.Quantile(took, .5).Nanoseconds())/1000, "p50-µs")
		})
	}
}

// BenchmarkBashWithoutCollections times config/bash with the collector off
// and the memory the run will use touched beforehand, so that no call
// waits for a collection or for the kernel's first touch of a page (with
// GOGC=off alone every call takes fresh memory): the tail left is the
// machine's own. gcs must be 0 (docs/benchmark.md).
//
//	go test ./policy -run '^$' -bench BashWithoutCollections -benchtime 20000x
func BenchmarkBashWithoutCollections(b *testing.B) {
	p, err := policy.Compile(policybench.Realistic())
	if err != nil {
		b.Fatal(err)
	}
	c := policybench.Cases[slices.IndexFunc(policybench.Cases, func(c policybench.Case) bool { return c.Name == "config/bash" })]
	if _, err := policybench.Measure(p, c, 2000); err != nil { // warm up
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// A call allocates about 6 KB: touch 16 KB a call in 1 KB blocks (a
	// byte of each, so every page), then free them to the heap.
	func() {
		touched := make([][]byte, 0, 16*b.N)
		for range 16 * b.N {
			block := make([]byte, 1024)
			block[0] = 1
			touched = append(touched, block)
		}
		runtime.KeepAlive(touched)
	}()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	took, err := policybench.Measure(p, c, b.N)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(policybench.Quantile(took, .99).Nanoseconds())/1000, "p99-µs")
	b.ReportMetric(float64(policybench.Quantile(took, .5).Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(after.NumGC-before.NumGC), "gcs")
}

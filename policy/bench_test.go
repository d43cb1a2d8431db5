package policy

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"
)

// config200 is a policy of 200 routes shaped like a real one: 100 with a
// condition, two for each of 50 tools (conditions are about one tool's
// arguments, so each sits beside its tool's glob), and 100 with call
// patterns: 60 over shell commands (every one of them tried on every
// Bash call), 20 over files, 20 over MCP servers.
func config200(b *testing.B) *Policy {
	var routes []Route
	for i := range 50 {
		tool := fmt.Sprintf("svc%02d__*", i)
		routes = append(routes,
			Route{Name: fmt.Sprintf("big-%d", i), Tool: tool, When: fmt.Sprintf(`has(args.amount) && double(args.amount) > %d.0`, 50_000+i), Action: Ask},
			Route{Name: fmt.Sprintf("prod-%d", i), Tool: tool, When: `has(args.env) && args.env == "prod"`, Action: Deny})
	}
	for i := range 60 {
		routes = append(routes, Route{Name: fmt.Sprintf("sh-%d", i), Calls: []string{fmt.Sprintf("Bash(tool%d deploy:*)", i), fmt.Sprintf("Bash(tool%d push --force)", i)}, Action: Ask})
	}
	for i := range 20 {
		routes = append(routes, Route{Name: fmt.Sprintf("file-%d", i), Calls: []string{fmt.Sprintf("Read(/srv/%d/**)", i), fmt.Sprintf("Edit(/srv/%d/**)", i)}, Action: Deny})
	}
	for i := range 20 {
		routes = append(routes, Route{Name: fmt.Sprintf("mcp-%d", i), Calls: []string{fmt.Sprintf("mcp__server%d__*", i)}, Action: Ask})
	}
	p, err := Compile(routes)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// unfiltered200 is the worst case: 100 conditions with no tool glob, all
// evaluated on every call, and 100 routes of shell patterns.
func unfiltered200(b *testing.B) *Policy {
	var routes []Route
	for i := range 100 {
		routes = append(routes,
			Route{Name: fmt.Sprintf("when-%d", i), When: fmt.Sprintf(`has(args.amount) && double(args.amount) > %d.0`, 1_000_000+i), Action: Ask},
			Route{Name: fmt.Sprintf("call-%d", i), Calls: []string{fmt.Sprintf("Bash(deploy-%d:*)", i)}, Action: Deny})
	}
	p, err := Compile(routes)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkEvaluate200Routes times one policy decision, building the call
// from its JSON (arguments decoded, a shell command parsed) included, and
// reports p50 and p99 (the target: p99 ≤ 20 µs with 200 routes):
//
//	go test ./policy -run '^$' -bench Evaluate200Routes -benchtime 20000x
func BenchmarkEvaluate200Routes(b *testing.B) {
	real, worst := config200(b), unfiltered200(b)
	for _, tc := range []struct {
		name  string
		p     *Policy
		tool  string
		args  string
		route int
	}{
		{"config/payment-over", real, "svc42__pay", `{"vendor":"ACME","amount":60000,"note":"Q4 hardware"}`, 84},
		{"config/payment-under", real, "svc42__pay", `{"vendor":"ACME","amount":600,"note":"Q4 hardware"}`, -1},
		{"config/bash", real, "Bash", `{"command":"npm run build && ls -la dist | head -n 20","description":"build"}`, -1},
		{"config/bash-match", real, "Bash", `{"command":"cd app && tool59 -v deploy prod"}`, 159},
		{"config/mcp", real, "mcp__server19__create_issue", `{"title":"x","body":"y"}`, 199},
		{"unfiltered/payment", worst, "oa__purchase_pay", `{"vendor":"ACME","amount":60000}`, -1},
		{"unfiltered/bash", worst, "Bash", `{"command":"npm run build && ls -la dist | head -n 20"}`, -1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			args := json.RawMessage(tc.args)
			now := time.Now()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				c := NewCall(tc.tool, args, nil)
				c.Agent, c.Now = "build-agent", now
				if got := tc.p.Evaluate(c, false).Route; got != tc.route {
					b.Fatalf("route %d, want %d", got, tc.route)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1000, "p99-µs")
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1000, "p50-µs")
		})
	}
}

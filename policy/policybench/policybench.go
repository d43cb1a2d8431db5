// Package policybench holds the 200-route policies and the calls that
// measure policy evaluation, shared by the Go benchmark
// (policy/bench_test.go) and gatehouse-bench's policy part, so both
// measure the same thing.
package policybench

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
)

// Realistic is a policy of 200 routes shaped like a real one: 100 with a
// condition, two for each of 50 tools (conditions are about one tool's
// arguments, so each sits beside its tool's glob), and 100 with call
// patterns: 60 over shell commands (every one of them tried on every Bash
// call), 20 over files, 20 over MCP servers.
func Realistic() []policy.Route {
	var routes []policy.Route
	for i := range 50 {
		tool := fmt.Sprintf("svc%02d__*", i)
		routes = append(routes,
			policy.Route{Name: fmt.Sprintf("big-%d", i), Tool: tool, When: fmt.Sprintf(`has(args.amount) && double(args.amount) > %d.0`, 50_000+i), Action: policy.Ask},
			policy.Route{Name: fmt.Sprintf("prod-%d", i), Tool: tool, When: `has(args.env) && args.env == "prod"`, Action: policy.Deny})
	}
	for i := range 60 {
		routes = append(routes, policy.Route{Name: fmt.Sprintf("sh-%d", i),
			Calls: []string{fmt.Sprintf("Bash(tool%d deploy:*)", i), fmt.Sprintf("Bash(tool%d push --force)", i)}, Action: policy.Ask})
	}
	for i := range 20 {
		routes = append(routes, policy.Route{Name: fmt.Sprintf("file-%d", i),
			Calls: []string{fmt.Sprintf("Read(/srv/%d/**)", i), fmt.Sprintf("Edit(/srv/%d/**)", i)}, Action: policy.Deny})
	}
	for i := range 20 {
		routes = append(routes, policy.Route{Name: fmt.Sprintf("mcp-%d", i), Calls: []string{fmt.Sprintf("mcp__server%d__*", i)}, Action: policy.Ask})
	}
	return routes
}

// Unfiltered is the worst case: 100 conditions with no tool glob, all
// evaluated on every call, and 100 routes of shell patterns.
func Unfiltered() []policy.Route {
	var routes []policy.Route
	for i := range 100 {
		routes = append(routes,
			policy.Route{Name: fmt.Sprintf("when-%d", i), When: fmt.Sprintf(`has(args.amount) && double(args.amount) > %d.0`, 1_000_000+i), Action: policy.Ask},
			policy.Route{Name: fmt.Sprintf("call-%d", i), Calls: []string{fmt.Sprintf("Bash(deploy-%d:*)", i)}, Action: policy.Deny})
	}
	return routes
}

// Case is one call to decide, and the route it must take (-1: none).
type Case struct {
	Name       string
	Unfiltered bool // decided by Unfiltered, not Realistic
	Tool, Args string
	Route      int
}

// Cases are the calls measured.
var Cases = []Case{
	{"config/payment-over", false, "svc42__pay", `{"vendor":"ACME","amount":60000,"note":"Q4 hardware"}`, 84},
	{"config/payment-under", false, "svc42__pay", `{"vendor":"ACME","amount":600,"note":"Q4 hardware"}`, -1},
	{"config/bash", false, "Bash", `{"command":"npm run build && ls -la dist | head -n 20","description":"build"}`, -1},
	{"config/bash-match", false, "Bash", `{"command":"cd app && tool59 -v deploy prod"}`, 159},
	{"config/mcp", false, "mcp__server19__create_issue", `{"title":"x","body":"y"}`, 199},
	{"unfiltered/payment", true, "oa__purchase_pay", `{"vendor":"ACME","amount":60000}`, -1},
	{"unfiltered/bash", true, "Bash", `{"command":"npm run build && ls -la dist | head -n 20"}`, -1},
}

// Measure decides c n times with p, timing each decision from the call's
// JSON (arguments decoded, a shell command parsed) to the route, and
// returns the times sorted. It fails if a decision takes the wrong route.
func Measure(p *policy.Policy, c Case, n int) ([]time.Duration, error) {
	args := json.RawMessage(c.Args)
	now := time.Now()
	took := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		call := policy.NewCall(c.Tool, args, nil)
		call.Agent, call.Now = "build-agent", now
		if got := p.Evaluate(call, false).Route; got != c.Route {
			return nil, fmt.Errorf("%s: route %d, want %d", c.Name, got, c.Route)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took, nil
}

// Quantile is the nearest-rank q-quantile of sorted times.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/policy/policybench"
)

// policyRoutes is the policy part's config: the contract's example (the
// ¥50,000 rule, force pushes denied, pushes asked), other shell commands
// allowed, and reads allowed without being recorded.
const policyRoutes = `routes:
  - name: no-force-push
    match: { call: "Bash(git push --force:*)" }
    action: deny
    message: "Force pushes are not allowed here; open a pull request."
  - name: big-payments
    match: { tool: "oa__purchase_*", when: 'double(args.amount) > 50000.0' }
  - name: small-payments
    match: { tool: "oa__purchase_*" }
    action: allow
  - name: pushes
    match: { call: ["Bash(git push:*)", "Bash(gh pr merge:*)"] }
  - name: reads
    match: { tool: Read }
    action: allow
    record: false
  - name: other-bash
    match: { tool: Bash }
    action: allow
`

// policyCall is one kind of call the policy decides, and its verdict.
type policyCall struct {
	tool, args, want string
}

// recordedCalls are decided by the policy and stored with their verdict:
// a small payment allowed, a force push denied, a build command allowed.
var recordedCalls = []policyCall{
	{"oa__purchase_pay", `{"vendor":"ACME","amount":600,"currency":"CNY"}`, "approved"},
	{"Bash", `{"command":"git push --force origin main"}`, "rejected"},
	{"Bash", `{"command":"npm run build && ls -la dist | head -n 20","description":"build"}`, "approved"},
}

// unrecordedCalls are allowed by a record: false route.
var unrecordedCalls = []policyCall{
	{"Read", `{"file_path":"/repo/README.md"}`, "approved"},
}

// measurePolicyCalls runs conc agents calling POST /api/v1/gate for d,
// each call one the policy decides at once, and checks every verdict.
func measurePolicyCalls(ctx context.Context, servers []*server, calls []policyCall, conc int, d time.Duration) cycleResult {
	run := fmt.Sprintf("%x", rand.Uint64())
	return runAgents(servers, conc, d, func(a, n int, base string) (string, bool) {
		c := calls[(a+n)%len(calls)]
		body := fmt.Appendf(nil, `{"tool_name":%q,"tool_args":%s,"agent_id":"bench-agent","requires_confirmation":false,"idempotency_key":"pol-%s-%d-%d"}`,
			c.tool, c.args, run, a, n)
		var h hookResult
		_, err := call(ctx, "POST", base+"/api/v1/gate", json.RawMessage(body), &h)
		return "", err == nil && h.Status == c.want
	})
}

// evalResult is the policy evaluation's per-call times for one case.
type evalResult struct {
	c        policybench.Case
	p50, p99 time.Duration
	gcs      uint32 // garbage collections while it was measured
	err      error
}

// measureEvaluation decides each benchmark case n times in this process
// over 200 routes (policy/policybench, as the Go benchmark does).
func measureEvaluation(n int) []evalResult {
	real, err := policy.Compile(policybench.Realistic())
	if err != nil {
		return []evalResult{{err: err}}
	}
	worst, err := policy.Compile(policybench.Unfiltered())
	if err != nil {
		return []evalResult{{err: err}}
	}
	var out []evalResult
	for _, c := range policybench.Cases {
		p := real
		if c.Unfiltered {
			p = worst
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		took, err := policybench.Measure(p, c, n)
		runtime.ReadMemStats(&after)
		out = append(out, evalResult{c: c, p50: policybench.Quantile(took, .5), p99: policybench.Quantile(took, .99),
			gcs: after.NumGC - before.NumGC, err: err})
	}
	return out
}

// hookTimes are the wall times of one kind of hook process.
type hookTimes struct {
	name   string
	took   []time.Duration
	errors int
	first  string
}

// hookPayload is a Claude Code PreToolUse call that the policy allows: a
// command of its own (shard %d), with its own tool_use_id.
const hookPayload = `{"session_id":"bench-session","transcript_path":"/tmp/t.jsonl","cwd":"/repo","hook_event_name":"PreToolUse",` +
	`"tool_name":"Bash","tool_input":{"command":"npm test -- --shard=%d","description":"run the tests"},"tool_use_id":"toolu_%d"}`

// measureHooks runs, side by side and interleaved, a minimal Go program
// that reads stdin and makes one loopback HTTP call (to the server's
// Claude Code hook endpoint), gatehouse-hook claude-code, and the full
// binary's gatehouse hook claude-code, n times each, against srv, timing
// each process from its start to its exit. Each call is a new command; a
// fourth kind runs gatehouse-hook on one command over and over (each a
// new call of it), whose request the server finds past the earlier ones.
func measureHooks(ctx context.Context, o options, srv *server, n int) ([]hookTimes, error) {
	dir := mkdir(o.workDir, "hooks")
	minimal, hookBin := filepath.Join(dir, "minimal"), filepath.Join(dir, "gatehouse-hook")
	for bin, pkg := range map[string]string{minimal: "./cmd/gatehouse-bench/minimalhook", hookBin: "./cmd/gatehouse-hook"} {
		if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, pkg).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	}
	kinds := []struct {
		name string
		argv []string
	}{
		{"minimal Go program (stdin + one HTTP call)", []string{minimal, srv.URL + "/hooks/claude-code"}},
		{"gatehouse-hook claude-code", []string{hookBin, "claude-code"}},
		{"gatehouse hook claude-code (full binary)", []string{o.bin, "hook", "claude-code"}},
		{"gatehouse-hook, one command repeated", []string{hookBin, "claude-code"}},
	}
	res := make([]hookTimes, len(kinds))
	env := append(os.Environ(), "GATEHOUSE_URL="+srv.URL, "GATEHOUSE_TOKEN="+benchToken)
	for i := range n + 5 {
		for k, kind := range kinds {
			res[k].name = kind.name
			cmd := exec.CommandContext(ctx, kind.argv[0], kind.argv[1:]...)
			cmd.Env = env
			call := i*len(kinds) + k
			shard := call
			if k == len(kinds)-1 {
				shard = -1 // the same command every time
			}
			cmd.Stdin = strings.NewReader(fmt.Sprintf(hookPayload, shard, call))
			var out bytes.Buffer
			cmd.Stdout = &out
			t0 := time.Now()
			err := cmd.Run()
			took := time.Since(t0)
			if i < 5 {
				continue // warm the page cache and the server's connections
			}
			if err != nil || !strings.Contains(out.String(), `"permissionDecision":"allow"`) {
				res[k].errors++
				if res[k].first == "" {
					res[k].first = fmt.Sprintf("%v: %.200s", err, out.String())
				}
				continue
			}
			res[k].took = append(res[k].took, took)
		}
	}
	return res, nil
}

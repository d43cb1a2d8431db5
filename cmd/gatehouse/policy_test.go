package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/web"
)

// policyConfig is the contract's example policy, with a catch-all allow
// for the other Bash commands and an agent-scoped route.
const policyConfig = `routes:
  - name: no-force-push
    match: { call: "Bash(git push --force:*)" }
    action: deny
    message: "Force pushes are not allowed here; open a pull request."
  - name: big-payments
    match:
      tool: "oa__purchase_*"
      when: 'double(args.amount) > 50000.0'
    remember: 1h
  - name: small-payments
    match: { tool: "oa__purchase_*" }
    action: allow
  - name: pushes
    match: { call: ["Bash(git push:*)", "Bash(gh pr merge:*)"] }
    rate: { limit: 20, per: 1h, by: agent }
  - name: interns
    match: { tool: Bash, agent: "intern-*" }
  - name: other-bash
    match: { tool: Bash }
    action: allow
defaults:
  action: deny
`

type explanation struct {
	Route  string   `json:"route"`
	Action string   `json:"action"`
	Hook   string   `json:"hook"`
	Why    []string `json:"why"`
}

// policyTest runs `gatehouse policy test` in-process over policyConfig.
func policyTest(t *testing.T, stdin string, args ...string) (explanation, string, int) {
	t.Helper()
	return policyTestOf(t, policyConfig, stdin, args...)
}

// policyTestOf runs `gatehouse policy test` in-process over cfg.
func policyTestOf(t *testing.T, cfg, stdin string, args ...string) (explanation, string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehouse.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(append([]string{"policy", "test", "--config", path}, args...), strings.NewReader(stdin), &out, &errb)
	var ex explanation
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &ex); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out.String())
		}
	}
	return ex, errb.String(), code
}

// TestPolicyTest: the dry run decides as the gate does (thresholds,
// errors that never allow, compound commands, the agent's flag, agent
// globs, the defaults) and says why, route by route.
func TestPolicyTest(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		route, action string
		why           string // a line of why must contain it
	}{
		{"over the threshold asks", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":60000}`},
			"big-payments", "ask", "route big-payments matches: when is true"},
		{"at the threshold is allowed", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":50000}`},
			"small-payments", "allow", "route big-payments does not match: when is false"},
		{"an amount that is not a number asks, never allows", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":"lots"}`},
			"big-payments", "ask", "an error never allows"},
		{"a missing amount asks", []string{"--tool", "oa__purchase_pay", "--args", `{}`},
			"big-payments", "ask", "error (written to the request's trail)"},
		{"the agent's flag raises an allow", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":1}`, "--requires-confirmation", "true"},
			"small-payments", "ask", "the agent sent requires_confirmation true"},
		{"the agent's flag never lowers an ask", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":60001}`, "--requires-confirmation=false"},
			"big-payments", "ask", "when is true"},
		{"a force push is denied", []string{"--tool", "Bash", "--args", `{"command":"git push --force origin main"}`},
			"no-force-push", "deny", "call matches Bash(git push --force:*)"},
		{"a compound command asks when a part asks", []string{"--tool", "Bash", "--args", `{"command":"ls && git -C app push origin main"}`},
			"pushes", "ask", "rate limit: 20 per 1h by agent"},
		{"other commands are allowed", []string{"--tool", "Bash", "--args", `{"command":"ls -la"}`},
			"other-bash", "allow", "route pushes does not match"},
		{"agent globs match the token", []string{"--tool", "Bash", "--args", `{"command":"ls"}`, "--agent", "intern-7"},
			"interns", "ask", "route interns matches"},
		// policyConfig has no tokens: the server routes on the agent_id sent.
		{"without tokens, the agent_id an agent sends picks the route", []string{"--tool", "Bash", "--args", `{"command":"ls"}`, "--agent", "ci", "--agent-id", "intern-7"},
			"interns", "ask", "route interns matches"},
		{"no route: the defaults", []string{"--tool", "rm_everything"},
			"default", "deny", "no route matches: defaults.action is deny"},
		{"remembering routes say a grant could answer", []string{"--tool", "oa__purchase_pay", "--args", `{"amount":99999}`},
			"big-payments", "ask", `"Approve for 1h"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex, stderr, code := policyTest(t, "", tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if ex.Route != tc.route || ex.Action != tc.action {
				t.Fatalf("got %s/%s, want %s/%s: %q", ex.Route, ex.Action, tc.route, tc.action, ex.Why)
			}
			if !slices.ContainsFunc(ex.Why, func(s string) bool { return strings.Contains(s, tc.why) }) {
				t.Fatalf("no line of why says %q: %q", tc.why, ex.Why)
			}
		})
	}
}

// TestPolicyTestLabelsAsTheServerDoes: the server gives a call that names
// no agent_id its token's name as agent_label; the dry run left it empty,
// so a condition over agent_label decided otherwise (a second reader).
func TestPolicyTestLabelsAsTheServerDoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.yaml")
	cfgText := "routes:\n  - name: ci-ok\n    match: { when: 'agent_label == agent' }\n    action: allow\n  - name: rest\n    match: { tool: \"*\" }\n"
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"policy", "test", "--config", path, "--tool", "deploy", "--agent", "ci-bot"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var dry gate.Explanation
	if err := json.Unmarshal(out.Bytes(), &dry); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	body := web.SubmitBody{ToolName: "deploy"}
	server, err := gate.Explain(routes(cfg), defaults(cfg), body.Submission("ci-bot"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if dry.Route != "ci-ok" || dry.Route != server.Route || dry.Action != server.Action {
		t.Errorf("policy test says %s/%s; the server decides %s/%s", dry.Route, dry.Action, server.Route, server.Action)
	}
}

// TestPolicyTestHook: --hook reads a client's hook payload on stdin and
// decides it as the hook endpoint would (requires_confirmation false).
func TestPolicyTestHook(t *testing.T) {
	in := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash","tool_use_id":"t1","cwd":"/repo",
		"tool_input":{"command":"npm test; git push origin HEAD"}}`
	ex, stderr, code := policyTest(t, in, "--hook", "claude-code", "--agent", "laptop")
	if code != 0 || ex.Route != "pushes" || ex.Action != "ask" {
		t.Fatalf("exit %d %s: %+v", code, stderr, ex)
	}
	ex, _, _ = policyTest(t, strings.Replace(in, "git push origin HEAD", "git status", 1), "--hook", "claude-code")
	if ex.Route != "other-bash" || ex.Action != "allow" {
		t.Fatalf("a harmless command: %+v", ex)
	}
	// Copilot's input names no event: --event says it, as for gatehouse hook.
	cp := `{"timestamp":1,"cwd":"/repo","toolName":"bash","toolArgs":"{\"command\":\"git push origin HEAD\"}"}`
	if ex, stderr, code = policyTest(t, cp, "--hook", "copilot", "--event", "permissionRequest"); code != 0 || ex.Route != "pushes" {
		t.Fatalf("copilot permissionRequest: exit %d %s: %+v", code, stderr, ex)
	}
	if _, stderr, code = policyTest(t, cp, "--hook", "copilot", "--event", "postToolUse"); code == 0 || !strings.Contains(stderr, "not gated") {
		t.Fatalf("copilot on an event that is not gated: exit %d %s", code, stderr)
	}
}

// TestPolicyTestSaysWhatTheHookAnswers: with --hook the dry run names
// the hook's answer. A call no route claims, with defaults.action unset,
// was shown as "allow" (the agent's flag, false from a hook, decided),
// while the hook leaves it to the client's own prompt (a reader); a
// record: false allow whose condition failed was shown as not stored,
// while the gate stores it with the error.
func TestPolicyTestSaysWhatTheHookAnswers(t *testing.T) {
	const cfg = `routes:
  - name: pushes
    match: { call: "Bash(git push:*)" }
  - name: reads
    match: { tool: Read, when: 'args.file_path.startsWith("/repo/")' }
    action: allow
    record: false
  - name: bash
    match: { tool: Bash }
    action: allow
`
	hookCall := func(tool, input string) string {
		return `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"` + tool + `","tool_use_id":"t1","cwd":"/repo","tool_input":` + input + `}`
	}
	for _, tc := range []struct {
		tool, input, route, action, hook, why string
	}{
		{"WebSearch", `{"query":"x"}`, "default", "allow", "defer", "own permission prompt"},
		{"Bash", `{"command":"git push"}`, "pushes", "ask", "ask", "waits for the person's verdict"},
		{"Bash", `{"command":"ls"}`, "bash", "allow", "allow", ""},
		{"Read", `{"file_path":"/repo/a"}`, "reads", "allow", "allow", "not stored"},
	} {
		ex, stderr, code := policyTestOf(t, cfg, hookCall(tc.tool, tc.input), "--hook", "claude-code")
		if code != 0 || ex.Route != tc.route || ex.Action != tc.action || ex.Hook != tc.hook || !strings.Contains(strings.Join(ex.Why, "\n"), tc.why) {
			t.Errorf("%s %s: exit %d %s: %+v; want route %s, action %s, hook %s, saying %q", tc.tool, tc.input, code, stderr, ex, tc.route, tc.action, tc.hook, tc.why)
		}
	}
	// Without --hook there is no hook answer.
	if ex, _, _ := policyTestOf(t, cfg, "", "--tool", "WebSearch"); ex.Hook != "" {
		t.Errorf("--tool: hook %q, want none", ex.Hook)
	}
	// A record: false allow whose condition failed is stored.
	ex, _, _ := policyTestOf(t, strings.Replace(cfg, "record: false", "record: false\n  - name: reads-too\n    match: { tool: Read }\n    action: allow\n    record: false", 1),
		hookCall("Read", `{"path":"/repo/a"}`), "--hook", "claude-code")
	if why := strings.Join(ex.Why, "\n"); ex.Route != "reads-too" || strings.Contains(why, "not stored") || !strings.Contains(why, "the call is stored") {
		t.Errorf("a record: false allow after a failed condition: %+v", ex)
	}
}

// TestPolicyTestBadInput: every mistake is named, with a non-zero exit.
func TestPolicyTestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"no tool", "", nil, "--tool (or --hook) is required"},
		{"arguments that are not JSON", "", []string{"--tool", "x", "--args", "{amount: 1}"}, "--args is not valid JSON"},
		{"a hook payload that is not JSON", "nope", []string{"--hook", "claude-code"}, "not a JSON object"},
		{"an unknown client", "{}", []string{"--hook", "vim"}, `unknown client "vim"`},
		{"both --hook and --tool", "{}", []string{"--hook", "claude-code", "--tool", "x"}, "not both"},
		{"a flag that is not a bool", "", []string{"--tool", "x", "--requires-confirmation", "maybe"}, "invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := policyTest(t, tc.stdin, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want it to say %q", code, stderr, tc.want)
			}
		})
	}
	// With tokens, the live gate routes by the token's name and never by
	// agent_id: a dry run without a token's name would route on
	// --agent-id, which showed a trusted-* allow no live call gets.
	tokens := `auth:
  api_tokens:
    - { name: bot, token: bot-token-0123456789abcdef }
routes:
  - { name: trusted, match: { agent: "trusted-*" }, action: allow }
  - { name: rest, action: ask }
`
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tool", "x", "--agent-id", "trusted-x"}, "--agent is required: the config has api_tokens"},
		{[]string{"--tool", "x", "--agent", "trusted-x"}, `--agent "trusted-x" names no token of the config's api_tokens (bot)`},
	} {
		if _, stderr, code := policyTestOf(t, tokens, "", tc.args...); code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v with tokens: exit %d, stderr %q, want it to say %q", tc.args, code, stderr, tc.want)
		}
	}
	if ex, stderr, code := policyTestOf(t, tokens, "", "--tool", "x", "--agent", "bot", "--agent-id", "trusted-x"); code != 0 || ex.Route != "rest" {
		t.Errorf("the token bot, labelled trusted-x: exit %d, route %q (%s), want rest as the server routes it", code, ex.Route, stderr)
	}
	var out, errb bytes.Buffer
	path := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(path, []byte("routes:\n  - name: r\n    match: { when: 'args.x >' }\n"), 0o600)
	if code := run([]string{"policy", "test", "--config", path, "--tool", "x"}, strings.NewReader(""), &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), `route "r"`) || !strings.Contains(errb.String(), "1:9") {
		t.Fatalf("a config whose condition does not compile: exit %d, %q", code, errb.String())
	}
}

// TestPolicyTestTokenlessRoutesOnTheLabel: on a server without tokens no
// call carries a token's name, and the gate routes on the agent_id sent
// (a hook's is "anonymous" unless it names one). The dry run routed on
// --agent instead, so --agent dev --agent-id prod-bot said allow where the
// gate denies prod-bot's deploy, and the other way round.
func TestPolicyTestTokenlessRoutesOnTheLabel(t *testing.T) {
	const cfg = `defaults:
  action: allow
routes:
  - name: prod-deploys
    match: { tool: deploy, agent: "prod-*" }
    action: deny
  - name: anonymous-hooks
    match: { tool: Bash, agent: anonymous }
`
	path := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"dev-bot", "prod-bot"}, {"prod-bot", "dev-bot"}} {
		ex, stderr, code := policyTestOf(t, cfg, "", "--tool", "deploy", "--agent", tc[0], "--agent-id", tc[1])
		body := web.SubmitBody{ToolName: "deploy", AgentID: tc[1]}
		server, err := gate.Explain(routes(c), defaults(c), body.Submission(""), time.Now()) // "": no tokens
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || ex.Route != server.Route || ex.Action != string(server.Action) {
			t.Errorf("--agent %s --agent-id %s: exit %d %s, policy test says %s/%s; the server decides %s/%s",
				tc[0], tc[1], code, stderr, ex.Route, ex.Action, server.Route, server.Action)
		}
	}
	in := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash","tool_use_id":"t1","cwd":"/repo","tool_input":{"command":"ls"}}`
	if ex, stderr, code := policyTestOf(t, cfg, in, "--hook", "claude-code"); code != 0 || ex.Route != "anonymous-hooks" || ex.Hook != "ask" {
		t.Errorf("a hook call on a server without tokens: exit %d %s: %+v; want route anonymous-hooks, as the server labels it", code, stderr, ex)
	}
}

// TestPolicyTestSaysSilenceAllows: on a route whose on_timeout is allow
// (its own, or the defaults'), the call is allowed when nobody answers in
// time, which the live hook answers as allow; the dry run said "ask" and,
// with --hook, only that the hook denies when its wait runs out.
func TestPolicyTestSaysSilenceAllows(t *testing.T) {
	const cfg = `defaults:
  action: ask
  on_timeout: allow
  timeout: 5m
routes:
  - name: deploys
    match: { tool: deploy }
    timeout: 30s
  - name: strict
    match: { tool: drop_db }
    on_timeout: deny
`
	for _, tc := range []struct{ tool, route, want string }{
		{"deploy", "deploys", "with no verdict within 30s (or the longer wait the agent asks for), the call is allowed"},
		{"other", "default", "with no verdict within 5m (or the longer wait the agent asks for), the call is allowed"},
	} {
		ex, stderr, code := policyTestOf(t, cfg, "", "--tool", tc.tool)
		if code != 0 || ex.Route != tc.route || ex.Action != "ask" || !strings.Contains(strings.Join(ex.Why, "\n"), tc.want) {
			t.Errorf("%s: exit %d %s: %+v; want route %s saying %q", tc.tool, code, stderr, ex, tc.route, tc.want)
		}
	}
	if ex, _, _ := policyTestOf(t, cfg, "", "--tool", "drop_db"); strings.Contains(strings.Join(ex.Why, "\n"), "allowed") {
		t.Errorf("a route whose silence denies: %+v", ex)
	}
}

package main

// The command hook (gatehouse hook CLIENT, run in-process) and the HTTP hook
// endpoint against a real gate.Service over a real SQLite store.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/metrics"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

const hookToken = "hook-test-token"

// hookExpiringToken authenticates as agent "expiring", which the "brief"
// route gives a 1s deadline (routes match the token's name, not a claimed id).
const hookExpiringToken = "hook-test-token-expiring"

// hookEnv is a running server: service, store and URL.
type hookEnv struct {
	svc *gate.Service
	url string
}

// hookServer starts a service with the web channel and these routes, and
// the web server in front of it, requiring hookToken.
func hookServer(t *testing.T, routes []gate.Route) *hookEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "g.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m := metrics.New()
	svc := gate.NewService(gate.Options{Store: db, Routes: routes, Observer: m, SweepInterval: 50 * time.Millisecond, SafetyInterval: 100 * time.Millisecond})
	svc.Register(web.Channel{})
	srv, err := web.New(web.Options{Service: svc, Sessions: db, Metrics: m.Handler(),
		Tokens: []config.APIToken{{Name: "agent", Token: hookToken}, {Name: "expiring", Token: hookExpiringToken}}})
	if err != nil {
		t.Fatal(err)
	}
	svc.Start(ctx)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { svc.Stop(); ts.Close() })
	return &hookEnv{svc: svc, url: ts.URL}
}

// hookRoutes gate every tool; calls from agent "expiring" get a 1s deadline.
var hookTestRoutes = []gate.Route{
	{Name: "brief", Agent: "expiring", Channels: []string{gate.WebChannel}, Timeout: time.Second},
	{Name: "all", Tool: "*", Channels: []string{gate.WebChannel}, Timeout: 10 * time.Minute},
}

// hookDecide decides the first pending request once it shows up, as an
// approver on the web page would, and reports its id.
func hookDecide(t *testing.T, svc *gate.Service, approve bool, reason string, edits json.RawMessage) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		defer close(done)
		r := hookPending(t, svc)
		if r == nil {
			return
		}
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: r.ID, Approve: approve, Actor: "web:alice",
			Via: gate.WebChannel, Reason: reason, ModifiedArgs: edits}); err != nil {
			t.Errorf("decide: %v", err)
		}
		done <- r.ID
	}()
	return done
}

func hookPending(t *testing.T, svc *gate.Service) *gate.Request {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rs, _, err := svc.List(context.Background(), gate.Filter{Status: []gate.Status{gate.StatusPending}})
		if err != nil {
			t.Errorf("list: %v", err)
			return nil
		}
		if len(rs) > 0 {
			return rs[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("no pending request appeared")
	return nil
}

// hookRun runs `gatehouse hook args...` in-process against url.
func hookRun(t *testing.T, url, token string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Setenv("GATEHOUSE_URL", url)
	t.Setenv("GATEHOUSE_TOKEN", token)
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	return hookExec(input, args...)
}

// hookExec runs `gatehouse hook args...` in-process with the environment as it is.
func hookExec(input string, args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(append([]string{"hook"}, args...), strings.NewReader(input), &out, &errb)
	return out.String(), errb.String(), code
}

var (
	hookULID     = regexp.MustCompile(`\b01[0-9A-HJKMNP-TV-Z]{24}\b`)
	hookAfter    = regexp.MustCompile(`after \d+(\.\d+)?m?s`)
	hookDialErr  = regexp.MustCompile(`at http://127\.0\.0\.1:1 \([^)]*\)`)
	hookLocalURL = regexp.MustCompile(`http://127\.0\.0\.1:\d{2,}`)
)

// hookNorm blanks what varies between runs: request ids, waits, the OS's
// words for a refused connection, test server ports.
func hookNorm(s string) string {
	s = hookULID.ReplaceAllString(s, "ID")
	s = hookAfter.ReplaceAllString(s, "after Ns")
	s = hookDialErr.ReplaceAllString(s, "at http://127.0.0.1:1 (ERR)")
	s = hookLocalURL.ReplaceAllString(s, "URL")
	return strings.TrimSpace(s)
}

// Inputs as the clients document them.
const (
	ccPre   = `{"session_id":"abc123","transcript_path":"/x.jsonl","cwd":"/proj","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"toolu_01ABC"}`
	ccPerm  = `{"session_id":"abc123","transcript_path":"/x.jsonl","cwd":"/proj","permission_mode":"default","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"permission_suggestions":[]}`
	cxPre   = `{"session_id":"th_1","transcript_path":null,"cwd":"/proj","hook_event_name":"PreToolUse","model":"gpt-5","turn_id":"t1","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"call_9"}`
	cxPerm  = `{"session_id":"th_1","cwd":"/proj","hook_event_name":"PermissionRequest","model":"gpt-5","turn_id":"t1","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}}`
	cuShell = `{"hook_event_name":"beforeShellExecution","conversation_id":"conv-1","generation_id":"gen-1","workspace_roots":["/proj"],"command":"rm -rf build","cwd":"/proj"}`
	cuMCP   = `{"hook_event_name":"beforeMCPExecution","conversation_id":"conv-1","generation_id":"gen-2","workspace_roots":["/proj"],"tool_name":"database_query","tool_input":"{\"query\":\"DROP TABLE users\"}","url":"http://localhost:3000"}`
	cuPre   = `{"hook_event_name":"preToolUse","conversation_id":"conv-1","generation_id":"gen-3","tool_name":"Shell","tool_input":{"command":"rm -rf build"},"tool_use_id":"tu_1"}`
	gmTool  = `{"session_id":"s1","transcript_path":"/t.json","cwd":"/proj","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z","tool_name":"run_shell_command","tool_input":{"command":"rm -rf build"}}`
	cpPre   = `{"timestamp":1704614600000,"cwd":"/proj","toolName":"bash","toolArgs":"{\"command\":\"rm -rf build\"}"}`
)

type hookCase struct {
	name  string
	input string
	args  []string // after "hook"
	// the expected stdout (normalized) per outcome
	approve, reject, expire, down string
}

const (
	rsApprove = `gatehouse: approved by web:alice via web after Ns`
	rsReject  = `gatehouse: rejected by web:alice via web after Ns: not now`
	rsExpire  = `gatehouse: expired: no verdict within 1s (on timeout: deny)`
	rsDown    = `gatehouse server unreachable at http://127.0.0.1:1 (ERR): start it (gatehouse serve) or fix GATEHOUSE_URL (denied: the gate fails closed)`
)

func ccPreOut(decision, reason string) string {
	return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + decision + `","permissionDecisionReason":"` + reason + `"}}`
}

func ccPermDeny(reason string) string {
	return `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"` + reason + `"},"hookEventName":"PermissionRequest"}}`
}

const ccPermAllow = `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`

func cursorOut(perm, reason string) string {
	if perm == "allow" {
		return `{"permission":"allow","user_message":"` + reason + `"}`
	}
	return `{"agent_message":"` + reason + `","permission":"deny","user_message":"` + reason + `"}`
}

var hookCases = []hookCase{
	{name: "claude-code PreToolUse", input: ccPre, args: []string{"claude-code"},
		approve: ccPreOut("allow", rsApprove), reject: ccPreOut("deny", rsReject), expire: ccPreOut("deny", rsExpire), down: ccPreOut("deny", rsDown)},
	{name: "claude-code PermissionRequest without tool_use_id", input: ccPerm, args: []string{"claude-code"},
		approve: ccPermAllow, reject: ccPermDeny(rsReject), expire: ccPermDeny(rsExpire), down: ccPermDeny(rsDown)},
	{name: "codex PreToolUse", input: cxPre, args: []string{"codex"},
		// Codex takes PreToolUse allow only with updatedInput: the input approved.
		approve: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"` + rsApprove + `","updatedInput":{"command":"rm -rf build"}}}`,
		reject:  ccPreOut("deny", rsReject), expire: ccPreOut("deny", rsExpire), down: ccPreOut("deny", rsDown)},
	{name: "codex PermissionRequest", input: cxPerm, args: []string{"codex"},
		approve: ccPermAllow, reject: ccPermDeny(rsReject), expire: ccPermDeny(rsExpire), down: ccPermDeny(rsDown)},
	{name: "cursor beforeShellExecution", input: cuShell, args: []string{"cursor"},
		approve: cursorOut("allow", rsApprove), reject: cursorOut("deny", rsReject), expire: cursorOut("deny", rsExpire), down: cursorOut("deny", rsDown)},
	{name: "cursor beforeMCPExecution", input: cuMCP, args: []string{"cursor"},
		approve: cursorOut("allow", rsApprove), reject: cursorOut("deny", rsReject), expire: cursorOut("deny", rsExpire), down: cursorOut("deny", rsDown)},
	{name: "cursor preToolUse", input: cuPre, args: []string{"cursor"},
		approve: cursorOut("allow", rsApprove), reject: cursorOut("deny", rsReject), expire: cursorOut("deny", rsExpire), down: cursorOut("deny", rsDown)},
	{name: "gemini BeforeTool", input: gmTool, args: []string{"gemini"},
		approve: `{"decision":"allow","reason":"` + rsApprove + `"}`, reject: `{"decision":"deny","reason":"` + rsReject + `"}`,
		expire: `{"decision":"deny","reason":"` + rsExpire + `"}`, down: `{"decision":"deny","reason":"` + rsDown + `"}`},
	{name: "copilot preToolUse", input: cpPre, args: []string{"copilot"},
		approve: `{"permissionDecision":"allow","permissionDecisionReason":"` + rsApprove + `"}`,
		reject:  `{"permissionDecision":"deny","permissionDecisionReason":"` + rsReject + `"}`,
		expire:  `{"permissionDecision":"deny","permissionDecisionReason":"` + rsExpire + `"}`,
		down:    `{"permissionDecision":"deny","permissionDecisionReason":"` + rsDown + `"}`},
	{name: "copilot permissionRequest", input: cpPre, args: []string{"copilot", "--event", "permissionRequest"},
		approve: `{"behavior":"allow"}`, reject: `{"behavior":"deny","message":"` + rsReject + `"}`,
		expire: `{"behavior":"deny","message":"` + rsExpire + `"}`, down: `{"behavior":"deny","message":"` + rsDown + `"}`},
}

// TestHookCommandOutcomes: for every client and event, approve, reject,
// expire and a server that is not there each print that client's exact
// decision and exit 0.
func TestHookCommandOutcomes(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	for _, tc := range hookCases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(outcome, want, stdout, stderr string, code int) {
				t.Helper()
				if code != 0 {
					t.Errorf("%s: exit %d, want 0 (stderr %q)", outcome, code, stderr)
				}
				if got := hookNorm(stdout); got != want {
					t.Errorf("%s:\n got %s\nwant %s\nstderr %s", outcome, got, want, stderr)
				}
			}
			// Each outcome is its own session, so each asks anew.
			in := func(n string) string {
				n = strings.ReplaceAll(tc.name, " ", "_") + "-" + n
				return strings.NewReplacer(`"abc123"`, `"abc123-`+n+`"`, `"th_1"`, `"th_1-`+n+`"`, `"conv-1"`, `"conv-1-`+n+`"`,
					`"s1"`, `"s1-`+n+`"`, `"cwd":"/proj"`, `"cwd":"/proj/`+n+`"`).Replace(tc.input)
			}

			decided := hookDecide(t, env.svc, true, "", nil)
			out, errOut, code := hookRun(t, env.url, hookToken, in("approve"), tc.args...)
			<-decided
			check("approve", tc.approve, out, errOut, code)

			decided = hookDecide(t, env.svc, false, "not now", nil)
			out, errOut, code = hookRun(t, env.url, hookToken, in("reject"), tc.args...)
			<-decided
			check("reject", tc.reject, out, errOut, code)

			out, errOut, code = hookRun(t, env.url, hookExpiringToken, in("expire"), tc.args...)
			check("expire", tc.expire, out, errOut, code)

			out, errOut, code = hookRun(t, "http://127.0.0.1:1", hookToken, in("down"), tc.args...)
			check("server down", tc.down, out, errOut, code)
			if !strings.Contains(errOut, "start it (gatehouse serve) or fix GATEHOUSE_URL") {
				t.Errorf("server down: stderr does not say what to do: %q", errOut)
			}
		})
	}
}

// TestHookCommandGarbage: input that is not a hook call denies: exit 2 with
// the reason on stderr where the client blocks on that (Claude Code, Codex,
// Gemini CLI), the deny JSON where it reads JSON (Cursor, Copilot).
func TestHookCommandGarbage(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	const copilotDeny = `{"behavior":"deny","message":"R","permissionDecision":"deny","permissionDecisionReason":"R"}`
	cases := []struct {
		client, input string
		code          int
		stdout        string // with the reason blanked to R
	}{
		{"claude-code", "not json", 2, ""},
		{"claude-code", `{"hook_event_name":"PreToolUse","tool_input":{}}`, 2, ""},
		{"claude-code", `{"hook_event_name":"SessionStart","tool_name":"Bash"}`, 2, ""},
		{"codex", "", 2, ""},
		{"gemini", `["BeforeTool"]`, 2, ""},
		{"cursor", "{", 0, `{"agent_message":"R","permission":"deny","user_message":"R"}`},
		{"cursor", `{"hook_event_name":"beforeShellExecution","cwd":"/"}`, 0, `{"agent_message":"R","permission":"deny","user_message":"R"}`},
		{"copilot", "garbage", 0, copilotDeny},
		{"copilot", `{"toolArgs":{}}`, 0, copilotDeny},
		// No client known: exit 2 for those that read it, and a deny in the
		// fields of those that read stdout alone (Copilot CLI).
		{"nonsense", ccPre, 2, `{"agent_message":"R","behavior":"deny","decision":"deny","message":"R","permission":"deny","permissionDecision":"deny","permissionDecisionReason":"R","reason":"R","user_message":"R"}`},
	}
	reason := regexp.MustCompile(`"gatehouse: cannot read(?:[^"\\]|\\.)*"`)
	for _, tc := range cases {
		t.Run(tc.client+" "+tc.input, func(t *testing.T) {
			out, errOut, code := hookRun(t, env.url, hookToken, tc.input, tc.client)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if got := reason.ReplaceAllString(strings.TrimSpace(out), `"R"`); got != tc.stdout {
				t.Errorf("stdout\n got %s\nwant %s", got, tc.stdout)
			}
			if tc.client != "nonsense" && !strings.Contains(errOut, "gatehouse: cannot read") {
				t.Errorf("stderr does not give the reason: %q", errOut)
			}
		})
	}
	// A report of what ran is never a deny: the tool ran already. One that
	// Gatehouse cannot read, or of a call it never saw, is answered with
	// nothing to do.
	for _, in := range []string{`{"hook_event_name":"PostToolUse","tool_name":"Bash"}`, `{"hook_event_name":"PostToolUseFailure"}`} {
		if out, errOut, code := hookRun(t, env.url, hookToken, in, "claude-code"); code != 0 || strings.TrimSpace(out) != "{}" {
			t.Errorf("%s: exit %d, %q, stderr %q", in, code, out, errOut)
		}
	}
	if rs, _, _ := env.svc.List(context.Background(), gate.Filter{}); len(rs) != 0 {
		t.Errorf("garbage created %d requests", len(rs))
	}
}

// TestHookCommandBadToken: a wrong token is a deny that says which setting to fix.
func TestHookCommandBadToken(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	out, _, code := hookRun(t, env.url, "wrong", ccPre, "claude-code")
	want := ccPreOut("deny", "gatehouse: invalid bearer token: set GATEHOUSE_TOKEN (sent as Authorization: Bearer) to one of the server's auth.api_tokens (denied: the gate fails closed)")
	if got := hookNorm(out); code != 0 || got != want {
		t.Errorf("exit %d\n got %s\nwant %s", code, got, want)
	}
}

// TestHookCommandPendingWhenWaitEnds: still pending when the hook's wait is
// up is a deny that says so and how to go on; the card stays, and the
// same call later re-attaches to it.
func TestHookCommandPendingWhenWaitEnds(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	out, _, code := hookRun(t, env.url, hookToken, ccPre, "claude-code", "--wait", "1s")
	var got struct {
		H struct{ PermissionDecision, PermissionDecisionReason string } `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got.H.PermissionDecision != "deny" ||
		!strings.Contains(got.H.PermissionDecisionReason, "still waiting for approval") {
		t.Fatalf("exit %d: %s", code, out)
	}
	decided := hookDecide(t, env.svc, true, "", nil)
	out, _, _ = hookRun(t, env.url, hookToken, ccPre, "claude-code")
	<-decided
	if hookNorm(out) != ccPreOut("allow", rsApprove) {
		t.Errorf("retry: %s", out)
	}
	if rs, _, _ := env.svc.List(context.Background(), gate.Filter{}); len(rs) != 1 {
		t.Errorf("%d requests, want the one", len(rs))
	}
}

// TestHookEdits: an approval with edited arguments reaches clients that can
// apply them as updatedInput, and is a deny naming the approved arguments
// for those that cannot.
func TestHookEdits(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	edits := json.RawMessage(`{"command":"rm -rf build/tmp"}`)
	for _, tc := range []struct{ input, client, want string }{
		{ccPre, "claude-code", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"gatehouse: approved by web:alice via web after Ns","updatedInput":{"command":"rm -rf build/tmp"}}}`},
		{strings.Replace(ccPerm, "abc123", "abc123-perm", 1), "claude-code", `{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"command":"rm -rf build/tmp"}},"hookEventName":"PermissionRequest"}}`},
		{cxPre, "codex", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"gatehouse: approved by web:alice via web after Ns","updatedInput":{"command":"rm -rf build/tmp"}}}`},
		{gmTool, "gemini", `{"decision":"deny","reason":"gatehouse: approved by web:alice via web after Ns, with changed arguments that Gemini CLI cannot apply from a hook. Run the call again with exactly these arguments: {\"command\":\"rm -rf build/tmp\"}"}`},
	} {
		t.Run(tc.client, func(t *testing.T) {
			decided := hookDecide(t, env.svc, true, "", edits)
			out, _, _ := hookRun(t, env.url, hookToken, tc.input, tc.client)
			<-decided
			if got := hookNorm(out); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestHookNoRouteDefers: a call no route claims is recorded as allowed by
// policy, with no card, and the client's own permission flow carries on:
// Cursor, which has no "no opinion", is told to ask its user (an "allow"
// skipped Cursor's prompt, an allow nobody gave).
func TestHookNoRouteDefers(t *testing.T) {
	env := hookServer(t, []gate.Route{{Name: "deploys", Tool: "mcp__deploy__*", Channels: []string{gate.WebChannel}}})
	for _, tc := range []struct{ input, client, want string }{
		{ccPre, "claude-code", `{}`}, {ccPerm, "claude-code", `{}`}, {cuShell, "cursor", `{"permission":"ask"}`},
		{gmTool, "gemini", `{}`}, {cpPre, "copilot", `{}`},
	} {
		out, errOut, code := hookRun(t, env.url, hookToken, tc.input, tc.client)
		if code != 0 || strings.TrimSpace(out) != tc.want {
			t.Errorf("%s: exit %d out %s (stderr %s), want %s", tc.client, code, out, errOut, tc.want)
		}
	}
	rs, _, _ := env.svc.List(context.Background(), gate.Filter{})
	for _, r := range rs {
		if r.Status != gate.StatusApproved || r.DecidedVia != gate.ViaPolicy {
			t.Errorf("%s: %s via %s", r.ToolName, r.Status, r.DecidedVia)
		}
		if cards, _ := env.svc.Cards(context.Background(), r.ID); len(cards) != 0 {
			t.Errorf("%s: %d cards for a call no route claims", r.ToolName, len(cards))
		}
	}
}

// TestHookOneCallOneCard: PreToolUse and PermissionRequest for one call
// (both hooks registered), a retried hook, and the http endpoint all attach
// to one request: one card, one verdict for all of them. An identical call
// made later is a new call with a card of its own.
func TestHookOneCallOneCard(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	t.Setenv("GATEHOUSE_URL", env.url)
	t.Setenv("GATEHOUSE_TOKEN", hookToken)
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i, job := range []func() string{
		func() string { o, _, _ := hookExec(ccPre, "claude-code"); return o },
		func() string { return hookPost(t, env.url+"/hooks/claude-code", hookToken, ccPre) },
		func() string { return hookPost(t, env.url+"/hooks/claude-code", hookToken, ccPerm) },
		func() string { return hookPost(t, env.url+"/hooks/claude-code", hookToken, ccPre) }, // a retry
	} {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = job() }()
		if i == 0 {
			hookPending(t, env.svc) // the others attach to it
		}
	}
	awaitWaiters(t, 4, env.url) // all four calls wait on the one request
	id := <-hookDecide(t, env.svc, true, "", nil)
	wg.Wait()
	wants := []string{ccPreOut("allow", rsApprove), ccPreOut("allow", rsApprove), ccPermAllow, ccPreOut("allow", rsApprove)}
	for i, w := range wants {
		if got := hookNorm(outs[i]); got != w {
			t.Errorf("call %d:\n got %s\nwant %s", i, got, w)
		}
	}
	ctx := context.Background()
	if rs, _, _ := env.svc.List(ctx, gate.Filter{}); len(rs) != 1 {
		t.Fatalf("%d requests, want 1", len(rs))
	}
	cards, _ := env.svc.Cards(ctx, id)
	evs, _ := env.svc.Events(ctx, id)
	decisions := 0
	for _, e := range evs {
		if e.Type == gate.EventDecided {
			decisions++
		}
	}
	if len(cards) != 1 || decisions != 1 {
		t.Errorf("%d cards and %d decisions, want 1 and 1", len(cards), decisions)
	}

	// The same command again, as a new call (new tool_use_id): a new card.
	again := strings.Replace(ccPre, "toolu_01ABC", "toolu_02DEF", 1)
	decided := hookDecide(t, env.svc, false, "not twice", nil)
	out := hookPost(t, env.url+"/hooks/claude-code", hookToken, again)
	<-decided
	if got := hookNorm(out); got != ccPreOut("deny", "gatehouse: rejected by web:alice via web after Ns: not twice") {
		t.Errorf("new call: %s", got)
	}
	if rs, _, _ := env.svc.List(ctx, gate.Filter{}); len(rs) != 2 {
		t.Errorf("%d requests, want 2", len(rs))
	}
}

// TestHookTwoCallsTwoRequests: two calls with one input and two call ids
// (the model made the same transfer twice in one turn), both waiting, each
// get a request and a card of their own: one approval let both run, since
// a pending request was shared by every identical call. Found by a second
// reader.
func TestHookTwoCallsTwoRequests(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	outs := make([]chan string, 2)
	for i, id := range []string{"toolu_01ABC", "toolu_02DEF"} {
		outs[i] = make(chan string, 1)
		body := strings.Replace(ccPre, "toolu_01ABC", id, 1)
		go func() { outs[i] <- hookPost(t, env.url+"/hooks/claude-code", hookToken, body) }()
		awaitWaiters(t, i+1, env.url)
	}
	ctx := context.Background()
	rs, _, err := env.svc.List(ctx, gate.Filter{})
	if err != nil || len(rs) != 2 {
		t.Fatalf("%d requests (%v), want one per call", len(rs), err)
	}
	byCall := map[string]string{}
	for _, r := range rs {
		byCall[r.ToolCallID] = r.ID
	}
	if _, err := env.svc.Decide(ctx, gate.Decision{RequestID: byCall["toolu_01ABC"], Approve: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	if got := hookNorm(<-outs[0]); got != ccPreOut("allow", rsApprove) {
		t.Errorf("the approved call: %s", got)
	}
	if _, err := env.svc.Decide(ctx, gate.Decision{RequestID: byCall["toolu_02DEF"], Approve: false, Actor: "web:alice", Via: gate.WebChannel,
		Reason: "once is enough"}); err != nil {
		t.Fatal(err)
	}
	if got := hookNorm(<-outs[1]); got != ccPreOut("deny", "gatehouse: rejected by web:alice via web after Ns: once is enough") {
		t.Errorf("the other call, which nobody approved: %s", got)
	}
}

// TestHookVerdictStaysInItsDirectory: a client that sends no tool_use_id
// (Claude Code's PermissionRequest, Cursor, Gemini, Copilot) reuses the
// verdict of an identical call settled a moment ago; rm -rf build approved
// in /proj was then allowed in the home directory, a call a grant treats
// as another. Found by a second reader.
func TestHookVerdictStaysInItsDirectory(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	ask := func(body string) string { return hookPost(t, env.url+"/hooks/claude-code?wait=0s", hookToken, body) }
	if out := ask(ccPerm); strings.Contains(out, "allow") {
		t.Fatalf("first call: %s", out)
	}
	<-hookDecide(t, env.svc, true, "", nil)
	if got := hookNorm(ask(ccPerm)); got != ccPermAllow {
		t.Errorf("the same call again, a moment later, takes its verdict: %s", got)
	}
	home := strings.Replace(ccPerm, `"cwd":"/proj"`, `"cwd":"/home/u"`, 1)
	if out := ask(home); strings.Contains(out, "allow") {
		t.Errorf("rm -rf build in /home/u was allowed by the approval of rm -rf build in /proj: %s", out)
	}
	if rs, _, _ := env.svc.List(context.Background(), gate.Filter{}); len(rs) != 2 {
		t.Errorf("%d requests, want 2 (the other directory's call is a request of its own)", len(rs))
	}
}

// TestHookCursorMCPVerdictStaysOnItsServer: Cursor names an MCP call's
// server only by its url or command, and the tool name is bare, so a
// query approved on a dev server was allowed on a prod server a moment
// later (and, while pending, the prod call waited on the dev call's card).
// Found by a reader.
func TestHookCursorMCPVerdictStaysOnItsServer(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	dev := `{"hook_event_name":"beforeMCPExecution","conversation_id":"conv-mcp","workspace_roots":["/proj"],"tool_name":"database_query","tool_input":"{\"query\":\"DROP TABLE users\"}","url":"http://dev-db.local:3000"}`
	prod := strings.Replace(dev, `"url":"http://dev-db.local:3000"`, `"url":"https://prod-db.example.com"`, 1)
	local := strings.Replace(dev, `"url":"http://dev-db.local:3000"`, `"command":"npx prod-db-mcp"`, 1)
	decided := hookDecide(t, env.svc, true, "", nil)
	out, _, _ := hookRun(t, env.url, hookToken, dev, "cursor")
	<-decided
	if !strings.Contains(out, `"permission":"allow"`) {
		t.Fatalf("dev call: %s", out)
	}
	for name, in := range map[string]string{"prod url": prod, "local command": local} {
		out, _, code := hookRun(t, env.url, hookToken, in, "cursor", "--wait", "1s")
		if code != 0 || !strings.Contains(out, `"permission":"deny"`) {
			t.Errorf("%s, never approved: exit %d, %s", name, code, strings.TrimSpace(out))
		}
	}
	if rs, _, _ := env.svc.List(context.Background(), gate.Filter{}); len(rs) != 3 {
		t.Errorf("%d requests, want 3 (each server's call is a request of its own)", len(rs))
	}
}

func hookPost(t *testing.T, url, token, body string) string {
	t.Helper()
	out, _ := hookPostStatus(t, url, token, strings.NewReader(body), int64(len(body)))
	return out
}

func hookPostStatus(t *testing.T, url, token string, body io.Reader, n int64) (string, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, body)
	if n > 0 {
		req.ContentLength = n
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// TestHookEndpoint: POST /hooks/{client} answers approve, reject and expire
// in the client's words, and every failure (bad token, garbage, a body over
// the limit, an unknown client) with 200 and an explicit deny, since Claude
// Code runs the tool on any other status.
func TestHookEndpoint(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	base := env.url + "/hooks/"

	decided := hookDecide(t, env.svc, true, "", nil)
	if got := hookNorm(hookPost(t, base+"claude-code?wait=590s", hookToken, ccPre)); got != ccPreOut("allow", rsApprove) {
		t.Errorf("approve: %s", got)
	}
	<-decided
	decided = hookDecide(t, env.svc, false, "not now", nil)
	if got := hookNorm(hookPost(t, base+"codex", hookToken, cxPerm)); got != ccPermDeny(rsReject) {
		t.Errorf("reject: %s", got)
	}
	<-decided
	// Expiry: the "brief" route covers agent "expiring", here the token's name.
	expEnv := hookServer(t, []gate.Route{{Name: "brief", Tool: "Bash", Channels: []string{gate.WebChannel}, Timeout: time.Second}})
	if got := hookNorm(hookPost(t, expEnv.url+"/hooks/claude-code", hookToken, ccPre)); got != ccPreOut("deny", rsExpire) {
		t.Errorf("expire: %s", got)
	}
	// Still pending when ?wait= passes.
	out := hookPost(t, base+"claude-code?wait=1s", hookToken, strings.Replace(ccPre, "rm -rf build", "make deploy", 1))
	if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "still waiting for approval") {
		t.Errorf("pending: %s", out)
	}

	big := `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", 2<<20) + `"}}`
	for _, tc := range []struct {
		name, url, token string
		body             io.Reader
		n                int64
		want             string
	}{
		{"bad token", base + "claude-code", "wrong", strings.NewReader(ccPre), -1,
			ccPreOut("deny", "gatehouse: invalid bearer token: set GATEHOUSE_TOKEN (sent as Authorization: Bearer) to one of the server's auth.api_tokens (denied: the gate fails closed)")},
		{"no token", base + "claude-code", "", strings.NewReader(ccPre), -1,
			ccPreOut("deny", `gatehouse: missing bearer token (Authorization: Bearer \u003ctoken\u003e): set GATEHOUSE_TOKEN (sent as Authorization: Bearer) to one of the server's auth.api_tokens (denied: the gate fails closed)`)},
		{"garbage", base + "claude-code", hookToken, strings.NewReader("not json"), -1,
			ccPreOut("deny", "gatehouse: cannot read the Claude Code hook input: hook input: not a JSON object: invalid character 'o' in literal null (expecting 'u') (denied: the gate fails closed)")},
		{"garbage PermissionRequest", base + "claude-code", hookToken, strings.NewReader(`{"hook_event_name":"PermissionRequest"}`), -1,
			ccPermDeny("gatehouse: cannot read the Claude Code hook input: hook input: no tool name in the claude-code PermissionRequest input (denied: the gate fails closed)")},
		{"body over the limit", base + "claude-code", hookToken, strings.NewReader(big), int64(len(big)),
			ccPreOut("deny", "gatehouse: the tool call is larger than 1 MiB, too large to show an approver (denied: the gate fails closed)")},
		{"bad wait", base + "claude-code?wait=soon", hookToken, strings.NewReader(ccPre), -1,
			ccPreOut("deny", `gatehouse: wait: \"soon\" is not a duration such as 30s (denied: the gate fails closed)`)},
		{"unknown client", base + "vscode", hookToken, strings.NewReader(ccPre), -1,
			ccPreOut("deny", `gatehouse: cannot read the vscode hook input: hook input: unknown client \"vscode\" (one of claude-code, codex, cursor, gemini, copilot) (denied: the gate fails closed)`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, status := hookPostStatus(t, tc.url, tc.token, tc.body, tc.n)
			if status != http.StatusOK || strings.TrimSpace(out) != tc.want {
				t.Errorf("%d\n got %s\nwant %s", status, out, tc.want)
			}
		})
	}
}

// TestHookRepeatedCallOneRoundTrip: the same command run again and again
// in one session (each a new call, with its own tool_use_id) costs the
// command hook one HTTP exchange each, however many identical calls came
// before: the server walks the call's keys, reading, not the hook over
// the network. Each call still gets a request of its own.
func TestHookRepeatedCallOneRoundTrip(t *testing.T) {
	env := hookServer(t, []gate.Route{{Name: "tests", Tool: "Bash", Action: policy.Allow}})
	target, _ := url.Parse(env.url)
	var exchanges atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()
	const runs = 12
	for i := range runs {
		in := strings.Replace(ccPre, "toolu_01ABC", fmt.Sprintf("toolu_%02d", i), 1)
		before := exchanges.Load()
		out, stderr, code := hookRun(t, counting.URL, hookToken, in, "claude-code")
		if code != 0 || !strings.Contains(out, `"permissionDecision":"allow"`) {
			t.Fatalf("run %d: exit %d %s %s", i, code, out, stderr)
		}
		if n := exchanges.Load() - before; n != 1 {
			t.Fatalf("run %d made %d HTTP exchanges, want 1", i, n)
		}
	}
	rs, _, err := env.svc.List(context.Background(), gate.Filter{})
	if err != nil || len(rs) != runs {
		t.Fatalf("%d requests (%v), want one per call: %d", len(rs), err, runs)
	}
}

// TestHookNotAGatehouseServer: a GATEHOUSE_URL that answers 200 but is not
// Gatehouse (a wrong port, a captive proxy) is a deny that says so, not
// whatever its body says.
func TestHookNotAGatehouseServer(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)
	}))
	defer other.Close()
	out, _, code := hookRun(t, other.URL, hookToken, ccPre, "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "is not a Gatehouse hook answer") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestHookAnswerThatDoesNotRead: an answer with Gatehouse's header whose
// body the client could not read as a verdict (empty, an HTML page, JSON
// cut short, as a proxy on the way may leave it) is a deny that says so:
// printed as it came, it would have let the call through.
func TestHookAnswerThatDoesNotRead(t *testing.T) {
	for name, body := range map[string]string{
		"empty":         "",
		"html":          "<html>502 Bad Gateway</html>",
		"cut short":     `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"`,
		"not an object": `"allow"`,
	} {
		t.Run(name, func(t *testing.T) {
			bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Gatehouse-Status", "approved")
				_, _ = io.WriteString(w, body)
			}))
			defer bad.Close()
			out, _, code := hookRun(t, bad.URL, hookToken, ccPre, "claude-code")
			if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "is not a JSON object") {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
}

var hookVerdict = regexp.MustCompile(`"(?:permissionDecision|behavior|permission|decision)":"(allow|deny)"`)

// TestHookPolicyEveryClient: the policy decides every client's shell call
// with no person asked, through the command hook: a deny route's message
// reaches the agent in its client's words, and an allow route allows.
func TestHookPolicyEveryClient(t *testing.T) {
	env := hookServer(t, []gate.Route{
		{Name: "no-rm", Calls: []string{"Bash(rm -rf:*)"}, Action: policy.Deny, Message: "deleting trees is not allowed here"},
		{Name: "shell", Calls: []string{"Bash(ls:*)"}, Action: policy.Allow},
	})
	for _, hc := range hookCases {
		if hc.input == cuMCP {
			continue // not a shell command
		}
		t.Run(hc.name, func(t *testing.T) {
			out, stderr, code := hookRun(t, env.url, hookToken, hc.input, hc.args...)
			m := hookVerdict.FindStringSubmatch(out)
			if code != 0 || m == nil || m[1] != "deny" || !strings.Contains(out, "denied by route no-rm: deleting trees is not allowed here") {
				t.Errorf("rm -rf build: exit %d %s %s", code, out, stderr)
			}
			out, stderr, code = hookRun(t, env.url, hookToken, strings.ReplaceAll(hc.input, "rm -rf build", "ls -la"), hc.args...)
			if m := hookVerdict.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "allow" {
				t.Errorf("ls -la: exit %d %s %s", code, out, stderr)
			}
		})
	}
	if rs, _, _ := env.svc.List(context.Background(), gate.Filter{Status: []gate.Status{gate.StatusPending}}); len(rs) != 0 {
		t.Errorf("a person was asked: %d pending", len(rs))
	}
}

// TestHookFailureDenyIsShapedForItsEvent: the server failed a call it had
// not parsed (a wrong token, a body over the limit) with a deny in
// PreToolUse's shape, and the command hook printed it as it came, so a
// PermissionRequest of Claude Code or Codex, or a permissionRequest of
// Copilot, got a deny in fields it does not read, and the tool ran. Found
// by a reader.
func TestHookFailureDenyIsShapedForItsEvent(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	huge := func(in string) string {
		return strings.Replace(in, `"rm -rf build`, `"rm -rf build `+strings.Repeat("x", 2<<20), 1)
	}
	for _, tc := range []struct {
		name, input string
		args        []string
		want        string
	}{
		{"claude-code PermissionRequest", ccPerm, []string{"claude-code"}, `"hookEventName":"PermissionRequest"`},
		{"codex PermissionRequest", cxPerm, []string{"codex"}, `"hookEventName":"PermissionRequest"`},
		{"copilot permissionRequest", cpPre, []string{"copilot", "--event", "permissionRequest"}, `"behavior":"deny"`},
		{"claude-code PreToolUse", ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
	} {
		t.Run(tc.name+", bad token", func(t *testing.T) {
			out, _, code := hookRun(t, env.url, "wrong", tc.input, tc.args...)
			// The server shaped it: the command hook did not have to.
			if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "GATEHOUSE_TOKEN") || strings.Contains(out, "shape of another event") {
				t.Errorf("exit %d, stdout %s\nwant a deny about the token containing %s", code, strings.TrimSpace(out), tc.want)
			}
		})
		t.Run(tc.name+", over the limit", func(t *testing.T) {
			out, _, code := hookRun(t, env.url, hookToken, huge(tc.input), tc.args...)
			if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "larger than 1 MiB") || strings.Contains(out, "shape of another event") {
				t.Errorf("exit %d, stdout %s\nwant a deny about the size containing %s", code, strings.TrimSpace(out), tc.want)
			}
		})
	}
}

// TestHookEndpointFailureDenyIsShapedForItsEvent: POST /hooks/{client}
// (Claude Code's and Codex's http hooks) answered a wrong token or a body
// over the limit with a deny in PreToolUse's shape whatever the event, one
// a PermissionRequest hook does not read. Found by a reader.
func TestHookEndpointFailureDenyIsShapedForItsEvent(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	const token = "gatehouse: invalid bearer token: set GATEHOUSE_TOKEN (sent as Authorization: Bearer) to one of the server's auth.api_tokens (denied: the gate fails closed)"
	const size = "gatehouse: the tool call is larger than 1 MiB, too large to show an approver (denied: the gate fails closed)"
	huge := func(in string) string {
		return strings.Replace(in, `"rm -rf build`, `"rm -rf build `+strings.Repeat("x", 2<<20), 1)
	}
	for _, tc := range []struct {
		name, url, token, body, want string
	}{
		{"claude-code PermissionRequest, bad token", "/hooks/claude-code", "wrong", ccPerm, ccPermDeny(token)},
		{"claude-code PermissionRequest, over the limit", "/hooks/claude-code", hookToken, huge(ccPerm), ccPermDeny(size)},
		{"codex PermissionRequest, bad token", "/hooks/codex", "wrong", cxPerm, ccPermDeny(token)},
		{"codex PermissionRequest, over the limit", "/hooks/codex", hookToken, huge(cxPerm), ccPermDeny(size)},
		{"copilot permissionRequest, bad token", "/hooks/copilot?event=permissionRequest", "wrong", cpPre, `{"behavior":"deny","message":"` + token + `"}`},
		{"copilot permissionRequest, over the limit", "/hooks/copilot?event=permissionRequest", hookToken, huge(cpPre), `{"behavior":"deny","message":"` + size + `"}`},
		{"claude-code PreToolUse, bad token", "/hooks/claude-code", "wrong", ccPre, ccPreOut("deny", token)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, status := hookPostStatus(t, env.url+tc.url, tc.token, strings.NewReader(tc.body), int64(len(tc.body)))
			if status != http.StatusOK || strings.TrimSpace(out) != tc.want {
				t.Errorf("%d\n got %s\nwant %s", status, out, tc.want)
			}
		})
	}
}

// TestHookCommandAnswerForAnotherEvent: the command hook printed whatever
// the server answered, so a server that failed a PermissionRequest with a
// deny in PreToolUse's shape (an older one, or one that could not read the
// event) had it printed, and the client, reading no decision, ran the
// tool. The hook now answers its own deny in the event's shape. Found by a
// reader.
func TestHookCommandAnswerForAnotherEvent(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		args        []string
		answer      string
		want        string
	}{
		{"claude-code PermissionRequest", ccPerm, []string{"claude-code"},
			ccPreOut("deny", "gatehouse: invalid bearer token"), `"hookEventName":"PermissionRequest"`},
		{"claude-code PreToolUse", ccPre, []string{"claude-code"},
			ccPermDeny("gatehouse: invalid bearer token"), `"hookEventName":"PreToolUse"`},
		{"copilot permissionRequest", cpPre, []string{"copilot", "--event", "permissionRequest"},
			`{"permissionDecision":"deny","permissionDecisionReason":"gatehouse: invalid bearer token"}`, `"behavior":"deny"`},
		{"copilot preToolUse", cpPre, []string{"copilot"},
			`{"behavior":"deny","message":"gatehouse: invalid bearer token"}`, `"permissionDecision":"deny"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Gatehouse-Status", "error")
				_, _ = io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			out, _, code := hookRun(t, srv.URL, hookToken, tc.input, tc.args...)
			if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "invalid bearer token") {
				t.Errorf("exit %d, stdout %s\nwant a deny containing %s that passes on the server's reason", code, strings.TrimSpace(out), tc.want)
			}
		})
	}
}

// TestHookCommandStatusThatAllowsNothing: an answer whose status allows
// nothing (error, rejected, noted for a call to gate) and whose body does
// not deny, from a server of another version or a proxy that rewrote the
// body, exited 0 with that body, and the client ran the tool. It is this
// event's deny now; a deny under such a status still passes through.
// Found by a tenth reader.
func TestHookCommandStatusThatAllowsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, status, body, input string
		args                      []string
		want                      string
	}{
		{"claude-code error {}", "error", `{}`, ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
		{"claude-code rejected {}", "rejected", `{}`, ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
		{"claude-code rejected allow", "rejected", ccPreOut("allow", "ok"), ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
		{"claude-code noted", "noted", `{}`, ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
		{"claude-code error text", "error", `{"error":"database is locked"}`, ccPre, []string{"claude-code"}, `"permissionDecision":"deny"`},
		{"cursor error {}", "error", `{}`, cuShell, []string{"cursor"}, `"permission":"deny"`},
		{"copilot error {}", "error", `{}`, cpPre, []string{"copilot"}, `"permissionDecision":"deny"`},
		{"claude-code rejected deny", "rejected", ccPreOut("deny", "Rejected by alice: not now"), ccPre, []string{"claude-code"}, "Rejected by alice: not now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Gatehouse-Status", tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			out, _, code := hookRun(t, srv.URL, hookToken, tc.input, tc.args...)
			if code != 0 || !strings.Contains(out, tc.want) || strings.Contains(out, `":"allow"`) {
				t.Errorf("exit %d, stdout %s; want a deny with %s", code, strings.TrimSpace(out), tc.want)
			}
		})
	}
}

package main

// What ran, end to end with the real binary: Claude Code's PostToolUse and
// PostToolUseFailure, through `gatehouse hook claude-code` and through the
// http hook, add tool_ran and tool_failed to the approved request's trail,
// cut and redacted; a report of a call Gatehouse never saw writes nothing.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

const whatRanKey = "AKIAIOSFODNN7EXAMPLE"

const whatRanConfig = hookE2ERoutes + `redact:
  keys: ["*token*"]
  patterns: ["AKIA[0-9A-Z]{16}"]
`

func whatRanPayload(event, useID, command, tail string) string {
	return fmt.Sprintf(`{"session_id":"ran-session","transcript_path":"/t.jsonl","cwd":"/srv/app","permission_mode":"default",`+
		`"hook_event_name":%q,"tool_name":"Bash","tool_input":{"command":%q},"tool_use_id":%q%s}`, event, command, useID, tail)
}

func outcomes(evs []slackEvent) []slackEvent {
	var out []slackEvent
	for _, e := range evs {
		if e.Type == "tool_ran" || e.Type == "tool_failed" {
			out = append(out, e)
		}
	}
	return out
}

// runHook runs `gatehouse hook claude-code` to the end with payload.
func runHook(t *testing.T, base, payload string) (string, string, int) {
	t.Helper()
	cmd := cli(base, "hook", "claude-code")
	cmd.Stdin = strings.NewReader(payload)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(stdout.String()), stderr.String(), code
}

// postHook POSTs a payload to the http hook with the agent's token.
func postHook(t *testing.T, base, payload, token string) (int, string) {
	t.Helper()
	code, body, err := tryPostHook(base, payload, token)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// tryPostHook is postHook for a goroutine: an error when no answer came.
func tryPostHook(base, payload, token string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/claude-code?wait=590s", strings.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestWhatRanE2E(t *testing.T) {
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, 0, whatRanConfig)
	srv := startServer(t, cfg)
	alice := webLogin(t, srv.URL, "alice")

	// A call approved on the web page, through the command hook.
	command := "aws s3 ls --key " + whatRanKey
	done, stderr := hookE2EStart(t, srv.URL, whatRanPayload("PreToolUse", "toolu_RAN1", command, ""))
	first := waitPending(t, srv.URL)
	if code := webDecide(t, alice, srv.URL, first.ID, "approve", "fine"); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	if out, state := hookE2EResult(t, done, stderr); state != "exit status 0" || !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Fatalf("pre hook: %s %s", state, out)
	}

	// Its PostToolUse: a long output with a secret in it.
	long := strings.Repeat("é", 3000)
	response := fmt.Sprintf(`,"tool_response":{"stdout":"listed with %s %s","stderr":"","interrupted":false,"api_token":"tok-live"}`, whatRanKey, long)
	out, errOut, code := runHook(t, srv.URL, whatRanPayload("PostToolUse", "toolu_RAN1", command, response))
	if out != "{}" || code != 0 {
		t.Fatalf("post hook: exit %d, %q, stderr %q", code, out, errOut)
	}
	ran := outcomes(slackEvents(t, srv.URL, first.ID))
	if len(ran) != 1 || ran[0].Type != "tool_ran" || ran[0].Actor != "agent:build-agent" {
		t.Fatalf("outcomes %+v", ran)
	}
	d := ran[0].Detail
	if len(d) > 2048 || !utf8.ValidString(d) || !json.Valid([]byte(d)) || !strings.Contains(d, "…") {
		t.Errorf("outcome not shrunk to 2 KB of JSON: %d bytes, ends %q", len(d), d[max(len(d)-8, 0):])
	}
	if strings.Contains(d, "AKIA") || strings.Contains(d, "tok-live") || !strings.Contains(d, "listed with [redacted]") {
		t.Errorf("outcome not redacted: %.200s", d)
	}
	// A second report of the same call changes nothing.
	if out, _, code := runHook(t, srv.URL, whatRanPayload("PostToolUse", "toolu_RAN1", command, response)); out != "{}" || code != 0 {
		t.Fatalf("repeated report: %d %q", code, out)
	}
	if n := len(outcomes(slackEvents(t, srv.URL, first.ID))); n != 1 {
		t.Errorf("%d outcomes after a repeated report", n)
	}

	// A failure, through the http hook.
	second := make(chan int, 1)
	go func() {
		code, _, _ := tryPostHook(srv.URL, whatRanPayload("PreToolUse", "toolu_RAN2", "make deploy", ""), e2eToken)
		second <- code
	}()
	pending := waitPending(t, srv.URL)
	if code := webDecide(t, alice, srv.URL, pending.ID, "approve", ""); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	if code := <-second; code != http.StatusOK {
		t.Fatalf("pre hook over http: %d", code)
	}
	code, body := postHook(t, srv.URL, whatRanPayload("PostToolUseFailure", "toolu_RAN2", "make deploy",
		`,"error":"make: *** [deploy] Error 2 (key `+whatRanKey+`)","is_interrupt":false`), e2eToken)
	if code != http.StatusOK || body != "{}" {
		t.Fatalf("failure report: %d %s", code, body)
	}
	failed := outcomes(slackEvents(t, srv.URL, pending.ID))
	if len(failed) != 1 || failed[0].Type != "tool_failed" || failed[0].Detail != "make: *** [deploy] Error 2 (key [redacted])" {
		t.Fatalf("outcomes %+v", failed)
	}

	// Reports of calls Gatehouse never saw, or with a wrong token, are
	// answered harmlessly and write nothing.
	for _, p := range []struct{ payload, token string }{
		{whatRanPayload("PostToolUse", "toolu_UNKNOWN", "ls", `,"tool_response":{"stdout":"x"}`), e2eToken},
		{whatRanPayload("PostToolUse", "toolu_RAN2", "make deploy", `,"tool_response":{"stdout":"x"}`), "wrong-token"},
		{`{"hook_event_name":"PostToolUse","tool_response":"no tool name"}`, e2eToken},
	} {
		if code, body := postHook(t, srv.URL, p.payload, p.token); code != http.StatusOK || body != "{}" {
			t.Errorf("report %.60s: %d %s", p.payload, code, body)
		}
	}
	if out, _, code := runHook(t, srv.URL, whatRanPayload("PostToolUse", "toolu_NEVER", "ls", `,"tool_response":"x"`)); out != "{}" || code != 0 {
		t.Errorf("unknown call through the command hook: %d %q", code, out)
	}
	total := 0
	for _, r := range listAll(t, srv.URL) {
		total += len(outcomes(slackEvents(t, srv.URL, r.ID)))
	}
	if total != 2 {
		t.Errorf("%d outcomes in all, want 2", total)
	}

	// A rejection whose reason holds the secret: the agent hears it whole
	// (it is the agent's own), the server's log line of the deny does not.
	third := make(chan string, 1)
	go func() {
		_, body, err := tryPostHook(srv.URL, whatRanPayload("PreToolUse", "toolu_RAN3", "make release", ""), e2eToken)
		if err != nil {
			body = err.Error()
		}
		third <- body
	}()
	rejected := waitPending(t, srv.URL)
	if code := webDecide(t, alice, srv.URL, rejected.ID, "reject", "never paste "+whatRanKey); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	if answer := <-third; !strings.Contains(answer, `"permissionDecision":"deny"`) {
		t.Fatalf("the rejection reached the agent as %s", answer)
	}
	srv.awaitLog(t, "hook call denied")

	// The request's page shows what ran; nothing shows the secret, nor
	// does the server's log; the sealed chain verifies.
	page := get(t, alice, srv.URL+"/approvals/"+first.ID)
	if !strings.Contains(page, "What ran") || !strings.Contains(page, "listed with [redacted]") || strings.Contains(page, whatRanKey) {
		t.Errorf("the detail page does not show what ran, redacted")
	}
	if log := srv.Log(); strings.Contains(log, whatRanKey) || !strings.Contains(log, "never paste [redacted]") {
		t.Errorf("the server's log is not redacted:\n%s", log)
	}
	awaitSealed(t, srv.URL, first.ID)
	if code, out := verifyCmd(t, cfg); code != 0 {
		t.Errorf("audit verify: %d\n%s", code, out)
	}
}

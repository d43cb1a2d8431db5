package main

// End to end with the real binary (built by TestMain in e2e_test.go): a
// Claude Code PreToolUse payload through `gatehouse hook claude-code` and
// through the http hook endpoint, decided on the web page.

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

const hookE2ERoutes = `routes:
  - name: shell
    match: { tool: "Bash" }
`

// hookE2EPayload is what Claude Code sends a PreToolUse hook.
const hookE2EPayload = `{"session_id":"e2e-session","transcript_path":"/home/u/.claude/projects/p/e2e.jsonl","cwd":"/srv/app","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"kubectl delete pod api-0","description":"Restart the api pod"},"tool_use_id":"toolu_01E2E"}`

var hookE2EAfter = regexp.MustCompile(`after \d+s`)

func hookE2EWant() string {
	return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"gatehouse: approved by web:alice via web after Ns: looks fine"}}`
}

// hookE2EStart runs `gatehouse hook claude-code` with the payload on stdin
// and returns a channel that yields its stdout and exit code when it ends.
func hookE2EStart(t *testing.T, base, payload string) (<-chan [2]string, *bytes.Buffer) {
	t.Helper()
	cmd := cli(base, "hook", "claude-code")
	cmd.Stdin = strings.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan [2]string, 1)
	go func() {
		_ = cmd.Wait()
		done <- [2]string{stdout.String(), strings.TrimSpace(cmd.ProcessState.String())}
	}()
	return done, &stderr
}

// hookE2EStillWaiting fails the test if the hook has already answered.
func hookE2EStillWaiting(t *testing.T, done <-chan [2]string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("the hook answered before any verdict: %s (%s)", r[0], r[1])
	case <-time.After(500 * time.Millisecond):
	}
}

func hookE2EResult(t *testing.T, done <-chan [2]string, stderr *bytes.Buffer) (string, string) {
	t.Helper()
	select {
	case r := <-done:
		return hookE2EAfter.ReplaceAllString(strings.TrimSpace(r[0]), "after Ns"), r[1]
	case <-time.After(30 * time.Second):
		t.Fatalf("the hook did not answer after the verdict; stderr:\n%s", stderr.String())
	}
	return "", ""
}

// TestHookCommandE2E: the command hook blocks until an approver decides on
// the web page, then prints Claude Code's allow JSON and exits 0.
func TestHookCommandE2E(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, hookE2ERoutes))

	done, stderr := hookE2EStart(t, srv.URL, hookE2EPayload)
	pending := waitPending(t, srv.URL)
	if pending.ToolName != "Bash" {
		t.Fatalf("pending request is for %q", pending.ToolName)
	}
	hookE2EStillWaiting(t, done)

	alice := webLogin(t, srv.URL, "alice")
	if code := webDecide(t, alice, srv.URL, pending.ID, "approve", "looks fine"); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	out, state := hookE2EResult(t, done, stderr)
	if out != hookE2EWant() || state != "exit status 0" {
		t.Errorf("%s\n got %s\nwant %s\nstderr %s", state, out, hookE2EWant(), stderr)
	}
}

// TestHookCommandE2ERestart: the server is killed while the hook waits;
// the hook re-attaches to the same request once it is back, and the
// verdict given after the restart reaches it. One request, one card.
func TestHookCommandE2ERestart(t *testing.T) {
	dir := t.TempDir()
	cfg := e2eConfig(t, dir, freePort(t), hookE2ERoutes)
	srv := startServer(t, cfg)

	done, stderr := hookE2EStart(t, srv.URL, hookE2EPayload)
	pending := waitPending(t, srv.URL)
	srv.Kill()
	hookE2EStillWaiting(t, done)
	srv = startServer(t, cfg)

	alice := webLogin(t, srv.URL, "alice")
	if code := webDecide(t, alice, srv.URL, pending.ID, "approve", "looks fine"); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	out, state := hookE2EResult(t, done, stderr)
	if out != hookE2EWant() || state != "exit status 0" {
		t.Errorf("%s\n got %s\nwant %s\nstderr %s", state, out, hookE2EWant(), stderr)
	}
	if all := listAll(t, srv.URL); len(all) != 1 {
		t.Errorf("%d requests after the restart, want 1", len(all))
	}
}

// TestHookHTTPE2E: the same through Claude Code's http hook: POST
// /hooks/claude-code with the bearer token holds until the web verdict.
func TestHookHTTPE2E(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, hookE2ERoutes))

	done := make(chan [2]string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/claude-code?wait=590s", strings.NewReader(hookE2EPayload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e2eToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- [2]string{"", err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- [2]string{string(b), resp.Status}
	}()
	pending := waitPending(t, srv.URL)
	hookE2EStillWaiting(t, done)

	alice := webLogin(t, srv.URL, "alice")
	if code := webDecide(t, alice, srv.URL, pending.ID, "approve", "looks fine"); code != http.StatusSeeOther {
		t.Fatalf("web decide: %d", code)
	}
	out, status := hookE2EResult(t, done, &bytes.Buffer{})
	if out != hookE2EWant() || status != "200 OK" {
		t.Errorf("%s\n got %s\nwant %s", status, out, hookE2EWant())
	}

	// A wrong token still answers 200, with a deny Claude Code obeys.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/claude-code", strings.NewReader(hookE2EPayload))
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"permissionDecision":"deny"`) {
		t.Errorf("wrong token: %d %s", resp.StatusCode, b)
	}
}

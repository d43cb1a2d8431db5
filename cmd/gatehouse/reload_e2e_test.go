package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// reloadConfig writes a config whose policy and credentials a test
// changes between reloads: the tokens (name: token), the users (name:
// role) and the routes, verbatim.
func reloadConfig(t *testing.T, path string, port int, tokens, users map[string]string, routes string) {
	t.Helper()
	hash, err := e2eHash()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\ndatabase:\n  driver: sqlite\n  dsn: %s\nauth:\n  api_tokens:\n", port, filepath.Join(filepath.Dir(path), "gatehouse.db"))
	for name, tok := range tokens {
		fmt.Fprintf(&b, "    - {name: %s, token: %s}\n", name, tok)
	}
	b.WriteString("  users:\n")
	for name, role := range users {
		fmt.Fprintf(&b, "    - {name: %s, role: %s, password_bcrypt: %q}\n", name, role, hash)
	}
	b.WriteString(routes)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// e2eHash is e2ePassword's bcrypt hash, one for every config written: a
// new hash (a new salt) would be a changed password, which ends the
// sessions made with the old one.
var e2eHash = sync.OnceValues(func() ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(e2ePassword), bcrypt.MinCost)
})

// hup sends SIGHUP and waits for the server to log the n-th outcome of a
// reload (want is "config reloaded" or "config reload refused").
func (s *server) hup(t *testing.T, want string) {
	t.Helper()
	n := strings.Count(s.Log(), want)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.Log(), want) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("no new %q after SIGHUP:\n%s", want, s.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// submitAs asks the gate with a token and returns the HTTP status and the
// request's status.
func submitAs(t *testing.T, base, token, tool, args string) (int, string) {
	t.Helper()
	code, r := submitFor(t, base, token, tool, args)
	return code, r.Status
}

func submitFor(t *testing.T, base, token, tool, args string) (int, apiRequest) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/approvals",
		strings.NewReader(fmt.Sprintf(`{"tool_name":%q,"tool_args":%s,"requires_confirmation":false}`, tool, args)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out apiRequest
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestReloadOnSIGHUP: SIGHUP puts new routes, defaults, tokens and users in
// force without a restart; a config that does not validate, or that needs
// a channel the server did not start with, is refused, logged, and the
// running config stays; keys read only at start are named as waiting for
// a restart.
func TestReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	path, port := filepath.Join(dir, "gatehouse.yaml"), freePort(t)
	const first, second = "reload-first-0123456789", "reload-second-0123456789"
	threshold := func(n int) string {
		return fmt.Sprintf(`routes:
  - name: big-payments
    match: { tool: "pay", when: 'double(args.amount) > %d.0' }
  - name: small-payments
    match: { tool: "pay" }
    action: allow
`, n)
	}
	reloadConfig(t, path, port, map[string]string{"first": first}, map[string]string{"alice": "approver", "bob": "approver"}, threshold(50000))
	s := startServer(t, path)
	bob := webLogin(t, s.URL, "bob")

	if code, st := submitAs(t, s.URL, first, "pay", `{"amount":20000}`); code != 201 || st != "approved" {
		t.Fatalf("¥20,000 under a ¥50,000 threshold: %d %s", code, st)
	}
	if code, _ := submitAs(t, s.URL, second, "pay", `{"amount":1}`); code != 401 {
		t.Fatalf("a token not yet configured: %d", code)
	}

	// New threshold, a second token, bob demoted to auditor, alice removed.
	reloadConfig(t, path, port, map[string]string{"first": first, "second": second}, map[string]string{"bob": "auditor"}, threshold(10000))
	s.hup(t, "config reloaded")
	code, pending := submitFor(t, s.URL, first, "pay", `{"amount":20000}`)
	if code != 201 || pending.Status != "pending" {
		t.Fatalf("¥20,000 over the reloaded ¥10,000 threshold: %d %+v", code, pending)
	}
	if code, st := submitAs(t, s.URL, second, "pay", `{"amount":5000}`); code != 201 || st != "approved" {
		t.Fatalf("the reloaded second token: %d %s", code, st)
	}
	if code := webDecide(t, bob, s.URL, pending.ID, "approve", ""); code != http.StatusForbidden {
		t.Fatalf("bob, demoted to auditor by the reload, decided with his old session: %d", code)
	}
	if _, err := tryLogin(s.URL, "alice", nil); err == nil {
		t.Fatal("alice, removed by the reload, still logs in")
	}

	// A condition that does not compile: refused, named, the running config stays.
	reloadConfig(t, path, port, map[string]string{"first": first}, map[string]string{"bob": "auditor"},
		"routes:\n  - name: broken\n    match: { tool: pay, when: 'args.amount >' }\n")
	s.hup(t, "config reload refused")
	if !strings.Contains(s.Log(), `route \"broken\": ERROR: 1:14`) {
		t.Fatalf("the refusal does not name the route:\n%s", s.Log())
	}
	if code, st := submitAs(t, s.URL, second, "pay", `{"amount":5000}`); code != 201 || st != "approved" {
		t.Fatalf("after a refused reload the running config must stay (second token, ¥10,000 threshold): %d %s", code, st)
	}

	// A route on a channel the server did not start with: refused.
	reloadConfig(t, path, port, map[string]string{"first": first}, map[string]string{"bob": "auditor"}, `channels:
  - name: ops-slack
    type: slack
    bot_token: xoxb-1
    signing_secret: s3cret
    channel_id: C123
routes:
  - name: pay
    match: { tool: pay }
    channels: [ops-slack]
`)
	s.hup(t, "config reload refused")
	if !strings.Contains(s.Log(), "did not start with") {
		t.Fatalf("the refusal does not say why:\n%s", s.Log())
	}
	if code, _ := submitAs(t, s.URL, second, "pay", `{"amount":1}`); code != 201 {
		t.Fatalf("the second token went with a refused reload: %d", code)
	}

	// A key read only at start: applied routes, and a warning naming the key.
	reloadConfig(t, path, port, map[string]string{"first": first}, map[string]string{"bob": "auditor"}, "log:\n  level: warn\nroutes:\n  - name: deny-pay\n    match: { tool: pay }\n    action: deny\n")
	s.hup(t, "config reloaded")
	if !strings.Contains(s.Log(), "keys=log") {
		t.Fatalf("the change to log was not named as waiting for a restart:\n%s", s.Log())
	}
	if code, st := submitAs(t, s.URL, first, "pay", `{"amount":1}`); code != 201 || st != "rejected" {
		t.Fatalf("the reloaded deny route: %d %s", code, st)
	}
	if code, _ := submitAs(t, s.URL, second, "pay", `{"amount":1}`); code != 401 {
		t.Fatalf("a token removed by the reload still works: %d", code)
	}
}

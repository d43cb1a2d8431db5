package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
	"github.com/gatehouse-dev/gatehouse/web"
)

// A reload cannot open the agent API: listen is read at start only, so a
// file that drops auth.api_tokens and moves listen to loopback (valid on
// its own) is refused while the server still listens beyond loopback,
// and the tokens stay required; also after an earlier reload that moved
// listen alone, which is not in force either.
func TestReloadKeepsTokensWhileListeningBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	const tok = "reload-token-0123456789abcdef"
	running, err := config.Parse([]byte("listen: 0.0.0.0:8080\nauth:\n  api_tokens:\n    - {name: agent, token: "+tok+"}\n"), dir, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	_, srv, rl := newReloader(t, path, running)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:8080\nauth:\n  api_tokens:\n    - {name: agent, token: "+tok+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload(); err != nil {
		t.Fatalf("a reload moving listen alone: %v", err)
	}
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload(); err == nil || !strings.Contains(err.Error(), "auth.api_tokens") || !strings.Contains(err.Error(), "0.0.0.0:8080") {
		t.Fatalf("a reload dropping every token on a server listening on 0.0.0.0 was not refused as such: %v", err)
	}
	// Host: localhost is what a server without tokens lets in; anyone can send it.
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/api/v1/approvals", nil)
	req.Host = "localhost"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token after the refused reload: %d, want 401", resp.StatusCode)
	}
}

// A start-only key is named at every reload while the file's value differs
// from the one the server started with, and no longer once it is back:
// what a reload compares with is the config in force, the one the server
// started with, not the previous reload's.
func TestReloadNamesStartOnlyKeysUntilARestart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	const start = "log:\n  level: info\n"
	started, err := config.Parse([]byte(start), dir, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.SQLite(t)
	svc := gate.NewService(gate.Options{Store: db})
	srv, err := web.New(web.Options{Service: svc, Sessions: db})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	rl := &reloader{path: path, started: started, channels: []string{gate.WebChannel}, svc: svc, srv: srv, log: log}

	for i, step := range []struct {
		file  string
		named bool
	}{
		{start, false},                   // as started
		{"log:\n  level: debug\n", true}, // changed: not in force until a restart
		{"log:\n  level: debug\n", true}, // unchanged since the last reload, still not in force
		{start, false},                   // back to what is in force
	} {
		if err := os.WriteFile(path, []byte(step.file), 0o600); err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		if err := rl.reload(); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		named := strings.Contains(logs.String(), "take effect at the next restart") && strings.Contains(logs.String(), "keys=log")
		if named != step.named {
			t.Errorf("reload %d (%q): log named as waiting for a restart: %v, want %v\n%s", i, step.file, named, step.named, logs.String())
		}
	}
}

// TestReloadJudgesPasswordNamesWithSingleSignOnInForce: single sign-on is
// read at start only, so a reload whose file drops auth.oidc still runs
// with it on. The file's password users were judged without it, so one
// named with @ went in force; removed later, she was taken for a single
// sign-on user (web.Server.MayApprove) and her grants kept approving.
// Found by a second reader.
func TestReloadJudgesPasswordNamesWithSingleSignOnInForce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	const sso = "public_url: https://gatehouse.example.com\nauth:\n  oidc:\n    issuer: https://idp.example.com\n    client_id: gatehouse\n    client_secret: s\n    roles: {approver: ['*@example.com']}\n"
	started, err := config.Parse([]byte(sso), dir, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.SQLite(t)
	svc := gate.NewService(gate.Options{Store: db})
	srv, err := web.New(web.Options{Service: svc, Sessions: db, OIDC: started.Auth.OIDC, PublicURL: started.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	rl := &reloader{path: path, started: started, channels: []string{gate.WebChannel}, svc: svc, srv: srv, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	const hash = "$2a$04$C6UzMDM.H6dfI/f/IKcEeO5r8PGLi0sc0XQ5w6q0iQQ6nVYqB1y9W"
	file := "public_url: https://gatehouse.example.com\nauth:\n  users:\n    - {name: carol@corp.example, role: approver, password_bcrypt: '" + hash + "'}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload(); err == nil || !strings.Contains(err.Error(), "contains @") {
		t.Fatalf("a password user named with @ while single sign-on runs: %v, want the reload refused", err)
	}
	// Without the @ the same file reloads.
	if err := os.WriteFile(path, []byte(strings.Replace(file, "carol@corp.example", "carol", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload(); err != nil {
		t.Fatalf("a password user carol: %v", err)
	}
}

// TestReloadNeverMixesTokensAndRoutes: a reload puts the routes in force,
// then the tokens. Routes match a token's name, so a call whose token was
// read by the old tokens and whose routes are the new ones could match
// neither config's route for it: a token renamed from bot to bot2 with its
// deny route was allowed by the defaults of both configs. Such a call is
// refused, to be sent again, from the moment the routes change until the
// tokens follow. Found by a tenth reader (61 allows in 3,000 reloads).
func TestReloadNeverMixesTokensAndRoutes(t *testing.T) {
	const tok = "mix-token-0123456789abcdef"
	cfgOf := func(name string) *config.Config {
		c, err := config.Parse([]byte("listen: 127.0.0.1:8080\nauth:\n  api_tokens:\n    - {name: "+name+", token: "+tok+"}\n"+
			"defaults: {action: allow}\nroutes:\n  - {name: no-"+name+", match: {agent: "+name+"}, action: deny}\n"), t.TempDir(), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := cfgOf("bot"), cfgOf("bot2")
	svc, srv, _ := newReloader(t, "", a)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	gateCall := func() (int, string) {
		return post("/api/v1/gate", `{"tool_name":"deploy","requires_confirmation":false}`)
	}
	hookCall := func() string {
		_, out := post("/hooks/claude-code?wait=0s", `{"session_id":"s1","cwd":"/repo","hook_event_name":"PreToolUse","tool_name":"deploy","tool_input":{}}`)
		return out
	}
	if code, body := gateCall(); code != http.StatusOK || !strings.Contains(body, `"allow":false`) {
		t.Fatalf("under the first config: %d %s", code, body)
	}
	// Between the two steps of the reload: the new routes, the old tokens.
	if err := svc.Reconfigure(routes(b), defaults(b), people(b)); err != nil {
		t.Fatal(err)
	}
	if code, body := gateCall(); code != http.StatusServiceUnavailable || strings.Contains(body, `"allow":true`) {
		t.Fatalf("between the routes and the tokens: %d %s, want 503", code, body)
	}
	// The hook endpoint too, which reads its token on its own path (a
	// second reader found it still mixed them).
	if body := hookCall(); !strings.Contains(body, `"permissionDecision":"deny"`) || !strings.Contains(body, "reloaded") {
		t.Fatalf("a hook call between the routes and the tokens: %s, want a deny that says to send it again", body)
	}
	srv.SetAuth(b.Auth.APITokens, b.Auth.Users)
	if code, body := gateCall(); code != http.StatusOK || !strings.Contains(body, `"allow":false`) || !strings.Contains(body, "no-bot2") {
		t.Fatalf("under the second config: %d %s", code, body)
	}
}

// TestReloadRefusesAFileWithNoSettings: an empty file (an editor that
// empties it before writing) read as the built-in default, which dropped
// every route, token and user of a server on loopback: any local caller's
// call was allowed. Found by a tenth reader.
func TestReloadRefusesAFileWithNoSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	const tok = "reload-token-0123456789abcdef"
	running, err := config.Parse([]byte("auth:\n  api_tokens:\n    - {name: agent, token: "+tok+"}\nroutes:\n  - {name: pushes, match: {tool: deploy}, action: deny}\n"), dir, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	svc, _, rl := newReloader(t, path, running)
	for _, body := range []string{"", "\n\n", "# being edited\n", "---\n", "{}\n"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := rl.reload(); err == nil || !strings.Contains(err.Error(), "holds no settings") {
			t.Errorf("reload of %q: %v, want it refused", body, err)
		}
	}
	if svc.Generation() != 0 {
		t.Errorf("a refused reload put a config in force (generation %d)", svc.Generation())
	}
}

// newReloader is a gate and a web server on SQLite, started with running,
// and the reloader that reloads path into them.
func newReloader(t *testing.T, path string, running *config.Config) (*gate.Service, *web.Server, *reloader) {
	t.Helper()
	db := storetest.SQLite(t)
	svc := gate.NewService(gate.Options{Store: db, Routes: routes(running), Defaults: defaults(running), People: people(running)})
	srv, err := web.New(web.Options{Service: svc, Sessions: db, Tokens: running.Auth.APITokens})
	if err != nil {
		t.Fatal(err)
	}
	rl := &reloader{path: path, started: running, channels: []string{gate.WebChannel}, svc: svc, srv: srv, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return svc, srv, rl
}

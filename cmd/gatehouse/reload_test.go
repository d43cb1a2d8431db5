package main

import (
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
// and the tokens stay required.
func TestReloadKeepsTokensWhileListeningBeyondLoopback(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	const tok = "reload-token-0123456789abcdef"
	running, err := config.Parse([]byte("listen: 0.0.0.0:8080\nauth:\n  api_tokens:\n    - {name: agent, token: "+tok+"}\n"), dir, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.SQLite(t)
	svc := gate.NewService(gate.Options{Store: db})
	srv, err := web.New(web.Options{Service: svc, Sessions: db, Tokens: running.Auth.APITokens})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rl := &reloader{path: path, running: running, channels: []string{gate.WebChannel}, svc: svc, srv: srv, log: log}

	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rl.reload(); err == nil || !strings.Contains(err.Error(), "auth.api_tokens") || !strings.Contains(err.Error(), "0.0.0.0:8080") {
		t.Fatalf("a reload dropping every token on a server listening on 0.0.0.0 was not refused as such: %v", err)
	}
	if rl.running != running {
		t.Error("the refused config became the running one")
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

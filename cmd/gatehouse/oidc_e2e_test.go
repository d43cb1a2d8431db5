package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/web/oidctest"
)

// Single sign-on through the real binary: auth.oidc in the config, a local
// provider, and a browser that follows the flow's redirects.
func TestSingleSignOnThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	public := fmt.Sprintf("http://127.0.0.1:%d", port)
	idp := oidctest.New(t, "gatehouse", "client-s3cret", public+"/auth/oidc/callback")
	os.WriteFile(filepath.Join(dir, "oidc.secret"), []byte("client-s3cret\n"), 0o600)
	cfg := filepath.Join(dir, "gatehouse.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:%d
public_url: %s
database:
  driver: sqlite
  dsn: %s
auth:
  api_tokens:
    - name: build-agent
      token: %s
  oidc:
    issuer: %s
    client_id: gatehouse
    client_secret_file: oidc.secret
    roles:
      approver: [sre]
`, port, public, filepath.Join(dir, "gatehouse.db"), e2eToken, idp.URL)), 0o600)
	srv := startServer(t, cfg)
	if strings.Contains(srv.Log(), "one-time password") {
		t.Fatalf("a bootstrap admin password beside single sign-on:\n%s", srv.Log())
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	login := get(t, browser, srv.URL+"/login")
	if !strings.Contains(login, "Sign in with single sign-on") || strings.Contains(login, `name="password"`) {
		t.Fatalf("the login page:\n%s", login)
	}
	idp.SignIn(oidctest.Identity{Subject: "u1", Email: "dana@example.com", Groups: []string{"sre"}})
	page := get(t, browser, srv.URL+"/auth/oidc/login?next=/history")
	if !strings.Contains(page, "dana@example.com · approver") {
		t.Fatalf("after signing in, the history page:\n%s\n%s", page, srv.Log())
	}
	idp.SignIn(oidctest.Identity{Subject: "u2", Email: "eve@example.com", Groups: []string{"interns"}})
	jar2, _ := cookiejar.New(nil)
	page = get(t, &http.Client{Jar: jar2}, srv.URL+"/auth/oidc/login")
	if !strings.Contains(page, "no role here is given") {
		t.Fatalf("a person with no role:\n%s", page)
	}
}

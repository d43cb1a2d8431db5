package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/web"
)

// Tokens of the scope tests: two agents, an operator's reader, an operator's
// canceller, and one with both scopes.
var scopeTokens = map[string]string{
	"agent-a":  "agent-a-token-0123456789",
	"agent-b":  "agent-b-token-0123456789",
	"reader":   "reader-token-0123456789",
	"janitor":  "janitor-token-0123456789",
	"operator": "operator-token-0123456789",
	"forged":   "agent-a-token-0123456788", // configured nowhere
}

// newTokenServer is a server with the scope tests' tokens (and routes).
func newTokenServer(t *testing.T, routes ...gate.Route) (string, *gate.Service) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "gh.db"), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := gate.NewService(gate.Options{Store: db, Routes: routes})
	svc.Register(web.Channel{})
	bg, cancel := context.WithCancel(ctx)
	svc.Start(bg)
	t.Cleanup(func() { svc.Stop(); cancel() })
	s, err := web.New(web.Options{Service: svc, Sessions: db, Tokens: []config.APIToken{
		{Name: "agent-a", Token: scopeTokens["agent-a"]},
		{Name: "agent-b", Token: scopeTokens["agent-b"]},
		{Name: "reader", Token: scopeTokens["reader"], Scopes: []string{config.ScopeReadAll}},
		{Name: "janitor", Token: scopeTokens["janitor"], Scopes: []string{config.ScopeCancelAll}},
		{Name: "operator", Token: scopeTokens["operator"], Scopes: []string{config.ScopeReadAll, config.ScopeCancelAll}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, svc
}

// call makes an API call as token's owner and returns the status and body.
func call(t *testing.T, base, token, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+scopeTokens[token])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func listedIDs(t *testing.T, body string) []string {
	t.Helper()
	var l struct {
		Approvals []gate.Request `json:"approvals"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("list: %v: %s", err, body)
	}
	var ids []string
	for _, r := range l.Approvals {
		ids = append(ids, r.ID)
	}
	return ids
}

// Attacks on another token's request: reading it, waiting on it, listing
// it, reading its trail, cancelling it, and borrowing its idempotency key,
// by a token without scopes and by tokens with the wrong scope. Each must
// see nothing (404, or a list without it) and change nothing.
func TestTokensSeeTheirOwn(t *testing.T) {
	base, _ := newTokenServer(t)
	code, body := call(t, base, "agent-a", "POST", "/api/v1/approvals", `{"tool_name":"deploy","summary":"a's secret plan","idempotency_key":"k1"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var mine gate.Request
	json.Unmarshal([]byte(body), &mine)
	id := mine.ID

	for _, tc := range []struct {
		name, token, method, path string
	}{
		{"another token reads", "agent-b", "GET", "/api/v1/approvals/" + id},
		{"another token waits on it", "agent-b", "GET", "/api/v1/approvals/" + id + "?wait=1s"},
		{"another token reads the trail", "agent-b", "GET", "/api/v1/approvals/" + id + "/events"},
		{"another token cancels", "agent-b", "POST", "/api/v1/approvals/" + id + "/cancel"},
		{"cancel_all reads", "janitor", "GET", "/api/v1/approvals/" + id},
		{"cancel_all reads the trail", "janitor", "GET", "/api/v1/approvals/" + id + "/events"},
		{"read_all cancels", "reader", "POST", "/api/v1/approvals/" + id + "/cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, base, tc.token, tc.method, tc.path, "")
			if code != http.StatusNotFound || strings.Contains(body, "secret plan") {
				t.Fatalf("%d %s, want 404 revealing nothing", code, body)
			}
		})
	}
	for _, tok := range []string{"", "forged"} {
		if code, body := call(t, base, tok, "GET", "/api/v1/approvals/"+id, ""); code != http.StatusUnauthorized || strings.Contains(body, "secret plan") {
			t.Errorf("token %q read: %d %s, want 401", tok, code, body)
		}
	}
	for _, tok := range []string{"agent-b", "janitor"} {
		if _, body := call(t, base, tok, "GET", "/api/v1/approvals", ""); strings.Contains(body, id) {
			t.Errorf("%s listed another token's request: %s", tok, body)
		}
	}
	// The same idempotency key under another token is a request of its own.
	code, body = call(t, base, "agent-b", "POST", "/api/v1/approvals", `{"tool_name":"deploy","idempotency_key":"k1"}`)
	if code != http.StatusCreated || strings.Contains(body, id) {
		t.Fatalf("agent-b's k1: %d %s, want a new request", code, body)
	}
	// ... and so it is for a token that may read everything.
	code, body = call(t, base, "operator", "POST", "/api/v1/approvals", `{"tool_name":"deploy","idempotency_key":"k1"}`)
	if code != http.StatusCreated || strings.Contains(body, id) {
		t.Fatalf("operator's k1: %d %s, want a new request", code, body)
	}
	if code, body := call(t, base, "agent-a", "GET", "/api/v1/approvals/"+id, ""); code != 200 || !strings.Contains(body, `"status":"pending"`) {
		t.Fatalf("after the attacks, the owner reads %d %s", code, body)
	}

	// read_all reads, waits on, lists and follows every request.
	if code, body := call(t, base, "reader", "GET", "/api/v1/approvals/"+id, ""); code != 200 || !strings.Contains(body, "secret plan") {
		t.Fatalf("read_all read: %d %s", code, body)
	}
	if code, body := call(t, base, "reader", "GET", "/api/v1/approvals/"+id+"/events", ""); code != 200 || !strings.Contains(body, `"type":"created"`) {
		t.Fatalf("read_all trail: %d %s", code, body)
	}
	if _, body := call(t, base, "reader", "GET", "/api/v1/approvals", ""); len(listedIDs(t, body)) != 3 {
		t.Fatalf("read_all lists %v, want all 3", listedIDs(t, body))
	}
	if _, body := call(t, base, "agent-a", "GET", "/api/v1/approvals", ""); len(listedIDs(t, body)) != 1 {
		t.Fatalf("agent-a lists %v, want its 1", listedIDs(t, body))
	}

	// cancel_all cancels another token's request.
	code, body = call(t, base, "janitor", "POST", "/api/v1/approvals/"+id+"/cancel", `{"reason":"stale"}`)
	if code != 200 || !strings.Contains(body, `"status":"cancelled"`) || !strings.Contains(body, `"decided_by":"agent:janitor"`) {
		t.Fatalf("cancel_all: %d %s", code, body)
	}
}

// Without audit.signing_key_file there are no checkpoints, and the API says
// which key would turn them on.
func TestCheckpointNeedsAKey(t *testing.T) {
	base, _ := newTokenServer(t)
	code, body := call(t, base, "agent-a", "GET", "/api/v1/audit/checkpoint", "")
	if code != http.StatusNotFound || !strings.Contains(body, "audit.signing_key_file") {
		t.Fatalf("%d %s", code, body)
	}
}

package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
	"github.com/gatehouse-dev/gatehouse/web"
)

const (
	tokenA = "token-of-agent-a-0123456789"
	tokenB = "token-of-agent-b-0123456789"
)

// mcpEnv is a real server with two agent tokens, serving /mcp.
func mcpEnv(t *testing.T) (*gate.Service, string) {
	t.Helper()
	svc, base, _ := mcpEnvDB(t)
	return svc, base
}

func mcpEnvDB(t *testing.T) (*gate.Service, string, *store.DB) {
	t.Helper()
	db := storetest.SQLite(t)
	svc := gate.NewService(gate.Options{Store: db, Defaults: gate.Defaults{Timeout: time.Hour, Channels: []string{gate.WebChannel}}})
	svc.Register(web.Channel{})
	ctx, cancel := context.WithCancel(context.Background())
	svc.Start(ctx)
	t.Cleanup(func() { svc.Stop(); cancel() })
	s, err := web.New(web.Options{Service: svc, Sessions: db,
		Tokens: []config.APIToken{{Name: "agent-a", Token: tokenA}, {Name: "agent-b", Token: tokenB}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return svc, hs.URL, db
}

// bearer adds a token to every request of an HTTP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, base, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "web-test"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("connect with token %q: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func askMCP(ctx context.Context, cs *mcp.ClientSession, args map[string]any) (map[string]any, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval", Arguments: args})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
	return out, err
}

// pendingOf waits for a pending request made with the token named caller.
func pendingOf(t *testing.T, svc *gate.Service, caller string) *gate.Request {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rs, _, err := svc.List(context.Background(), gate.Filter{Status: []gate.Status{gate.StatusPending}, Caller: &caller})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) > 0 {
			return rs[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pending request of %s", caller)
	return nil
}

// TestMCPNeedsAToken: no token, a wrong one, or none at all in the header's
// form, and nothing is asked.
func TestMCPNeedsAToken(t *testing.T) {
	svc, base := mcpEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, auth := range map[string]string{"none": "", "wrong": "Bearer not-a-token-0123456789", "basic": "Basic " + tokenA} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"code":"unauthorized"`) {
			t.Fatalf("%s token: %d %s", name, resp.StatusCode, body)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "web-test"}, nil)
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"not-a-token-0123456789"}}}, nil); err == nil {
		t.Fatal("an MCP client with a wrong token connected")
	}
	if rs, _, _ := svc.List(context.Background(), gate.Filter{}); len(rs) != 0 {
		t.Fatalf("%d requests were made without a valid token", len(rs))
	}
}

// TestMCPTokensSeeTheirOwn: agent B, sending agent A's idempotency key and
// call, does not re-attach to A's approval: it gets a request of its own.
func TestMCPTokensSeeTheirOwn(t *testing.T) {
	svc, base := mcpEnv(t)
	a, b := mcpSession(t, base, tokenA), mcpSession(t, base, tokenB)
	args := map[string]any{"tool_name": "deploy", "tool_args": map[string]any{"env": "prod"}, "idempotency_key": "mcp-5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"}

	done := make(chan map[string]any, 1)
	go func() { out, _ := askMCP(context.Background(), a, args); done <- out }()
	ra := pendingOf(t, svc, "agent-a")
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: ra.ID, Approve: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out["allow"] != true || out["request_id"] != ra.ID {
		t.Fatalf("agent A: %v", out)
	}

	go func() { out, _ := askMCP(context.Background(), b, args); done <- out }()
	rb := pendingOf(t, svc, "agent-b")
	if rb.ID == ra.ID || rb.Caller != "agent-b" {
		t.Fatalf("agent B's call landed on %s (caller %s)", rb.ID, rb.Caller)
	}
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: rb.ID, Approve: false, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	if out := <-done; out["allow"] != false || out["request_id"] != rb.ID || out["status"] != "rejected" {
		t.Fatalf("agent B: %v", out)
	}
}

// TestMCPShutdownLeavesThePending: a waiting call answers "pending" with
// its key as soon as the server stops, so the HTTP server can shut down.
func TestMCPShutdownLeavesThePending(t *testing.T) {
	svc, base := mcpEnv(t)
	a := mcpSession(t, base, tokenA)
	done := make(chan map[string]any, 1)
	go func() {
		out, _ := askMCP(context.Background(), a, map[string]any{"tool_name": "deploy", "idempotency_key": "mcp-00112233445566778899aabbccddeeff"})
		done <- out
	}()
	r := pendingOf(t, svc, "agent-a")
	svc.Stop()
	select {
	case out := <-done:
		if out["status"] != "pending" || out["allow"] != false || out["request_id"] != r.ID || out["idempotency_key"] != "mcp-00112233445566778899aabbccddeeff" {
			t.Fatalf("answered %v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call kept waiting after Stop")
	}
}

// TestMCPFailuresDenyInPlainWords: bad input is named; a database failure
// is a deny in the gate's words, never the driver's.
func TestMCPFailuresDenyInPlainWords(t *testing.T) {
	_, base, db := mcpEnvDB(t)
	a := mcpSession(t, base, tokenA)
	out, err := askMCP(context.Background(), a, map[string]any{"tool_name": strings.Repeat("x", 300)})
	if err != nil || out["allow"] != false || !strings.Contains(out["error"].(string), "tool_name: longer than 256 bytes") {
		t.Fatalf("a long tool name: %v %v", out, err)
	}
	db.Close()
	out, err = askMCP(context.Background(), a, map[string]any{"tool_name": "deploy"})
	if err != nil || out["allow"] != false || out["status"] != "error" {
		t.Fatalf("with the database closed: %v %v", out, err)
	}
	if msg := out["error"].(string); !strings.Contains(msg, "database error") || strings.Contains(strings.ToLower(msg), "sql") {
		t.Fatalf("with the database closed the caller reads %q", msg)
	}
}

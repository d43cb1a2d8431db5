package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/web"
)

// gateCall posts to /api/v1/gate and decodes the hook result.
func gateCall(t *testing.T, e *env, query, body string) (int, web.HookResult) {
	t.Helper()
	res, err := http.Post(e.srv.URL+"/api/v1/gate"+query, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var hr web.HookResult
	if err := json.NewDecoder(res.Body).Decode(&hr); err != nil {
		t.Fatalf("gate answered %d without a hook result: %v", res.StatusCode, err)
	}
	return res.StatusCode, hr
}

// decideWhenPending decides the first pending request once it appears.
func decideWhenPending(e *env, approve bool, reason string) {
	go func() {
		for range 200 {
			rs, _, _ := e.svc.List(context.Background(), gate.Filter{Status: []gate.Status{gate.StatusPending}})
			if len(rs) > 0 {
				e.svc.Decide(context.Background(), gate.Decision{RequestID: rs[0].ID, Approve: approve, Actor: "web:alice", Via: gate.WebChannel, Reason: reason})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func TestGateEndpoint(t *testing.T) {
	t.Run("approved", func(t *testing.T) {
		e := newEnv(t)
		decideWhenPending(e, true, "")
		code, hr := gateCall(t, e, "?wait=10s", `{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000},"idempotency_key":"k1"}`)
		if code != 200 || !hr.Allow || hr.Status != "approved" || hr.Error != "" || len(hr.SideEffects) != 1 ||
			!strings.HasPrefix(hr.SideEffects[0], "gatehouse: approved by web:alice via web after") {
			t.Fatalf("%d %+v", code, hr)
		}
		// The same key attaches to the same, now decided, request.
		_, again := gateCall(t, e, "?wait=1s", `{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000},"idempotency_key":"k1"}`)
		if again.RequestID != hr.RequestID || !again.Allow {
			t.Fatalf("re-attach: %+v", again)
		}
		// The same key with other arguments never borrows that approval.
		code, other := gateCall(t, e, "?wait=1s", `{"tool_name":"oa__purchase_pay","tool_args":{"amount":999999},"idempotency_key":"k1"}`)
		if code != http.StatusConflict || other.Allow || !strings.Contains(other.Error, "with other arguments") {
			t.Fatalf("key reused for other arguments: %d %+v", code, other)
		}
	})
	t.Run("rejected", func(t *testing.T) {
		e := newEnv(t)
		decideWhenPending(e, false, "amount over budget")
		_, hr := gateCall(t, e, "?wait=10s", `{"tool_name":"oa__purchase_pay"}`)
		if hr.Allow || hr.Status != "rejected" || !strings.HasPrefix(hr.Error, "Rejected by web:alice via web after") ||
			!strings.HasSuffix(hr.Error, ": amount over budget") {
			t.Fatalf("%+v", hr)
		}
	})
	t.Run("still pending", func(t *testing.T) {
		e := newEnv(t)
		code, hr := gateCall(t, e, "?wait=200ms", `{"tool_name":"oa__purchase_pay","idempotency_key":"k7"}`)
		if code != 200 || hr.Allow || hr.Status != "pending" || !strings.Contains(hr.Error, "call again with the same idempotency_key") {
			t.Fatalf("%d %+v", code, hr)
		}
		// Without a key, the answer says where to wait instead.
		code, hr = gateCall(t, e, "?wait=200ms", `{"tool_name":"oa__purchase_pay"}`)
		if code != 200 || hr.Allow || hr.Status != "pending" || !strings.Contains(hr.Error, "wait on GET /api/v1/approvals/"+hr.RequestID) {
			t.Fatalf("%d %+v", code, hr)
		}
	})
	// A tool_call_id is not an idempotency key: frameworks that number
	// calls afresh in every session (call_0, call_1, ...) reuse them, and an
	// identical call under a reused id must not get an approval given before.
	t.Run("a reused tool_call_id", func(t *testing.T) {
		e := newEnv(t)
		decideWhenPending(e, true, "")
		body := `{"tool_name":"oa__purchase_pay","tool_args":{"amount":1},"tool_call_id":"call_0"}`
		_, first := gateCall(t, e, "?wait=10s", body)
		if !first.Allow {
			t.Fatalf("first: %+v", first)
		}
		_, again := gateCall(t, e, "?wait=200ms", body)
		if again.Allow || again.Status != "pending" || again.RequestID == first.RequestID {
			t.Fatalf("a later call under the same tool_call_id: %+v, want a request of its own, pending", again)
		}
	})
	t.Run("no confirmation needed", func(t *testing.T) {
		e := newEnv(t)
		_, hr := gateCall(t, e, "", `{"tool_name":"read_file","requires_confirmation":false}`)
		if !hr.Allow || hr.Status != "approved" {
			t.Fatalf("%+v", hr)
		}
	})
	for _, tc := range []struct {
		name, query, body string
		code              int
	}{
		{"malformed JSON", "", `{"tool_name":`, 400},
		{"missing tool_name", "", `{}`, 400},
		{"bad wait", "?wait=forever", `{"tool_name":"x"}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			code, hr := gateCall(t, e, tc.query, tc.body)
			if code != tc.code || hr.Allow || hr.Status != "error" || !strings.Contains(hr.Error, "denied: the gate fails closed") {
				t.Fatalf("%d %+v", code, hr)
			}
		})
	}
	t.Run("database gone", func(t *testing.T) {
		e := newEnv(t)
		e.db.Close()
		code, hr := gateCall(t, e, "", `{"tool_name":"oa__purchase_pay"}`)
		if code != http.StatusServiceUnavailable || hr.Allow || hr.Status != "error" {
			t.Fatalf("%d %+v", code, hr)
		}
		res, err := http.Get(e.srv.URL + "/readyz")
		if err != nil || res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("readyz with the database gone: %v %v", res.StatusCode, err)
		}
	})
}

// TestGateEndpointFailuresAreHookResults: errors raised before the handler
// runs (a body over the limit, a missing token) still answer allow: false.
func TestGateEndpointFailuresAreHookResults(t *testing.T) {
	e := newEnv(t)
	big := `{"tool_name":"x","tool_args":{"blob":"` + strings.Repeat("a", 2<<20) + `"}}`
	code, hr := gateCall(t, e, "", big)
	if code != http.StatusRequestEntityTooLarge || hr.Allow || hr.Status != "error" || !strings.Contains(hr.Error, "larger than 1 MiB") {
		t.Fatalf("oversized body: %d %+v", code, hr)
	}
}

// TestAnonymousServerRefusesCrossSiteWrites: without api_tokens the API is
// open to loopback callers only, and only to JSON bodies, so neither a web
// page's form post nor a rebound host name reaches it.
func TestAnonymousServerRefusesCrossSiteWrites(t *testing.T) {
	e := newEnv(t)
	post := func(host, ctype string) int {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/approvals", strings.NewReader(`{"tool_name":"deploy"}`))
		req.Header.Set("Content-Type", ctype)
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("", "text/plain"); code != http.StatusBadRequest {
		t.Errorf("a text/plain body (what a cross-site form can send): %d", code)
	}
	if code := post("attacker.example:8080", "application/json"); code != http.StatusUnauthorized {
		t.Errorf("a rebound host name: %d", code)
	}
	if code := post("localhost:8080", "application/json; charset=utf-8"); code != http.StatusCreated {
		t.Errorf("a local JSON call: %d", code)
	}
	rs, _, _ := e.svc.List(context.Background(), gate.Filter{})
	if len(rs) != 1 {
		t.Fatalf("%d requests recorded, want only the local one", len(rs))
	}
}

// TestHookOnUnrecordedRoute: a call a record: false route allows is never
// stored, and the hook endpoint answers it at once rather than waiting on
// a request that does not exist (which denied every such call).
func TestHookOnUnrecordedRoute(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "reads", Tool: "Read", Action: policy.Allow, NoRecord: true}}, nil)
	for _, wait := range []string{"2s", "0s"} {
		body := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Read","tool_input":{"file_path":"/etc/hosts"},"tool_use_id":"t1"}`
		res, err := http.Post(e.srv.URL+"/hooks/claude-code?wait="+wait, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), `"permissionDecision":"allow"`) {
			t.Errorf("wait=%s: hook on a record: false allow route: %s %s", wait, res.Header.Get(web.HookStatusHeader), b)
		}
	}
}

// TestMetadataNamesNoMCPServer: an agent's own metadata naming an MCP
// server made its Bash call a server's tool, past every Bash deny and ask
// route (found by a second reader of that change); only the hook's reading
// of a Cursor MCP call says so now, and a body cannot.
func TestMetadataNamesNoMCPServer(t *testing.T) {
	e := newEnvWith(t, []gate.Route{
		{Name: "no-rm", Calls: []string{"Bash(rm:*)"}, Action: policy.Deny},
		{Name: "shell", Tool: "Bash", Action: policy.Allow},
	}, nil)
	for _, meta := range []string{`{}`, `{"mcp_url":"x"}`, `{"mcp_command":""}`} {
		_, hr := gateCall(t, e, "", `{"tool_name":"Bash","tool_args":{"command":"rm -rf /"},"requires_confirmation":false,"metadata":`+meta+`}`)
		if hr.Allow || hr.Status != "rejected" {
			t.Errorf("metadata %s: %+v, want rejected by no-rm", meta, hr)
		}
	}
	if code, hr := gateCall(t, e, "", `{"tool_name":"Bash","tool_args":{"command":"rm -rf /"},"MCPServer":true}`); code != 400 || hr.Allow {
		t.Errorf("a body naming the flag: %d %+v, want 400", code, hr)
	}
}

// The hook endpoint's wait counts from the call's arrival: time spent
// finding and making the request is taken from it, so a slow database
// does not carry the answer past the client's own hook timeout (after
// which most clients run the tool). Here the server's clock runs a minute
// on at every reading, so a 30 s wait is spent before the request is made,
// and the answer (a deny: still pending) comes at once. Found by a reader.
func TestHookWaitCountsFromTheCall(t *testing.T) {
	var mu sync.Mutex
	clock := time.Now()
	e := newEnvWith(t, []gate.Route{{Name: "shell", Tool: "Bash", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}, func(o *web.Options) {
		o.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			clock = clock.Add(time.Minute)
			return clock
		}
	})
	body := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash","tool_input":{"command":"make deploy"},"tool_use_id":"t1"}`
	done := make(chan string, 1)
	go func() {
		res, err := http.Post(e.srv.URL+"/hooks/claude-code?wait=30s", "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		done <- res.Header.Get(web.HookStatusHeader) + " " + string(b)
	}()
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "pending ") || !strings.Contains(got, `"permissionDecision":"deny"`) {
			t.Errorf("answer %s; want pending and a deny", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the hook still waits 15 s on, though its 30 s were spent by the server's clock before the request was made")
	}
}

// TestHookLongCallIDOneRequest: a call id over the 256 bytes a request
// keeps is stored cut short, so the hook never knew the request it had
// just made for the call as this call's, and walked on, making a request
// (and a card) under every key of the chain: one call asked 65 times, 64
// cards whose approval let nothing run.
func TestHookLongCallIDOneRequest(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "shell", Tool: "Bash", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}, nil)
	id := "toolu_" + strings.Repeat("x", 300)
	body := `{"hook_event_name":"PreToolUse","session_id":"s1","cwd":"/proj","tool_name":"Bash","tool_input":{"command":"make deploy"},"tool_use_id":"` + id + `"}`
	for range 2 { // the call, and a hook that runs it again
		res, err := http.Post(e.srv.URL+"/hooks/claude-code?wait=0s", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), `"permissionDecision":"deny"`) {
			t.Fatalf("pending call: %s", b)
		}
	}
	ctx := context.Background()
	rs, _, err := e.svc.List(ctx, gate.Filter{Limit: 200})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%d requests (%v) for one call, want 1", len(rs), err)
	}
	// What ran is still found by the call's id, as its request keeps it.
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: rs[0].ID, Approve: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	report := strings.Replace(body, `"PreToolUse"`, `"PostToolUse"`, 1)
	report = strings.Replace(report, `"tool_use_id"`, `"tool_response":{"stdout":"deployed"},"tool_use_id"`, 1)
	res, err := http.Post(e.srv.URL+"/hooks/claude-code", "application/json", strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	evs, err := e.svc.Events(ctx, rs[0].ID)
	if err != nil || !slices.ContainsFunc(evs, func(ev gate.Event) bool { return ev.Type == gate.EventToolRan }) {
		t.Fatalf("what ran was not recorded on the call's request: %v %+v", err, evs)
	}
}

// TestHookPastTheKeysReattaches: a call its session made more times than
// the chain has keys gets a request of its own; the command hook asks
// again every 55 s while the request is pending, and each ask made another
// request and another card (and the hook, which now refuses an answer
// about another request than the one named for the call, denied the call
// at the second ask). An ask again for the same call (its tool_use_id)
// finds the call's own request.
func TestHookPastTheKeysReattaches(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "shell", Tool: "Bash", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}, nil)
	ask := func(i int) string {
		t.Helper()
		body := `{"hook_event_name":"PreToolUse","session_id":"s1","cwd":"/proj","tool_name":"Bash","tool_input":{"command":"make deploy"},` +
			`"tool_use_id":"toolu_` + strconv.Itoa(i) + `"}`
		res, err := http.Post(e.srv.URL+"/hooks/claude-code?wait=0s", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Header.Get(web.HookStatusHeader) != "pending" || !strings.Contains(string(b), `"permissionDecision":"deny"`) {
			t.Fatalf("call %d: %s %s", i, res.Header.Get(web.HookStatusHeader), b)
		}
		return res.Header.Get("Gatehouse-Request-Id")
	}
	for i := range hook.MaxChain {
		ask(i) // earlier calls, each pending on a key of the chain
	}
	first, again := ask(hook.MaxChain), ask(hook.MaxChain)
	if first == "" || again != first {
		t.Fatalf("the call's second ask is answered about request %q, its first about %q", again, first)
	}
	rs, _, err := e.svc.List(context.Background(), gate.Filter{Limit: 200})
	if err != nil || len(rs) != hook.MaxChain+1 {
		t.Fatalf("%d requests (%v), want one per call: %d", len(rs), err, hook.MaxChain+1)
	}
}

// The API shows requires_confirmation as the agent sent it, null when it
// sent none, and the history lists it so; the gate still asks about a call
// that said nothing. Before, a missing flag read true.
func TestRequiresConfirmationShownAsSent(t *testing.T) {
	e := newEnv(t)
	ids := map[string]string{}
	for name, flag := range map[string]string{"absent": "", "true": `,"requires_confirmation":true`, "false": `,"requires_confirmation":false`} {
		code, body := call(t, e.srv.URL, "", http.MethodPost, "/api/v1/approvals", `{"tool_name":"deploy","agent_id":"bot"`+flag+`}`)
		var r gate.Request
		if err := json.Unmarshal([]byte(body), &r); code != http.StatusCreated || err != nil {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		if want := map[string]gate.Status{"false": gate.StatusApproved}[name]; want == "" && r.Status != gate.StatusPending || want != "" && r.Status != want {
			t.Fatalf("%s: status %s", name, r.Status)
		}
		ids[r.ID] = name
	}
	raw := func(body string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for id, name := range ids {
		_, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals/"+id, "")
		if got, want := string(raw(body)["requires_confirmation"]), map[string]string{"absent": "null"}[name]; want == "" && got != name || want != "" && got != want {
			t.Errorf("%s: requires_confirmation %s", name, got)
		}
	}
	_, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals?limit=10", "")
	var l struct{ Approvals []map[string]json.RawMessage }
	if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.Approvals) != 3 {
		t.Fatalf("history: %v %s", err, body)
	}
	for _, a := range l.Approvals {
		var id string
		json.Unmarshal(a["id"], &id)
		if got, name := string(a["requires_confirmation"]), ids[id]; got != map[string]string{"absent": "null", "true": "true", "false": "false"}[name] {
			t.Errorf("history %s: requires_confirmation %s", name, got)
		}
	}
}

package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestGateSendsArgumentsAsWritten(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Write([]byte(`{"request_id":"r1","status":"approved","allow":true}`))
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL}
	if _, err := c.Gate(context.Background(), Request{ToolName: "Bash", ToolArgs: json.RawMessage(`{"command":"make && ./run <in >out"}`)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"make && ./run <in >out"`) {
		t.Fatalf("arguments were rewritten on the wire: %s", got)
	}
}

// TestGateReattachesThroughOutages: pending answers and 5xx are retried
// with the same idempotency key until the verdict comes.
func TestGateReattachesThroughOutages(t *testing.T) {
	var calls atomic.Int32
	keys := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		json.NewDecoder(r.Body).Decode(&req)
		keys[req.IdempotencyKey] = true
		switch calls.Add(1) {
		case 1:
			w.Write([]byte(`{"request_id":"r1","status":"pending","allow":false}`))
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"request_id":"","status":"error","allow":false,"error":"database error"}`))
		default:
			w.Write([]byte(`{"request_id":"r1","status":"rejected","allow":false,"error":"Rejected by web:alice"}`))
		}
	}))
	defer srv.Close()
	var pending []string
	c := &Client{URL: srv.URL, Wait: time.Second, OnPending: func(r Result) { pending = append(pending, r.RequestID+" "+r.Status) }}
	res, err := c.Gate(context.Background(), Request{ToolName: "deploy"})
	if err != nil || res.Status != "rejected" || res.Allow || len(keys) != 1 || calls.Load() != 3 {
		t.Fatalf("res %+v err %v keys %v calls %d", res, err, keys, calls.Load())
	}
	if len(pending) != 1 || pending[0] != "r1 pending" {
		t.Fatalf("OnPending heard %q, want the one pending answer", pending)
	}
}

func TestGateGivesUpAsDeny(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"invalid bearer token"}}`))
	}))
	defer srv.Close()
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy"})
	var apiErr *APIError
	if err == nil || res.Allow || res.Status != "error" || !errors.As(err, &apiErr) || apiErr.Message != "invalid bearer token" {
		t.Fatalf("res %+v err %v", res, err)
	}
	srv.Close()
	res, err = (&Client{URL: srv.URL, MaxOutage: 300 * time.Millisecond}).Gate(context.Background(), Request{ToolName: "deploy"})
	if err == nil || res.Allow || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("server gone: res %+v err %v", res, err)
	}
}

// An answer that allows beside a status that is not an approval (or an
// expiry that allows) is not the gate's: a stub on the port, a wrong
// GATEHOUSE_URL. It is a deny, at once.
func TestGateAllowNeedsAnApproval(t *testing.T) {
	for status, allows := range map[string]bool{"ok": false, "": false, "pending": false, "rejected": false, "approved": true, "expired": true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"request_id":"r1","status":%q,"allow":true}`, status)
		}))
		res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy"})
		srv.Close()
		switch {
		case allows && (err != nil || !res.Allow):
			t.Fatalf("allow with status %q: res %+v err %v", status, res, err)
		case !allows && (err == nil || res.Allow || res.Status != "error" || !strings.Contains(err.Error(), "not the gate's")):
			t.Fatalf("allow with status %q: res %+v err %v", status, res, err)
		}
	}
}

// FailFast (the hook's mode) denies at once when the first call reaches no
// server or gets a 5xx, and retries a first call whose connection dropped
// after it was sent: that request may exist, and is re-attached by key.
func TestGateFailFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := (&Client{URL: "http://127.0.0.1:1", FailFast: true}).Gate(ctx, Request{ToolName: "x"}); err == nil || res.Allow || !dialFailed(err) {
		t.Fatalf("no server: %+v %v", res, err)
	}
	var downCalls atomic.Int32
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downCalls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"request_id":"","status":"error","allow":false,"error":"database error"}`))
	}))
	defer down.Close()
	if res, err := (&Client{URL: down.URL, FailFast: true}).Gate(ctx, Request{ToolName: "x"}); err == nil || res.Allow {
		t.Fatalf("a 5xx first: %+v %v", res, err)
	}
	if n := downCalls.Load(); n != 1 {
		t.Fatalf("a 5xx first: %d calls, want 1: FailFast must not retry it", n)
	}
	var calls atomic.Int32
	dropping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the call was made; its answer never comes
			return
		}
		w.Write([]byte(`{"request_id":"r1","status":"approved","allow":true}`))
	}))
	defer dropping.Close()
	res, err := (&Client{URL: dropping.URL, FailFast: true}).Gate(ctx, Request{ToolName: "x"})
	if err != nil || !res.Allow || calls.Load() != 2 {
		t.Fatalf("a dropped first call: %+v %v after %d calls", res, err, calls.Load())
	}
}

// TestGateTakesNoRedirectedVerdict: a redirect (a proxy's rule, a hostile
// network) is no verdict: the client follows none, so neither the call
// nor the token goes to the other place, and whatever it would answer
// denies; a caller's own http.Client that follows one is caught too.
// Found by a tenth reader.
func TestGateTakesNoRedirectedVerdict(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		var reached atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached.Add(1)
			w.Header().Set("Gatehouse-Status", "approved")
			fmt.Fprint(w, `{"request_id":"other","status":"approved","allow":true,"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)
		}))
		gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/elsewhere", code)
		}))
		for name, c := range map[string]*Client{
			"own client":      {URL: gate.URL, Token: "secret"},
			"caller's client": {URL: gate.URL, Token: "secret", HTTP: &http.Client{}},
		} {
			res, err := c.Gate(context.Background(), Request{ToolName: "deploy"})
			var apiErr *APIError
			if res.Allow || !errors.As(err, &apiErr) || apiErr.Code != "redirect" {
				t.Errorf("%d, %s: Gate %+v, %v; want a deny for the redirect", code, name, res, err)
			}
			if ans, err := c.Hook(context.Background(), "claude-code", []byte(`{}`), HookOptions{}); err == nil {
				t.Errorf("%d, %s: Hook took the redirected answer %s", code, name, ans.Body)
			}
		}
		if n := reached.Load(); n > 0 {
			t.Errorf("%d: the other place was reached %d times", code, n)
		}
		gate.Close()
		other.Close()
	}
}

// TestGateTransportsOfTheCaller: a caller's transport that rewrites the
// request's host (a sidecar) is no redirect, and one that answers a 3xx
// with nothing else set (no Location, no request) is a deny, not a panic.
// Found by a reader of the redirect change.
func TestGateTransportsOfTheCaller(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"request_id":"r1","status":"approved","allow":true}`)
	}))
	defer srv.Close()
	rewrite := roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = strings.TrimPrefix(srv.URL, "http://"), ""
		return http.DefaultTransport.RoundTrip(r)
	})
	if res, err := (&Client{URL: "http://gatehouse.internal", HTTP: &http.Client{Transport: rewrite}}).Gate(context.Background(), Request{ToolName: "deploy"}); err != nil || !res.Allow {
		t.Errorf("through a rewriting transport: %+v, %v", res, err)
	}
	bare := roundTrip(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNotModified, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}}, nil
	})
	if res, err := (&Client{URL: srv.URL, HTTP: &http.Client{Transport: bare}}).Gate(context.Background(), Request{ToolName: "deploy"}); err == nil || res.Allow {
		t.Errorf("a bare 304: %+v, %v", res, err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestGateVerdictIsForItsRequest: once the server has named the request,
// an answer about another one (a cache in the way) is no verdict on it.
// Found by a tenth reader.
func TestGateVerdictIsForItsRequest(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			fmt.Fprint(w, `{"request_id":"A","status":"pending","allow":false}`)
			return
		}
		fmt.Fprint(w, `{"request_id":"B","status":"approved","allow":true}`)
	}))
	defer srv.Close()
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy"})
	if res.Allow || err == nil || !strings.Contains(err.Error(), `about request "B", not "A"`) {
		t.Fatalf("pending as A, then allowed as B: %+v %v", res, err)
	}
}

// A caller that already has the request's id (Start's answer) gives it to
// Gate, whose very first answer about another request is then no verdict:
// gatehouse request made the call with Start and took Gate's first answer,
// about any request, as its own. Found by a reader.
func TestGateTakesTheRequestStartNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"request_id":"B","status":"approved","allow":true}`)
	}))
	defer srv.Close()
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy", RequestID: "A"})
	if res.Allow || err == nil || !strings.Contains(err.Error(), `about request "B", not "A"`) {
		t.Fatalf("named A, answered about B: %+v %v", res, err)
	}
	if res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy", RequestID: "B"}); err != nil || !res.Allow {
		t.Fatalf("named B, answered about B: %+v %v", res, err)
	}
}

// TestGateVerdictIsForItsCall: the server's answer names the call it is
// about (tool_call_id); on the very first answer, before any request id is
// known (gatehouse mcp's approval_prompt asks with Claude Code's
// tool_use_id and no Start), an approval of another call is no verdict on
// this one.
func TestGateVerdictIsForItsCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"request_id":"B","status":"approved","allow":true,"tool_call_id":"toolu_B"}`)
	}))
	defer srv.Close()
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "Bash", ToolCallID: "toolu_A", IdempotencyKey: "toolu_A"})
	if res.Allow || err == nil {
		t.Fatalf("asked about call toolu_A, allowed by an approval of toolu_B: %+v %v", res, err)
	}
	if res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "Bash", ToolCallID: "toolu_B"}); err != nil || !res.Allow {
		t.Fatalf("asked about toolu_B, answered about toolu_B: %+v %v", res, err)
	}
}

// TestHookVerdictIsForItsRequest: a command hook's long polls re-post the
// call, and once the server has named the call's request (a pending
// answer), an answer about another request (a cache in the way, a server
// that made the call a new request) is no verdict on this call. Gate
// refused such an answer; Hook took the other request's approval, and the
// hook printed its allow.
func TestHookVerdictIsForItsRequest(t *testing.T) {
	url := pendingThen(t, "approved", "B", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"approved"}}`)
	ans, err := (&Client{URL: url}).Hook(context.Background(), "claude-code", []byte(`{}`), HookOptions{})
	if err == nil || ans.Status == "approved" || strings.Contains(string(ans.Body), "allow") {
		t.Fatalf("pending as A, then approved as B: %+v %v", ans, err)
	}
	if !strings.Contains(err.Error(), `about request "B", not "A"`) {
		t.Errorf("error: %v", err)
	}
}

// TestHookServerFailureAfterPendingSaysWhatFailed: the server's own failure
// while the hook asks again (a database error) is a deny that names no
// request; it is printed as the server wrote it, saying what failed, not
// refused as an answer about another request.
func TestHookServerFailureAfterPendingSaysWhatFailed(t *testing.T) {
	url := pendingThen(t, "error", "", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"gatehouse: database error"}}`)
	ans, err := (&Client{URL: url}).Hook(context.Background(), "claude-code", []byte(`{}`), HookOptions{})
	if err != nil || ans.Status != "error" || !strings.Contains(string(ans.Body), "database error") {
		t.Fatalf("a failure after pending: %+v %v", ans, err)
	}
}

// pendingThen is a hook server that answers the first call pending as
// request A, and every later one with status, request id (none if "") and
// body; it returns the server's URL.
func pendingThen(t *testing.T, status, id, body string) string {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Gatehouse-Status", "pending")
			w.Header().Set("Gatehouse-Request-Id", "A")
			fmt.Fprint(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"still waiting"}}`)
			return
		}
		w.Header().Set("Gatehouse-Status", status)
		if id != "" {
			w.Header().Set("Gatehouse-Request-Id", id)
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestModifiedArgsAreNilWithoutAnEdit: an approval without edits comes with
// "modified_args": null, as the server writes it. The docs' Go example
// (docs/sdks.md) runs the call with res.ModifiedArgs when it is not nil:
// the call must then run with its own arguments, not with null.
func TestModifiedArgsAreNilWithoutAnEdit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The real server's answer (gatehouse serve, a route allowing deploy).
		w.Write([]byte(`{"request_id":"01M87Q2AJWA1Q49774KCRKNA7C","status":"approved","allow":true,"error":"","modified_args":null,"side_effects":["gatehouse: allowed by route ok"],"decided_at":"2026-11-24T21:23:24.380823Z","decided_by":"gatehouse","decided_via":"policy"}`))
	}))
	defer srv.Close()
	args := json.RawMessage(`{"env":"staging","dry_run":true}`)
	res, err := (&Client{URL: srv.URL}).Gate(context.Background(), Request{ToolName: "deploy", ToolArgs: args})
	if err != nil || !res.Allow {
		t.Fatalf("res %+v err %v", res, err)
	}
	if res.ModifiedArgs != nil { // docs/sdks.md, "Go"
		args = res.ModifiedArgs // the approver's edits
	}
	if string(args) != `{"env":"staging","dry_run":true}` {
		t.Fatalf("an approval without edits has ModifiedArgs %q: the documented code runs the call with %s, not with the approved arguments", res.ModifiedArgs, args)
	}
}

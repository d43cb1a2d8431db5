package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestHugeWaitsAndTimeouts: seconds past what a time.Duration holds (about
// 292 years) wrapped negative on the way in, so ?wait=1e10, which should
// wait the longest wait there is, was refused as negative, and
// "timeout_seconds": 1e10 was told it must be at least 1. A huge wait
// waits the longest wait; NaN and infinities are refused as what they are;
// a huge timeout is refused naming the gate's maximum. Found by a reader.
func TestHugeWaitsAndTimeouts(t *testing.T) {
	e := newEnvWith(t, nil, func(o *web.Options) { o.MaxWait = 100 * time.Millisecond })
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":1}}`)

	for _, wait := range []string{"1e10", "9223372037", "1e400", "2562048h"} {
		code, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals/"+r.ID+"?wait="+wait, "")
		var got gate.Request
		if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got.Status != gate.StatusPending {
			t.Errorf("GET ?wait=%s: %d %s; want it to wait the longest wait and answer pending", wait, code, body)
		}
		code, body = call(t, e.srv.URL, "", http.MethodPost, "/api/v1/gate?wait="+wait, `{"tool_name":"oa__purchase_pay","idempotency_key":"k"}`)
		var res web.HookResult
		if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || res.Status != "pending" {
			t.Errorf("POST /api/v1/gate?wait=%s: %d %s; want it to wait the longest wait and answer pending", wait, code, body)
		}
	}
	for _, wait := range []string{"NaN", "Inf", "-Inf", "infinity"} {
		code, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals/"+r.ID+"?wait="+wait, "")
		if code != http.StatusBadRequest || !strings.Contains(body, `wait: \"`+wait+`\" is not a finite number of seconds`) {
			t.Errorf("?wait=%s: %d %s", wait, code, body)
		}
	}
	for _, tc := range []struct{ timeout, want string }{
		{"1e10", "timeout_seconds: must be at most 86400"},
		{"1e300", "timeout_seconds: must be at most 86400"},
		{"-1e300", "timeout_seconds: must be at least 1"},
	} {
		code, body := call(t, e.srv.URL, "", http.MethodPost, "/api/v1/approvals", `{"tool_name":"oa__purchase_pay","timeout_seconds":`+tc.timeout+`}`)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("timeout_seconds %s: %d %s; want %q", tc.timeout, code, body, tc.want)
		}
	}
}

// TestLongSearchRefused: a search is a LIKE '%q%' over each row's
// arguments, in time their length times q's: one agent's request of 250
// KB of "a" and ?q= of 20,000 "a" and a "b" took 3 s of a core to list
// (49,000: 6 s a row). A q past web.MaxQuery is refused.
func TestLongSearchRefused(t *testing.T) {
	e := newEnv(t)
	e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"x":"` + strings.Repeat("a", 250<<10) + `"}}`)
	q := strings.Repeat("a", 20000) + "b"
	start := time.Now()
	code, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals?q="+q, "")
	if code != http.StatusBadRequest {
		t.Errorf("GET ?q= of %d bytes: %d in %v, %.100s; want 400", len(q), code, time.Since(start), body)
	}
	if code, body := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals?q="+strings.Repeat("a", web.MaxQuery), ""); code != http.StatusOK {
		t.Errorf("GET ?q= of web.MaxQuery bytes: %d %.100s", code, body)
	}
}

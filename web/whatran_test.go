package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Only the token that made a request may report what ran on it, and only
// on an approved request.
func TestReportsOnlyFromTheRequestsToken(t *testing.T) {
	e := newFacesEnv(t)
	ctx := context.Background()
	submit := func(callID string) *gate.Request {
		return e.submitAs("agent-a", `{"tool_name":"Bash","requires_confirmation":true,"session_id":"s1","tool_call_id":"`+callID+
			`","idempotency_key":"`+callID+`","tool_args":{"command":"ls"}}`)
	}
	report := func(token, callID string) {
		t.Helper()
		body := `{"hook_event_name":"PostToolUse","session_id":"s1","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"` + callID +
			`","tool_response":{"stdout":"a b","password":"p"}}`
		code, out := call(t, e.srv.URL, token, http.MethodPost, "/hooks/claude-code", body)
		if code != http.StatusOK || out != "{}" {
			t.Fatalf("report as %s: %d %s", token, code, out)
		}
	}
	ran := func(id string) []gate.Event {
		evs, _ := e.svc.Events(ctx, id)
		var out []gate.Event
		for _, ev := range evs {
			if ev.Type == gate.EventToolRan || ev.Type == gate.EventToolFailed {
				out = append(out, ev)
			}
		}
		return out
	}
	approved, pending, rejected := submit("call-1"), submit("call-2"), submit("call-3")
	for id, approve := range map[string]bool{approved.ID: true, rejected.ID: false} {
		if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: id, Approve: approve, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
			t.Fatal(err)
		}
	}
	report("reader", "call-1") // another token, even one that reads everything
	if n := len(ran(approved.ID)); n != 0 {
		t.Fatalf("another token's report was recorded")
	}
	report("agent-a", "call-1")
	report("agent-a", "call-2")
	report("agent-a", "call-3")
	if got := ran(approved.ID); len(got) != 1 || got[0].Detail != `{"stdout":"a b","password":"[redacted]"}` || got[0].Channel != "hook" {
		t.Fatalf("the approved request's outcome: %+v", got)
	}
	if len(ran(pending.ID))+len(ran(rejected.ID)) != 0 {
		t.Error("an outcome was recorded on a request that was not approved")
	}
}

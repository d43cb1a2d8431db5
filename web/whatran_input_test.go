package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// A report of what ran carries the input the tool ran with. Found by its
// tool_use_id, it was attached to the approved request whatever that input
// was: a call approved as `ls` that ran as `rm -rf /srv` (another
// PreToolUse hook's updatedInput, or a client that ignored the approver's
// edit) showed on the page as the approved `ls`, with the output of the
// other command under "What ran".
func TestWhatRanIsNotAttachedToOtherArguments(t *testing.T) {
	e := newFacesEnv(t)
	ctx := context.Background()
	r := e.submitAs("agent-a", `{"tool_name":"Bash","requires_confirmation":true,"session_id":"s1","tool_call_id":"call-1",`+
		`"idempotency_key":"call-1","tool_args":{"command":"ls"}}`)
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	body := `{"hook_event_name":"PostToolUse","session_id":"s1","tool_name":"Bash","tool_input":{"command":"rm -rf /srv"},` +
		`"tool_use_id":"call-1","tool_response":{"stdout":"removed"}}`
	if code, out := call(t, e.srv.URL, "agent-a", http.MethodPost, "/hooks/claude-code", body); code != http.StatusOK || out != "{}" {
		t.Fatalf("report: %d %s", code, out)
	}
	evs, _ := e.svc.Events(ctx, r.ID)
	for _, ev := range evs {
		if ev.Type == gate.EventToolRan {
			t.Fatalf("a report of `rm -rf /srv` was recorded as what ran for the approval of `ls`: %q", ev.Detail)
		}
	}
	// The approved input (key order and spacing aside) is still recorded.
	body = `{"hook_event_name":"PostToolUse","session_id":"s1","tool_name":"Bash","tool_input":{ "command" : "ls" },` +
		`"tool_use_id":"call-1","tool_response":{"stdout":"a b"}}`
	call(t, e.srv.URL, "agent-a", http.MethodPost, "/hooks/claude-code", body)
	evs, _ = e.svc.Events(ctx, r.ID)
	n := 0
	for _, ev := range evs {
		if ev.Type == gate.EventToolRan {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the report of the approved input: %d tool_ran events", n)
	}
}

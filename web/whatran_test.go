package web_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
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

// A hook registered on the wrong event (?event=PostToolUse on a PreToolUse
// hook) still gates the question its input names: the input's own event
// wins, so the call is never waved through as a report of what ran.
func TestHookEventParamNeverTurnsAQuestionIntoAReport(t *testing.T) {
	e := newFacesEnv(t)
	body := `{"hook_event_name":"PreToolUse","session_id":"s9","tool_name":"oa__purchase_pay","tool_input":{"amount":60000},"tool_use_id":"toolu_9"}`
	code, out := call(t, e.srv.URL, "agent-a", http.MethodPost, "/hooks/claude-code?event=PostToolUse&wait=1s", body)
	if code != http.StatusOK || out == "{}" || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Fatalf("a PreToolUse question on a hook registered as PostToolUse: %d %s", code, out)
	}
}

// A report of what ran too large to read (over 1 MiB) is still answered
// as a report: {} with Gatehouse-Status: noted, as every report is.
func TestOversizedReportIsNoted(t *testing.T) {
	e := newFacesEnv(t)
	body := `{"hook_event_name":"PostToolUse","session_id":"s1","tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t1","tool_response":"` +
		strings.Repeat("x", 2<<20) + `"}`
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/hooks/claude-code", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+scopeTokens["agent-a"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(out) != "{}" || res.Header.Get("Gatehouse-Status") != "noted" {
		t.Fatalf("an oversized report: %d %q %s", res.StatusCode, res.Header.Get("Gatehouse-Status"), out)
	}
}

// TestWhatRanHidesByKeyRulesAddedLater: a report stored before a key rule
// existed ({"access_token": …}) showed its value in "What ran": a trail's
// details were redacted by the patterns only, though the docs say a rule
// added later hides old requests too. Found by a reader.
func TestWhatRanHidesByKeyRulesAddedLater(t *testing.T) {
	e := newFacesEnv(t) // keys: password, *token*
	r := e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"env":"prod"}}`)
	alice := e.login("alice")
	alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}})
	// Ran stores the detail as given: what a server without the rule wrote.
	if ok, err := e.svc.Ran(context.Background(), gate.Caller{Name: "agent-a"}, r.ID, false, `{"stdout":"ok","access_token":"tok-123"}`); !ok || err != nil {
		t.Fatalf("ran: %v %v", ok, err)
	}
	_, page := alice.get("/approvals/" + r.ID)
	if strings.Contains(page, "tok-123") || !strings.Contains(page, "ok") {
		t.Fatal(`"What ran" shows the value of access_token, which the key rule *token* hides everywhere else`)
	}
}

// TestWhatRanHidesByKeyRulesInALongReport: a report longer than the trail
// keeps was cut as text, no longer JSON, and shown redacted by the
// patterns alone: a key rule added later did not hide access_token's
// value (a second reader). It is shrunk value by value now, and stays
// JSON.
func TestWhatRanHidesByKeyRulesInALongReport(t *testing.T) {
	e := newFacesEnv(t) // keys: password, *token*
	r := e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"env":"prod"}}`)
	alice := e.login("alice")
	alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}})
	detail := `{"access_token":"tok-123","stdout":"` + strings.Repeat("line of output ", 300) + `"}`
	if ok, err := e.svc.Ran(context.Background(), gate.Caller{Name: "agent-a"}, r.ID, false, detail); !ok || err != nil {
		t.Fatalf("ran: %v %v", ok, err)
	}
	if _, page := alice.get("/approvals/" + r.ID); strings.Contains(page, "tok-123") || !strings.Contains(page, "line of output") {
		t.Fatal(`"What ran" shows access_token's value when the report was long`)
	}
}

// TestWhatRanHidesByKeyRulesInAReportOfManyValues: a long report whose
// length is in its numbers (or keys, or many short values) did not shrink
// by cutting strings, so it was cut as text and shown by the patterns
// alone (a third reader). Its lists and objects keep their first members
// now, and it stays JSON.
func TestWhatRanHidesByKeyRulesInAReportOfManyValues(t *testing.T) {
	e := newFacesEnv(t) // keys: password, *token*
	r := e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"env":"prod"}}`)
	alice := e.login("alice")
	alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}})
	detail := `{"access_token":"tok-123","ids":[` + strings.Repeat("1234567,", 400) + `1]}`
	if ok, err := e.svc.Ran(context.Background(), gate.Caller{Name: "agent-a"}, r.ID, false, detail); !ok || err != nil {
		t.Fatalf("ran: %v %v", ok, err)
	}
	if _, page := alice.get("/approvals/" + r.ID); strings.Contains(page, "tok-123") || !strings.Contains(page, "1234567") {
		t.Fatal(`"What ran" shows access_token's value when the report's length is in its numbers`)
	}
}

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

package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Every active grant is on the grants page, with its Revoke: the page read
// the newest 1,000 grants of all, so behind 1,000 newer ended ones an
// active grant, still approving calls, was on neither list. Found by a
// reader.
func TestGrantsPageShowsEveryActiveGrant(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: 720 * time.Hour, Timeout: time.Hour}}, nil)
	ctx := context.Background()
	give := func(n int) string {
		r, _, err := e.svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), AgentID: "bot"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Remember: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
			t.Fatal(err)
		}
		gs, err := e.svc.Grants(ctx, nil, true)
		if err != nil || len(gs) == 0 || gs[0].RequestID != r.ID {
			t.Fatalf("no grant for %s: %v", r.ID, err)
		}
		return gs[0].ID
	}
	old := give(0)
	for i := 1; i <= 1000; i++ {
		if _, err := e.svc.RevokeGrant(ctx, give(i), "web:alice"); err != nil {
			t.Fatal(err)
		}
	}
	// The old grant still approves.
	if r, _, err := e.svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"n":0}`), AgentID: "bot"}); err != nil || r.DecidedVia != gate.ViaGrant {
		t.Fatalf("the old grant does not approve: %v %+v", err, r)
	}
	b := e.login("alice")
	_, body := b.get("/grants")
	if !strings.Contains(body, "/grants/"+old+"/revoke") {
		t.Errorf("grant %s is active and approving calls, but the grants page shows no Revoke for it (page says active: %v)",
			old, !strings.Contains(body, "No grant is active"))
	}
}

// On a server without tokens, GET /api/v1/grants lists the grants given to
// agent_ids (kept as agent_id:<name>, apart from tokens'): it listed those
// of caller "" alone, so none. A third reader of the change.
func TestTokenlessGrantsAreListed(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "deploys", Tool: "deploy", Channels: []string{gate.WebChannel}, Remember: time.Hour, Timeout: time.Hour}}, nil)
	ctx := context.Background()
	r := e.submit(`{"tool_name":"deploy","tool_args":{"env":"prod"},"agent_id":"build-bot"}`)
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Remember: true, Actor: "web:alice", Via: gate.WebChannel}); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(e.srv.URL + "/api/v1/grants")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Grants []gate.Grant }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || len(out.Grants) != 1 || out.Grants[0].Caller != "agent_id:build-bot" || out.Grants[0].ArgsHash == "[redacted]" {
		t.Errorf("grants listed: %+v (%v); want the one given to agent_id build-bot, whole", out.Grants, err)
	}
}

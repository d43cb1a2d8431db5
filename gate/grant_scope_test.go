package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// A grant is for the place its call ran in: in a Cursor workspace of
// several roots the hook puts no cwd, only workspace_roots, which the
// grant did not hold, so approving rm -rf build for an hour in
// /home/dev/app:/home/dev/lib also approved it in /srv/prod. Found by a
// reader.
func TestGrantIsForOneCursorWorkspace(t *testing.T) {
	db := storetest.SQLite(t)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
		{Name: "shell", Tool: "Shell", Channels: []string{"fake"}, Remember: time.Hour}}})
	call := func(roots string) gate.Submission {
		c, err := hook.Parse(hook.Cursor, []byte(`{"hook_event_name":"preToolUse","conversation_id":"c1","tool_name":"Shell",`+
			`"tool_input":{"command":"rm -rf build"},"tool_use_id":"t1","workspace_roots":`+roots+`}`))
		if err != nil {
			t.Fatal(err)
		}
		md, _ := json.Marshal(c.Metadata)
		return gate.Submission{ToolName: c.ToolName, ToolArgs: c.ToolInput, Metadata: md, Caller: "bot"}
	}
	mine := call(`["/home/dev/app","/home/dev/lib"]`)
	t.Logf("metadata the hook gives: %s", mine.Metadata)
	first := submit(t, svc, mine)
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
		t.Fatal(err)
	}
	other := call(`["/srv/prod","/srv/prod-data"]`)
	if r := submit(t, svc, other); r.Allowed() {
		t.Errorf("`rm -rf build` in workspace /srv/prod:/srv/prod-data %s via %s by %s: the grant was given in /home/dev/app:/home/dev/lib",
			r.Status, r.DecidedVia, r.DecidedBy)
	}
}

// A token's grant is the token's: a call with no token that only says
// agent_id "deployer" (a server whose config dropped its tokens) is not
// the token deployer, and gets none of its grants. Found by a reader.
func TestGrantOfATokenIsNotAnAgentLabel(t *testing.T) {
	db := storetest.SQLite(t)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
		{Name: "deploys", Tool: "deploy", Channels: []string{"fake"}, Remember: 720 * time.Hour}}})
	args := json.RawMessage(`{"env":"prod"}`)
	first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: args, Caller: "deployer"})
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
		t.Fatal(err)
	}
	if r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: args, AgentID: "deployer"}); r.Allowed() {
		t.Errorf("an unauthenticated call labelled deployer %s via %s: the grant was given to the token deployer", r.Status, r.DecidedVia)
	}
}

// An unpaired surrogate escape is no text: Go reads every one as U+FFFD,
// so {"path":"/data/\udc80"} and {"path":"/data/\udcff"}, two files to a
// Python tool, were one call to a grant (and one to the approver's eye).
// Such arguments are refused; a pair (an emoji) is text. Found by a
// reader.
func TestLoneSurrogatesAreRefused(t *testing.T) {
	db := storetest.SQLite(t)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
		{Name: "files", Tool: "delete_file", Channels: []string{"fake"}, Remember: time.Hour}}})
	for _, args := range []string{`{"path":"/data/\udc80"}`, `{"path":"\ud800"}`, `{"p":"\ud800\u0041"}`, `{"\udfff":1}`} {
		_, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "delete_file", ToolArgs: json.RawMessage(args), Caller: "bot"})
		if gate.ErrorCode(err) != gate.EINVALID || !strings.Contains(err.Error(), "unpaired surrogate") {
			t.Errorf("%s: %v; want it refused", args, err)
		}
	}
	for _, args := range []string{`{"name":"\ud83d\ude00"}`, `{"path":"C:\\udc80"}`} {
		if _, _, err := svc.Submit(context.Background(), gate.Submission{ToolName: "delete_file", ToolArgs: json.RawMessage(args), Caller: "bot"}); err != nil {
			t.Errorf("%s: %v; want it taken", args, err)
		}
	}
}

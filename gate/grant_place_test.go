package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/hook"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestR9GrantIsForOneCursorWorkspace: Cursor's preToolUse names no cwd,
// only workspace_roots. With one root the hook uses it as the cwd; with
// several it sets none, and the grant's place is "nowhere": approving
// `rm -rf build` for an hour in one multi-root workspace approves it in
// every other one (and for any call of the token that names no place).
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

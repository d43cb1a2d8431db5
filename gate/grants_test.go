package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// TestGrantsHoldOnlyUnderTheRouteAsItIsNow: a grant is given under one
// config and used under the next. A reload that narrows what a route
// remembers, shortens it, or takes the giver off the approvers ends the
// grants given before; so does a pending request approved-for after the
// reload (it was made under the old rules). Found by a second reader. A
// reload that widens what the route matches ends its grants for any
// arguments: they were given for what it matched.
func TestGrantsHoldOnlyUnderTheRouteAsItIsNow(t *testing.T) {
	deploys := func(r gate.Route) []gate.Route {
		r.Name, r.Tool = "deploys", "deploy"
		if r.Channels == nil {
			r.Channels = []string{"fake"}
		}
		return []gate.Route{r}
	}
	staging, prod := json.RawMessage(`{"env":"staging"}`), json.RawMessage(`{"env":"prod"}`)
	for _, tc := range []struct {
		name          string
		before, after gate.Route
		later         time.Duration // after the reload, before the call
		reloadFirst   bool          // the reload comes before the approval (of a request made before it)
		call          json.RawMessage
	}{
		{name: "any arguments narrowed to the same", before: gate.Route{Remember: time.Hour, RememberAny: true},
			after: gate.Route{Remember: time.Hour}, call: prod},
		{name: "a pending request approved-for after the narrowing", before: gate.Route{Remember: time.Hour, RememberAny: true},
			after: gate.Route{Remember: time.Hour}, reloadFirst: true, call: prod},
		{name: "remember shortened", before: gate.Route{Remember: 720 * time.Hour},
			after: gate.Route{Remember: time.Hour}, later: 2 * time.Hour, call: staging},
		{name: "the giver is no longer an approver", before: gate.Route{Remember: time.Hour, Approvers: []string{"web:alice", "web:cfo"}},
			after: gate.Route{Remember: time.Hour, Approvers: []string{"web:cfo"}}, call: staging},
		{name: "the quorum raised", before: gate.Route{Remember: time.Hour},
			after: gate.Route{Remember: time.Hour, Quorum: 2}, call: staging},
		{name: "no approvers list, and the grant's channel gone", before: gate.Route{Remember: time.Hour},
			after: gate.Route{Remember: time.Hour, Channels: []string{"web"}}, call: staging},
		// The approver said "any staging deploy for an hour"; a reload
		// that widens what the route matches does not widen the grant.
		{name: "any arguments, the route's condition widened", before: gate.Route{Remember: time.Hour, RememberAny: true, When: `args.env == "staging"`},
			after: gate.Route{Remember: time.Hour, RememberAny: true, When: `args.env in ["staging", "prod"]`}, call: prod},
		{name: "any arguments, the route's condition dropped", before: gate.Route{Remember: time.Hour, RememberAny: true, When: `args.env == "staging"`},
			after: gate.Route{Remember: time.Hour, RememberAny: true}, call: prod},
		{name: "a pending request approved-for after the widening", before: gate.Route{Remember: time.Hour, RememberAny: true, When: `args.env == "staging"`},
			after: gate.Route{Remember: time.Hour, RememberAny: true}, reloadFirst: true, call: prod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				clk := newClock()
				svc := newService(t, db, svcOpts{clock: clk, chans: []gate.Channel{newFake("fake")}, routes: deploys(tc.before)})
				ctx := context.Background()
				reload := func() {
					if err := svc.SetRoutes(deploys(tc.after), gate.Defaults{Channels: []string{"fake"}}); err != nil {
						t.Fatal(err)
					}
				}
				first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: staging, Caller: "bot"})
				if tc.reloadFirst {
					reload()
				}
				if _, err := svc.Decide(ctx, gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
					t.Fatal(err)
				}
				if !tc.reloadFirst {
					reload()
				}
				clk.Add(tc.later)
				if r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: tc.call, Caller: "bot"}); r.Allowed() {
					t.Errorf("approved %s by %s: the grant was given under rules the route no longer has", r.DecidedVia, r.DecidedBy)
				}
			})
		})
	}
	t.Run("a grant that still holds is used", func(t *testing.T) {
		db := storetest.SQLite(t)
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: deploys(gate.Route{Remember: 720 * time.Hour})})
		first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: staging, Caller: "bot"})
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
			t.Fatal(err)
		}
		if err := svc.SetRoutes(deploys(gate.Route{Remember: time.Hour}), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: staging, Caller: "bot"}); r.DecidedVia != gate.ViaGrant {
			t.Errorf("within the shortened hour: %s via %s, want approved via grant", r.Status, r.DecidedVia)
		}
	})
	t.Run("a grant for any arguments holds while the route matches the same", func(t *testing.T) {
		db := storetest.SQLite(t)
		staged := gate.Route{Remember: time.Hour, RememberAny: true, When: `args.env == "staging"`}
		svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: deploys(staged)})
		first := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: staging, Caller: "bot"})
		if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
			t.Fatal(err)
		}
		staged.Message, staged.Looks.Label = "staging deploys", "Staging"
		if err := svc.SetRoutes(deploys(staged), gate.Defaults{Channels: []string{"fake"}}); err != nil {
			t.Fatal(err)
		}
		if r := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging","v":2}`), Caller: "bot"}); r.DecidedVia != gate.ViaGrant {
			t.Errorf("after a reload that changed the route's words only: %s via %s, want approved via grant", r.Status, r.DecidedVia)
		}
	})
}

// TestGrantIsForOneWorkingDirectory: hooks report the working directory
// in metadata.cwd, where a relative path points; approving `rm -rf build`
// for an hour in one checkout does not approve it in another.
func TestGrantIsForOneWorkingDirectory(t *testing.T) {
	db := storetest.SQLite(t)
	svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
		{Name: "shell", Tool: "Bash", Channels: []string{"fake"}, Remember: time.Hour}}})
	args := json.RawMessage(`{"command":"rm -rf build"}`)
	app := json.RawMessage(`{"cwd":"/home/dev/app"}`)
	first := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: args, Metadata: app, Caller: "bot"})
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
		t.Fatal(err)
	}
	if r := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: args, Metadata: json.RawMessage(`{"cwd":"/srv/prod"}`), Caller: "bot"}); r.Allowed() {
		t.Errorf("the same command in /srv/prod approved via %s", r.DecidedVia)
	}
	// A grant given with no cwd does not cover a call whose cwd is not a
	// string: {"cwd": 5} is not "no cwd".
	dist := json.RawMessage(`{"command":"rm -rf dist"}`)
	nowhere := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: dist, Caller: "bot"})
	if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: nowhere.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
		t.Fatal(err)
	}
	for _, md := range []string{`{"cwd":5}`, `{"cwd":["/srv/prod"]}`} {
		if r := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: dist, Metadata: json.RawMessage(md), Caller: "bot"}); r.Allowed() {
			t.Errorf("metadata %s: approved via %s by a grant given with no cwd", md, r.DecidedVia)
		}
	}
	if r := submit(t, svc, gate.Submission{ToolName: "Bash", ToolArgs: args, Metadata: app, Caller: "bot"}); r.DecidedVia != gate.ViaGrant {
		t.Errorf("the same command in the same directory: %s via %s, want approved via grant", r.Status, r.DecidedVia)
	}
}

// TestGrantIsForOneMCPServer: Cursor names an MCP call's server only in
// metadata (mcp_url or mcp_command), and the tool name is bare, so
// approving a query on a dev server for an hour approved the same query on
// a prod server (a reader); with args: any, any query on any server and in
// any directory, since such a grant hashed nothing (a ninth reader).
func TestGrantIsForOneMCPServer(t *testing.T) {
	for _, anyArgs := range []bool{false, true} {
		t.Run(fmt.Sprintf("any args %v", anyArgs), func(t *testing.T) {
			db := storetest.SQLite(t)
			svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: []gate.Route{
				{Name: "db", Tool: "database_query", Channels: []string{"fake"}, Remember: time.Hour, RememberAny: anyArgs}}})
			args := json.RawMessage(`{"query":"DROP TABLE users"}`)
			dev := json.RawMessage(`{"cwd":"/proj","mcp_url":"http://dev-db.local:3000"}`)
			first := submit(t, svc, gate.Submission{ToolName: "database_query", ToolArgs: json.RawMessage(`{"query":"SELECT 1"}`), Metadata: dev, Caller: "bot"})
			if !anyArgs {
				first = submit(t, svc, gate.Submission{ToolName: "database_query", ToolArgs: args, Metadata: dev, Caller: "bot"})
			}
			if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake", Remember: true}); err != nil {
				t.Fatal(err)
			}
			for _, md := range []string{`{"cwd":"/proj","mcp_url":"https://prod-db.example.com"}`, `{"cwd":"/proj","mcp_command":"npx prod-db-mcp"}`,
				`{"cwd":"/proj"}`, `{"cwd":"/srv/prod","mcp_url":"http://dev-db.local:3000"}`, `{}`} {
				if r := submit(t, svc, gate.Submission{ToolName: "database_query", ToolArgs: args, Metadata: json.RawMessage(md), Caller: "bot"}); r.Allowed() {
					t.Errorf("metadata %s: approved via %s by a grant given on the dev server", md, r.DecidedVia)
				}
			}
			if r := submit(t, svc, gate.Submission{ToolName: "database_query", ToolArgs: args, Metadata: dev, Caller: "bot"}); r.DecidedVia != gate.ViaGrant {
				t.Errorf("the same query on the same server: %s via %s, want approved via grant", r.Status, r.DecidedVia)
			}
		})
	}
}

// TestGrantsDoNotApproveTheirGiversCalls: with self_approval: forbid, a
// grant alice gave on bob's call (a shared token) approved her own later
// call at once in her name, which she could not approve herself (a sixth
// reader). Her call now asks a person; bob's calls still use the grant.
// Through Feishu the tap's actor is an app's open_id and the person is
// found by the union_id beside it: a grant kept the actor alone, so on a
// route of person: approvers it never held, and it approved its giver's
// own calls (an eighth reader). Grants keep every identity tapped with now
// (migration 9).
func TestGrantsDoNotApproveTheirGiversCalls(t *testing.T) {
	for _, giver := range []gate.Decision{
		{Actor: "web:alice", Via: "web"},
		{Actor: "feishu:ou_alice_in_app2", Identities: []string{"feishu:union:on_alice"}, Voter: "feishu:union:on_alice", Via: "fake"},
	} {
		t.Run(giver.Actor, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				svc := peopleService(t, db, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"fake"},
					Approvers: []string{"person:alice", "person:bob"}, Remember: time.Hour, RememberAny: true, Plan: gate.Plan{ForbidSelf: true}})
				ctx := context.Background()
				bobs := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"staging"}`), Caller: "ci", UserID: "u_bob"})
				d := giver
				d.RequestID, d.Approve, d.Remember = bobs.ID, true, true
				if _, err := svc.Decide(ctx, d); err != nil {
					t.Fatal(err)
				}
				mine := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), Caller: "ci", UserID: "u_42"})
				if mine.Status != gate.StatusPending {
					t.Fatalf("alice's own call: %s by %s via %s (%s); want it to ask a person", mine.Status, mine.DecidedBy, mine.DecidedVia, mine.Reason)
				}
				again := submit(t, svc, gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), Caller: "ci", UserID: "u_bob"})
				if again.Status != gate.StatusApproved || again.DecidedVia != gate.ViaGrant {
					t.Fatalf("bob's next call: %s via %s (%s); want alice's grant to approve it", again.Status, again.DecidedVia, again.Reason)
				}
				gs, err := svc.Grants(ctx, nil, true)
				if err != nil || len(gs) != 1 || !slices.Contains(gs[0].GivenIDs, giver.Actor) ||
					giver.Voter != "" && !slices.Contains(gs[0].GivenIDs, giver.Voter) {
					t.Fatalf("grants: %v %+v", err, gs)
				}
			})
		})
	}
}

// TestKeyAnswersOnlyWhatTheRulesNowAllow: a call resent under its key (a
// hook resends a call with no call id under one key for a minute, an SDK
// retries) was given what the key held, whatever the rules said now: a
// reload to deny did not hold for a minute, an earlier policy allow
// answered a call the rules now ask about, and a pending request kept a
// now-denied call waiting for a person. A person's approval of the very
// call still answers it. Found by a tenth reader.
func TestKeyAnswersOnlyWhatTheRulesNowAllow(t *testing.T) {
	route := func(a policy.Action) []gate.Route {
		return []gate.Route{{Name: "pushes", Tool: "deploy", Action: a, Channels: []string{"fake"}}}
	}
	call := func(key string) gate.Submission {
		return gate.Submission{ToolName: "deploy", ToolArgs: json.RawMessage(`{"env":"prod"}`), Caller: "bot", IdempotencyKey: key, RequiresConfirmation: no()}
	}
	for _, tc := range []struct {
		name          string
		before, after policy.Action
		person        bool // a person approves the request made before
		want          gate.Status
	}{
		{"a policy allow, now denied", policy.Allow, policy.Deny, false, ""},
		{"a policy allow, now asked", policy.Allow, policy.Ask, false, ""},
		{"pending, now denied", policy.Ask, policy.Deny, false, ""},
		{"a person's approval, now asked", policy.Ask, policy.Ask, true, gate.StatusApproved},
		{"a person's approval, now denied", policy.Ask, policy.Deny, true, ""},
		{"pending, still asked", policy.Ask, policy.Ask, false, gate.StatusPending},
		{"a policy allow, still allowed", policy.Allow, policy.Allow, false, gate.StatusApproved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := storetest.SQLite(t)
			svc := newService(t, db, svcOpts{chans: []gate.Channel{newFake("fake")}, routes: route(tc.before)})
			first := submit(t, svc, call("k1"))
			if tc.person {
				if _, err := svc.Decide(context.Background(), gate.Decision{RequestID: first.ID, Approve: true, Actor: "web:alice", Via: "fake"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := svc.SetRoutes(route(tc.after), gate.Defaults{Channels: []string{"fake"}}); err != nil {
				t.Fatal(err)
			}
			r, created, err := svc.Submit(context.Background(), call("k1"))
			switch {
			case tc.want == "" && gate.ErrorCode(err) != gate.EIDEMPOTENCY:
				t.Fatalf("resent: %+v (created %v), %v; want a conflict", r, created, err)
			case tc.want != "" && (err != nil || created || r.ID != first.ID || r.Status != tc.want):
				t.Fatalf("resent: %+v (created %v), %v; want request %s, %s", r, created, err, first.ID, tc.want)
			}
		})
	}
}

// An agent that reconnects under its key after its request expired on a
// route that allows on timeout (here after a restart past the deadline,
// whose sweep expires the row first) gets that verdict, as long as the
// rules as they are now still allow on timeout; after a reload that
// denies on timeout, or denies the call, the key answers nothing.
func TestKeyAnswersAnExpiryTheRouteStillAllows(t *testing.T) {
	route := func(a policy.Action, onTimeout gate.Verdict) []gate.Route {
		return []gate.Route{{Name: "lenient", Tool: "read_*", Action: a, Channels: []string{"fake"}, Timeout: time.Minute, OnTimeout: onTimeout}}
	}
	in := gate.Submission{ToolName: "read_file", ToolArgs: json.RawMessage(`{"path":"/etc/motd"}`), IdempotencyKey: "k1", Caller: "bot"}
	for _, tc := range []struct {
		name  string
		after []gate.Route
		want  gate.Status // "": a conflict
	}{
		{"the route unchanged", route(policy.Ask, gate.VerdictAllow), gate.StatusExpired},
		{"now denied on timeout", route(policy.Ask, gate.VerdictDeny), ""},
		{"now denied", route(policy.Deny, gate.VerdictAllow), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "gatehouse.db")
			clk := newClock()
			db1 := storetest.Open(t, store.SQLite, dsn)
			svc1 := newService(t, db1, svcOpts{clock: clk, routes: route(policy.Ask, gate.VerdictAllow), chans: []gate.Channel{newFake("fake")}})
			first := submit(t, svc1, in)
			svc1.Stop()
			svc1.Drain(context.Background())
			db1.Close()

			clk.Add(2 * time.Minute) // down past the deadline
			db2 := storetest.Open(t, store.SQLite, dsn)
			svc2 := newService(t, db2, svcOpts{clock: clk, routes: tc.after, chans: []gate.Channel{newFake("fake")}})
			row, err := svc2.Get(context.Background(), first.ID)
			// Silence allows no call the policy in force denies, nor one
			// on a route that now denies on timeout.
			denied := tc.name == "now denied" || tc.name == "now denied on timeout"
			if err != nil || denied && (row.Status != gate.StatusRejected || row.Allowed()) || !denied && (row.Status != gate.StatusExpired || !row.Allowed()) {
				t.Fatalf("after the restart: %+v, %v; want expired and allowed, or rejected when the call is now denied", row, err)
			}
			r, created, err := svc2.Submit(context.Background(), in)
			switch {
			case denied && (err != nil || r.ID != first.ID || r.Allowed()):
				t.Fatalf("resent: %+v (created %v), %v; want the rejection", r, created, err)
			case denied:
			case tc.want == "" && gate.ErrorCode(err) != gate.EIDEMPOTENCY:
				t.Fatalf("resent: %+v (created %v), %v; want a conflict", r, created, err)
			case tc.want != "" && (err != nil || created || r.ID != first.ID || r.Status != tc.want || !r.Allowed()):
				t.Fatalf("resent: %+v (created %v), %v; want request %s, %s and allowed", r, created, err, first.ID, tc.want)
			}
		})
	}
}

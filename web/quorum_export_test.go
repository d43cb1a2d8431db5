package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Under a two-person rule, the export names who approved: every approver,
// not only the one whose vote met the quorum.
func TestExportNamesEveryApproverOfAQuorum(t *testing.T) {
	e := newEnvWith(t, []gate.Route{{Name: "two", Tool: "deploy", Channels: []string{gate.WebChannel}, Timeout: time.Hour, Quorum: 2}}, nil)
	ctx := context.Background()
	r, _, err := e.svc.Submit(ctx, gate.Submission{ToolName: "deploy", ToolArgs: []byte(`{"env":"prod"}`), Caller: "anonymous"})
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"web:carol", "web:dave"} {
		if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: who, Via: gate.WebChannel}); err != nil {
			t.Fatal(err)
		}
	}
	_, csv := e.login("audrey").get("/export.csv")
	if !strings.Contains(csv, "web:carol") || !strings.Contains(csv, "web:dave") {
		t.Fatalf("the export of a request two people approved:\n%s", csv)
	}
}

// An approval that a reload stopped counting is still an approval given:
// the export lists it (docs/web.md says so), and the trail tells which
// counted, each vote saying what it counted as when cast. Before, the docs
// said the column held only counted approvals. Found by a reader.
func TestExportListsAnApprovalAReloadStoppedCounting(t *testing.T) {
	route := func(approvers ...string) []gate.Route {
		return []gate.Route{{Name: "payments", Tool: "oa__purchase_*", Channels: []string{gate.WebChannel}, Timeout: time.Hour,
			Approvers: approvers, Quorum: 2}}
	}
	e := newEnvWith(t, route("slack:T1/UA", "slack:T1/UB", "slack:T1/UX"), nil)
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":1}}`)
	ctx := context.Background()
	vote := func(who string, want gate.Status) {
		t.Helper()
		got, err := e.svc.Decide(ctx, gate.Decision{RequestID: r.ID, Approve: true, Actor: who, Via: gate.WebChannel})
		if err != nil || got.Status != want {
			t.Fatalf("%s: %v, want %s", who, err, want)
		}
	}
	vote("slack:T1/UX", gate.StatusPending)
	if err := e.svc.SetRoutes(route("slack:T1/UA", "slack:T1/UB"), gate.Defaults{Channels: []string{gate.WebChannel}}); err != nil {
		t.Fatal(err)
	}
	vote("slack:T1/UA", gate.StatusPending) // UX's approval counts no more
	vote("slack:T1/UB", gate.StatusApproved)
	_, csv := e.login("audrey").get("/export.csv")
	if !strings.Contains(csv, "slack:T1/UA slack:T1/UB slack:T1/UX") {
		t.Errorf("the approvals column of the request:\n%s", csv)
	}
	events, err := e.svc.Events(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var votes []string
	for _, ev := range events {
		if ev.Type == gate.EventVote {
			votes = append(votes, ev.Actor+": "+ev.Detail)
		}
	}
	if want := "slack:T1/UX: approval 1 of 2|slack:T1/UA: approval 1 of 2|slack:T1/UB: approval 2 of 2"; strings.Join(votes, "|") != want {
		t.Errorf("the trail's votes: %q, want %q", votes, want)
	}
}

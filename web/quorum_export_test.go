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

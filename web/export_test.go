package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// The documented columns (web/README.md). Changing them breaks people's
// spreadsheets, so this list is spelled out rather than taken from the code.
var documentedColumns = []string{
	"id", "status", "tool_name", "summary", "agent_id", "user_id", "session_id", "tool_call_id", "route",
	"created_at", "expires_at", "decided_at", "decided_by", "decided_via", "waited_seconds", "reason",
	"tool_args", "modified_args", "metadata", "edited", "caller", "approvals",
}

func TestExportCSV(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pay := e.submit(`{"tool_name":"oa__purchase_pay","summary":"=HYPERLINK(\"http://evil\",\"x\")","agent_id":"@buyer",
		"tool_args":{"vendor":"ACME, Inc.","note":"line one\nline two"},"metadata":{"org":"o_1"}}`)
	e.submit(`{"tool_name":"shell_exec","summary":"-2+3","requires_confirmation":true}`)
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "web:alice", Via: "web",
		Reason: "+1 ok", ModifiedArgs: json.RawMessage(`{"vendor":"ACME, Inc.","amount":5}`)}); err != nil {
		t.Fatal(err)
	}
	b := e.login("audrey")
	res, body := b.get("/export.csv?tool=oa__purchase_*")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("status %d, headers %v", res.StatusCode, res.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v\n%s", err, body)
	}
	if !slices.Equal(rows[0], documentedColumns) {
		t.Fatalf("columns\n got %v\nwant %v", rows[0], documentedColumns)
	}
	if len(rows) != 2 {
		t.Fatalf("%d data rows, want 1 (the tool filter)", len(rows)-1)
	}
	row := map[string]string{}
	for i, c := range rows[0] {
		row[c] = rows[1][i]
	}
	for col, want := range map[string]string{
		"id": pay.ID, "status": "approved", "tool_name": "oa__purchase_pay", "decided_by": "web:alice", "decided_via": "web",
		"summary":       `'=HYPERLINK("http://evil","x")`, // formula defused
		"agent_id":      "'@buyer",
		"reason":        "'+1 ok",
		"tool_args":     `{"vendor":"ACME, Inc.","note":"line one\nline two"}`,
		"modified_args": `{"vendor":"ACME, Inc.","amount":5}`,
		"metadata":      `{"org":"o_1"}`,
	} {
		if row[col] != want {
			t.Errorf("%s = %q, want %q", col, row[col], want)
		}
	}
	if row["decided_at"] == "" || row["waited_seconds"] == "" || row["created_at"] == "" {
		t.Errorf("times missing: %v", row)
	}

	t.Run("no filter, every request", func(t *testing.T) {
		_, body := b.get("/export.csv")
		rows, _ := csv.NewReader(strings.NewReader(body)).ReadAll()
		if len(rows) != 3 || rows[1][3] != "'-2+3" {
			t.Errorf("rows %q", rows)
		}
	})
	t.Run("needs a login", func(t *testing.T) {
		res, _ := e.browser().get("/export.csv")
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("status %d", res.StatusCode)
		}
	})
}

func TestExportStreamsEveryPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 1234 // more than two store pages
	no := false
	for i := range n {
		if _, _, err := e.svc.Submit(ctx, gate.Submission{ToolName: fmt.Sprintf("tool_%04d", i), RequiresConfirmation: &no}); err != nil {
			t.Fatal(err)
		}
	}
	b := e.login("audrey")
	// People's decisions by default: these were all allowed by policy.
	_, body := b.get("/export.csv")
	if rows, err := csv.NewReader(strings.NewReader(body)).ReadAll(); err != nil || len(rows) != 1 {
		t.Fatalf("the default export holds policy verdicts: %d rows, %v", len(rows)-1, err)
	}
	_, body = b.get("/export.csv?policy=include")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+1 || rows[1][2] != fmt.Sprintf("tool_%04d", n-1) || rows[n][2] != "tool_0000" {
		t.Fatalf("%d rows, first %q, last %q", len(rows)-1, rows[1][2], rows[len(rows)-1][2])
	}

	res, body := b.get("/export.json?status=approved&policy=only")
	var got []gate.Request
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("the JSON does not parse: %v", err)
	}
	if res.Header.Get("Content-Type") != "application/json; charset=utf-8" || len(got) != n || got[0].Status != gate.StatusApproved {
		t.Errorf("%d requests, %q", len(got), res.Header.Get("Content-Type"))
	}
	_, body = b.get("/export.json?status=rejected")
	if strings.TrimSpace(body) != "[\n]" {
		t.Errorf("empty export: %q", body)
	}
}

func TestChartsPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pay := e.submit(`{"tool_name":"oa__purchase_pay"}`)
	e.submit(`{"tool_name":"oa__purchase_refund"}`)
	e.submit(`{"tool_name":"read_file","requires_confirmation":false}`)
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: false, Actor: "web:alice", Via: "web"}); err != nil {
		t.Fatal(err)
	}
	b := e.login("audrey")
	res, page := b.get("/charts")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	for _, want := range []string{"<svg", "Requests and verdicts per day", "Time to decision", "payments", "<td data-label=\"Requests\">2</td>", "50%"} {
		if !strings.Contains(page, want) {
			t.Errorf("the charts page lacks %q", want)
		}
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("the charts page refers to another site")
	}
	if res, _ := b.get("/charts?since=nope"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("bad since: %d", res.StatusCode)
	}
}

package slack

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func fixed(t time.Time) func() time.Time { return func() time.Time { return t } }

// textObj is one text object found in a message, with where it was.
type textObj struct {
	Where    string // "header", "section", "field", "context", "button"
	Type     string // plain_text or mrkdwn
	Text     string
	Verbatim bool
}

// texts walks Block Kit blocks and returns every text object, checking
// Slack's size limits on the way.
func texts(t *testing.T, blocks []map[string]any) []textObj {
	t.Helper()
	var out []textObj
	obj := func(where string, v any, max int) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		o := textObj{Where: where}
		o.Type, _ = m["type"].(string)
		o.Text, _ = m["text"].(string)
		o.Verbatim, _ = m["verbatim"].(bool)
		if n := utf8.RuneCountInString(o.Text); n > max {
			t.Errorf("%s text is %d characters, over Slack's %d", where, n, max)
		}
		out = append(out, o)
	}
	if len(blocks) > 50 {
		t.Errorf("%d blocks, over Slack's 50", len(blocks))
	}
	for _, b := range blocks {
		switch b["type"] {
		case "header":
			obj("header", b["text"], maxHeader)
		case "section":
			obj("section", b["text"], maxSection)
			fields, _ := b["fields"].([]any)
			if len(fields) > 10 {
				t.Errorf("%d fields, over Slack's 10", len(fields))
			}
			for _, f := range fields {
				obj("field", f, maxField)
			}
		case "context":
			els, _ := b["elements"].([]any)
			for _, e := range els {
				obj("context", e, maxSection)
			}
		case "actions":
			els, _ := b["elements"].([]any)
			for _, e := range els {
				m := e.(map[string]any)
				obj("button", m["text"], maxButtonText)
				if v, _ := m["value"].(string); len(v) > 2000 {
					t.Errorf("button value is %d bytes, over 2000", len(v))
				}
			}
		}
	}
	return out
}

func joined(objs []textObj) string {
	var b strings.Builder
	for _, o := range objs {
		b.WriteString(o.Text + "\n")
	}
	return b.String()
}

func hasActions(blocks []map[string]any) bool {
	for _, b := range blocks {
		if b["type"] == "actions" {
			return true
		}
	}
	return false
}

func TestPostCard(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JREQ", t0)
	ref, err := c.Post(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ref2, err := c.Post(context.Background(), testRequest("01JREQ2", t0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, slackCh+":") || ref == ref2 {
		t.Errorf("refs %q, %q: want distinct CHANNEL:TS", ref, ref2)
	}
	calls := f.CallsOf("chat.postMessage")
	if len(calls) != 2 {
		t.Fatalf("%d chat.postMessage calls, want 2", len(calls))
	}
	call := calls[0]
	if call.JSON || call.Token != botToken || call.Form.Get("channel") != slackCh {
		t.Errorf("post: json=%v token=%q channel=%q", call.JSON, call.Token, call.Form.Get("channel"))
	}
	if got := call.Form.Get("text"); !strings.Contains(got, "Approval needed: oa__purchase_pay") {
		t.Errorf("fallback text %q", got)
	}
	blocks := call.Blocks(t)
	all := joined(texts(t, blocks))
	for _, want := range []string{
		"Approval needed: oa__purchase_pay", "Pay ACME ¥60,000",
		"*Tool*\noa__purchase_pay", "*Agent*\nprocurement-bot", "*Requester*\nu_42", "*Route*\npayments",
		"<!date^" + itoa(r.ExpiresAt.Unix()) + "^", "2026-11-21 10:30:00 UTC",
		"\"vendor\": \"ACME\"", "\"amount\": 60000",
		"<https://gate.example.com/approvals/01JREQ|",
		"Approve", "Reject", "Reject with reason",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("card lacks %q:\n%s", want, all)
		}
	}
	var values []string
	for _, b := range blocks {
		if b["type"] == "actions" {
			for _, e := range b["elements"].([]any) {
				values = append(values, e.(map[string]any)["value"].(string))
			}
		}
	}
	if strings.Join(values, ",") != "approve:01JREQ,reject:01JREQ,reason:01JREQ" {
		t.Errorf("button values %v", values)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// allowedMarkup is the markup the adapter itself writes into mrkdwn.
var allowedMarkup = regexp.MustCompile(`<!date\^\d+\^[^|<>]*\|[^<>]*>|<https://gate\.example\.com/approvals/[0-9A-Z]+\|[^<>]*>|<@U[0-9A-Z]+>`)

func TestCardEscapesHostileValues(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JEVIL", t0)
	hostile := "<!channel> <https://evil.example|click> <@U999> & @here ```"
	r.ToolName = "deploy<!here>"
	r.Summary = hostile
	r.AgentID = hostile
	r.UserID = "<!everyone>"
	r.Route = "<#C999>"
	r.ToolArgs, _ = json.Marshal(map[string]string{"cmd": hostile})
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusRejected, "web:<!channel>", "web", hostile
	at := t0.Add(time.Minute)
	r.DecidedAt = &at
	if err := c.Update(context.Background(), r, slackCh+":1.2"); err != nil {
		t.Fatal(err)
	}
	for _, call := range append(f.CallsOf("chat.postMessage"), f.CallsOf("chat.update")...) {
		if txt := call.Form.Get("text"); strings.ContainsAny(txt, "<>") {
			t.Errorf("%s: fallback text not escaped: %q", call.Method, txt)
		}
		for _, o := range texts(t, call.Blocks(t)) {
			if o.Type != "mrkdwn" {
				continue // plain_text is never parsed
			}
			if !o.Verbatim {
				t.Errorf("%s: mrkdwn %s object is not verbatim: %q", call.Method, o.Where, o.Text)
			}
			if rest := allowedMarkup.ReplaceAllString(o.Text, ""); strings.ContainsAny(rest, "<>") {
				t.Errorf("%s: live markup in %s: %q", call.Method, o.Where, o.Text)
			}
		}
		if all := joined(texts(t, call.Blocks(t))); !strings.Contains(all, "&lt;!channel&gt;") {
			t.Errorf("%s: hostile text not shown escaped:\n%s", call.Method, all)
		}
	}
}

func TestCardTruncatesLongValues(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JLONG", t0)
	r.ToolName = strings.Repeat("t", 256)
	r.Summary = strings.Repeat("s", 4096)
	r.AgentID = strings.Repeat("<", 256)
	r.ToolArgs, _ = json.Marshal(map[string]string{"a": strings.Repeat("<&>", 5000), "b": strings.Repeat("ü", 5000)})
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	objs := texts(t, f.CallsOf("chat.postMessage")[0].Blocks(t)) // checks every limit
	all := joined(objs)
	if !strings.Contains(all, "Arguments cut to fit the card") {
		t.Errorf("no truncation note:\n%.500s", all)
	}
	for _, o := range objs {
		if strings.HasPrefix(o.Text, "*Arguments*") {
			if !strings.HasSuffix(o.Text, "…```") {
				t.Errorf("cut arguments do not end with a marker and a closed fence: %q", o.Text[len(o.Text)-20:])
			}
			if strings.Contains(o.Text, "&amp") && regexp.MustCompile(`&[a-z]*$`).MatchString(strings.TrimSuffix(strings.TrimSuffix(o.Text, "```"), "\n…")) {
				t.Errorf("an escape was split")
			}
		}
	}

	// Short arguments are shown whole, with no note.
	f2 := newFakeSlack(t)
	c2 := newTestChannel(t, f2, newFakeDecider(fixed(t0)), fixed(t0))
	if _, err := c2.Post(context.Background(), testRequest("01JSHORT", t0)); err != nil {
		t.Fatal(err)
	}
	if all := joined(texts(t, f2.CallsOf("chat.postMessage")[0].Blocks(t))); strings.Contains(all, "cut to fit") {
		t.Errorf("short arguments flagged as cut")
	}
}

func TestFinalCards(t *testing.T) {
	decided := t0.Add(2 * time.Minute)
	tests := []struct {
		name   string
		mutate func(r *gate.Request)
		want   []string
	}{
		{"approved", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia = gate.StatusApproved, "slack:T123/U456", "ops-slack"
		}, []string{"Approved: oa__purchase_pay", ":white_check_mark: *Approved* by <@U456> (slack:T123/U456) via ops-slack at <!date^"}},
		{"rejected with reason", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusRejected, "web:alice", "web", "over budget"
		}, []string{"Rejected: oa__purchase_pay", ":x: *Rejected* by web:alice via web", "*Reason:* over budget"}},
		{"expired", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusExpired, gate.ActorSystem, "timeout", "no verdict within 30m0s; on timeout: deny"
		}, []string{"Expired: oa__purchase_pay", "*Expired*", "on timeout: deny"}},
		{"cancelled", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusCancelled, "agent:procurement-bot", "api", "user gave up"
		}, []string{"Cancelled: oa__purchase_pay", "*Cancelled* by agent:procurement-bot via api", "*Reason:* user gave up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlack(t)
			c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
			r := testRequest("01JFINAL", t0)
			r.DecidedAt = &decided
			tt.mutate(r)
			if err := c.Update(context.Background(), r, "C777:1700000000.000042"); err != nil {
				t.Fatal(err)
			}
			calls := f.CallsOf("chat.update")
			if len(calls) != 1 {
				t.Fatalf("%d chat.update calls", len(calls))
			}
			call := calls[0]
			if call.Form.Get("channel") != "C777" || call.Form.Get("ts") != "1700000000.000042" || call.Token != botToken {
				t.Errorf("update went to channel=%q ts=%q token=%q", call.Form.Get("channel"), call.Form.Get("ts"), call.Token)
			}
			blocks := call.Blocks(t)
			if hasActions(blocks) {
				t.Error("final card still has buttons")
			}
			all := joined(texts(t, blocks))
			for _, w := range append(tt.want, "Pay ACME", "\"vendor\": \"ACME\"") {
				if !strings.Contains(all, w) {
					t.Errorf("final card lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestUpdateRejectsBadRef(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	if err := c.Update(context.Background(), testRequest("01J", t0), "nonsense"); err == nil {
		t.Fatal("no error for a bad ref")
	}
	if n := len(f.CallsOf("chat.update")); n != 0 {
		t.Errorf("%d calls for a bad ref", n)
	}
}

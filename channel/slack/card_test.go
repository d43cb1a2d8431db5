package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
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
	if got := call.Form.Get("text"); got != "Approval needed: The agent says: Pay ACME ¥60,000" {
		t.Errorf("fallback text %q", got)
	}
	blocks := call.Blocks(t)
	all := joined(texts(t, blocks))
	for _, want := range []string{
		"Pay ACME ¥60,000", "*60,000*",
		"*Tool*\n`oa__purchase_pay`", "*Asked by*\n`procurement-bot for u_42`", "*Route*\npayments",
		"*Time left*\n30m left, until <!date^" + itoa(r.ExpiresAt.Unix()) + "^", "2026-11-21 10:30:00 UTC",
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
		}, []string{"✅ Approved: The agent says: Pay ACME ¥60,000", ":white_check_mark: *Approved* by <@U456> (slack:T123/U456) via ops-slack at <!date^"}},
		{"rejected with reason", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusRejected, "web:alice", "web", "over budget"
		}, []string{"❌ Rejected: The agent says: Pay ACME ¥60,000", ":x: *Rejected* by web:alice via web", "*Reason:* over budget"}},
		{"expired", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusExpired, gate.ActorSystem, "timeout", "no verdict within 30m0s; on timeout: deny"
		}, []string{"⌛ Expired: The agent says: Pay ACME ¥60,000", "*Expired*", "on timeout: deny"}},
		{"cancelled", func(r *gate.Request) {
			r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusCancelled, "agent:procurement-bot", "api", "user gave up"
		}, []string{"🚫 Cancelled: The agent says: Pay ACME ¥60,000", "*Cancelled* by agent:procurement-bot via api", "*Reason:* user gave up"}},
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
			if strings.Contains(joined(texts(t, blocks)), "Time left") {
				t.Error("a final card counts down")
			}
			all := joined(texts(t, blocks))
			for _, w := range append(tt.want, "*Tool*\n`oa__purchase_pay`", "\"vendor\": \"ACME\"") {
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

// withPresenter gives the test channel a presenter that redacts and knows
// the payments route's looks.
func withPresenter(severity string) func(*Options) {
	rd, err := redact.New([]string{"password", "*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	if err != nil {
		panic(err)
	}
	return func(o *Options) {
		o.Present = &present.Presenter{Redact: rd, Looks: func(route string) gate.Looks {
			return gate.Looks{Label: "Payments over ¥50,000", Severity: severity}
		}}
	}
}

func blockTypes(blocks []map[string]any) string {
	var ts []string
	for _, b := range blocks {
		ts = append(ts, fmt.Sprint(b["type"]))
	}
	return strings.Join(ts, ",")
}

func buttons(blocks []map[string]any) []map[string]any {
	var out []map[string]any
	for _, b := range blocks {
		if b["type"] == "actions" {
			for _, e := range b["elements"].([]any) {
				out = append(out, e.(map[string]any))
			}
		}
	}
	return out
}

// checkConfirm checks a confirmation dialog against Slack's limits.
func checkConfirm(t *testing.T, c map[string]any) {
	t.Helper()
	for key, max := range map[string]int{"title": maxConfirmTitle, "text": maxConfirmText, "confirm": maxConfirmWord, "deny": maxConfirmWord} {
		o, _ := c[key].(map[string]any)
		if o == nil || o["type"] != "plain_text" {
			t.Errorf("confirm %s: %v", key, c[key])
			continue
		}
		if n := utf8.RuneCountInString(fmt.Sprint(o["text"])); n > max {
			t.Errorf("confirm %s is %d characters, over Slack's %d", key, n, max)
		}
	}
}

func TestCardIsRiskFirst(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0.Add(10*time.Minute)), withPresenter("high"))
	r := testRequest("01JRISK", t0)
	r.Summary = ""
	r.ToolName = "Bash"
	r.ToolArgs = json.RawMessage(`{"command":"git push origin main","cwd":"/repo"}`)
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	blocks := f.CallsOf("chat.postMessage")[0].Blocks(t)
	// What will happen, the command with the route and time left, the
	// buttons, and only then the raw arguments.
	if got := blockTypes(blocks); got != "header,section,actions,section,context" {
		t.Fatalf("blocks %s", got)
	}
	objs := texts(t, blocks)
	if objs[0].Text != "🟠 Run `git push origin main` in /repo" || objs[0].Type != "plain_text" {
		t.Errorf("header %+v", objs[0])
	}
	if objs[1].Text != "```git push origin main```" {
		t.Errorf("the command is not in large type: %q", objs[1].Text)
	}
	all := joined(objs)
	for _, want := range []string{"*Route*\npayments (Payments over ¥50,000) · high", "*Time left*\n20m left", "*Asked by*\n`procurement-bot for u_42`"} {
		if !strings.Contains(all, want) {
			t.Errorf("card lacks %q:\n%s", want, all)
		}
	}
	bs := buttons(blocks)
	if bs[0]["action_id"] != actionApprove || bs[0]["style"] != "primary" || bs[0]["confirm"] != nil {
		t.Errorf("approve is not the plain primary action: %v", bs[0])
	}
	if !strings.HasPrefix(objs[len(objs)-2].Text, "*Arguments*") {
		t.Errorf("arguments are not folded below the buttons")
	}
}

func TestCriticalApprovalIsConfirmed(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0), withPresenter("critical"))
	r := testRequest("01JCRIT", t0)
	r.RememberSeconds = 3600
	r.Summary = strings.Repeat("Pay ACME ", 100)
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	blocks := f.CallsOf("chat.postMessage")[0].Blocks(t)
	if h := texts(t, blocks)[0].Text; !strings.HasPrefix(h, "🔴 The agent says: Pay ACME") {
		t.Errorf("header %q", h)
	}
	bs := buttons(blocks)
	var labels []string
	for _, b := range bs {
		labels = append(labels, fmt.Sprint(b["text"].(map[string]any)["text"]))
	}
	if strings.Join(labels, "|") != "Approve|Approve & allow repeats for 1h|Reject|Reject with reason" {
		t.Errorf("buttons %q", labels)
	}
	approve, _ := bs[0]["confirm"].(map[string]any)
	if approve == nil || bs[0]["style"] != "primary" || approve["style"] != "danger" {
		t.Fatalf("a critical approval is not confirmed: %v", bs[0])
	}
	checkConfirm(t, approve)
	// With a summary of 900 characters, the tool and route still end the
	// confirmation (a tenth reader found them cut off).
	if txt := approve["text"].(map[string]any)["text"].(string); !strings.Contains(txt, "Pay ACME") || !strings.HasSuffix(txt, "\nTool: oa__purchase_pay · route payments (Payments over ¥50,000)") {
		t.Errorf("the confirmation does not say what it approves: %q", txt)
	}
	remember, _ := bs[1]["confirm"].(map[string]any)
	if remember == nil {
		t.Fatal("approve-for is not confirmed")
	}
	checkConfirm(t, remember)
	if bs[2]["confirm"] != nil || bs[2]["style"] != "danger" {
		t.Errorf("reject: %v", bs[2])
	}
}

func TestCardsAreRedacted(t *testing.T) {
	const key = "AKIAIOSFODNN7EXAMPLE"
	f := newFakeSlack(t)
	d := newFakeDecider(fixed(t0))
	c := newTestChannel(t, f, d, fixed(t0), withPresenter(""))
	r := testRequest("01JSECRET", t0)
	r.Summary = "Deploy with key " + key
	r.ToolArgs = json.RawMessage(`{"env":"prod","db":{"Password":"hunter2"},"api_token":"tok-123","cmd":"deploy --key ` + key + `"}`)
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusApproved, "web:alice", "web", "ok, key "+key+" is fine"
	r.ModifiedArgs = json.RawMessage(`{"env":"prod","db":{"Password":"hunter3"}}`)
	at := t0.Add(time.Minute)
	r.DecidedAt = &at
	if err := c.Update(context.Background(), r, slackCh+":1.2"); err != nil {
		t.Fatal(err)
	}
	for _, call := range append(f.CallsOf("chat.postMessage"), f.CallsOf("chat.update")...) {
		raw := call.Form.Encode()
		for _, secret := range []string{key, "hunter2", "hunter3", "tok-123"} {
			if strings.Contains(raw, secret) || strings.Contains(call.Form.Get("blocks"), secret) {
				t.Errorf("%s carries %s", call.Method, secret)
			}
		}
		if all := joined(texts(t, call.Blocks(t))); !strings.Contains(all, `"Password": "[redacted]"`) || !strings.Contains(all, `"api_token": "[redacted]"`) {
			t.Errorf("%s: redacted keys not shown as [redacted]:\n%s", call.Method, all)
		}
	}
	if r.ToolArgs == nil || !strings.Contains(string(r.ToolArgs), "hunter2") {
		t.Error("the request was changed")
	}
}

// A card's notification text is escaped once: Slack shows "&amp;" as "&",
// and a second escape left "R&amp;D" in the notification for "R&D". The
// text stays inert all the same. Found by a reader.
func TestFallbackTextEscapedOnce(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JREQ", t0)
	r.Summary = "Pay R&D <team>"
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.DecidedBy, r.DecidedVia = gate.StatusApproved, "web:alice", "web"
	if err := c.Update(context.Background(), r, slackCh+":1.2"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, want string }{
		{"chat.postMessage", "Approval needed: The agent says: Pay R&amp;D &lt;team&gt;"},
		{"chat.update", "Approved: The agent says: Pay R&amp;D &lt;team&gt;"},
	} {
		calls := f.CallsOf(tc.method)
		if len(calls) != 1 {
			t.Fatalf("%d %s calls", len(calls), tc.method)
		}
		if text := calls[0].Form.Get("text"); text != tc.want {
			t.Errorf("%s: text on the wire %q, want %q", tc.method, text, tc.want)
		}
	}
}

// A long command keeps its end on the card: cut only at its end, `ls`
// followed by 1,700 " -a" and then "; rm -rf ~" showed the -a's and never
// the rm, with a summary or without. The large type and the arguments are
// cut in the middle now. Found by a reader.
func TestCutCommandShowsItsEnd(t *testing.T) {
	for name, summary := range map[string]string{"with a summary": "List the files", "without": ""} {
		t.Run(name, func(t *testing.T) {
			f := newFakeSlack(t)
			c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
			r := testRequest("01JCUT", t0)
			r.ToolName, r.Summary = "Bash", summary
			b, _ := json.Marshal(map[string]string{"command": "ls" + strings.Repeat(" -a", 1700) + "; rm -rf ~", "description": "list"})
			r.ToolArgs = b
			if _, err := c.Post(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			all := joined(texts(t, f.CallsOf("chat.postMessage")[0].Blocks(t)))
			if strings.Count(all, "rm -rf ~") < 2 || !strings.Contains(all, `"description": "list"`) {
				t.Errorf("the card does not show the command's end in large type and in the arguments:\n%.800s…", all)
			}
		})
	}
}

// A critical approval's confirmation, the last thing read before the call
// runs, names what is in large type when the agent's summary does not:
// it read only "Pay ACME ¥60 for a cable" for a payment of ¥6,000,000.
// Found by a reader.
func TestCriticalConfirmationNamesTheAmount(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0), withPresenter("critical"))
	r := testRequest("01JCRIT", t0)
	r.ToolArgs = json.RawMessage(`{"vendor":"ACME","amount":6e6,"currency":"CNY"}`)
	r.Summary = "Pay ACME ¥60 for a cable"
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	confirm, _ := buttons(f.CallsOf("chat.postMessage")[0].Blocks(t))[0]["confirm"].(map[string]any)
	if confirm == nil {
		t.Fatal("a critical approval is not confirmed")
	}
	if txt := confirm["text"].(map[string]any)["text"].(string); !strings.Contains(txt, "¥6,000,000") || !strings.Contains(txt, "Pay ACME ¥60 for a cable") {
		t.Errorf("the confirmation does not name the amount beside the agent's words: %q", txt)
	}
}

// The confirmation names the amount whatever the agent's summary says:
// said at the end of a long summary (which the confirmation cuts), or as
// JP¥6,000,000 for a payment of ¥6,000,000 yuan, it was taken for said and
// left out. A third reader of the confirmation.
func TestConfirmationNamesTheAmountWhateverTheSummarySays(t *testing.T) {
	var o Options
	withPresenter("critical")(&o)
	for _, summary := range []string{"Pay ACME ¥60 for a cable" + strings.Repeat(".", 240) + " ¥6,000,000", "Pay ACME JP¥6,000,000 for a cable"} {
		r := testRequest("01JCRIT", t0)
		r.ToolArgs = json.RawMessage(`{"vendor":"ACME","amount":6e6,"currency":"CNY"}`)
		r.Summary = summary
		if txt := confirmText(o.Present.View(r)); !strings.Contains(txt, "\n¥6,000,000\n") {
			t.Errorf("summary %.40q…: the confirmation does not name the amount on a line of its own: %q", summary, txt)
		}
	}
}

// An edit of a value the cards show redacted is still said on the final
// card: judged on the redacted copies, the two were alike. A third reader.
func TestEditOfARedactedValueIsSaid(t *testing.T) {
	var o Options
	withPresenter("high")(&o) // redacts "password"
	r := testRequest("01JEDIT", t0)
	at := t0.Add(time.Second)
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia = gate.StatusApproved, &at, "web:alice", "web"
	r.ToolArgs = json.RawMessage(`{"password":"old","user":"bob"}`)
	r.ModifiedArgs = json.RawMessage(`{"password":"new","user":"bob"}`)
	if s := verdictText(o.Present.View(r)); !strings.Contains(s, "edited arguments") {
		t.Errorf("the verdict does not say the arguments were edited: %q", s)
	}
}

package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
)

// sentCard posts r through the channel and returns the message body the
// fake API received and the card it carried.
func sentCard(t *testing.T, e *testEnv, r *gate.Request) (body map[string]any, card map[string]any, rawBody []byte) {
	t.Helper()
	if _, err := e.ch.Post(context.Background(), r); err != nil {
		t.Fatalf("Post: %v", err)
	}
	calls := e.api.Calls("POST /open-apis/im/v1/messages")
	if len(calls) == 0 {
		t.Fatal("no message was sent")
	}
	last := calls[len(calls)-1]
	return decodeBody(t, last.Body)
}

func decodeBody(t *testing.T, raw []byte) (map[string]any, map[string]any, []byte) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("message body is not JSON: %v\n%s", err, raw)
	}
	content, _ := body["content"].(string)
	var card map[string]any
	if err := json.Unmarshal([]byte(content), &card); err != nil {
		t.Fatalf("content is not a JSON card: %v\n%s", err, content)
	}
	return body, card, raw
}

// walk calls fn for every object in a JSON tree with its parent chain.
func walk(v any, fn func(o map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, c := range x {
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}

func tags(card map[string]any) map[string]int {
	n := map[string]int{}
	walk(card, func(o map[string]any) {
		if t, ok := o["tag"].(string); ok {
			n[t]++
		}
	})
	return n
}

// allText is every plain_text content of the card, joined.
func allText(card map[string]any) string {
	var b strings.Builder
	walk(card, func(o map[string]any) {
		if o["tag"] == "plain_text" {
			s, _ := o["content"].(string)
			b.WriteString(s + "\n")
		}
	})
	return b.String()
}

func TestPostSendsCardJSON2(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	ref, err := e.ch.Post(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if ref != "om_1" {
		t.Errorf("ref = %q, want the message id om_1", ref)
	}
	tok := e.api.Calls("POST /open-apis/auth/v3/tenant_access_token/internal")
	if len(tok) != 1 || tok[0].Auth != "" {
		t.Fatalf("token calls = %+v", tok)
	}
	msgs := e.api.Calls("POST /open-apis/im/v1/messages")
	if len(msgs) != 1 {
		t.Fatalf("message calls = %d", len(msgs))
	}
	m := msgs[0]
	if m.Path != "/open-apis/im/v1/messages" || m.Query != "receive_id_type=chat_id" || m.Auth != "Bearer t-1" {
		t.Errorf("send: path %q query %q auth %q", m.Path, m.Query, m.Auth)
	}
	body, card, _ := decodeBody(t, m.Body)
	if body["receive_id"] != "oc_chat" || body["msg_type"] != "interactive" {
		t.Errorf("body = %v", body)
	}
	if u, _ := body["uuid"].(string); u == "" || len(u) > 50 || u != postUUID("ops-feishu", r.ID) {
		t.Errorf("uuid = %q", u)
	}
	if card["schema"] != "2.0" {
		t.Errorf("schema = %v", card["schema"])
	}
	if cfg, _ := card["config"].(map[string]any); cfg["update_multi"] != true {
		t.Errorf("config = %v", card["config"])
	}

	// Element names are unique; both buttons submit the form and call back
	// with nothing but the request id and the choice.
	names := map[string]int{}
	var buttons []map[string]any
	walk(card, func(o map[string]any) {
		if n, ok := o["name"].(string); ok {
			names[n]++
		}
		if o["tag"] == "button" {
			buttons = append(buttons, o)
		}
	})
	for n, k := range names {
		if k > 1 {
			t.Errorf("element name %q used %d times", n, k)
		}
	}
	if len(buttons) != 2 {
		t.Fatalf("buttons = %d, want Approve and Reject", len(buttons))
	}
	choices := map[string]bool{}
	for _, b := range buttons {
		if b["form_action_type"] != "submit" {
			t.Errorf("button %v does not submit the form", b["name"])
		}
		bs, _ := b["behaviors"].([]any)
		if len(bs) != 1 {
			t.Fatalf("behaviors = %v", b["behaviors"])
		}
		beh := bs[0].(map[string]any)
		val, _ := beh["value"].(map[string]any)
		if beh["type"] != "callback" || len(val) != 2 || val["request_id"] != r.ID {
			t.Errorf("behavior = %v", beh)
		}
		choices[val["choice"].(string)] = true
	}
	if !choices["approve"] || !choices["reject"] {
		t.Errorf("choices = %v", choices)
	}
	tg := tags(card)
	if tg["form"] != 1 || tg["input"] != 1 {
		t.Errorf("want one form with the reason input, tags = %v", tg)
	}
	text := allText(card)
	for _, want := range []string{"Pay ACME ¥60,000", "oa__purchase_pay", "procurement-bot", "u_42", "payments",
		"\"vendor\": \"ACME\"", "\"amount\": 60000", "2026-05-01 12:29:00 UTC"} {
		if !strings.Contains(text, want) {
			t.Errorf("card text lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(string(m.Body), "https://gate.example.com/approvals/"+r.ID) {
		t.Error("card has no link to the request's page")
	}
}

func TestCardKeepsHostileTextInert(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	hostile := `<at id=all></at> [x](https://evil.example) **bold** <font color=red>x</font>`
	r.ToolArgs = json.RawMessage(fmt.Sprintf(`{"note":%q}`, hostile))
	r.Summary = hostile
	r.AgentID = hostile
	r.ToolName = "tool " + hostile
	_, card, _ := sentCard(t, e, r)
	if n := tags(card)["lark_md"]; n > 0 {
		t.Errorf("card uses lark_md %d times", n)
	}
	walk(card, func(o map[string]any) {
		for k, v := range o {
			s, ok := v.(string)
			if !ok || (!strings.Contains(s, "<at id=all>") && !strings.Contains(s, "evil.example")) {
				continue
			}
			if o["tag"] != "plain_text" || k != "content" {
				t.Errorf("hostile text in %q of a %v element: %q", k, o["tag"], s)
			}
		}
	})
	if got := strings.Count(allText(card), "<at id=all></at>"); got < 3 {
		t.Errorf("hostile text should be shown verbatim in plain_text, found %d times", got)
	}
}

func TestCardStaysUnder30KB(t *testing.T) {
	big := func(unit string) string { return strings.Repeat(unit, (256<<10)/len(unit)) }
	cases := []struct{ name, payload string }{
		{"ascii", big("abcdefgh")},
		{"quotes and backslashes", big(`"\`)},
		{"control characters", big("\x01\x02\n\t")},
		{"cjk", big("审批通过")},
		{"emoji", big("🚀")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			r := sampleRequest()
			args, _ := json.Marshal(map[string]string{"blob": tc.payload})
			r.ToolArgs = args
			r.Summary = strings.Repeat("\x01\"", 2048)
			r.ToolName = strings.Repeat("\x02", 256)
			_, card, raw := sentCard(t, e, r)
			var body map[string]string
			_ = json.Unmarshal(raw, &body)
			t.Logf("body %d bytes, card %d bytes", len(raw), len(body["content"]))
			if len(raw) >= 30<<10 {
				t.Errorf("message body is %d bytes, want < 30 KB", len(raw))
			}
			if len(body["content"]) >= 30<<10 {
				t.Errorf("card is %d bytes, want < 30 KB", len(body["content"]))
			}
			text := allText(card)
			if !strings.Contains(text, "Arguments truncated") || !strings.Contains(text, "The full arguments are on the Gatehouse page") {
				t.Errorf("no truncation note")
			}
			if len(body["content"]) < 8<<10 && tc.name == "ascii" {
				t.Errorf("card is only %d bytes: truncated far more than needed", len(body["content"]))
			}
			if tags(card)["button"] != 2 {
				t.Error("the buttons were lost")
			}
		})
	}
	t.Run("small args are not truncated", func(t *testing.T) {
		e := newTestEnv(t)
		_, card, _ := sentCard(t, e, sampleRequest())
		if strings.Contains(allText(card), "truncated") {
			t.Error("small arguments were marked truncated")
		}
	})
}

func TestUpdateShowsFinalState(t *testing.T) {
	decided := testNow.Add(-10 * time.Second)
	cases := []struct {
		status gate.Status
		by     string
		reason string
		title  string
		want   []string
	}{
		{gate.StatusApproved, "feishu:ou_alice", "", "Approved", []string{"Approved by feishu:ou_alice via ops-feishu at 2026-05-01 11:59:50 UTC"}},
		{gate.StatusRejected, "feishu:ou_bob", "amount over budget", "Rejected", []string{"Rejected by feishu:ou_bob", "Reason: amount over budget"}},
		{gate.StatusExpired, gate.ActorSystem, "no verdict within 30m0s; on timeout: deny", "Expired", []string{"Expired at 2026-05-01 11:59:50 UTC with no verdict; on timeout: deny"}},
		{gate.StatusCancelled, "agent:procurement-bot", "user aborted", "Cancelled", []string{"Cancelled by the agent", "Reason: user aborted"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.status), func(t *testing.T) {
			e := newTestEnv(t)
			r := sampleRequest()
			r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = tc.status, &decided, tc.by, "ops-feishu", tc.reason
			if err := e.ch.Update(context.Background(), r, "om_9"); err != nil {
				t.Fatal(err)
			}
			calls := e.api.Calls("PATCH ")
			if len(calls) != 1 {
				t.Fatalf("patch calls = %d", len(calls))
			}
			c := calls[0]
			if c.Path != "/open-apis/im/v1/messages/om_9" || c.Query != "" || c.Auth != "Bearer t-1" {
				t.Errorf("patch: path %q query %q auth %q", c.Path, c.Query, c.Auth)
			}
			body, card, _ := decodeBody(t, c.Body)
			if len(body) != 1 {
				t.Errorf("patch body has more than content: %v", body)
			}
			tg := tags(card)
			if tg["button"] != 0 || tg["form"] != 0 || tg["input"] != 0 {
				t.Errorf("final card still has controls: %v", tg)
			}
			if cfg, _ := card["config"].(map[string]any); cfg["update_multi"] != true || card["schema"] != "2.0" {
				t.Error("final card lost schema 2.0 / update_multi")
			}
			hdr := card["header"].(map[string]any)["title"].(map[string]any)
			if hdr["content"] != tc.title+": The agent says: Pay ACME ¥60,000" {
				t.Errorf("title = %v, want %s", hdr["content"], tc.title)
			}
			text := allText(card)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("final card lacks %q:\n%s", w, text)
				}
			}
		})
	}
	t.Run("no message id", func(t *testing.T) {
		e := newTestEnv(t)
		if err := e.ch.Update(context.Background(), sampleRequest(), ""); err == nil {
			t.Error("Update without a ref succeeded")
		}
	})
}

func withPresenter(severity string) func(*Options) {
	rd, err := redact.New([]string{"password", "*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	if err != nil {
		panic(err)
	}
	return func(o *Options) {
		o.Present = &present.Presenter{Redact: rd, Looks: func(string) gate.Looks {
			return gate.Looks{Label: "Payments over ¥50,000", Severity: severity}
		}}
	}
}

// bodyTags lists the tags of the card body's top-level elements, in order.
func bodyTags(card map[string]any) []string {
	var out []string
	for _, e := range card["body"].(map[string]any)["elements"].([]any) {
		m := e.(map[string]any)
		tag := m["tag"].(string)
		if tag == "div" {
			tag += ":" + fmt.Sprint(m["text"].(map[string]any)["text_size"])
		}
		out = append(out, tag)
	}
	return out
}

// TestCardOpensTheArgumentsWhenNothingElseShowsThem: with no command,
// amount, path or URL in large type, the folded arguments were all that
// said what runs, under the agent's own summary ("Count rows in users"
// over DROP TABLE users). They are open then. Found by a tenth reader.
func TestCardOpensTheArgumentsWhenNothingElseShowsThem(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	r.Summary, r.ToolName, r.ToolArgs = "Count rows in users", "db_exec", json.RawMessage(`{"query":"DROP TABLE users"}`)
	_, card, _ := sentCard(t, e, r)
	if title := feishuTitleOf(card); title != "The agent says: Count rows in users" {
		t.Errorf("title %q", title)
	}
	var panel map[string]any
	walk(card, func(o map[string]any) {
		if o["tag"] == "collapsible_panel" {
			panel = o
		}
	})
	if panel["expanded"] != true || !strings.Contains(allText(panel), "DROP TABLE users") {
		t.Errorf("panel %v", panel)
	}
}

func feishuTitleOf(card map[string]any) any {
	return card["header"].(map[string]any)["title"].(map[string]any)["content"]
}

func TestCardIsRiskFirst(t *testing.T) {
	for _, tc := range []struct{ severity, template, tag string }{
		{"", "blue", ""}, {"low", "wathet", "Low risk"}, {"high", "orange", "High risk"}, {"critical", "red", "Critical"},
	} {
		t.Run("severity "+tc.severity, func(t *testing.T) {
			e := newTestEnv(t, withPresenter(tc.severity))
			r := sampleRequest()
			r.Summary, r.ToolName = "", "Bash"
			r.ToolArgs = json.RawMessage(`{"command":"git push origin main","cwd":"/repo"}`)
			_, card, _ := sentCard(t, e, r)
			h := card["header"].(map[string]any)
			if h["title"].(map[string]any)["content"] != "Run `git push origin main` in /repo" || h["template"] != tc.template {
				t.Errorf("header %v", h)
			}
			if sub := h["subtitle"].(map[string]any)["content"]; sub != "payments (Payments over ¥50,000) · procurement-bot for u_42" {
				t.Errorf("subtitle %q", sub)
			}
			tagText := fmt.Sprint(h["text_tag_list"])
			if !strings.Contains(tagText, "Needs approval") || !strings.Contains(tagText, tc.tag) {
				t.Errorf("tags %s", tagText)
			}
			// The command in large type, the facts, the decision, then the
			// arguments, folded.
			got := strings.Join(bodyTags(card), ",")
			if got != "div:heading,div:normal,div:normal,div:normal,form,collapsible_panel,markdown,div:notation" {
				t.Errorf("body %s", got)
			}
			text := allText(card)
			for _, want := range []string{"git push origin main\n", "Time left: 29m left", "Route: payments (Payments over ¥50,000)"} {
				if !strings.Contains(text, want) {
					t.Errorf("card lacks %q:\n%s", want, text)
				}
			}
			var panel map[string]any
			walk(card, func(o map[string]any) {
				if o["tag"] == "collapsible_panel" {
					panel = o
				}
			})
			if panel["expanded"] != false || !strings.Contains(allText(panel), `"command": "git push origin main"`) {
				t.Errorf("panel %v", panel)
			}
			var approve map[string]any
			walk(card, func(o map[string]any) {
				if o["name"] == approveButton {
					approve = o
				}
			})
			if approve["type"] != "primary" {
				t.Errorf("approve is not primary: %v", approve)
			}
			if confirm, _ := approve["confirm"].(map[string]any); (confirm != nil) != (tc.severity == "critical") {
				t.Errorf("confirm on approve: %v", approve["confirm"])
			} else if confirm != nil && !strings.Contains(allText(confirm), "git push origin main") {
				t.Errorf("the confirmation does not say what it approves: %v", confirm)
			}
		})
	}
}

func TestCardsAreRedacted(t *testing.T) {
	const key = "AKIAIOSFODNN7EXAMPLE"
	e := newTestEnv(t, withPresenter(""))
	r := sampleRequest()
	r.Summary = "Deploy with " + key
	r.ToolArgs = json.RawMessage(`{"db":{"PASSWORD":"hunter2"},"api_token":"tok-1","cmd":"deploy ` + key + `"}`)
	_, _, raw := sentCard(t, e, r)
	decided := testNow
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = gate.StatusRejected, &decided, "feishu:ou_bob", "ops-feishu", "do not send "+key
	if err := e.ch.Update(context.Background(), r, "om_1"); err != nil {
		t.Fatal(err)
	}
	patch := e.api.Calls("PATCH ")[0].Body
	for _, b := range [][]byte{raw, patch} {
		for _, secret := range []string{key, "hunter2", "tok-1"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("card carries %s: %s", secret, b)
			}
		}
		_, card, _ := decodeBody(t, b)
		if !strings.Contains(allText(card), `"PASSWORD": "[redacted]"`) {
			t.Errorf("redacted key not shown:\n%s", allText(card))
		}
	}
}

// A critical approval's confirmation names what is in large type when the
// agent's summary does not (Slack's has the same test). Found by a reader.
func TestCriticalConfirmationNamesTheAmount(t *testing.T) {
	e := newTestEnv(t, withPresenter("critical"))
	r := sampleRequest()
	r.ToolArgs = json.RawMessage(`{"vendor":"ACME","amount":6e6,"currency":"CNY"}`)
	r.Summary = "Pay ACME ¥60 for a cable"
	_, card, _ := sentCard(t, e, r)
	var confirm map[string]any
	walk(card, func(o map[string]any) {
		if o["name"] == approveButton {
			confirm, _ = o["confirm"].(map[string]any)
		}
	})
	if txt := allText(confirm); !strings.Contains(txt, "¥6,000,000") || !strings.Contains(txt, "Pay ACME ¥60 for a cable") {
		t.Errorf("the confirmation does not name the amount beside the agent's words: %q", txt)
	}
}

// The final card of an approval of edited arguments says the agent runs
// other arguments than the card shows, and shows them: it read "Approved:
// … Pay ACME ¥60,000" over the proposed ones. Found by a reader.
func TestFinalCardSaysTheArgumentsWereEdited(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	at := testNow.Add(-10 * time.Second)
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia = gate.StatusApproved, &at, "web:alice", "web"
	r.ModifiedArgs = json.RawMessage(`{"vendor":"EVIL","amount":6000000}`)
	if err := e.ch.Update(context.Background(), r, "om_9"); err != nil {
		t.Fatal(err)
	}
	_, card, _ := decodeBody(t, e.api.Calls("PATCH ")[0].Body)
	if all := allText(card); !strings.Contains(all, "Approved with edited arguments") || !strings.Contains(all, `"vendor": "EVIL"`) {
		t.Errorf("the final card does not say the agent runs edited arguments:\n%s", all)
	}
}

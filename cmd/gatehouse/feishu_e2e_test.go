package main

// End-to-end tests of the Feishu channel: the real binary, a local fake of
// the Feishu Open API (token, message create, message patch), and card
// callbacks encrypted and signed the way Feishu builds them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
)

const (
	feishuE2EAppID   = "cli_e2e0123456789"
	feishuE2ESecret  = "e2e-feishu-app-secret"
	feishuE2EVerify  = "e2e-verification-token"
	feishuE2EKey     = "e2e-encrypt-key"
	feishuE2EChat    = "oc_approvals"
	feishuE2EAlice   = "ou_alice"
	feishuE2EMallory = "ou_mallory"
	feishuE2EPublic  = "https://gate.example.test"
)

const (
	feishuSend  = "POST /open-apis/im/v1/messages"
	feishuPatch = "PATCH /open-apis/im/v1/messages/"
)

// feishuConfig is the YAML for one webhook-mode Feishu channel and a route
// sending payments to it, approved by alice's open_id only.
func feishuConfig(baseURL string) string {
	return fmt.Sprintf(`public_url: %s
channels:
%sroutes:
  - name: payments
    match: {tool: "pay"}
    channels: [ops-feishu]
    approvers: ["feishu:%s"]
`, feishuE2EPublic, feishuChannel(baseURL), feishuE2EAlice)
}

// feishuChannel is the channel ops-feishu, an entry of channels:.
func feishuChannel(baseURL string) string {
	return fmt.Sprintf(`  - name: ops-feishu
    type: feishu
    app_id: %s
    app_secret: %s
    verification_token: %s
    encrypt_key: %s
    chat_id: %s
    base_url: %s/
`, feishuE2EAppID, feishuE2ESecret, feishuE2EVerify, feishuE2EKey, feishuE2EChat, baseURL)
}

// feishuTap is a card.action.trigger callback (schema 2.0) as Feishu sends
// it when operator taps the button for choice on request id's card.
func feishuTap(fake *feishutest.Server, eventID, id, choice, operator, reason string) map[string]any {
	return feishutest.CardAction(feishutest.Tap{
		EventID: eventID, Token: feishuE2EVerify, AppID: feishuE2EAppID, TenantKey: "tk_e2e", At: time.Now(),
		OpenID: operator, UserID: "u_" + operator, UnionID: "on_" + operator,
		RequestID: id, Choice: choice, Reason: reason, MessageID: fake.CardOf(id), ChatID: feishuE2EChat,
	})
}

// feishuDeliver POSTs d to /callbacks/feishu.
func feishuDeliver(t *testing.T, base string, d feishutest.Delivery) (int, feishutest.Reply, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/callbacks/feishu", bytes.NewReader(d.Body))
	for k, v := range d.Header {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the callback took %v; Feishu gives up after 3 s", took)
	}
	var a feishutest.Reply
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a, string(raw)
}

// feishuSigned is a fresh, correctly encrypted and signed delivery.
func feishuSigned(payload any) feishutest.Delivery {
	return feishutest.Callback(payload, feishuE2EKey, feishuE2EKey, time.Now())
}

// feishuWalk calls fn on every object of a card.
func feishuWalk(v any, fn func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		fn(v)
		for _, x := range v {
			feishuWalk(x, fn)
		}
	case []any:
		for _, x := range v {
			feishuWalk(x, fn)
		}
	}
}

// feishuButtons are the card's buttons by name.
func feishuButtons(card map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	feishuWalk(card, func(o map[string]any) {
		if o["tag"] == "button" {
			name, _ := o["name"].(string)
			out[name] = o
		}
	})
	return out
}

// feishuPlain is every plain_text content of a card, and feishuMarkup
// every markdown or lark_md content: where mentions and links are live.
func feishuPlain(card map[string]any) (plain, markup string) {
	var p, m strings.Builder
	feishuWalk(card, func(o map[string]any) {
		s, _ := o["content"].(string)
		switch o["tag"] {
		case "plain_text":
			p.WriteString(s + "\n")
		case "markdown", "lark_md":
			m.WriteString(s + "\n")
		}
	})
	return p.String(), m.String()
}

func feishuTitle(card map[string]any) string {
	h, _ := card["header"].(map[string]any)
	ti, _ := h["title"].(map[string]any)
	s, _ := ti["content"].(string)
	return s
}

// feishuFinal checks that card is a final card titled title holding want,
// with no buttons and no form left.
func feishuFinal(t *testing.T, card map[string]any, title string, want ...string) {
	t.Helper()
	raw, _ := json.Marshal(card)
	if card["schema"] != "2.0" || !strings.HasPrefix(feishuTitle(card), title+": ") {
		t.Errorf("final card schema %v title %q, want 2.0 %q: %s", card["schema"], feishuTitle(card), title, raw)
	}
	if cfg, _ := card["config"].(map[string]any); cfg["update_multi"] != true {
		t.Errorf("final card without update_multi: %s", raw)
	}
	if n := len(feishuButtons(card)); n != 0 || strings.Contains(string(raw), `"form"`) {
		t.Errorf("final card still has %d buttons or a form: %s", n, raw)
	}
	plain, _ := feishuPlain(card)
	for _, w := range want {
		if !strings.Contains(plain, w) {
			t.Errorf("final card lacks %q: %s", w, plain)
		}
	}
}

// TestFeishuApproveEndToEnd: an agent waits; its card reaches the fake
// Feishu; unsigned, forged, stale, wrongly tokened, off-chat and
// unauthorised callbacks change nothing; alice's encrypted, signed tap
// approves, and the answer carries the final card; the agent gets the
// verdict with her Feishu identity; a replay of her callback is refused.
func TestFeishuApproveEndToEnd(t *testing.T) {
	fake := feishutest.NewServer(t, feishuE2EAppID, feishuE2ESecret)
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, feishuConfig(fake.URL)))

	// Feishu's URL check when the callback URL is saved, encrypted.
	challenge := map[string]any{"type": "url_verification", "challenge": "ch-e2e-42", "token": feishuE2EVerify}
	if code, a, raw := feishuDeliver(t, srv.URL, feishuSigned(challenge)); code != 200 || a.Challenge != "ch-e2e-42" {
		t.Fatalf("URL verification: %d %s", code, raw)
	}
	challenge["token"] = "not-the-token"
	if code, _, raw := feishuDeliver(t, srv.URL, feishuSigned(challenge)); code != http.StatusUnauthorized {
		t.Fatalf("URL verification with a wrong token: %d %s", code, raw)
	}

	wait := slackAgent(t, srv.URL, "--tool", "pay", "--summary", "Pay ACME",
		"--args", `{"vendor":"ACME","amount":60000,"memo":"[click](https://evil.example) <at id=all></at>"}`)
	id := waitPending(t, srv.URL).ID

	// The card: one message to the configured chat, with a tenant token
	// fetched with the app's credentials.
	send := fake.WaitCalls(t, feishuSend, 1)[0]
	if tok := fake.Calls("POST /open-apis/auth/v3/tenant_access_token/internal"); len(tok) != 1 {
		t.Errorf("%d token fetches before the first send, want 1", len(tok))
	}
	if send.Query != "receive_id_type=chat_id" || send.JSON["receive_id"] != feishuE2EChat || send.JSON["msg_type"] != "interactive" || send.JSON["uuid"] == "" {
		t.Fatalf("message create: ?%s %v", send.Query, send.JSON)
	}
	card := send.Card(t)
	if card["schema"] != "2.0" || feishuTitle(card) != "The agent says: Pay ACME" {
		t.Fatalf("card: %v", card)
	}
	if cfg, _ := card["config"].(map[string]any); cfg["update_multi"] != true {
		t.Errorf("card without update_multi: %v", card)
	}
	buttons := feishuButtons(card)
	for name, choice := range map[string]string{"gatehouse_approve": "approve", "gatehouse_reject": "reject"} {
		b := buttons[name]
		bs, _ := b["behaviors"].([]any)
		if len(bs) != 1 {
			t.Fatalf("button %s: %v", name, b)
		}
		beh, _ := bs[0].(map[string]any)
		if v, _ := beh["value"].(map[string]any); beh["type"] != "callback" || len(v) != 2 || v["request_id"] != id || v["choice"] != choice {
			t.Errorf("button %s behaviour %v, want a callback carrying only %s and %s", name, beh, id, choice)
		}
	}
	plain, markup := feishuPlain(card)
	// (The CLI's encoder sends "<" as \u003c, so only "at id=all" is
	// looked for.)
	if !strings.Contains(plain, "at id=all") || !strings.Contains(plain, "[click](https://evil.example)") || !strings.Contains(plain, "Pay ACME") {
		t.Errorf("the arguments or summary are not on the card as plain text: %s", plain)
	}
	if strings.Contains(markup, "at id=all") || strings.Contains(markup, "evil.example") || !strings.Contains(markup, feishuE2EPublic+"/approvals/"+id) {
		t.Errorf("markdown on the card: %q; want only the link to the request page", markup)
	}

	stillPending := func(why string) {
		t.Helper()
		if r := slackGet(t, srv.URL, id); r.Status != "pending" || r.DecidedBy != "" {
			t.Fatalf("after %s the request is %s by %q, want pending", why, r.Status, r.DecidedBy)
		}
	}
	approve := func(eventID string) map[string]any {
		return feishuTap(fake, eventID, id, "approve", feishuE2EAlice, "")
	}

	// Refused with 401 before any decision.
	wrongToken := approve("ev_wrong_token")
	wrongToken["header"].(map[string]any)["token"] = "not-the-verification-token"
	unsigned := feishuSigned(approve("ev_unsigned"))
	unsigned.Header.Del("X-Lark-Signature")
	tampered := feishuSigned(approve("ev_tampered"))
	tampered.Header.Set("X-Lark-Request-Nonce", "another-nonce")
	for _, tc := range []struct {
		name string
		d    feishutest.Delivery
	}{
		{"bad signature", feishutest.Callback(approve("ev_badsig"), feishuE2EKey, "not-the-encrypt-key", time.Now())},
		{"tampered nonce", tampered},
		{"unsigned", unsigned},
		{"wrong verification token", feishuSigned(wrongToken)},
		{"stale timestamp", feishutest.Callback(approve("ev_stale"), feishuE2EKey, feishuE2EKey, time.Now().Add(-10*time.Minute))},
	} {
		code, a, raw := feishuDeliver(t, srv.URL, tc.d)
		if code != http.StatusUnauthorized || a.Card != nil || a.Toast != nil {
			t.Fatalf("%s: %d %s, want 401 without a card", tc.name, code, raw)
		}
		stillPending(tc.name)
	}

	// Genuine callbacks the gate turns down with a toast.
	offChat := approve("ev_off_chat")
	offChat["event"].(map[string]any)["context"] = map[string]any{"open_message_id": "om_x", "open_chat_id": "oc_elsewhere"}
	for _, tc := range []struct {
		name, want string
		payload    map[string]any
	}{
		{"non-approver", "not an approver", feishuTap(fake, "ev_mallory", id, "approve", feishuE2EMallory, "")},
		{"another chat", "approvals chat", offChat},
	} {
		code, a, raw := feishuDeliver(t, srv.URL, feishuSigned(tc.payload))
		if code != 200 || a.Toast == nil || a.Toast.Type != "error" || !strings.Contains(a.Toast.Content, tc.want) || a.Card != nil {
			t.Fatalf("%s: %d %s, want an error toast saying %q", tc.name, code, raw, tc.want)
		}
		stillPending(tc.name)
	}
	refusals := 0
	for _, e := range slackEvents(t, srv.URL, id) {
		if e.Type == "decision_refused" || e.Type == "callback_refused" {
			refusals++
		}
	}
	if refusals < 2 {
		t.Errorf("the refused taps are not in the trail: %+v", slackEvents(t, srv.URL, id))
	}

	// Alice approves; the answer carries the final card.
	tap := feishuSigned(approve("ev_alice_approves"))
	code, a, raw := feishuDeliver(t, srv.URL, tap)
	if code != 200 || a.Toast == nil || a.Toast.Type != "success" || a.Card == nil || a.Card.Type != "raw" {
		t.Fatalf("approval: %d %s", code, raw)
	}
	feishuFinal(t, a.Card.Data, "Approved", "Approved by feishu:"+feishuE2EAlice+" via ops-feishu", "Request "+id)

	exit, res := wait()
	if exit != 0 || res["status"] != "approved" || res["allow"] != true || res["request_id"] != id {
		t.Fatalf("agent exit %d, printed %v", exit, res)
	}
	r := slackGet(t, srv.URL, id)
	if r.Status != "approved" || r.DecidedBy != "feishu:"+feishuE2EAlice || r.DecidedVia != "ops-feishu" {
		t.Fatalf("request after approval: %+v", r)
	}

	// The very same delivery again: its event_id was seen; refused.
	if code, a, raw := feishuDeliver(t, srv.URL, tap); code != http.StatusUnauthorized || a.Card != nil {
		t.Fatalf("replayed callback: %d %s, want 401", code, raw)
	}
	if r2 := slackGet(t, srv.URL, id); r2 != r {
		t.Errorf("the replay changed the request: %+v, was %+v", r2, r)
	}

	// The answer was the card's update: one send, no patch. The trail's
	// card_updated is written with the card row's final state, in the
	// verdict's transaction, so with it recorded no patch can come later.
	evs := slackEvents(t, srv.URL, id)
	if slackCount(evs, "card_posted") != 1 || slackCount(evs, "card_updated") != 1 || slackCount(evs, "decided") != 1 {
		t.Errorf("trail: %+v", evs)
	}
	if n, m := len(fake.Calls(feishuSend)), len(fake.Calls(feishuPatch)); n != 1 || m != 0 {
		t.Errorf("fake feishu saw %d sends and %d patches, want 1 and 0", n, m)
	}
}

// TestFeishuFinalFormsEndToEnd: a rejection with a reason; an event_id
// replayed onto another request is refused; requests that expire or are
// cancelled get their card patched to its final form; a tap on a cancelled
// card changes nothing and shows the final card.
func TestFeishuFinalFormsEndToEnd(t *testing.T) {
	fake := feishutest.NewServer(t, feishuE2EAppID, feishuE2ESecret)
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, feishuConfig(fake.URL)))

	t.Run("rejected, then its event_id replayed onto another request", func(t *testing.T) {
		wait := slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"amount":1}`)
		first := waitPending(t, srv.URL).ID
		fake.WaitCalls(t, feishuSend, 1)
		code, a, raw := feishuDeliver(t, srv.URL, feishuSigned(feishuTap(fake, "ev_shared", first, "reject", feishuE2EAlice, "  over budget ")))
		if code != 200 || a.Card == nil {
			t.Fatalf("rejection: %d %s", code, raw)
		}
		feishuFinal(t, a.Card.Data, "Rejected", "Rejected by feishu:"+feishuE2EAlice, "Reason: over budget")
		if exit, res := wait(); exit != 1 || res["status"] != "rejected" {
			t.Fatalf("agent exit %d, printed %v", exit, res)
		}

		wait = slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"amount":2}`)
		second := waitPending(t, srv.URL).ID
		fake.WaitCalls(t, feishuSend, 2)
		code, _, raw = feishuDeliver(t, srv.URL, feishuSigned(feishuTap(fake, "ev_shared", second, "approve", feishuE2EAlice, "")))
		if code != http.StatusUnauthorized {
			t.Fatalf("replayed event_id: %d %s, want 401", code, raw)
		}
		if r := slackGet(t, srv.URL, second); r.Status != "pending" {
			t.Fatalf("a replayed event_id decided: %+v", r)
		}
		code, a, raw = feishuDeliver(t, srv.URL, feishuSigned(feishuTap(fake, "ev_fresh", second, "approve", feishuE2EAlice, "")))
		if code != 200 || a.Toast == nil || a.Toast.Type != "success" {
			t.Fatalf("approval with a fresh event_id: %d %s", code, raw)
		}
		if exit, res := wait(); exit != 0 || res["status"] != "approved" {
			t.Fatalf("agent exit %d, printed %v", exit, res)
		}
	})

	t.Run("expired", func(t *testing.T) {
		wait := slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"amount":3}`, "--timeout", "1s")
		if exit, res := wait(); exit != 2 || res["status"] != "expired" || res["allow"] != false {
			t.Fatalf("agent exit %d, printed %v", exit, res)
		}
		sends := fake.WaitCalls(t, feishuSend, 3)
		msg := "om_" + strconv.Itoa(len(sends))
		patch := fake.WaitCalls(t, feishuPatch, 1)[0]
		if patch.Path != "/open-apis/im/v1/messages/"+msg {
			t.Fatalf("patched %s, want the expired request's card %s", patch.Path, msg)
		}
		feishuFinal(t, patch.Card(t), "Expired", "with no verdict; on timeout: deny")
	})

	t.Run("cancelled", func(t *testing.T) {
		wait := slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"amount":4}`)
		id := waitPending(t, srv.URL).ID
		sends := fake.WaitCalls(t, feishuSend, 4)
		msg := "om_" + strconv.Itoa(len(sends))
		if code := api(t, "POST", srv.URL+"/api/v1/approvals/"+id+"/cancel", nil, nil); code != 200 {
			t.Fatalf("cancel: %d", code)
		}
		if exit, res := wait(); exit != 2 || res["status"] != "cancelled" {
			t.Fatalf("agent exit %d, printed %v", exit, res)
		}
		patch := fake.WaitCalls(t, feishuPatch, 2)[1]
		if patch.Path != "/open-apis/im/v1/messages/"+msg {
			t.Fatalf("patched %s, want the cancelled request's card %s", patch.Path, msg)
		}
		feishuFinal(t, patch.Card(t), "Cancelled", "Cancelled by the agent")

		// A tap on the stale card: nothing changes; the answer shows the
		// final card again.
		code, a, raw := feishuDeliver(t, srv.URL, feishuSigned(feishuTap(fake, "ev_late", id, "approve", feishuE2EAlice, "")))
		if code != 200 || a.Toast == nil || a.Toast.Type != "info" || a.Card == nil {
			t.Fatalf("tap on a cancelled card: %d %s", code, raw)
		}
		feishuFinal(t, a.Card.Data, "Cancelled")
		if r := slackGet(t, srv.URL, id); r.Status != "cancelled" {
			t.Fatalf("a tap on a cancelled card changed it: %+v", r)
		}
	})

	// One card per request; patches only for the two decided elsewhere.
	if n, m := len(fake.Calls(feishuSend)), len(fake.Calls(feishuPatch)); n != 4 || m != 2 {
		t.Errorf("fake feishu saw %d sends and %d patches, want 4 and 2", n, m)
	}
}

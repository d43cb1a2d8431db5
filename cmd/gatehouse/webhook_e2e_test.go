package main

// End-to-end test of the webhook channel: the real binary, a local relay
// that checks signatures as the documentation tells relays to, and verdicts
// signed the way a relay signs them.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/webhook/webhooktest"
)

const (
	hookE2ESecret      = "e2e-webhook-secret-0123456789"
	hookE2EOtherSecret = "e2e-other-webhook-secret-0123"
)

// webhookConfig has two webhook channels: deploys go to ops-relay, payments
// to pager-relay (whose approvers list names ops-relay's people too).
func webhookConfig(relayURL, otherURL string) string {
	return fmt.Sprintf(`public_url: https://gate.example.test
channels:
  - name: ops-relay
    type: webhook
    url: %s
    secret: %s
  - name: pager-relay
    type: webhook
    url: %s
    secret: %s
routes:
  - name: deploys
    match: {tool: "deploy"}
    channels: [ops-relay]
  - name: payments
    match: {tool: "pay"}
    channels: [pager-relay]
    approvers: ["webhook:ops-relay/*", "webhook:pager-relay/*"]
`, relayURL, hookE2ESecret, otherURL, hookE2EOtherSecret)
}

// TestWebhookEndToEnd: an agent waits; the card reaches the relay signed;
// forged, stale and foreign verdicts change nothing; the relay's signed
// verdict approves; the agent gets it; the final state reaches the relay
// with the card's reference; a replay is refused.
func TestWebhookEndToEnd(t *testing.T) {
	relay := webhooktest.NewRelay(t, hookE2ESecret)
	pager := webhooktest.NewRelay(t, hookE2EOtherSecret)
	srv := startServer(t, e2eConfig(t, t.TempDir(), 0, webhookConfig(relay.URL, pager.URL)))
	callback := srv.URL + "/callbacks/webhook/ops-relay"

	wait := slackAgent(t, srv.URL, "--tool", "deploy", "--summary", "Deploy prod", "--args", `{"env":"prod"}`)
	id := waitPending(t, srv.URL).ID
	card := relay.Wait(1, webhooktest.OfType("card", id))[0]
	if !card.SignatureOK || card.Message.Request["tool_name"] != "deploy" || card.Message.Request["summary"] != "Deploy prod" ||
		card.Message.CallbackURL != "https://gate.example.test/callbacks/webhook/ops-relay" {
		t.Fatalf("card: signature ok %v, body %s", card.SignatureOK, card.Body)
	}
	if ua := card.Header.Get("User-Agent"); !strings.HasPrefix(ua, "gatehouse/") {
		t.Errorf("User-Agent %q", ua)
	}

	// A payment waits on the pager relay, whose approvers list names
	// ops-relay's people too.
	payWait := slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"amount":60000}`)
	payID := waitTool(t, srv.URL, "pay")
	pager.Wait(1, webhooktest.OfType("card", payID))

	now := time.Now()
	approve := []byte(fmt.Sprintf(`{"request_id":%q,"decision":"approve","actor":"alice@example.com","reason":"ship it"}`, id))
	foreign := []byte(fmt.Sprintf(`{"request_id":%q,"decision":"approve","actor":"alice@example.com","reason":""}`, payID))
	for _, tc := range []struct {
		name   string
		url    string
		body   []byte
		h      http.Header
		status int
	}{
		{"unsigned", callback, approve, http.Header{"Content-Type": {"application/json"}}, 401},
		{"forged", callback, approve, webhooktest.Signed("forged-secret-0123456789", now, approve), 401},
		{"another channel's secret", callback, approve, webhooktest.Signed(hookE2EOtherSecret, now, approve), 401},
		{"stale", callback, approve, webhooktest.Signed(hookE2ESecret, now.Add(-6*time.Minute), approve), 401},
		{"a request sent to another channel", callback, foreign, webhooktest.Signed(hookE2ESecret, now, foreign), 403},
		{"a channel that is no webhook", srv.URL + "/callbacks/webhook/nope", approve, webhooktest.Signed(hookE2ESecret, now, approve), 404},
	} {
		if code, body := webhooktest.Post(t, tc.url, tc.body, tc.h); code != tc.status {
			t.Fatalf("%s: %d %s, want %d", tc.name, code, body, tc.status)
		}
	}
	for _, rid := range []string{id, payID} {
		if r := slackGet(t, srv.URL, rid); r.Status != "pending" {
			t.Fatalf("after refused verdicts request %s is %s by %s", rid, r.Status, r.DecidedBy)
		}
	}

	h := webhooktest.Signed(hookE2ESecret, time.Now(), approve)
	if code, body := webhooktest.Post(t, callback, approve, h); code != 200 || !strings.Contains(body, `"status":"approved"`) {
		t.Fatalf("the relay's verdict: %d %s", code, body)
	}
	code, res := wait()
	if code != 0 || res["status"] != "approved" || res["allow"] != true || res["request_id"] != id {
		t.Fatalf("agent exit %d, printed %v", code, res)
	}
	r := slackGet(t, srv.URL, id)
	if r.DecidedBy != "webhook:ops-relay/alice@example.com" || r.DecidedVia != "ops-relay" {
		t.Fatalf("request after the verdict: %+v", r)
	}
	final := relay.Wait(1, webhooktest.OfType("final", id))[0]
	if !final.SignatureOK || final.Message.Ref != "msg-1" || final.Message.Request["status"] != "approved" ||
		final.Message.Request["decided_by"] != "webhook:ops-relay/alice@example.com" {
		t.Fatalf("final: signature ok %v, body %s", final.SignatureOK, final.Body)
	}

	if code, body := webhooktest.Post(t, callback, approve, h); code != 401 || !strings.Contains(body, "replayed") {
		t.Fatalf("replay: %d %s", code, body)
	}
	evs := slackEvents(t, srv.URL, id)
	if slackCount(evs, "card_posted") != 1 || slackCount(evs, "card_updated") != 1 || slackCount(evs, "decided") != 1 ||
		slackCount(evs, "callback_refused") != 1 {
		t.Errorf("trail: %+v", evs)
	}

	// The pager relay rejects its own request.
	reject := []byte(fmt.Sprintf(`{"request_id":%q,"decision":"reject","actor":"oncall","reason":"over budget"}`, payID))
	if code, body := webhooktest.Post(t, srv.URL+"/callbacks/webhook/pager-relay", reject, webhooktest.Signed(hookE2EOtherSecret, time.Now(), reject)); code != 200 {
		t.Fatalf("pager verdict: %d %s", code, body)
	}
	code, res = payWait()
	if code != 1 || res["allow"] != false || !strings.Contains(fmt.Sprint(res["error"]), "over budget") {
		t.Fatalf("payment agent exit %d, printed %v", code, res)
	}
}

// waitTool polls until a request for tool exists and returns its id.
func waitTool(t *testing.T, base, tool string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range listAll(t, base) {
			if r.ToolName == tool {
				return r.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no request for %s appeared", tool)
	return ""
}

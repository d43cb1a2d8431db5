package main

// Grants ("Approve for D") end to end: the real binary, the fake Slack and
// Feishu, the web page, the agent's CLI and the grants API.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

type apiGrant struct {
	ID        string  `json:"id"`
	Route     string  `json:"route"`
	Caller    string  `json:"caller"`
	Tool      string  `json:"tool"`
	ArgsHash  string  `json:"args_hash"`
	GivenBy   string  `json:"given_by"`
	GivenVia  string  `json:"given_via"`
	RequestID string  `json:"request_id"`
	RevokedAt *string `json:"revoked_at"`
	RevokedBy string  `json:"revoked_by"`
}

func grantsOf(t *testing.T, base, query string) []apiGrant {
	t.Helper()
	var out struct {
		Grants []apiGrant `json:"grants"`
	}
	if code := api(t, "GET", base+"/api/v1/grants"+query, nil, &out); code != 200 {
		t.Fatalf("GET /api/v1/grants%s: %d", query, code)
	}
	return out.Grants
}

// request runs `gatehouse request` to its end (the verdict is at once, or
// the test decides it meanwhile) and returns its exit code and request.
func requestNow(t *testing.T, base string, args ...string) (int, apiRequest) {
	t.Helper()
	wait := slackAgent(t, base, args...)
	code, res := wait()
	id, _ := res["request_id"].(string)
	return code, slackGet(t, base, id)
}

// TestGrantsEndToEnd: on a route that remembers, every channel offers a
// third, confirmed "Approve for D" button; using it approves the call and
// gives a grant that approves the same agent's same call at once (or any
// arguments, where the route says so), audited at each use, listed by the
// API, revoked on the grants page by an approver (not an auditor).
func TestGrantsEndToEnd(t *testing.T) {
	slackFake := slacktest.NewServer(t, slackE2EBot, slackE2EApp)
	feishuFake := feishutest.NewServer(t, feishuE2EAppID, feishuE2ESecret)
	extra := fmt.Sprintf(`public_url: %s
channels:
  - name: ops-slack
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: %s
    api_url: %s
%sroutes:
  - name: deploys
    match: {tool: deploy}
    channels: [ops-slack]
    approvers: ["slack:%s/%s"]
    remember: 1h
  - name: payments
    match: {tool: pay}
    channels: [ops-feishu]
    approvers: ["feishu:%s"]
    remember: {for: 30m, args: any}
  - name: migrations
    match: {tool: migrate}
    channels: [web]
    remember: 2h
`, slackE2EPublic, slackE2EBot, slackE2ESecret, slackE2EChannel, slackFake.URL+"/api",
		feishuChannel(feishuFake.URL), slackE2ETeam, slackE2EAlice, feishuE2EAlice)
	srv := startServer(t, e2eConfig(t, t.TempDir(), 0, extra))

	// Slack: the third button, with a confirmation that says what it gives.
	wait := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"prod","ref":"v1"}`)
	id := waitPending(t, srv.URL).ID
	post := slackFake.WaitCalls(t, "chat.postMessage", 1)[0]
	blocks, raw := post.Blocks(t), post.Form.Get("blocks")
	b := slackButton(blocks, "gatehouse_approve_for")
	if b == nil || b["value"] != "approve_for:"+id || !strings.Contains(slackText([]map[string]any{b}), "for 1h") {
		t.Fatalf("no \"Approve for 1h\" button on the Slack card: %s", raw)
	}
	if c, _ := b["confirm"].(map[string]any); c == nil || !strings.Contains(slackText([]map[string]any{c}), "same agent") {
		t.Fatalf("the Slack button does not confirm what it gives: %v", b)
	}
	tap := slacktest.Form(slackBlockActions(slackE2EAlice, post.TS, "gatehouse_approve_for", "approve_for:"+id))
	if code, body := slackCallback(t, srv.URL, tap, slacktest.Sign(slackE2ESecret, time.Now(), tap)); code != 200 {
		t.Fatalf("approve_for tap: %d %s", code, body)
	}
	if code, res := wait(); code != 0 || res["status"] != "approved" {
		t.Fatalf("the call approved for 1h: exit %d %v", code, res)
	}
	alice := "slack:" + slackE2ETeam + "/" + slackE2EAlice
	code, again := requestNow(t, srv.URL, "--tool", "deploy", "--args", `{"ref":"v1","env":"prod"}`)
	if code != 0 || again.Status != "approved" || again.DecidedVia != "grant" || again.DecidedBy != alice || again.ID == id {
		t.Fatalf("the same call again, under the grant: exit %d %+v", code, again)
	}
	evs := slackEvents(t, srv.URL, again.ID)
	if slackCount(evs, "grant_used") != 1 {
		t.Errorf("the grant's use is not in the trail: %+v", evs)
	}
	if n := len(slackFake.CallsOf("chat.postMessage")); n != 1 {
		t.Errorf("the call a grant approved got a card: %d posts", n)
	}
	other := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"prod","ref":"v2"}`)
	otherID := waitPending(t, srv.URL).ID
	if code := api(t, "POST", srv.URL+"/api/v1/approvals/"+otherID+"/cancel", map[string]string{"reason": "test"}, nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	if code, _ := other(); code != 2 {
		t.Fatalf("other arguments were not asked about: exit %d", code)
	}

	// Feishu: the same button, confirmed; this route's grant covers any arguments.
	waitPay := slackAgent(t, srv.URL, "--tool", "pay", "--args", `{"vendor":"ACME","amount":100}`)
	payID := waitPending(t, srv.URL).ID
	card := feishuFake.WaitCalls(t, feishuSend, 1)[0].Card(t)
	fb := feishuButtons(card)["gatehouse_approve_for"]
	if fb == nil || !strings.Contains(fmt.Sprint(fb), "allow this tool for 30m") || fb["confirm"] == nil {
		t.Fatalf("no confirmed \"Approve for 30m\" button on the Feishu card: %v", feishuButtons(card))
	}
	if code, a, raw := feishuDeliver(t, srv.URL, feishuSigned(feishuTap(feishuFake, "ev_grant", payID, "approve_for", feishuE2EAlice, ""))); code != 200 || a.Toast == nil || a.Toast.Type != "success" {
		t.Fatalf("approve_for on Feishu: %d %s", code, raw)
	}
	if code, res := waitPay(); code != 0 || res["status"] != "approved" {
		t.Fatalf("the payment approved for 30m: exit %d %v", code, res)
	}
	code, pay2 := requestNow(t, srv.URL, "--tool", "pay", "--args", `{"vendor":"Initech","amount":999}`)
	if code != 0 || pay2.DecidedVia != "grant" || pay2.DecidedBy != "feishu:"+feishuE2EAlice {
		t.Fatalf("any arguments under the Feishu grant: exit %d %+v", code, pay2)
	}

	// The web page: approve_for on the request's page.
	waitMig := slackAgent(t, srv.URL, "--tool", "migrate", "--args", `{"db":"orders"}`)
	migID := waitPending(t, srv.URL).ID
	web := webLogin(t, srv.URL, "alice")
	page := get(t, web, srv.URL+"/approvals/"+migID)
	if !strings.Contains(page, `value="approve_for"`) || !strings.Contains(page, "for 2h") {
		t.Fatalf("no \"Approve for 2h\" on the request page")
	}
	if code := webDecide(t, web, srv.URL, migID, "approve_for", ""); code != http.StatusSeeOther {
		t.Fatalf("approve_for on the web page: %d", code)
	}
	if code, _ := waitMig(); code != 0 {
		t.Fatalf("the migration approved for 2h: exit %d", code)
	}
	if code, mig2 := requestNow(t, srv.URL, "--tool", "migrate", "--args", `{"db":"orders"}`); code != 0 || mig2.DecidedVia != "grant" || mig2.DecidedBy != "web:alice" {
		t.Fatalf("the same migration under the web grant: exit %d %+v", code, mig2)
	}

	// The API lists the three; the grants page revokes, for approvers only.
	gs := grantsOf(t, srv.URL, "")
	byRoute := map[string]apiGrant{}
	for _, g := range gs {
		byRoute[g.Route] = g
	}
	if len(gs) != 3 || byRoute["deploys"].RequestID != id || byRoute["deploys"].ArgsHash == "" || !strings.HasPrefix(byRoute["payments"].ArgsHash, "any:") ||
		byRoute["deploys"].Caller != "build-agent" || byRoute["migrations"].GivenBy != "web:alice" {
		t.Fatalf("grants: %+v", gs)
	}
	grantsPage := get(t, web, srv.URL+"/grants")
	m := csrfField.FindStringSubmatch(grantsPage)
	if m == nil || !strings.Contains(grantsPage, byRoute["deploys"].ID) {
		t.Fatalf("the grants page does not list the grant with a revoke form")
	}
	bob := webLogin(t, srv.URL, "bob")
	bobPage := get(t, bob, srv.URL+"/grants")
	bm := csrfField.FindStringSubmatch(bobPage)
	if bm == nil {
		t.Fatalf("no csrf field for bob on the grants page")
	}
	revoke := func(c *http.Client, csrf string) int {
		resp, err := c.PostForm(srv.URL+"/grants/"+byRoute["deploys"].ID+"/revoke", url.Values{"csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := revoke(bob, bm[1]); code != http.StatusForbidden {
		t.Fatalf("an auditor revoked a grant: %d", code)
	}
	if code := revoke(web, m[1]); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", code)
	}
	waitAfter := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"prod","ref":"v1"}`)
	afterID := waitPending(t, srv.URL).ID
	api(t, "POST", srv.URL+"/api/v1/approvals/"+afterID+"/cancel", map[string]string{"reason": "test"}, nil)
	if code, _ := waitAfter(); code != 2 {
		t.Fatalf("a revoked grant still approved: exit %d", code)
	}
	if active := grantsOf(t, srv.URL, ""); len(active) != 2 {
		t.Errorf("%d active grants after the revoke, want 2", len(active))
	}
	for _, g := range grantsOf(t, srv.URL, "?all=1") {
		if g.Route == "deploys" && (g.RevokedAt == nil || g.RevokedBy != "web:alice") {
			t.Errorf("the revoked grant: %+v", g)
		}
	}
}

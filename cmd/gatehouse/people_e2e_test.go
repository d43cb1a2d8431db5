package main

// End-to-end tests of people, self-approval, direct cards, reminders and
// escalation: the real binary, the fake Slack and Feishu APIs, and taps
// signed as the platforms sign them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// peopleConfig: alice (Slack, Feishu and web), bob (Slack), carol
// (Feishu); payments need alice or bob, never the person who asked, go to
// them directly and to #approvals, remind every second, and after two
// seconds go to the CFO's Feishu chat too, where carol may decide.
func peopleConfig(slackURL, feishuURL string) string {
	return fmt.Sprintf(`public_url: %s
people:
  - name: alice
    identities: ["slack:%s/%s", "feishu:%s", "web:alice"]
  - name: bob
    identities: ["slack:%s/U0BOB"]
  - name: carol
    identities: ["feishu:ou_carol"]
channels:
  - name: ops-slack
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: %s
    api_url: %s/api/
  - name: cfo-feishu
    type: feishu
    app_id: %s
    app_secret: %s
    verification_token: %s
    encrypt_key: %s
    chat_id: %s
    base_url: %s
routes:
  - name: payments
    match: {tool: "pay"}
    channels: [ops-slack]
    approvers: ["person:alice", "person:bob"]
    self_approval: forbid
    notify: both
    remind: 1s
    timeout: 1m
    escalate:
      - after: 2s
        channels: [cfo-feishu]
        approvers: ["person:carol"]
`, slackE2EPublic, slackE2ETeam, slackE2EAlice, feishuE2EAlice, slackE2ETeam,
		slackE2EBot, slackE2ESecret, slackE2EChannel, slackURL,
		feishuE2EAppID, feishuE2ESecret, feishuE2EVerify, feishuE2EKey, feishuE2EChat, feishuURL)
}

// threadReplies are the messages posted in the thread of the message at
// (channel, ts).
func threadReplies(f *slacktest.Server, channel, ts string) []slacktest.Call {
	var out []slacktest.Call
	for _, c := range f.CallsOf("chat.postMessage") {
		if c.Form.Get("channel") == channel && c.Form.Get("thread_ts") == ts {
			out = append(out, c)
		}
	}
	return out
}

var waitingLine = regexp.MustCompile(`waiting for approval of request (\S+): (\S+)`)

func TestPeopleEndToEnd(t *testing.T) {
	slack := slacktest.NewServer(t, slackE2EBot, "")
	feishu := feishutest.NewServer(t, feishuE2EAppID, feishuE2ESecret)
	dir := t.TempDir()
	srv := startServer(t, e2eConfigOf(t, dir, 0, "alice", peopleConfig(slack.URL, feishu.URL)))

	// The agent runs on alice's token: the request is hers. While it waits,
	// `gatehouse request` says where to follow it.
	wait, stderr := startAgent(t, srv.URL, "--tool", "pay", "--args", `{"vendor":"ACME","amount":60000}`)
	awaitText(t, stderr, "waiting for approval of request ")
	m := waitingLine.FindStringSubmatch(stderr.String())
	if m == nil || m[2] != slackE2EPublic+"/approvals/"+m[1] {
		t.Fatalf("gatehouse request said: %q", stderr.String())
	}
	id := m[1]

	// The card in #approvals and a direct card to bob; none to alice, who
	// asked and may not approve.
	var card slacktest.Call
	eventually(t, func() bool {
		n := 0
		for _, c := range slack.CallsOf("chat.postMessage") {
			if c.Form.Get("thread_ts") == "" && strings.Contains(c.Form.Get("blocks"), `"approve:`+id+`"`) {
				n++
				if c.Form.Get("channel") == slackE2EChannel {
					card = c
				}
			}
		}
		return n == 2
	}, "the channel card and bob's direct card")
	var opened []string
	for _, c := range slack.CallsOf("conversations.open") {
		opened = append(opened, c.Form.Get("users"))
	}
	slices.Sort(opened)
	if !slices.Equal(opened, []string{"U0BOB"}) || card.TS == "" {
		t.Fatalf("direct messages opened with %v; channel card %+v", opened, card)
	}

	// Reminders in the card's thread, naming the approvers; the escalation
	// posts to the CFO's chat and sends carol a direct card.
	eventually(t, func() bool { return len(threadReplies(slack, slackE2EChannel, card.TS)) > 0 }, "a reminder in the card's thread")
	rem := threadReplies(slack, slackE2EChannel, card.TS)[0].Form.Get("text")
	if strings.Contains(rem, "<@"+slackE2EAlice+">") || !strings.HasPrefix(rem, "<@U0BOB> :alarm_clock: *Still waiting for approval:*") {
		t.Fatalf("reminder: %q", rem)
	}
	eventually(t, func() bool { return len(feishu.Calls(feishuSend)) >= 2 }, "the escalated cards on Feishu")
	var to []string
	for _, c := range feishu.Calls(feishuSend) {
		to = append(to, c.Query+" "+fmt.Sprint(c.JSON["receive_id"]))
	}
	slices.Sort(to)
	if !slices.Equal(to, []string{"receive_id_type=chat_id " + feishuE2EChat, "receive_id_type=open_id ou_carol"}) {
		t.Fatalf("escalated Feishu messages: %v", to)
	}

	// Later reminders reply to the direct cards and the escalated cards too,
	// naming carol on Feishu.
	dm := slacktest.DirectChannel("U0BOB")
	var bobCard slacktest.Call
	for _, c := range slack.CallsOf("chat.postMessage") {
		if c.Form.Get("channel") == dm && c.Form.Get("thread_ts") == "" {
			bobCard = c
		}
	}
	eventually(t, func() bool { return len(threadReplies(slack, dm, bobCard.TS)) > 0 }, "a reminder in bob's direct message")
	eventually(t, func() bool {
		for _, c := range feishu.Calls("POST " + feishutest.MessagesPath + "/om_") {
			var content struct{ Text string }
			_ = json.Unmarshal([]byte(fmt.Sprint(c.JSON["content"])), &content)
			if strings.HasSuffix(c.Path, "/reply") && strings.HasPrefix(content.Text, `<at user_id="ou_carol"></at> ⏰ Still waiting for approval`) {
				return true
			}
		}
		return false
	}, "a reminder on Feishu")

	// alice may not approve her own request, however she tries; each try is
	// answered kindly and audited.
	body, h := slackForm(slackBlockActions(slackE2EAlice, card.TS, "gatehouse_approve", "approve:"+id))
	if code, _ := slackCallback(t, srv.URL, body, h); code != 200 {
		t.Fatalf("alice's Slack tap: %d", code)
	}
	eventually(t, func() bool { return len(slack.CallsOf("chat.postEphemeral")) > 0 }, "the ephemeral answer")
	if eph := slack.CallsOf("chat.postEphemeral")[0]; !strings.Contains(eph.Form.Get("text"), "You asked for this; someone else must approve") ||
		eph.Form.Get("user") != slackE2EAlice {
		t.Fatalf("ephemeral: %+v", eph.Form)
	}
	fcode, reply, raw := feishuDeliver(t, srv.URL, feishuSigned(feishuTap(feishu, "ev_alice_self", id, "approve", feishuE2EAlice, "")))
	if fcode != 200 || reply.Toast == nil || !strings.Contains(reply.Toast.Content, "You asked for this") || reply.Card != nil {
		t.Fatalf("alice's Feishu tap: %d %s", fcode, raw)
	}
	web := webLogin(t, srv.URL, "alice")
	page := get(t, web, srv.URL+"/approvals/"+id)
	if wcode := webDecide(t, web, srv.URL, id, "approve", ""); wcode != http.StatusForbidden {
		t.Fatalf("alice on the web page: %d", wcode)
	}
	for _, want := range []string{"Asked by", "alice", "reminded", "escalated", "direct to slack:" + slackE2ETeam + "/U0BOB", "Next reminder or escalation"} {
		if !strings.Contains(page, want) {
			t.Errorf("the request page lacks %q", want)
		}
	}
	if r := slackGet(t, srv.URL, id); r.Status != "pending" {
		t.Fatalf("after alice's tries the request is %s", r.Status)
	}

	// bob approves from his direct message.
	tap := slacktest.BlockActions(slacktest.Tap{Team: slackE2ETeam, User: "U0BOB", Channel: dm, ActionID: "gatehouse_approve", Value: "approve:" + id})
	body, h = slackForm(tap)
	if code, _ := slackCallback(t, srv.URL, body, h); code != 200 {
		t.Fatalf("bob's tap: %d", code)
	}
	if exit, res := wait(); exit != 0 || res["status"] != "approved" || res["url"] != slackE2EPublic+"/approvals/"+id {
		t.Fatalf("agent exit %d, printed %v", exit, res)
	}

	// Every card, direct and escalated ones too, shows the verdict; the
	// reminders stay as they were.
	eventually(t, func() bool {
		return len(slack.CallsOf("chat.update")) == 2 && len(feishu.Calls(feishuPatch)) == 2
	}, "the final updates")
	var updated []string
	for _, c := range slack.CallsOf("chat.update") {
		updated = append(updated, c.Form.Get("channel"))
	}
	slices.Sort(updated)
	if !slices.Equal(updated, []string{slackE2EChannel, dm}) {
		t.Fatalf("updated on Slack: %v", updated)
	}
	refusals := 0
	for _, e := range slackEvents(t, srv.URL, id) {
		if e.Type == "decision_refused" && strings.Contains(e.Detail, "you asked for this; someone else must approve") {
			refusals++
		}
	}
	if refusals != 3 {
		t.Fatalf("%d refused self-approvals on the trail, want 3: %+v", refusals, slackEvents(t, srv.URL, id))
	}
}

// slackForm signs an interactivity payload as Slack does, for slackCallback.
func slackForm(p map[string]any) (string, http.Header) {
	body := slacktest.Form(p)
	return body, slacktest.Sign(slackE2ESecret, time.Now(), body)
}

// Two server processes on one PostgreSQL schema, both looking for due
// steps every half second: each reminder and the escalation happen once,
// their messages are posted once, and the escalated card is updated once.
func TestStepsOnceAcrossReplicaProcesses(t *testing.T) {
	dsn := storetest.PostgresDSN(t)
	slack := newReplicaSlack(t)
	dir := t.TempDir()
	extra := fmt.Sprintf(`  - name: cfo-slack
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: CCFO
    api_url: %s/api/
routes:
  - name: deploys
    match: {tool: "deploy"}
    channels: [ops-slack]
    remind: 1s
    timeout: 1m
    escalate:
      - after: 1500ms
        channels: [cfo-slack]
`, replicaBot, replicaSecret, slack.URL)
	srvs := make([]*server, 2)
	var wg sync.WaitGroup
	for i := range srvs {
		cfg := replicaConfig(t, filepath.Join(dir, fmt.Sprintf("r%d", i)), dsn, slack.URL, freePort(t))
		appendFile(t, cfg, extra)
		wg.Add(1)
		go func() { defer wg.Done(); srvs[i] = startServer(t, cfg) }()
	}
	wg.Wait()
	for i, s := range srvs {
		if s == nil || s.URL == "" {
			t.Fatalf("replica %d did not start", i)
		}
	}
	var r apiRequest
	if code := api(t, "POST", srvs[0].URL+"/api/v1/approvals", map[string]any{"tool_name": "deploy"}, &r); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	var card slacktest.Call
	eventually(t, func() bool {
		for _, c := range slack.CallsOf("chat.postMessage") {
			if c.Form.Get("channel") == replicaCh && c.Form.Get("thread_ts") == "" {
				card = c
				return true
			}
		}
		return false
	}, "the card")
	eventually(t, func() bool { return len(threadReplies(slack, replicaCh, card.TS)) >= 3 }, "three reminders")
	replicaTap(t, srvs[1].URL, r.ID, "approve", "U0ALICE")

	// Once the request's cards have all caught up, nothing is left to post.
	db, err := store.Open(context.Background(), store.Options{Driver: store.Postgres, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventually(t, func() bool {
		cards, err := db.Cards(context.Background(), r.ID)
		if err != nil || len(cards) == 0 {
			return false
		}
		for _, c := range cards {
			if c.Have != c.Want && !c.Abandoned {
				return false
			}
		}
		return true
	}, "the cards of %s to settle", r.ID)
	evs := slackEvents(t, srvs[0].URL, r.ID)
	var reminded, escalated []string
	sent := map[string]int{} // "reminder (step N) … card REF" → posts recorded
	for _, e := range evs {
		switch {
		case e.Type == "reminded":
			reminded = append(reminded, e.Detail)
		case e.Type == "escalated":
			escalated = append(escalated, e.Detail)
		case e.Type == "card_posted" && strings.HasPrefix(e.Detail, "reminder (step"):
			sent[e.Detail]++
		}
	}
	// Each reminder once: numbered 1, 2, … without a repeat; each of its
	// messages recorded once, and sent once.
	for i, d := range reminded {
		if !strings.HasPrefix(d, fmt.Sprintf("reminder %d: ", i+1)) {
			t.Errorf("reminders on the trail: %q", reminded)
		}
	}
	for d, n := range sent {
		if n != 1 {
			t.Errorf("%q recorded %d times", d, n)
		}
	}
	replies := 0
	for _, c := range slack.CallsOf("chat.postMessage") {
		if c.Form.Get("thread_ts") != "" {
			replies++
		}
	}
	var cfo []slacktest.Call
	for _, c := range slack.CallsOf("chat.postMessage") {
		if c.Form.Get("channel") == "CCFO" && c.Form.Get("thread_ts") == "" {
			cfo = append(cfo, c)
		}
	}
	updates := map[string]int{}
	for _, c := range slack.CallsOf("chat.update") {
		updates[c.Form.Get("channel")]++
	}
	if len(reminded) < 3 || replies != len(sent) || len(escalated) != 1 || len(cfo) != 1 || updates[replicaCh] != 1 || updates["CCFO"] != 1 {
		t.Fatalf("%d reminders on the trail, %d reminder messages recorded, %d sent; %d escalations, %d cards in CCFO; updates %v\n%q",
			len(reminded), len(sent), replies, len(escalated), len(cfo), updates, reminded)
	}
}

// appendFile adds text at the end of a file.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

package main

// End-to-end tests of the Slack channel: the real binary, a local fake of
// Slack's Web API (and of its Socket Mode endpoint), and callbacks signed the
// way Slack signs them.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

const (
	slackE2EBot     = "xoxb-e2e-bot-token"
	slackE2EApp     = "xapp-e2e-app-token"
	slackE2ESecret  = "e2e-slack-signing-secret"
	slackE2EChannel = "C0APPROVALS"
	slackE2ETeam    = "T0ACME"
	slackE2EAlice   = "U0ALICE"
	slackE2EMallory = "U0MALLORY"
	slackE2EPublic  = "https://gate.example.test"
)

// slackConfig is the YAML for one Slack channel (HTTP callbacks, or Socket
// Mode with socket set) and a route sending deploys to it, approved by
// alice's Slack identity only.
func slackConfig(apiURL string, socket bool) string {
	auth := "    signing_secret: " + slackE2ESecret
	if socket {
		auth = "    app_token: " + slackE2EApp
	}
	return fmt.Sprintf(`public_url: %s
channels:
  - name: ops-slack
    type: slack
    bot_token: %s
%s
    channel_id: %s
    api_url: %s
routes:
  - name: deploys
    match: {tool: "deploy"}
    channels: [ops-slack]
    approvers: ["slack:%s/%s"]
`, slackE2EPublic, slackE2EBot, auth, slackE2EChannel, apiURL, slackE2ETeam, slackE2EAlice)
}

// slackBlockActions is an interactivity payload as Slack sends it for a tap
// on one of the card's buttons in message ts.
func slackBlockActions(user, ts, actionID, value string) map[string]any {
	return slacktest.BlockActions(slacktest.Tap{Team: slackE2ETeam, User: user, Channel: slackE2EChannel, MessageTS: ts,
		ActionID: actionID, Value: value, TriggerID: "1234.5678.trigger-" + user})
}

// slackCallback POSTs an interactivity request to the server and returns
// the status and body of its answer.
func slackCallback(t *testing.T, base, body string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/callbacks/slack", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// slackAgent starts `gatehouse request` as an agent would and returns a
// function waiting for its exit code and printed verdict.
func slackAgent(t *testing.T, base string, args ...string) func() (int, map[string]any) {
	t.Helper()
	wait, _ := startAgent(t, base, args...)
	return wait
}

// startAgent is slackAgent, with what the agent says on stderr meanwhile.
func startAgent(t *testing.T, base string, args ...string) (func() (int, map[string]any), *syncBuffer) {
	t.Helper()
	cmd := cli(base, append([]string{"request"}, args...)...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return func() (int, map[string]any) {
		t.Helper()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("agent still waiting\nstderr: %s", stderr.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
			t.Fatalf("agent printed %q: %v (stderr %s)", stdout.String(), err, stderr.String())
		}
		return code, res
	}, &stderr
}

// slackGet reads one request through the API.
func slackGet(t *testing.T, base, id string) apiRequest {
	t.Helper()
	var r apiRequest
	if code := api(t, "GET", base+"/api/v1/approvals/"+id, nil, &r); code != 200 {
		t.Fatalf("GET %s: %d", id, code)
	}
	return r
}

type slackEvent struct {
	Type    string `json:"type"`
	Channel string `json:"channel"`
	Actor   string `json:"actor"`
	Detail  string `json:"detail"`
}

func slackEvents(t *testing.T, base, id string) []slackEvent {
	t.Helper()
	var evs struct {
		Events []slackEvent `json:"events"`
	}
	api(t, "GET", base+"/api/v1/approvals/"+id+"/events", nil, &evs)
	return evs.Events
}

func slackCount(evs []slackEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// slackText is every text of the blocks, decoded and joined by newlines:
// what Slack renders.
func slackText(blocks []map[string]any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["text"].(string); ok {
				b.WriteString(s + "\n")
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, bl := range blocks {
		walk(bl)
	}
	return b.String()
}

// slackHasType reports whether any block (or element) has the given type.
func slackHasType(blocks []map[string]any, typ string) bool {
	for _, b := range blocks {
		if b["type"] == typ {
			return true
		}
	}
	return false
}

// slackButton finds the card's button with action id.
func slackButton(blocks []map[string]any, actionID string) map[string]any {
	for _, b := range blocks {
		if b["type"] != "actions" {
			continue
		}
		els, _ := b["elements"].([]any)
		for _, e := range els {
			if m, _ := e.(map[string]any); m != nil && m["action_id"] == actionID {
				return m
			}
		}
	}
	return nil
}

// slackFinal checks a chat.update call: the card's message, its final
// form with want in it, and no buttons.
func slackFinal(t *testing.T, c slacktest.Call, ts string, want ...string) {
	t.Helper()
	blocks, raw := c.Blocks(t), c.Form.Get("blocks")
	text := slackText(blocks)
	if c.Token != slackE2EBot || c.Form.Get("channel") != slackE2EChannel || c.Form.Get("ts") != ts {
		t.Errorf("chat.update token %q channel %q ts %q, want the card's message %s", c.Token, c.Form.Get("channel"), c.Form.Get("ts"), ts)
	}
	if slackHasType(blocks, "actions") || strings.Contains(raw, "gatehouse_approve") {
		t.Errorf("the final card still has buttons: %s", raw)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the final card lacks %q: %s", w, text)
		}
	}
}

// TestSlackApproveEndToEnd: an agent waits; the card reaches the fake Slack;
// forged, stale and unauthorised taps change nothing; alice's signed tap
// approves; the agent gets the verdict with her Slack identity; the card is
// updated to its final form; a replay of her tap is refused.
func TestSlackApproveEndToEnd(t *testing.T) {
	fake := slacktest.NewServer(t, slackE2EBot, slackE2EApp)
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, slackConfig(fake.URL+"/api", false)))

	wait := slackAgent(t, srv.URL, "--tool", "deploy", "--summary", "Deploy prod",
		"--args", `{"env":"prod","note":"<!channel> see <https://evil.example|click>"}`)
	pending := waitPending(t, srv.URL)
	id := pending.ID

	// The card: one post, to the configured channel, with the bot token.
	post := fake.WaitCalls(t, "chat.postMessage", 1)[0]
	blocks, raw := post.Blocks(t), post.Form.Get("blocks")
	if post.Token != slackE2EBot || post.Form.Get("channel") != slackE2EChannel {
		t.Fatalf("chat.postMessage token %q channel %q", post.Token, post.Form.Get("channel"))
	}
	if b := slackButton(blocks, "gatehouse_approve"); b == nil || b["value"] != "approve:"+id {
		t.Fatalf("no approve button for %s on the card: %s", id, raw)
	}
	if b := slackButton(blocks, "gatehouse_reject"); b == nil || b["value"] != "reject:"+id {
		t.Fatalf("no reject button for %s on the card: %s", id, raw)
	}
	text := slackText(blocks)
	if !strings.Contains(text, "<"+slackE2EPublic+"/approvals/"+id+"|") {
		t.Errorf("the card does not link to the request page: %s", text)
	}
	if strings.Contains(text, "<!channel>") || strings.Contains(text, "<https://evil") || !strings.Contains(text, "!channel") {
		t.Errorf("hostile arguments are not inert on the card: %s", text)
	}
	ts := post.TS

	approve := slacktest.Form(slackBlockActions(slackE2EAlice, ts, "gatehouse_approve", "approve:"+id))
	stillPending := func(why string) {
		t.Helper()
		if r := slackGet(t, srv.URL, id); r.Status != "pending" || r.DecidedBy != "" {
			t.Fatalf("after %s the request is %s by %q, want pending", why, r.Status, r.DecidedBy)
		}
	}

	// Refused before anything is read: unsigned, forged, stale.
	for _, tc := range []struct {
		name string
		h    http.Header
	}{
		{"unsigned", nil},
		{"wrong secret", slacktest.Sign("not-the-signing-secret", time.Now(), approve)},
		{"stale", slacktest.Sign(slackE2ESecret, time.Now().Add(-10*time.Minute), approve)},
		{"tampered", func() http.Header {
			h := slacktest.Sign(slackE2ESecret, time.Now(), approve)
			h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(time.Now().Unix()+1, 10))
			return h
		}()},
	} {
		if code, body := slackCallback(t, srv.URL, approve, tc.h); code != http.StatusUnauthorized {
			t.Fatalf("%s callback: %d %s, want 401", tc.name, code, body)
		}
		stillPending(tc.name + " callback")
	}

	// Signed, but by someone who is not an approver: acked, told privately,
	// audited, not counted.
	mallory := slacktest.Form(slackBlockActions(slackE2EMallory, ts, "gatehouse_approve", "approve:"+id))
	if code, body := slackCallback(t, srv.URL, mallory, slacktest.Sign(slackE2ESecret, time.Now(), mallory)); code != http.StatusOK {
		t.Fatalf("non-approver tap: %d %s, want the 200 ack", code, body)
	}
	eph := fake.WaitCalls(t, "chat.postEphemeral", 1)[0]
	if eph.Form.Get("user") != slackE2EMallory || !strings.Contains(eph.Form.Get("text"), "not an approver") {
		t.Errorf("ephemeral to the non-approver: %v", eph.Form)
	}
	stillPending("a non-approver's tap")
	refused := false
	for _, e := range slackEvents(t, srv.URL, id) {
		if e.Type == "decision_refused" && e.Actor == "slack:"+slackE2ETeam+"/"+slackE2EMallory {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the non-approver's tap is not in the trail: %+v", slackEvents(t, srv.URL, id))
	}

	// Alice approves.
	aliceSig := slacktest.Sign(slackE2ESecret, time.Now(), approve)
	if code, body := slackCallback(t, srv.URL, approve, aliceSig); code != http.StatusOK {
		t.Fatalf("approval: %d %s", code, body)
	}
	code, res := wait()
	if code != 0 || res["status"] != "approved" || res["allow"] != true || res["request_id"] != id {
		t.Fatalf("agent exit %d, printed %v", code, res)
	}
	r := slackGet(t, srv.URL, id)
	if r.Status != "approved" || r.DecidedBy != "slack:"+slackE2ETeam+"/"+slackE2EAlice || r.DecidedVia != "ops-slack" {
		t.Fatalf("request after approval: %+v", r)
	}

	// The card becomes its final form.
	upd := fake.WaitCalls(t, "chat.update", 1)
	slackFinal(t, upd[0], ts, "Approved", "<@"+slackE2EAlice+">", "slack:"+slackE2ETeam+"/"+slackE2EAlice, "via ops-slack")
	if !strings.Contains(upd[0].Form.Get("text"), "Approved") {
		t.Errorf("chat.update fallback text %q", upd[0].Form.Get("text"))
	}

	// The same signed request again is a replay: refused, nothing changes.
	if code, body := slackCallback(t, srv.URL, approve, aliceSig); code != http.StatusUnauthorized {
		t.Fatalf("replayed approval: %d %s, want 401", code, body)
	}
	// A fresh second tap is acked and answered privately: already decided.
	if code, _ := slackCallback(t, srv.URL, approve, slacktest.Sign(slackE2ESecret, time.Now().Add(time.Second), approve)); code != http.StatusOK {
		t.Fatalf("second tap: %d", code)
	}
	eph = fake.WaitCalls(t, "chat.postEphemeral", 2)[1]
	if eph.Form.Get("user") != slackE2EAlice || !strings.Contains(eph.Form.Get("text"), "Already decided") {
		t.Errorf("ephemeral after a second tap: %v", eph.Form)
	}
	if r2 := slackGet(t, srv.URL, id); r2 != r {
		t.Errorf("the request changed after the replay and the second tap: %+v, was %+v", r2, r)
	}
	if n, m := len(fake.CallsOf("chat.postMessage")), len(fake.CallsOf("chat.update")); n != 1 || m != 1 {
		t.Errorf("fake slack saw %d posts and %d updates, want 1 each", n, m)
	}
	evs := slackEvents(t, srv.URL, id)
	if slackCount(evs, "card_posted") != 1 || slackCount(evs, "card_updated") != 1 || slackCount(evs, "decided") != 1 {
		t.Errorf("trail: %+v", evs)
	}
}

// TestSlackRejectWithReasonAndCancelEndToEnd: "Reject with reason" opens the
// modal, its submission rejects with the reason, and the agent is told; a
// request its agent cancels gets its card updated too.
func TestSlackRejectWithReasonAndCancelEndToEnd(t *testing.T) {
	fake := slacktest.NewServer(t, slackE2EBot, slackE2EApp)
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, slackConfig(fake.URL+"/api", false)))

	t.Run("reject with reason", func(t *testing.T) {
		wait := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"prod"}`)
		id := waitPending(t, srv.URL).ID
		post := fake.WaitCalls(t, "chat.postMessage", 1)[0]
		tap := slacktest.Form(slackBlockActions(slackE2EAlice, post.TS, "gatehouse_reject_reason", "reason:"+id))
		if code, body := slackCallback(t, srv.URL, tap, slacktest.Sign(slackE2ESecret, time.Now(), tap)); code != http.StatusOK {
			t.Fatalf("reason tap: %d %s", code, body)
		}
		open := fake.WaitCalls(t, "views.open", 1)[0]
		view, _ := open.Body["view"].(map[string]any)
		if open.Token != slackE2EBot || open.Body["trigger_id"] != "1234.5678.trigger-"+slackE2EAlice || view == nil {
			t.Fatalf("views.open: token %q body %v", open.Token, open.Body)
		}
		meta, _ := view["private_metadata"].(string)
		if !strings.Contains(meta, id) || view["callback_id"] != "gatehouse_reason" {
			t.Fatalf("the modal does not carry the request: %v", view)
		}
		if r := slackGet(t, srv.URL, id); r.Status != "pending" {
			t.Fatalf("opening the modal decided: %+v", r)
		}
		submit := slacktest.Form(slacktest.ViewSubmission(slacktest.Submission{Team: slackE2ETeam, User: slackE2EAlice,
			CallbackID: "gatehouse_reason", Metadata: meta, Block: "reason", Action: "reason",
			Value: "  not during the freeze <!here> ", TriggerID: "1234.9999.trigger"}))
		if code, body := slackCallback(t, srv.URL, submit, slacktest.Sign(slackE2ESecret, time.Now(), submit)); code != http.StatusOK {
			t.Fatalf("view_submission: %d %s", code, body)
		}
		code, res := wait()
		if code != 1 || res["status"] != "rejected" || res["allow"] != false {
			t.Fatalf("agent exit %d, printed %v", code, res)
		}
		r := slackGet(t, srv.URL, id)
		if r.Status != "rejected" || r.DecidedBy != "slack:"+slackE2ETeam+"/"+slackE2EAlice || r.DecidedVia != "ops-slack" {
			t.Fatalf("request after rejection: %+v", r)
		}
		upd := fake.WaitCalls(t, "chat.update", 1)[0]
		slackFinal(t, upd, post.TS, "Rejected", "<@"+slackE2EAlice+">", "not during the freeze &lt;!here&gt;")
	})

	t.Run("cancelled", func(t *testing.T) {
		wait := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"staging"}`)
		id := waitPending(t, srv.URL).ID
		post := fake.WaitCalls(t, "chat.postMessage", 2)[1]
		if code := api(t, "POST", srv.URL+"/api/v1/approvals/"+id+"/cancel", nil, nil); code != 200 {
			t.Fatalf("cancel: %d", code)
		}
		if code, res := wait(); code != 2 || res["status"] != "cancelled" {
			t.Fatalf("agent exit %d, printed %v", code, res)
		}
		upd := fake.WaitCalls(t, "chat.update", 2)[1]
		slackFinal(t, upd, post.TS, "Cancelled")
		// A tap on the cancelled card changes nothing and says so privately.
		tap := slacktest.Form(slackBlockActions(slackE2EAlice, post.TS, "gatehouse_approve", "approve:"+id))
		if code, _ := slackCallback(t, srv.URL, tap, slacktest.Sign(slackE2ESecret, time.Now(), tap)); code != http.StatusOK {
			t.Fatalf("tap on a cancelled card: %d", code)
		}
		eph := fake.WaitCalls(t, "chat.postEphemeral", 1)[0]
		if eph.Form.Get("user") != slackE2EAlice || !strings.Contains(eph.Form.Get("text"), "cancelled") {
			t.Errorf("ephemeral after a tap on a cancelled card: %v", eph.Form)
		}
		if r := slackGet(t, srv.URL, id); r.Status != "cancelled" {
			t.Fatalf("a tap on a cancelled card changed it: %+v", r)
		}
	})
	if n := len(fake.CallsOf("chat.postMessage")); n != 2 {
		t.Errorf("fake slack saw %d posts for 2 requests", n)
	}
}

// TestSlackSocketModeEndToEnd: with an app_token the binary takes taps over
// Socket Mode: it opens the connection with the app token, acks the
// envelope, and alice's tap approves; HTTP callbacks are not served.
func TestSlackSocketModeEndToEnd(t *testing.T) {
	fake := slacktest.NewServer(t, slackE2EBot, slackE2EApp)
	ws := slacktest.NewSocket(t)
	fake.SetSocketURL(ws.URL())
	dir := t.TempDir()
	srv := startServer(t, e2eConfig(t, dir, 0, slackConfig(fake.URL+"/api", true)))

	select {
	case <-ws.Conns:
	case <-time.After(5 * time.Second):
		t.Fatalf("no Socket Mode connection\n%s", srv.Log())
	}
	if opens := fake.CallsOf("apps.connections.open"); len(opens) != 1 || opens[0].Token != slackE2EApp {
		t.Fatalf("apps.connections.open calls: %+v", opens)
	}

	wait := slackAgent(t, srv.URL, "--tool", "deploy", "--args", `{"env":"prod"}`)
	id := waitPending(t, srv.URL).ID
	post := fake.WaitCalls(t, "chat.postMessage", 1)[0]

	// With no signing secret, nothing is taken over HTTP.
	body := slacktest.Form(slackBlockActions(slackE2EAlice, post.TS, "gatehouse_approve", "approve:"+id))
	if code, _ := slackCallback(t, srv.URL, body, slacktest.Sign(slackE2ESecret, time.Now(), body)); code == http.StatusOK {
		t.Fatalf("an HTTP callback was accepted by a Socket Mode channel")
	}

	// A non-approver's tap over the socket: acked, not counted.
	envelope := func(envID, user string) map[string]any {
		p, _ := json.Marshal(slackBlockActions(user, post.TS, "gatehouse_approve", "approve:"+id))
		return map[string]any{"type": "interactive", "envelope_id": envID, "payload": json.RawMessage(p),
			"accepts_response_payload": false}
	}
	ack := func(envID string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case m := <-ws.Acks:
				if m["envelope_id"] == envID {
					return
				}
			case <-deadline:
				t.Fatalf("envelope %s not acked", envID)
			}
		}
	}
	ws.Send <- envelope("env-mallory", slackE2EMallory)
	ack("env-mallory")
	if eph := fake.WaitCalls(t, "chat.postEphemeral", 1)[0]; eph.Form.Get("user") != slackE2EMallory {
		t.Errorf("ephemeral: %v", eph.Form)
	}
	if r := slackGet(t, srv.URL, id); r.Status != "pending" {
		t.Fatalf("a non-approver's tap decided: %+v", r)
	}

	ws.Send <- envelope("env-alice", slackE2EAlice)
	ack("env-alice")
	code, res := wait()
	if code != 0 || res["status"] != "approved" || res["request_id"] != id {
		t.Fatalf("agent exit %d, printed %v", code, res)
	}
	r := slackGet(t, srv.URL, id)
	if r.DecidedBy != "slack:"+slackE2ETeam+"/"+slackE2EAlice || r.DecidedVia != "ops-slack" {
		t.Fatalf("request after approval: %+v", r)
	}
	slackFinal(t, fake.WaitCalls(t, "chat.update", 1)[0], post.TS, "Approved", "<@"+slackE2EAlice+">")
}

// Defect: shutdown cancelled the card posts in flight before it waited for
// them, so a card Slack already showed was recorded as a failed post and
// posted a second time after the restart. A post in flight at SIGTERM now
// finishes and is recorded, and the restarted server does not post again.
func TestShutdownRecordsTheCardPostInFlight(t *testing.T) {
	fake := slacktest.NewServer(t, slackE2EBot, slackE2EApp)
	entered, release := fake.HoldNext("chat.postMessage")
	defer release()
	dir, port := t.TempDir(), freePort(t)
	cfg := e2eConfig(t, dir, port, slackConfig(fake.APIURL(), false))
	srv := startServer(t, cfg)
	var r apiRequest
	if code := api(t, "POST", srv.URL+"/api/v1/approvals", map[string]any{"tool_name": "deploy"}, &r); code != 201 {
		t.Fatalf("create: %d", code)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the card post never reached Slack")
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	srv.awaitLog(t, "shutting down")
	release() // Slack answers while the server is shutting down
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server exit after SIGTERM: %v\n%s", err, srv.Log())
	}

	srv = startServer(t, cfg)
	evs := slackEvents(t, srv.URL, r.ID)
	if slackCount(evs, "card_posted") != 1 || slackCount(evs, "card_post_failed") != 0 {
		t.Fatalf("the post in flight at shutdown was not recorded as posted: %+v", evs)
	}
	// A tap now updates the one card Slack shows; it is never posted again.
	tap := slackBlockActions(slackE2EAlice, fake.CallsOf("chat.postMessage")[0].TS, "gatehouse_approve", "approve:"+r.ID)
	body := slacktest.Form(tap)
	if code, _ := slackCallback(t, srv.URL, body, slacktest.Sign(slackE2ESecret, time.Now(), body)); code != 200 {
		t.Fatalf("tap: %d", code)
	}
	fake.WaitCalls(t, "chat.update", 1)
	if n := len(fake.CallsOf("chat.postMessage")); n != 1 {
		t.Fatalf("the card was posted %d times across the restart", n)
	}
}

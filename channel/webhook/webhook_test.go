package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/channel/webhook"
	"github.com/gatehouse-dev/gatehouse/channel/webhook/webhooktest"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

const (
	secret      = "0123456789abcdef-secret"
	otherSecret = "fedcba9876543210-other"
	public      = "https://gate.example.test"
)

// A vector computed outside Go (Python's hmac module), so that Sign and
// Verify cannot agree on a wrong construction.
func TestSignVector(t *testing.T) {
	body := []byte(`{"request_id":"01J0000000000000000000000","decision":"approve","actor":"alice","reason":""}`)
	want := "v1=26a3063ab259c35a7376d1ca79d14de3cc9ea500d58e46e830e4d735e39c6039"
	if got := webhook.Sign([]byte(secret), "1700000000", body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	h := http.Header{}
	h.Set(webhook.HeaderTimestamp, "1700000000")
	h.Set(webhook.HeaderSignature, want)
	if _, _, err := webhook.Verify([]byte(secret), h, body, time.Unix(1700000000+299, 0)); err != nil {
		t.Fatalf("a valid signature 299s old: %v", err)
	}
	if _, _, err := webhook.Verify([]byte(secret), h, body, time.Unix(1700000000+301, 0)); err == nil {
		t.Fatal("a signature 301s old verified")
	}
	if _, _, err := webhook.Verify([]byte(secret), h, body, time.Unix(1700000000-301, 0)); err == nil {
		t.Fatal("a signature 301s in the future verified")
	}
}

// env is a real gate over SQLite with two webhook channels, "relay" and
// "other", each with its own relay and its callback served over HTTP.
type env struct {
	svc          *gate.Service
	relay, other *webhooktest.Relay
	hookA, hookB *webhook.Channel
	urlA, urlB   string // the callback URLs
}

func newEnv(t *testing.T, routes ...gate.Route) *env { return newEnvWith(t, nil, routes...) }

// newEnvWith is newEnv with a presenter on the "relay" channel.
func newEnvWith(t *testing.T, p *present.Presenter, routes ...gate.Route) *env {
	t.Helper()
	e := &env{relay: webhooktest.NewRelay(t, secret), other: webhooktest.NewRelay(t, otherSecret)}
	e.svc = gate.NewService(gate.Options{Store: storetest.SQLite(t), Routes: routes,
		Defaults: gate.Defaults{Timeout: time.Hour, Channels: []string{"relay"}}})
	var err error
	e.hookA, err = webhook.New(webhook.Options{Name: "relay", Config: config.Webhook{URL: e.relay.URL, Secret: secret},
		PublicURL: public, Decider: e.svc, Present: p})
	if err != nil {
		t.Fatal(err)
	}
	e.hookB, err = webhook.New(webhook.Options{Name: "other", Config: config.Webhook{URL: e.other.URL, Secret: otherSecret},
		Decider: e.svc})
	if err != nil {
		t.Fatal(err)
	}
	e.svc.Register(e.hookA)
	e.svc.Register(e.hookB)
	ctx, cancel := context.WithCancel(context.Background())
	e.svc.Start(ctx)
	t.Cleanup(func() { e.svc.Stop(); e.svc.Drain(context.Background()); cancel() })
	a, b := httptest.NewServer(e.hookA), httptest.NewServer(e.hookB)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	e.urlA, e.urlB = a.URL, b.URL
	return e
}

func (e *env) submit(t *testing.T, tool string) *gate.Request {
	t.Helper()
	r, _, err := e.svc.Submit(context.Background(), gate.Submission{ToolName: tool, ToolArgs: json.RawMessage(`{"env":"prod"}`),
		Summary: "Deploy <b>prod</b>", AgentID: "build-agent"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) get(t *testing.T, id string) *gate.Request {
	t.Helper()
	r, err := e.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func verdict(id, decision, actor, reason string) []byte {
	b, _ := json.Marshal(webhooktest.Verdict{RequestID: id, Decision: decision, Actor: actor, Reason: reason})
	return b
}

// TestCardVerdictFinal: the card reaches the relay signed and complete; a
// signed approval decides the request as webhook:relay/alice; the final
// state reaches the relay with the reference it gave the card.
func TestCardVerdictFinal(t *testing.T) {
	e := newEnv(t)
	r := e.submit(t, "deploy")

	card := e.relay.Wait(1, webhooktest.OfType("card", r.ID))[0]
	if !card.SignatureOK {
		t.Fatalf("the card's signature does not verify: %v", card.Header)
	}
	m := card.Message
	if m.Channel != "relay" || m.Request["tool_name"] != "deploy" || m.Request["status"] != "pending" ||
		m.Request["summary"] != "Deploy <b>prod</b>" || m.Request["agent_id"] != "build-agent" {
		t.Fatalf("card: %s", card.Body)
	}
	if args, _ := m.Request["tool_args"].(map[string]any); args["env"] != "prod" {
		t.Fatalf("card tool_args: %s", card.Body)
	}
	if m.URL != public+"/approvals/"+r.ID || m.CallbackURL != public+"/callbacks/webhook/relay" {
		t.Fatalf("card links: url %q callback_url %q", m.URL, m.CallbackURL)
	}
	if !strings.Contains(m.Text, "deploy") || !strings.Contains(m.Text, "Deploy <b>prod</b>") {
		t.Fatalf("card text: %q", m.Text)
	}

	body := verdict(r.ID, "approve", "alice@example.com", "looks fine")
	code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body))
	if code != 200 || !strings.Contains(answer, `"status":"approved"`) || !strings.Contains(answer, `"decided_by":"webhook:relay/alice@example.com"`) {
		t.Fatalf("verdict answered %d %s", code, answer)
	}
	got := e.get(t, r.ID)
	if got.Status != gate.StatusApproved || got.DecidedBy != "webhook:relay/alice@example.com" || got.DecidedVia != "relay" || got.Reason != "looks fine" {
		t.Fatalf("request after the verdict: %+v", got)
	}

	final := e.relay.Wait(1, webhooktest.OfType("final", r.ID))[0]
	if !final.SignatureOK || final.Message.Ref != "msg-1" || final.Message.Request["status"] != "approved" ||
		final.Message.Request["decided_by"] != "webhook:relay/alice@example.com" || final.Message.Request["reason"] != "looks fine" {
		t.Fatalf("final: %s", final.Body)
	}
	if !strings.HasPrefix(final.Message.Text, "Approved by webhook:relay/alice@example.com via relay") {
		t.Fatalf("final text: %q", final.Message.Text)
	}
	if n := len(e.other.Deliveries()); n != 0 {
		t.Fatalf("the other relay got %d POSTs for a request not sent to it", n)
	}
}

// TestMessagesAreRedacted: what a relay is sent carries no secret, on the
// card nor the final state, and names the route's looks.
func TestMessagesAreRedacted(t *testing.T) {
	const key = "AKIAIOSFODNN7EXAMPLE"
	rd, err := redact.New([]string{"*password*"}, []string{`AKIA[0-9A-Z]{16}`})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, &present.Presenter{Redact: rd, Looks: func(string) gate.Looks { return gate.Looks{Label: "Deploys", Severity: "critical"} }})
	r, _, err := e.svc.Submit(context.Background(), gate.Submission{ToolName: "deploy", AgentID: "build-agent", Summary: "Deploy with " + key,
		ToolArgs: json.RawMessage(`{"env":"prod","db_password":"hunter2","key":"` + key + `"}`), Metadata: json.RawMessage(`{"Password":"m"}`)})
	if err != nil {
		t.Fatal(err)
	}
	card := e.relay.Wait(1, webhooktest.OfType("card", r.ID))[0]
	body := verdict(r.ID, "reject", "alice", "never paste "+key)
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 200 {
		t.Fatalf("verdict answered %d %s", code, answer)
	}
	final := e.relay.Wait(1, webhooktest.OfType("final", r.ID))[0]
	for _, d := range []webhooktest.Delivery{card, final} {
		for _, secret := range []string{key, "hunter2", `"m"`} {
			if strings.Contains(string(d.Body), secret) {
				t.Errorf("%s message carries %s: %s", d.Message.Type, secret, d.Body)
			}
		}
		if d.Message.Request["severity"] != "critical" || d.Message.Request["label"] != "Deploys" {
			t.Errorf("looks missing: %s", d.Body)
		}
	}
	if !strings.Contains(card.Message.Text, "Deploy with [redacted]") || !strings.Contains(final.Message.Text, "never paste [redacted]") {
		t.Errorf("texts %q / %q", card.Message.Text, final.Message.Text)
	}
	if got := e.get(t, r.ID); !strings.Contains(string(got.ToolArgs), "hunter2") || !strings.Contains(got.Reason, key) {
		t.Error("the stored request was redacted")
	}
}

// TestVerdictAttacks: every verdict that is not the relay's own, signed
// now, for a request sent to it, changes nothing.
func TestVerdictAttacks(t *testing.T) {
	e := newEnv(t,
		gate.Route{Name: "elsewhere", Tool: "pay", Channels: []string{"other"},
			// Even naming the relay's people does not let it decide a
			// request whose card it never got.
			Approvers: []string{"webhook:relay/*", "webhook:other/*"}},
		gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"relay"}},
	)
	r := e.submit(t, "deploy")
	foreign := e.submit(t, "pay")
	e.relay.Wait(1, webhooktest.OfType("card", r.ID))

	now := time.Now()
	good := verdict(r.ID, "approve", "mallory", "")
	tampered := verdict(r.ID, "approve", "alice", "")
	for _, tc := range []struct {
		name   string
		url    string
		body   []byte
		header http.Header
		status int
		msg    string
	}{
		{"unsigned", e.urlA, good, http.Header{"Content-Type": {"application/json"}}, 401, "missing X-Gatehouse-Signature"},
		{"signed with another secret", e.urlA, good, webhooktest.Signed("not-the-secret-0123456789", now, good), 401, "signature does not match"},
		{"another channel's secret", e.urlA, good, webhooktest.Signed(otherSecret, now, good), 401, "signature does not match"},
		{"body changed after signing", e.urlA, tampered, webhooktest.Signed(secret, now, good), 401, "signature does not match"},
		{"six minutes old", e.urlA, good, webhooktest.Signed(secret, now.Add(-6*time.Minute), good), 401, "not within 5 minutes"},
		{"six minutes ahead", e.urlA, good, webhooktest.Signed(secret, now.Add(6*time.Minute), good), 401, "not within 5 minutes"},
		{"upper-case v1 prefix", e.urlA, good, func() http.Header {
			h := webhooktest.Signed(secret, now, good)
			h.Set("X-Gatehouse-Signature", strings.Replace(h.Get("X-Gatehouse-Signature"), "v1=", "V1=", 1))
			return h
		}(), 401, "signature does not match"},
		{"a request sent to another channel", e.urlA, verdict(foreign.ID, "approve", "alice", ""),
			webhooktest.Signed(secret, now, verdict(foreign.ID, "approve", "alice", "")), 403, "was not sent to channel relay"},
		{"an unknown request", e.urlA, verdict("01JUNKNOWN00000000000000000", "approve", "alice", ""),
			webhooktest.Signed(secret, now, verdict("01JUNKNOWN00000000000000000", "approve", "alice", "")), 404, "not_found"},
		{"a decision that is neither", e.urlA, verdict(r.ID, "allow", "alice", ""),
			webhooktest.Signed(secret, now, verdict(r.ID, "allow", "alice", "")), 400, `decision: \"allow\" is not`},
		{"no actor", e.urlA, verdict(r.ID, "approve", "  ", ""),
			webhooktest.Signed(secret, now, verdict(r.ID, "approve", "  ", "")), 400, "actor: required"},
		{"an actor with a newline", e.urlA, verdict(r.ID, "approve", "alice\nbob", ""),
			webhooktest.Signed(secret, now, verdict(r.ID, "approve", "alice\nbob", "")), 400, "actor: must be"},
		{"an unknown field", e.urlA, []byte(`{"request_id":"` + r.ID + `","decision":"approve","actor":"a","modified_args":{}}`),
			webhooktest.Signed(secret, now, []byte(`{"request_id":"`+r.ID+`","decision":"approve","actor":"a","modified_args":{}}`)), 400, "unknown field"},
		{"not JSON", e.urlA, []byte(`approve ` + r.ID), webhooktest.Signed(secret, now, []byte(`approve `+r.ID)), 400, "verdict:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, answer := webhooktest.Post(t, tc.url, tc.body, tc.header)
			if code != tc.status || !strings.Contains(answer, tc.msg) {
				t.Fatalf("answered %d %s, want %d with %q", code, answer, tc.status, tc.msg)
			}
		})
	}
	for _, id := range []string{r.ID, foreign.ID} {
		if got := e.get(t, id); got.Status != gate.StatusPending {
			t.Fatalf("request %s became %s (by %s) through a refused verdict", got.ToolName, got.Status, got.DecidedBy)
		}
	}
	evs, _ := e.svc.Events(context.Background(), foreign.ID)
	if !hasEvent(evs, gate.EventCallbackRefused, "not sent to this channel") {
		t.Fatalf("the foreign verdict is not in the trail: %+v", evs)
	}

	// The request's own relay decides it; the same signed verdict, played
	// again, is refused as a replay and says so in the trail.
	body := verdict(r.ID, "reject", "alice", "not today")
	h := webhooktest.Signed(secret, time.Now(), body)
	if code, answer := webhooktest.Post(t, e.urlA, body, h); code != 200 || !strings.Contains(answer, `"status":"rejected"`) {
		t.Fatalf("the relay's own verdict: %d %s", code, answer)
	}
	if code, answer := webhooktest.Post(t, e.urlA, body, h); code != 401 || !strings.Contains(answer, "replayed") {
		t.Fatalf("the replay: %d %s", code, answer)
	}
	evs, _ = e.svc.Events(context.Background(), r.ID)
	if !hasEvent(evs, gate.EventCallbackRefused, "replayed") {
		t.Fatalf("the replay is not in the trail: %+v", evs)
	}
	// A fresh verdict for a decided request is told so, and changes nothing.
	body = verdict(r.ID, "approve", "bob", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 409 || !strings.Contains(answer, "already rejected") {
		t.Fatalf("a second verdict: %d %s", code, answer)
	}
	if got := e.get(t, r.ID); got.Status != gate.StatusRejected || got.DecidedBy != "webhook:relay/alice" {
		t.Fatalf("after a second verdict: %s by %s", got.Status, got.DecidedBy)
	}
}

// TestApproversList: a route's approvers list names relay actors; anyone
// else the relay speaks for is refused.
func TestApproversList(t *testing.T) {
	e := newEnv(t, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"relay"},
		Approvers: []string{"webhook:relay/bob@example.com"}})
	r := e.submit(t, "deploy")
	body := verdict(r.ID, "approve", "alice@example.com", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 403 || !strings.Contains(answer, "not an approver") {
		t.Fatalf("alice: %d %s", code, answer)
	}
	body = verdict(r.ID, "approve", "bob@example.com", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 200 || !strings.Contains(answer, "approved") {
		t.Fatalf("bob: %d %s", code, answer)
	}
}

// TestReminders: a route that reminds sends the relay a signed reminder
// per step, with the card's ref, the step, and the approvers of this relay
// who have not approved yet; the trail records it like any reminder.
func TestReminders(t *testing.T) {
	e := newEnv(t, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"relay"}, Quorum: 2, Timeout: time.Hour,
		Approvers: []string{"webhook:relay/alice@example.com", "webhook:relay/bob@example.com", "webhook:other/carol", "slack:T1/U1"},
		Plan:      gate.Plan{Remind: 100 * time.Millisecond}})
	r := e.submit(t, "deploy")
	e.relay.Wait(1, webhooktest.OfType("card", r.ID))
	body := verdict(r.ID, "approve", "alice@example.com", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 200 || !strings.Contains(answer, `"status":"pending"`) {
		t.Fatalf("alice: %d %s", code, answer)
	}
	// Reminders keep coming every 100ms; one after alice's approval was
	// recorded names only bob.
	var after webhooktest.Delivery
	e.relay.Wait(1, func(d webhooktest.Delivery) bool {
		if d.Message.Type == "reminder" && d.Message.Request["id"] == r.ID && !slices.Contains(d.Message.Mention, "alice@example.com") {
			after = d
			return true
		}
		return false
	})
	m := after.Message
	if !after.SignatureOK || m.Channel != "relay" || m.Ref != "msg-1" || m.Step < 1 || !slices.Equal(m.Mention, []string{"bob@example.com"}) ||
		m.Request["status"] != "pending" || m.URL != public+"/approvals/"+r.ID || m.CallbackURL != public+"/callbacks/webhook/relay" ||
		!strings.HasPrefix(m.Text, "Still waiting for approval: The agent says: Deploy <b>prod</b> (") || !strings.Contains(m.Text, "tool deploy), expires ") {
		t.Fatalf("reminder: %s", after.Body)
	}
	evs, err := e.svc.Events(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(evs, gate.EventReminded, "in the thread of 1 card(s)") {
		t.Fatalf("no reminder on the trail: %+v", evs)
	}
	if n := len(e.other.Deliveries()); n != 0 {
		t.Fatalf("the other relay got %d POSTs for a request not sent to it", n)
	}
}

func hasEvent(evs []gate.Event, typ, detail string) bool {
	for _, ev := range evs {
		if ev.Type == typ && strings.Contains(ev.Detail, detail) {
			return true
		}
	}
	return false
}

// TestDeliveryFailures: 5xx and 429 answers are retried; any other answer
// fails the delivery with what the relay said, so the gate's card worker
// retries later and audits it.
func TestDeliveryFailures(t *testing.T) {
	relay, ch := relayChannel(t)
	now := time.Now()
	r := &gate.Request{ID: "01JTEST0000000000000000000", Status: gate.StatusPending, ToolName: "deploy", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}

	relay.Script(webhooktest.Answer{Status: 503, Body: "down"}, webhooktest.Answer{Status: 200, Body: `{"ref":"teams-42"}`})
	ref, err := ch.Post(context.Background(), r)
	if err != nil || ref != "teams-42" {
		t.Fatalf("post after a 503: ref %q err %v", ref, err)
	}
	if n := len(relay.Deliveries()); n != 2 {
		t.Fatalf("%d POSTs, want 2 (one retry)", n)
	}

	relay.Script(webhooktest.Answer{Status: 400, Body: `{"error":"unknown chat"}`})
	if _, err := ch.Post(context.Background(), r); err == nil || !strings.Contains(err.Error(), "relay answered 400") || !strings.Contains(err.Error(), "unknown chat") {
		t.Fatalf("post answered 400: %v", err)
	}
	if n := len(relay.Deliveries()); n != 3 {
		t.Fatalf("%d POSTs, want 3 (no retry of a 400)", n)
	}

	relay.Script(webhooktest.Answer{Status: 200, Body: "ok"})
	if ref, err := ch.Post(context.Background(), r); err != nil || ref != r.ID {
		t.Fatalf("post answered without a ref: ref %q err %v, want the request id", ref, err)
	}

	// The error, shown on the request page as the card's last error, does
	// not carry the URL: a relay's secret is often in its path or query.
	// Found by a tenth reader.
	dead, err := webhook.New(webhook.Options{Name: "dead", Config: config.Webhook{URL: "http://127.0.0.1:1/hooks/catch/T0KEN-S3CRET?key=QUERY-S3CRET", Secret: secret}, Decider: nopDecider{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Post(context.Background(), r); err == nil || strings.Contains(err.Error(), "S3CRET") || !strings.Contains(err.Error(), "the relay") {
		t.Fatalf("a post to nowhere: %v", err)
	}
}

func TestNewNamesWhatIsMissing(t *testing.T) {
	_, err := webhook.New(webhook.Options{Config: config.Webhook{Secret: "short"}})
	for _, want := range []string{"name is required", "url is required", "secret must be at least 16", "a decider is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

type nopDecider struct{}

func (nopDecider) Get(context.Context, string) (*gate.Request, error) {
	return nil, gate.Errorf(gate.ENOTFOUND, "none")
}
func (nopDecider) Decide(context.Context, gate.Decision) (*gate.Request, error) {
	return nil, gate.Errorf(gate.ENOTFOUND, "none")
}
func (nopDecider) Refuse(context.Context, string, string, string, string) {}

// TestSelfApprovalRefused: a relay's verdict by the person who asked is
// refused with 403 and says why; another person's approval counts.
func TestSelfApprovalRefused(t *testing.T) {
	e := newEnv(t, gate.Route{Name: "deploys", Tool: "deploy", Channels: []string{"relay"},
		Approvers: []string{"webhook:relay/*"}, Plan: gate.Plan{ForbidSelf: true}})
	e.svc.SetPeople(gate.NewPeople([]gate.Person{{Name: "alice", Identities: []string{"webhook:relay/alice@example.com"}, Users: []string{"u_42"}}}, nil))
	r, _, err := e.svc.Submit(context.Background(), gate.Submission{ToolName: "deploy", UserID: "u_42"})
	if err != nil || r.Person != "alice" {
		t.Fatalf("submit: %v %+v", err, r)
	}
	body := verdict(r.ID, "approve", "alice@example.com", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 403 ||
		!strings.Contains(answer, `"code":"self_approval"`) || !strings.Contains(answer, "you asked for this; someone else must approve") {
		t.Fatalf("alice: %d %s", code, answer)
	}
	body = verdict(r.ID, "approve", "bob@example.com", "")
	if code, answer := webhooktest.Post(t, e.urlA, body, webhooktest.Signed(secret, time.Now(), body)); code != 200 || !strings.Contains(answer, "approved") {
		t.Fatalf("bob: %d %s", code, answer)
	}
}

// TestCardTextKeepsTheTool: a long summary and agent id must not push the
// tool off the card's one line, which is cut at 500 characters. Found by a
// second reader of the cut.
func TestCardTextKeepsTheTool(t *testing.T) {
	relay, ch := relayChannel(t)
	now := time.Now()
	r := &gate.Request{ID: "01JTEXT0000000000000000000", Status: gate.StatusPending, ToolName: "db_exec_" + strings.Repeat("x", 150),
		Summary: strings.Repeat("Count rows ", 60), AgentID: strings.Repeat("agent-", 40), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	relay.Script(webhooktest.Answer{Status: 200, Body: "ok"})
	if _, err := ch.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	got := relay.Deliveries()[0].Message.Text
	if n := utf8.RuneCountInString(got); n > 500 || !strings.Contains(got, "; tool db_exec_xxx") || !strings.HasSuffix(got, "x)") {
		t.Errorf("%d characters: %q", n, got)
	}
}

// The relay is sent what the cards and the page show in large type, and
// its one line says it when the agent's summary does not: with a summary
// the line held only the agent's "¥60" for a payment of ¥6,000,000, which
// every other face led with. Found by a reader.
func TestRelayIsSentTheAmount(t *testing.T) {
	relay, ch := relayChannel(t)
	now := time.Now()
	r := &gate.Request{ID: "01JBIG0000000000000000000", Status: gate.StatusPending, ToolName: "oa__purchase_pay",
		ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":6e6,"currency":"CNY"}`), Summary: "Pay ACME ¥60 for a cable",
		AgentID: "procurement-bot", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	relay.Script(webhooktest.Answer{Status: 200, Body: "ok"})
	if _, err := ch.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	m := relay.Deliveries()[0].Message
	if m.Request["big"] != "¥6,000,000" || m.Request["big_kind"] != "amount" || !strings.Contains(m.Text, "¥6,000,000") {
		t.Errorf("big %v (%v), text %q; want ¥6,000,000 in both", m.Request["big"], m.Request["big_kind"], m.Text)
	}
}

// relayChannel is a channel named relay posting to a fake relay, with a
// decider that decides nothing.
func relayChannel(t *testing.T) (*webhooktest.Relay, *webhook.Channel) {
	t.Helper()
	relay := webhooktest.NewRelay(t, secret)
	ch, err := webhook.New(webhook.Options{Name: "relay", Config: config.Webhook{URL: relay.URL, Secret: secret}, Decider: nopDecider{}})
	if err != nil {
		t.Fatal(err)
	}
	return relay, ch
}

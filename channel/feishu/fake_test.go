package feishu

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// fakeDecider records what a channel hands the gate.
type fakeDecider struct {
	mu        sync.Mutex
	decisions []gate.Decision
	refusals  []string
	// decide answers Decide; by default the request ends as the verdict says.
	decide func(d gate.Decision) (*gate.Request, error)
	// get answers Get; by default a pending request sent nowhere.
	get func(id string) (*gate.Request, error)
}

func (f *fakeDecider) Get(ctx context.Context, id string) (*gate.Request, error) {
	if f.get != nil {
		return f.get(id)
	}
	return &gate.Request{ID: id, Status: gate.StatusPending}, nil
}

func (f *fakeDecider) Decide(ctx context.Context, d gate.Decision) (*gate.Request, error) {
	f.mu.Lock()
	f.decisions = append(f.decisions, d)
	fn := f.decide
	f.mu.Unlock()
	if fn != nil {
		return fn(d)
	}
	r := sampleRequest()
	r.ID = d.RequestID
	r.Status = gate.StatusRejected
	if d.Approve {
		r.Status = gate.StatusApproved
	}
	at := testNow
	r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = &at, d.Actor, d.Via, d.Reason
	return r, nil
}

func (f *fakeDecider) Refuse(ctx context.Context, requestID, channel, actor, detail string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, requestID+"|"+channel+"|"+actor+"|"+detail)
}

func (f *fakeDecider) Decisions() []gate.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gate.Decision(nil), f.decisions...)
}

func (f *fakeDecider) Refusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refusals...)
}

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// clock is an adjustable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testConfig(baseURL string) config.Feishu {
	return config.Feishu{
		AppID: "cli_test", AppSecret: "app-secret", VerificationToken: "v-token", EncryptKey: "e-key",
		ChatID: "oc_chat", BaseURL: baseURL, Mode: config.FeishuWebhook,
	}
}

type testEnv struct {
	ch      *Channel
	api     *feishutest.Server
	decider *fakeDecider
	clock   *clock
}

func newTestEnv(t testing.TB, mutate ...func(*Options)) *testEnv {
	t.Helper()
	e := &testEnv{api: feishutest.NewServer(t, "cli_test", "app-secret"), decider: &fakeDecider{}, clock: &clock{t: testNow}}
	o := Options{
		Name: "ops-feishu", Config: testConfig(e.api.URL), PublicURL: "https://gate.example.com",
		Decider: e.decider, Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now,
	}
	for _, m := range mutate {
		m(&o)
	}
	ch, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ch.api.policy.Base = time.Millisecond // keep retries fast
	e.ch = ch
	return e
}

func sampleRequest() *gate.Request {
	return &gate.Request{
		ID: "01JTESTREQUEST0000000000001", Status: gate.StatusPending, ToolName: "oa__purchase_pay",
		ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":60000}`),
		Summary:  "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42", Route: "payments",
		Channels: []string{"ops-feishu"}, Quorum: 1, OnTimeout: gate.VerdictDeny,
		CreatedAt: testNow.Add(-time.Minute), ExpiresAt: testNow.Add(29 * time.Minute),
	}
}

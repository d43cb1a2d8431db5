package slack

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

const (
	botToken = "xoxb-test-token"
	appToken = "xapp-test-token"
	secret   = "test-signing-secret"
	slackCh  = "C0123456789"
)

// newFakeSlack is a recording fake of Slack's Web API taking the test tokens.
func newFakeSlack(t *testing.T) *slacktest.Server {
	return slacktest.NewServer(t, botToken, appToken)
}

// fakeDecider is a small recording gate.Decider with the gate's rules:
// first verdict wins, approvers are checked, the deadline holds.
type fakeDecider struct {
	mu        sync.Mutex
	now       func() time.Time
	reqs      map[string]*gate.Request
	decisions []gate.Decision // every Decide call
	refusals  []string        // "id|actor|detail"
	// calls, when set, gets every Decide call as it is made (buffered).
	calls chan gate.Decision
}

func newFakeDecider(now func() time.Time, reqs ...*gate.Request) *fakeDecider {
	d := &fakeDecider{now: now, reqs: map[string]*gate.Request{}}
	for _, r := range reqs {
		d.reqs[r.ID] = r
	}
	return d
}

func (d *fakeDecider) Get(_ context.Context, id string) (*gate.Request, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.reqs[id]
	if !ok {
		return nil, gate.Errorf(gate.ENOTFOUND, "no request %s", id)
	}
	cp := *r
	return &cp, nil
}

func (d *fakeDecider) Decide(_ context.Context, dec gate.Decision) (*gate.Request, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decisions = append(d.decisions, dec)
	if d.calls != nil {
		d.calls <- dec
	}
	r, ok := d.reqs[dec.RequestID]
	if !ok {
		return nil, gate.Errorf(gate.ENOTFOUND, "no request %s", dec.RequestID)
	}
	switch {
	case r.Status.Final():
		return r, gate.Errorf(gate.ECONFLICT, "already %s by %s", r.Status, r.DecidedBy)
	case !d.now().Before(r.ExpiresAt):
		return r, gate.Errorf(gate.EEXPIRED, "expired at %s", r.ExpiresAt.Format(time.RFC3339))
	case !gate.MayDecide(r.Approvers, append([]string{dec.Actor}, dec.Identities...)...):
		return r, gate.Errorf(gate.EFORBIDDEN, "%s is not an approver of this request", dec.Actor)
	}
	r.Status = gate.StatusRejected
	if dec.Approve {
		r.Status = gate.StatusApproved
	}
	at := d.now()
	r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = &at, dec.Actor, dec.Via, dec.Reason
	cp := *r
	return &cp, nil
}

func (d *fakeDecider) Refuse(_ context.Context, id, channel, actor, detail string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refusals = append(d.refusals, id+"|"+actor+"|"+detail)
}

func (d *fakeDecider) taken() []gate.Decision {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]gate.Decision(nil), d.decisions...)
}

func (d *fakeDecider) refused() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.refusals...)
}

// testRequest is a pending request as the gate would hand it to Post.
func testRequest(id string, now time.Time) *gate.Request {
	return &gate.Request{
		ID: id, Status: gate.StatusPending, ToolName: "oa__purchase_pay",
		ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":60000}`),
		Summary:  "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42", Route: "payments",
		Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}
}

// newTestChannel builds a channel against a fake API with a fixed clock.
func newTestChannel(t *testing.T, f *slacktest.Server, d gate.Decider, now func() time.Time, mod ...func(*Options)) *Channel {
	t.Helper()
	o := Options{
		Name: "ops-slack",
		Config: config.Slack{BotToken: botToken, SigningSecret: secret, ChannelID: slackCh,
			APIURL: f.APIURL()},
		PublicURL: "https://gate.example.com",
		Decider:   d,
		Now:       now,
	}
	for _, m := range mod {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

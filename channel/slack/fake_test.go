package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

const (
	botToken = "xoxb-test-token"
	appToken = "xapp-test-token"
	secret   = "test-signing-secret"
	slackCh  = "C0123456789"
)

// apiCall is one request the fake Slack API received.
type apiCall struct {
	Method string     // "chat.postMessage"
	Token  string     // from the form's token field or the bearer header
	JSON   bool       // body was JSON, not a form
	Form   url.Values // form bodies
	Body   map[string]any
}

// blocks decodes the call's Block Kit blocks.
func (c apiCall) blocks(t *testing.T) []map[string]any {
	t.Helper()
	var b []map[string]any
	raw := c.Form.Get("blocks")
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatalf("%s: blocks %q: %v", c.Method, raw, err)
	}
	return b
}

// fakeSlack speaks the slice of Slack's Web API the adapter uses, records
// every call, and can be told to fail the next calls of a method.
type fakeSlack struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	calls []apiCall
	seq   int
	fails map[string][]func(w http.ResponseWriter) // method → next answers
	wsURL string                                   // what apps.connections.open returns
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{t: t, fails: map[string][]func(http.ResponseWriter){}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) url() string { return f.srv.URL + "/api/" }

// failNext queues answers for the next calls of method.
func (f *fakeSlack) failNext(method string, answers ...func(w http.ResponseWriter)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[method] = append(f.fails[method], answers...)
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func slackError(code string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, code)
	}
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if r.Method != http.MethodPost || !ok {
		f.t.Errorf("fake slack: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	c := apiCall{Method: method}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		c.JSON = true
		c.Token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if len(body) > 0 {
			if err := json.Unmarshal(body, &c.Body); err != nil {
				f.t.Errorf("fake slack: %s: bad JSON: %v", method, err)
			}
		}
	} else {
		c.Form, _ = url.ParseQuery(string(body))
		c.Token = c.Form.Get("token")
		if c.Token == "" {
			c.Token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	var fail func(http.ResponseWriter)
	if q := f.fails[method]; len(q) > 0 {
		fail, f.fails[method] = q[0], q[1:]
	}
	f.seq++
	ts := fmt.Sprintf("1700000000.%06d", f.seq)
	f.mu.Unlock()
	if fail != nil {
		fail(w)
		return
	}
	want := botToken
	if method == "apps.connections.open" {
		want = appToken
	}
	if c.Token != want {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "chat.postMessage", "chat.update":
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": c.Form.Get("channel"), "ts": orDefault(c.Form.Get("ts"), ts)})
	case "chat.postEphemeral":
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "message_ts": ts})
	case "views.open":
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "view": map[string]any{"id": "V1"}})
	case "apps.connections.open":
		json.NewEncoder(w).Encode(map[string]any{"ok": true, "url": f.wsURL})
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// callsOf returns the recorded calls of one method.
func (f *fakeSlack) callsOf(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// fakeDecider is a small recording gate.Decider with the gate's rules:
// first verdict wins, approvers are checked, the deadline holds.
type fakeDecider struct {
	mu        sync.Mutex
	now       func() time.Time
	reqs      map[string]*gate.Request
	decisions []gate.Decision // every Decide call
	refusals  []string        // "id|actor|detail"
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
		ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":60000}`), RequiresConfirmation: true,
		Summary: "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42", Route: "payments",
		Quorum: 1, OnTimeout: gate.VerdictDeny, CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}
}

// newTestChannel builds a channel against a fake API with a fixed clock.
func newTestChannel(t *testing.T, f *fakeSlack, d gate.Decider, now func() time.Time, mod ...func(*Options)) *Channel {
	t.Helper()
	o := Options{
		Name: "ops-slack",
		Config: config.Slack{BotToken: botToken, SigningSecret: secret, ChannelID: slackCh,
			APIURL: f.url()},
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

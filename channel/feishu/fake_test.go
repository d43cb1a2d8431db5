package feishu

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// apiCall is one request the fake Feishu API received.
type apiCall struct {
	Method string
	Path   string // with the query
	Auth   string
	Body   []byte
}

// fakeResp is a scripted answer.
type fakeResp struct {
	status int
	body   string
	header map[string]string
}

// fakeFeishu is a local Feishu Open API: the token endpoint, message create
// and message patch. It records every call and can be told to fail.
type fakeFeishu struct {
	*httptest.Server
	t *testing.T

	mu      sync.Mutex
	calls   []apiCall
	script  map[string][]fakeResp // by "METHOD /path" without the query: answers to give first
	nextMsg int
	tokens  int
}

func newFakeFeishu(t *testing.T) *fakeFeishu {
	f := &fakeFeishu{t: t, script: map[string][]fakeResp{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeFeishu) fail(key string, rs ...fakeResp) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[key] = append(f.script[key], rs...)
}

func (f *fakeFeishu) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{Method: r.Method, Path: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"), Body: body})
	key := r.Method + " " + r.URL.Path
	var scripted *fakeResp
	if q := f.script[key]; len(q) > 0 {
		scripted, f.script[key] = &q[0], q[1:]
	}
	if scripted == nil && key == "POST /open-apis/auth/v3/tenant_access_token/internal" {
		f.tokens++
	}
	tokenN := f.tokens
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if scripted != nil {
		for k, v := range scripted.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(scripted.status)
		io.WriteString(w, scripted.body)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.t.Errorf("%s: Content-Type %q", key, ct)
	}
	switch {
	case key == "POST /open-apis/auth/v3/tenant_access_token/internal":
		var in map[string]string
		if err := json.Unmarshal(body, &in); err != nil || in["app_id"] != "cli_test" || in["app_secret"] != "app-secret" {
			w.WriteHeader(400)
			io.WriteString(w, `{"code":10003,"msg":"invalid param"}`)
			return
		}
		io.WriteString(w, `{"code":0,"msg":"ok","tenant_access_token":"t-`+strconv.Itoa(tokenN)+`","expire":7200}`)
	case !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer t-"):
		w.WriteHeader(400)
		io.WriteString(w, `{"code":99991661,"msg":"Missing access token"}`)
	case key == "POST /open-apis/im/v1/messages" && r.URL.Query().Get("receive_id_type") == "chat_id":
		f.mu.Lock()
		f.nextMsg++
		n := f.nextMsg
		f.mu.Unlock()
		io.WriteString(w, `{"code":0,"msg":"success","data":{"message_id":"om_`+strconv.Itoa(n)+`","msg_type":"interactive"}}`)
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, "/open-apis/im/v1/messages/om_"):
		io.WriteString(w, `{"code":0,"msg":"success","data":{}}`)
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"code":404,"msg":"not found"}`)
	}
}

// Calls returns the recorded calls, optionally only those whose
// "METHOD path" starts with prefix.
func (f *fakeFeishu) Calls(prefix string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if strings.HasPrefix(c.Method+" "+c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// fakeDecider records what a channel hands the gate.
type fakeDecider struct {
	mu        sync.Mutex
	decisions []gate.Decision
	refusals  []string
	// decide answers Decide; by default the request ends as the verdict says.
	decide func(d gate.Decision) (*gate.Request, error)
}

func (f *fakeDecider) Get(ctx context.Context, id string) (*gate.Request, error) {
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
	api     *fakeFeishu
	decider *fakeDecider
	clock   *clock
}

func newTestEnv(t *testing.T, mutate ...func(*Options)) *testEnv {
	t.Helper()
	e := &testEnv{api: newFakeFeishu(t), decider: &fakeDecider{}, clock: &clock{t: testNow}}
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
		ToolArgs: json.RawMessage(`{"vendor":"ACME","amount":60000}`), RequiresConfirmation: true,
		Summary: "Pay ACME ¥60,000", AgentID: "procurement-bot", UserID: "u_42", Route: "payments",
		Channels: []string{"ops-feishu"}, Quorum: 1, OnTimeout: gate.VerdictDeny,
		CreatedAt: testNow.Add(-time.Minute), ExpiresAt: testNow.Add(29 * time.Minute),
	}
}

// Package slacktest is test support for code that talks to Slack: a local,
// recording fake of the slice of Slack's Web API Gatehouse uses, a fake
// Socket Mode endpoint, and interactivity requests built and signed the way
// Slack builds and signs them.
package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fakefault"
)

// Call is one request the fake Web API received.
type Call struct {
	Method string     // "chat.postMessage"
	Token  string     // the form's token field, else the bearer token
	JSON   bool       // the body was JSON, not a form
	Form   url.Values // form-encoded calls
	Body   map[string]any
	TS     string    // the ts the fake minted for this call (chat.postMessage answers with it)
	At     time.Time // when the call arrived
	// Fault is the fault the call met ("" for none): "429", "503", …,
	// "hang" (held until the caller gave up; nothing happened) or
	// "hang-landed" (held until the caller gave up, but the message
	// exists: Slack did the work and the answer was lost).
	Fault string
	// Done reports whether the call took effect: it was answered with
	// success, or it hung and landed. A chat.postMessage with Done is a
	// message people see.
	Done bool
}

// Blocks decodes the call's Block Kit blocks (the form field "blocks"),
// failing tb when they are not JSON.
func (c Call) Blocks(tb testing.TB) []map[string]any {
	tb.Helper()
	raw := c.Form.Get("blocks")
	var b []map[string]any
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		tb.Fatalf("%s: blocks %q: %v", c.Method, raw, err)
	}
	return b
}

// Server is a fake of Slack's Web API: chat.postMessage (in a channel, a
// direct message or a thread, with thread_ts; with message metadata),
// chat.update, chat.postEphemeral, conversations.open,
// conversations.history and conversations.replies (served from its record
// of the messages that took effect), views.open and apps.connections.open. It checks the tokens (the
// app token for apps.connections.open, the bot token for the rest), records
// every call, and can be told to fail the next calls of a method.
type Server struct {
	URL string // the server's root; the API is at URL+"/api/"

	tb       testing.TB
	srv      *httptest.Server
	botToken string
	appToken string

	mu        sync.Mutex
	calls     []Call
	seq       int
	fails     map[string][]func(http.ResponseWriter) // method → next answers
	holds     map[string][]chan struct{}             // method → next calls to hold
	socketURL string
	faults    fakefault.Set
	others    []otherMessage // messages other apps posted (PostAs)
}

// NewServer starts a fake Web API accepting botToken and appToken; it is
// closed when tb's test ends. Unexpected requests fail tb.
func NewServer(tb testing.TB, botToken, appToken string) *Server {
	s := &Server{tb: tb, botToken: botToken, appToken: appToken, fails: map[string][]func(http.ResponseWriter){},
		holds: map[string][]chan struct{}{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// APIURL is the base URL a Slack client is configured with.
func (s *Server) APIURL() string { return s.URL + "/api/" }

// SetSocketURL sets what apps.connections.open hands out.
func (s *Server) SetSocketURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.socketURL = u
}

// FailNext queues answers for the next calls of method, one a call.
func (s *Server) FailNext(method string, answers ...func(w http.ResponseWriter)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = append(s.fails[method], answers...)
}

// Inject puts a fault in force (see fakefault.Fault): calls of its
// Methods ("chat.postMessage", …; all when empty) are answered 429 or 5xx,
// or hang, for its window or its number of calls.
func (s *Server) Inject(f fakefault.Fault) { s.faults.Add(f) }

// Heal ends every injected fault.
func (s *Server) Heal() { s.faults.Clear() }

// HoldNext makes the next call of method wait, once recorded, until
// release is called: a platform call in flight, for as long as a test
// needs. entered closes when the call arrives.
func (s *Server) HoldNext(method string) (entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.holds[method] = append(s.holds[method], in, out)
	s.mu.Unlock()
	var once sync.Once
	return in, func() { once.Do(func() { close(out) }) }
}

// Status answers with an HTTP status and header pairs (name, value, …).
func Status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// Error answers 200 with Slack's {"ok":false,"error":code}.
func Error(code string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, code)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	if r.Method != http.MethodPost || !ok {
		s.tb.Errorf("fake slack: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	c := Call{Method: method}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		c.JSON = true
		if len(body) > 0 {
			if err := json.Unmarshal(body, &c.Body); err != nil {
				s.tb.Errorf("fake slack: %s: bad JSON: %v", method, err)
			}
		}
	} else {
		c.Form, _ = url.ParseQuery(string(body))
		c.Token = c.Form.Get("token")
	}
	if c.Token == "" {
		c.Token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	s.mu.Lock()
	s.seq++
	c.TS, c.At = fmt.Sprintf("1700000000.%06d", s.seq), time.Now()
	i := len(s.calls)
	s.calls = append(s.calls, c)
	var fail func(http.ResponseWriter)
	var fault *fakefault.Fault
	if q := s.fails[method]; len(q) > 0 {
		fail, s.fails[method] = q[0], q[1:]
	} else {
		fault = s.faults.Take(method, time.Now())
	}
	var hold []chan struct{}
	if q := s.holds[method]; len(q) > 0 {
		hold, s.holds[method] = q[:2], q[2:]
	}
	socketURL := s.socketURL
	s.mu.Unlock()
	if hold != nil {
		close(hold[0])
		<-hold[1]
	}
	if fail != nil {
		fail(w)
		return
	}
	if fault != nil {
		if fault.Hang && fault.Landed {
			// Slack did the work when the call arrived; only the answer
			// is lost: the message is there while the caller waits.
			s.mu.Lock()
			s.calls[i].Fault, s.calls[i].Done = fault.Name(), true
			s.mu.Unlock()
		}
		done := fault.Serve(w, r)
		s.mu.Lock()
		s.calls[i].Fault, s.calls[i].Done = fault.Name(), done
		s.mu.Unlock()
		if !done {
			return
		}
	}

	want := s.botToken
	if method == "apps.connections.open" {
		want = s.appToken
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	if c.Token != want {
		enc.Encode(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if method == "chat.postMessage" && c.Form.Has("metadata") && !validMetadata(c.Form.Get("metadata")) {
		enc.Encode(map[string]any{"ok": false, "error": "invalid_metadata_format"})
		return
	}
	s.mu.Lock()
	s.calls[i].Done = true
	s.mu.Unlock()
	switch method {
	case "conversations.history":
		enc.Encode(s.history(c.Form))
	case "conversations.replies":
		enc.Encode(s.replies(c.Form))
	case "auth.test":
		enc.Encode(map[string]any{"ok": true, "url": "https://fake.slack.test/", "team": "Fake", "user": "gatehouse",
			"team_id": "T0FAKE", "user_id": "U" + BotID, "bot_id": BotID})
	case "chat.postMessage", "chat.update":
		ts := c.Form.Get("ts")
		if ts == "" {
			ts = c.TS
		}
		enc.Encode(map[string]any{"ok": true, "channel": c.Form.Get("channel"), "ts": ts})
	case "conversations.open":
		// The direct message with one user: Slack answers its own D… id.
		users := c.Form.Get("users")
		if users == "" || strings.Contains(users, ",") {
			enc.Encode(map[string]any{"ok": false, "error": "users_list_not_supplied"})
			return
		}
		enc.Encode(map[string]any{"ok": true, "channel": map[string]any{"id": DirectChannel(users)}})
	case "chat.postEphemeral":
		enc.Encode(map[string]any{"ok": true, "message_ts": c.TS})
	case "views.open":
		enc.Encode(map[string]any{"ok": true, "view": map[string]any{"id": "V1"}})
	case "apps.connections.open":
		enc.Encode(map[string]any{"ok": true, "url": socketURL})
	default:
		enc.Encode(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// Posts returns the chat.postMessage calls that took effect: the messages
// people see, whether or not Gatehouse heard the answer.
func (s *Server) Posts() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == "chat.postMessage" && c.Done {
			out = append(out, c)
		}
	}
	return out
}

// DirectChannel is the id the fake gives the bot's direct message with a
// user: "D" and the user's id without its "U".
func DirectChannel(user string) string { return "D" + strings.TrimPrefix(user, "U") }

// Calls returns every recorded call, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsOf returns the recorded calls of one method.
func (s *Server) CallsOf(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits up to 5 s for n calls of method and returns them all,
// failing tb when they do not come.
func (s *Server) WaitCalls(tb testing.TB, method string, n int) []Call {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.CallsOf(method)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			tb.Fatalf("fake slack saw %d %s calls, want %d", len(got), method, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Sign returns the headers Slack sends with body at time ts: the form
// content type and the v0 signature under secret.
func Sign(secret string, ts time.Time, body string) http.Header {
	s := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", s, body)
	h := http.Header{}
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	h.Set("X-Slack-Request-Timestamp", s)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}

// Form is the body Slack POSTs for an interaction: one form field,
// payload, holding p as JSON.
func Form(p any) string {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return url.Values{"payload": {string(b)}}.Encode()
}

// Tap describes a tap on a message's button.
type Tap struct {
	Team, User      string // the tapper and their home workspace
	Channel         string // where the card is
	MessageTS       string // the card's ts; "1700000000.000001" if empty
	ActionID, Value string // the button
	TriggerID       string // "trig.123" if empty
	ActionTS        string // "1700000001.000002" if empty
}

// BlockActions is the block_actions payload Slack sends for the tap.
func BlockActions(t Tap) map[string]any {
	msgTS := or(t.MessageTS, "1700000000.000001")
	return map[string]any{
		"type": "block_actions", "api_app_id": "A1", "token": "legacy-verification-token",
		"trigger_id": or(t.TriggerID, "trig.123"),
		"team":       map[string]any{"id": t.Team, "domain": "acme"},
		"user":       map[string]any{"id": t.User, "username": strings.ToLower(t.User), "team_id": t.Team},
		"channel":    map[string]any{"id": t.Channel, "name": "approvals"},
		"container":  map[string]any{"type": "message", "channel_id": t.Channel, "message_ts": msgTS},
		"message":    map[string]any{"type": "message", "ts": msgTS},
		"actions": []any{map[string]any{"type": "button", "action_id": t.ActionID, "block_id": "gatehouse_actions",
			"value": t.Value, "action_ts": or(t.ActionTS, "1700000001.000002"),
			"text": map[string]any{"type": "plain_text", "text": "x"}}},
	}
}

// Submission describes the submission of a modal with one text input.
type Submission struct {
	Team, User    string
	CallbackID    string // the view's callback_id
	Metadata      string // its private_metadata
	Block, Action string // the input's block and action ids
	Value         string // what was typed
	TriggerID     string // "trig.456" if empty
}

// ViewSubmission is the view_submission payload Slack sends for s.
func ViewSubmission(s Submission) map[string]any {
	return map[string]any{
		"type": "view_submission", "api_app_id": "A1", "token": "legacy-verification-token",
		"trigger_id": or(s.TriggerID, "trig.456"),
		"team":       map[string]any{"id": s.Team, "domain": "acme"},
		"user":       map[string]any{"id": s.User, "username": strings.ToLower(s.User), "team_id": s.Team},
		"view": map[string]any{"id": "V1", "type": "modal", "callback_id": s.CallbackID,
			"private_metadata": s.Metadata,
			"state": map[string]any{"values": map[string]any{s.Block: map[string]any{s.Action: map[string]any{
				"type": "plain_text_input", "value": s.Value}}}}},
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

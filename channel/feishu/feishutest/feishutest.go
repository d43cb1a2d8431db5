// Package feishutest is test support for code that talks to Feishu (Lark):
// a local, recording fake of the slice of the Feishu Open API Gatehouse
// uses, and card callbacks encrypted and signed the way Feishu builds them.
package feishutest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fakefault"
)

// The Open API paths the fake serves.
const (
	TokenPath    = "/open-apis/auth/v3/tenant_access_token/internal"
	MessagesPath = "/open-apis/im/v1/messages"
)

// Call is one request the fake Open API received.
type Call struct {
	Method string
	Path   string // without the query
	Query  string // the raw query
	Auth   string // the Authorization header
	Body   []byte // as sent
	JSON   map[string]any
	// Fault is the fault the call met ("" for none): "429", "503", …,
	// "hang" (held until the caller gave up; nothing happened) or
	// "hang-landed" (held until the caller gave up, but it took effect:
	// Feishu did the work and the answer was lost).
	Fault string
	// Done reports whether the call took effect: answered with success,
	// or hung and landed.
	Done bool
	// MessageID is the message a create or reply made, or, for a repeat
	// of a uuid seen before (Repeat), the message that uuid made.
	MessageID string
	// Repeat marks a create or reply whose uuid was seen before: as
	// Feishu does within the hour, the fake sends nothing new and answers
	// with the first message's id.
	Repeat bool
}

// Card decodes the card a message create or patch carries in "content",
// failing tb when it is not card JSON.
func (c Call) Card(tb testing.TB) map[string]any {
	tb.Helper()
	s, _ := c.JSON["content"].(string)
	var card map[string]any
	if err := json.Unmarshal([]byte(s), &card); err != nil {
		tb.Fatalf("%s %s: content %q is not card JSON: %v", c.Method, c.Path, s, err)
	}
	return card
}

// Answer is a scripted HTTP answer.
type Answer struct {
	Status int
	Body   string
	Header map[string]string
}

// Server is a fake of the Feishu Open API: the tenant token endpoint
// (tokens "t-1", "t-2", … one a fetch), message create to a chat or a
// person (message ids "om_1", "om_2", …), message reply and message patch.
// It checks the app's credentials and the bearer tokens, records every
// call, and can be told to answer the next calls of an endpoint otherwise.
type Server struct {
	URL string // the Open API's base URL

	tb        testing.TB
	srv       *httptest.Server
	appID     string
	appSecret string

	mu     sync.Mutex
	calls  []Call
	script map[string][]Answer // by "METHOD /path" without the query
	msgs   int
	tokens int
	uuids  map[string]string // uuid → the message it made
	faults fakefault.Set
}

// NewServer starts a fake Open API for the app appID with appSecret; it is
// closed when tb's test ends. Unexpected requests fail tb.
func NewServer(tb testing.TB, appID, appSecret string) *Server {
	s := &Server{tb: tb, appID: appID, appSecret: appSecret, script: map[string][]Answer{}, uuids: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// FailNext queues answers for the next calls of key, "METHOD /path"
// without the query, one a call.
func (s *Server) FailNext(key string, answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[key] = append(s.script[key], answers...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: body}
	key := r.Method + " " + r.URL.Path
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.tb.Errorf("fake feishu: %s: Content-Type %q", key, ct)
	}
	if err := json.Unmarshal(body, &c.JSON); err != nil {
		s.tb.Errorf("fake feishu: %s: body is not JSON: %q", key, body)
	}
	s.mu.Lock()
	i := len(s.calls)
	s.calls = append(s.calls, c)
	var scripted *Answer
	var fault *fakefault.Fault
	if q := s.script[key]; len(q) > 0 {
		scripted, s.script[key] = &q[0], q[1:]
	} else {
		fault = s.faults.Take(key, time.Now())
	}
	issued := s.tokens
	s.mu.Unlock()

	if fault != nil {
		took := fault.Serve(w, r)
		s.mu.Lock()
		s.calls[i].Fault = fault.Name()
		s.mu.Unlock()
		if !took {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if scripted != nil {
		for k, v := range scripted.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(scripted.Status)
		io.WriteString(w, scripted.Body)
		return
	}
	answer := func(status int, v map[string]any) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	done := func() {
		s.mu.Lock()
		s.calls[i].Done = true
		s.mu.Unlock()
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(c.Auth, "Bearer t-"))
	switch {
	case key == "POST "+TokenPath:
		if c.JSON["app_id"] != s.appID || c.JSON["app_secret"] != s.appSecret {
			answer(400, map[string]any{"code": 10014, "msg": "app secret invalid"})
			return
		}
		s.mu.Lock()
		s.tokens++
		tok := "t-" + strconv.Itoa(s.tokens)
		s.mu.Unlock()
		done()
		answer(200, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": 7200})
	case n < 1 || n > issued || c.Auth != "Bearer t-"+strconv.Itoa(n):
		answer(400, map[string]any{"code": 99991661, "msg": "Missing access token"})
	case key == "POST "+MessagesPath && receiveIDTypes[r.URL.Query().Get("receive_id_type")] && c.JSON["receive_id"] != "":
		answer(200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"message_id": s.newMessage(i), "msg_type": c.JSON["msg_type"]}})
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, MessagesPath+"/om_") && strings.HasSuffix(r.URL.Path, "/reply"):
		parent := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, MessagesPath+"/"), "/reply")
		answer(200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"message_id": s.newMessage(i), "msg_type": c.JSON["msg_type"],
			"parent_id": parent, "root_id": parent}})
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, MessagesPath+"/om_"):
		done()
		answer(200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
	default:
		s.tb.Errorf("fake feishu: unexpected %s %s", r.Method, r.URL.RequestURI())
		answer(404, map[string]any{"code": 404, "msg": "not found"})
	}
}

// receiveIDTypes are the receivers message create takes: a chat, or a
// person (a direct message) by one of their ids.
var receiveIDTypes = map[string]bool{"chat_id": true, "open_id": true, "union_id": true, "user_id": true}

// newMessage mints a message id for call i, "om_1", "om_2", …, and
// records it on the call; a uuid seen before answers its first message.
func (s *Server) newMessage(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.calls[i]
	c.Done = true
	uuid, _ := c.JSON["uuid"].(string)
	if id, ok := s.uuids[uuid]; ok && uuid != "" {
		c.MessageID, c.Repeat = id, true
		return id
	}
	s.msgs++
	c.MessageID = "om_" + strconv.Itoa(s.msgs)
	if uuid != "" {
		s.uuids[uuid] = c.MessageID
	}
	return c.MessageID
}

// Inject puts a fault in force (see fakefault.Fault): calls of its
// Methods ("POST /open-apis/im/v1/messages", …, as FailNext keys them;
// all when empty) are answered 429 or 5xx, or hang, for its window or its
// number of calls.
func (s *Server) Inject(f fakefault.Fault) { s.faults.Add(f) }

// Heal ends every injected fault.
func (s *Server) Heal() { s.faults.Clear() }

// Posts returns the message creates (to a chat or a person) that made a
// message people see: they took effect and were not a repeat of a uuid.
func (s *Server) Posts() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == http.MethodPost && c.Path == MessagesPath && c.Done && !c.Repeat {
			out = append(out, c)
		}
	}
	return out
}

// CardOf returns the message of the first card posted for a request (its
// id in the body), "" when none was: what a tap on that card names as its
// open_message_id.
func (s *Server) CardOf(requestID string) string {
	for _, c := range s.Posts() {
		if bytes.Contains(c.Body, []byte(requestID)) {
			return c.MessageID
		}
	}
	return ""
}

// Calls returns the recorded calls whose "METHOD path" (without the query)
// starts with prefix; "" returns them all.
func (s *Server) Calls(prefix string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if strings.HasPrefix(c.Method+" "+c.Path, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits up to 5 s for n calls matching prefix (as Calls) and
// returns them all, failing tb when they do not come.
func (s *Server) WaitCalls(tb testing.TB, prefix string, n int) []Call {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := s.Calls(prefix)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			tb.Fatalf("fake feishu saw %d calls %q, want %d", len(got), prefix, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Encrypt encrypts plain as Feishu encrypts callbacks: AES-256-CBC under
// SHA-256(key), PKCS#7 padding, a random IV in front, base64.
func Encrypt(plain []byte, key string) string {
	k := sha256.Sum256([]byte(key))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(bytes.Clone(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(data))
	rand.Read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], data)
	return base64.StdEncoding.EncodeToString(out)
}

// Sign is Feishu's callback signature: hex(sha256(ts + nonce + key + body)).
func Sign(ts, nonce, key string, body []byte) string {
	sum := sha256.Sum256([]byte(ts + nonce + key + string(body)))
	return hex.EncodeToString(sum[:])
}

// Delivery is one callback as Feishu POSTs it: the body and its headers.
type Delivery struct {
	Body   []byte
	Header http.Header
}

// Encrypted is payload as JSON, encrypted under key and wrapped as
// {"encrypt":…}: the body of a callback when an encrypt key is set.
func Encrypted(payload any, key string) []byte {
	plain, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	body, _ := json.Marshal(map[string]string{"encrypt": Encrypt(plain, key)})
	return body
}

// Callback is payload delivered as Feishu delivers it: encrypted under
// encryptKey with a random IV and signed, at time at with a random nonce,
// with signKey (Feishu signs with the encrypt key; a different signKey
// forges).
func Callback(payload any, encryptKey, signKey string, at time.Time) Delivery {
	body := Encrypted(payload, encryptKey)
	nb := make([]byte, 8)
	rand.Read(nb)
	ts, nonce := strconv.FormatInt(at.Unix(), 10), hex.EncodeToString(nb)
	return Delivery{Body: body, Header: http.Header{
		"Content-Type":             {"application/json; charset=utf-8"},
		"X-Lark-Request-Timestamp": {ts},
		"X-Lark-Request-Nonce":     {nonce},
		"X-Lark-Signature":         {Sign(ts, nonce, signKey, body)},
	}}
}

// Reply is Gatehouse's HTTP answer to a callback, as Feishu reads it.
type Reply struct {
	Toast *struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	} `json:"toast"`
	Card *struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	} `json:"card"`
	Challenge string `json:"challenge"`
	Error     *struct {
		Code, Message string
	} `json:"error"`
}

// Tap describes a tap on a card's button (a card.action.trigger callback,
// schema 2.0).
type Tap struct {
	EventID, Token, AppID, TenantKey string    // the header; Token is the verification token
	At                               time.Time // create_time
	OpenID, UserID, UnionID          string    // the operator
	RequestID, Choice, Reason        string    // the button's value and the form's reason
	MessageID, ChatID                string    // where the card is
	To                               string    // a direct card's addressee, in the button's value
}

// CardAction is the card.action.trigger event Feishu sends for t.
func CardAction(t Tap) map[string]any {
	value := map[string]any{"request_id": t.RequestID, "choice": t.Choice}
	if t.To != "" {
		value["to"] = t.To
	}
	return map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": t.EventID, "token": t.Token, "create_time": strconv.FormatInt(t.At.UnixMicro(), 10),
			"event_type": "card.action.trigger", "tenant_key": t.TenantKey, "app_id": t.AppID,
		},
		"event": map[string]any{
			"operator": map[string]any{"tenant_key": t.TenantKey, "user_id": t.UserID, "open_id": t.OpenID, "union_id": t.UnionID},
			"token":    "c-0123456789",
			"action": map[string]any{
				"value":      value,
				"tag":        "button",
				"name":       "gatehouse_" + t.Choice,
				"form_value": map[string]any{"reason": t.Reason},
			},
			"host":    "im_message",
			"context": map[string]any{"open_message_id": t.MessageID, "open_chat_id": t.ChatID},
		},
	}
}

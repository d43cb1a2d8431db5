// Package webhooktest is test support for Gatehouse's webhook channel: a
// local, recording relay that checks every POST's signature the way a
// relay written from the documentation would, and verdicts signed the same
// way for the callback.
package webhooktest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
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
)

// Delivery is one POST the relay received.
type Delivery struct {
	Header http.Header
	Body   []byte
	// Message is the body decoded (type, channel, ref, step, mention,
	// request, text, url, callback_url).
	Message Message
	// SignatureOK says the signature matched the relay's secret and the
	// timestamp was within five minutes of the relay's clock.
	SignatureOK bool
}

// Message mirrors the documented body of a POST to the relay. It is
// written from the documentation, not shared with the channel, so that a
// field the channel renamed fails the tests.
type Message struct {
	Type        string         `json:"type"`
	Channel     string         `json:"channel"`
	Ref         string         `json:"ref"`
	Step        int            `json:"step"`
	Mention     []string       `json:"mention"`
	Request     map[string]any `json:"request"`
	Text        string         `json:"text"`
	URL         string         `json:"url"`
	CallbackURL string         `json:"callback_url"`
}

// Answer is a scripted HTTP answer.
type Answer struct {
	Status int
	Body   string
	Header map[string]string
}

// Relay is a fake relay: it answers 200 {"ref": "msg-<n>"} to every card,
// 200 {} to every final state, and records every POST.
type Relay struct {
	URL string

	tb     testing.TB
	srv    *httptest.Server
	secret []byte

	mu     sync.Mutex
	got    []Delivery
	script []Answer
	cards  int
	signal chan struct{}
}

// NewRelay starts a relay that checks signatures with secret; it stops
// when the test ends.
func NewRelay(tb testing.TB, secret string) *Relay {
	r := &Relay{tb: tb, secret: []byte(secret), signal: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/hook"
	tb.Cleanup(r.srv.Close)
	return r
}

// Script makes the next POSTs get these answers, in order, whatever they are.
func (r *Relay) Script(answers ...Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script = append(r.script, answers...)
}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	d := Delivery{Header: req.Header.Clone(), Body: body}
	d.SignatureOK = req.Method == http.MethodPost && req.URL.Path == "/hook" &&
		req.Header.Get("Content-Type") == "application/json" && r.verify(req.Header, body)
	if err := json.Unmarshal(body, &d.Message); err != nil {
		r.tb.Errorf("webhooktest: a POST that is not JSON: %v: %s", err, body)
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	var a *Answer
	if len(r.script) > 0 {
		a = &r.script[0]
		r.script = r.script[1:]
	} else if d.Message.Type == "card" {
		r.cards++
		a = &Answer{Status: 200, Body: `{"ref":"msg-` + strconv.Itoa(r.cards) + `"}`}
	} else {
		a = &Answer{Status: 200, Body: `{}`}
	}
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// verify checks a POST the way the documentation tells relays to.
func (r *Relay) verify(h http.Header, body []byte) bool {
	ts := h.Get("X-Gatehouse-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	got, ok := strings.CutPrefix(h.Get("X-Gatehouse-Signature"), "v1=")
	raw, err := hex.DecodeString(got)
	if !ok || err != nil {
		return false
	}
	m := hmac.New(sha256.New, r.secret)
	m.Write([]byte("v1:" + ts + ":"))
	m.Write(body)
	return hmac.Equal(m.Sum(nil), raw)
}

// Deliveries returns every POST so far.
func (r *Relay) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// Wait blocks until the relay has received n POSTs that match (all POSTs
// when match is nil) and returns them, failing the test after 10 s.
func (r *Relay) Wait(n int, match func(Delivery) bool) []Delivery {
	r.tb.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		var out []Delivery
		for _, d := range r.Deliveries() {
			if match == nil || match(d) {
				out = append(out, d)
			}
		}
		if len(out) >= n {
			return out
		}
		select {
		case <-r.signal:
		case <-deadline.C:
			r.tb.Fatalf("webhooktest: %d matching POSTs after 10s, want %d: %+v", len(out), n, r.Deliveries())
			return nil
		}
	}
}

// OfType matches the deliveries of one message type for one request.
func OfType(typ, requestID string) func(Delivery) bool {
	return func(d Delivery) bool { return d.Message.Type == typ && d.Message.Request["id"] == requestID }
}

// Verdict is the documented body of a verdict.
type Verdict struct {
	RequestID string `json:"request_id"`
	Decision  string `json:"decision"`
	Actor     string `json:"actor"`
	Reason    string `json:"reason,omitempty"`
}

// Signed returns body signed with secret at time at, as a relay sends it.
func Signed(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v1:" + ts + ":"))
	m.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Gatehouse-Timestamp", ts)
	h.Set("X-Gatehouse-Signature", "v1="+hex.EncodeToString(m.Sum(nil)))
	return h
}

// Post sends body with header to url and returns the status and the
// answer's body.
func Post(tb testing.TB, url string, body []byte, header http.Header) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header = header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

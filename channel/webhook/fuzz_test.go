package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// countingDecider knows one request, sent to channel "relay", and counts
// the verdicts it is handed.
type countingDecider struct {
	mu      sync.Mutex
	decided int
}

func (d *countingDecider) Get(_ context.Context, id string) (*gate.Request, error) {
	return &gate.Request{ID: id, Status: gate.StatusPending, Channels: []string{"relay"}}, nil
}

func (d *countingDecider) Decide(_ context.Context, dec gate.Decision) (*gate.Request, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decided++
	return &gate.Request{ID: dec.RequestID, Status: gate.StatusApproved, DecidedBy: dec.Actor}, nil
}

func (d *countingDecider) Refuse(context.Context, string, string, string, string) {}

func (d *countingDecider) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.decided
}

// FuzzCallback posts hostile verdicts to a webhook channel's callback. A
// verdict signed with the channel's secret, inside the window and seen for
// the first time is decided only when it is well formed (a plain request
// id, approve or reject, a plain actor); the same verdict with one byte of
// its body changed, with another timestamp, another secret, outside the
// window, or a second time, never decides anything.
func FuzzCallback(f *testing.F) {
	for i, b := range []string{
		`{"request_id":"01JREQ","decision":"approve","actor":"alice@example.com","reason":"ok"}`,
		`{"request_id":"01JREQ","decision":"reject","actor":"bob","reason":""}`,
		`{"request_id":" 01JREQ ","decision":"approve","actor":"a\u0000b"}`,
		`{"request_id":"01JREQ","decision":"APPROVE","actor":"a"}`,
		`{"request_id":"01JREQ","decision":"approve","actor":"a","extra":1}`,
		`{"request_id":"01JREQ","decision":"approve","actor":"a"}{"request_id":"x"}`,
		`{"request_id":"01JREQ","decision":"approve","actor":"a","Decision":"reject"}`,
		`[]`, `null`, ``, `{"request_id":"\ud800","decision":"approve","actor":"a"}`,
	} {
		f.Add([]byte(b), uint(i*13), int64(i*40-200))
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	secret := []byte("fuzz-secret-0123456789abcdef")
	d := &countingDecider{}
	c, err := New(Options{Name: "relay", Config: config.Webhook{URL: "http://127.0.0.1:1/hook", Secret: string(secret)},
		Decider: d, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	post := func(body []byte, key []byte, ts int64) int {
		r := httptest.NewRequest(http.MethodPost, "/callbacks/webhook/relay", bytes.NewReader(body))
		s := strconv.FormatInt(ts, 10)
		r.Header.Set(HeaderTimestamp, s)
		r.Header.Set(HeaderSignature, Sign(key, s, body))
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w.Code
	}
	var nth int64
	f.Fuzz(func(t *testing.T, body []byte, at uint, skew int64) {
		if skew < -300 || skew > 300 {
			skew %= 300
		}
		// Each run pads its body with its own number of spaces (up to
		// 63), so that runs of one input do not share a signature (a
		// shared one would be a replay).
		nth++
		ts := now.Unix() + skew
		body = append(body, bytes.Repeat([]byte(" "), int(nth%64))...)
		before := d.count()
		if len(body) > 0 {
			tampered := bytes.Clone(body)
			tampered[at%uint(len(body))] ^= 1 + byte(at>>8)%255
			r := httptest.NewRequest(http.MethodPost, "/callbacks/webhook/relay", bytes.NewReader(tampered))
			r.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
			r.Header.Set(HeaderSignature, Sign(secret, strconv.FormatInt(ts, 10), body))
			w := httptest.NewRecorder()
			c.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("a body changed after signing answered %d", w.Code)
			}
		}
		if code := post(body, []byte("another-secret-0123456789"), ts); code != http.StatusUnauthorized {
			t.Fatalf("signed with another secret: %d", code)
		}
		if code := post(body, secret, now.Unix()-int64(Window.Seconds())-1-int64(at%1000)); code != http.StatusUnauthorized {
			t.Fatalf("signed outside the window: %d", code)
		}
		if d.count() != before {
			t.Fatal("a forged, changed or stale verdict was decided")
		}
		code := post(body, secret, ts)
		v, perr := parseVerdict(body)
		if d.count() != before+btoi(perr == nil) {
			t.Fatalf("a verdict that reads as %+v, %v: answered %d, decided %d", v, perr, code, d.count()-before)
		}
		if perr == nil && (v.RequestID == "" || !plainText(v.RequestID, maxID) || (v.Decision != "approve" && v.Decision != "reject") ||
			v.Actor == "" || !plainText(v.Actor, maxActor) || !utf8.ValidString(v.Reason) || strings.ContainsRune(v.Reason, 0)) {
			t.Fatalf("accepted a verdict that is not well formed: %+v", v)
		}
		if code := post(body, secret, ts); code != http.StatusUnauthorized || d.count() != before+btoi(perr == nil) {
			t.Fatalf("a replayed verdict answered %d", code)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeSocket is Slack's Socket Mode endpoint: it greets, sends envelopes
// and hands back every message the client writes.
type fakeSocket struct {
	srv   *httptest.Server
	send  chan any
	acks  chan map[string]any
	conns chan struct{}
}

func newFakeSocket(t *testing.T) *fakeSocket {
	s := &fakeSocket{send: make(chan any, 4), acks: make(chan map[string]any, 4), conns: make(chan struct{}, 4)}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		defer conn.Close()
		s.conns <- struct{}{}
		_ = conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				var m map[string]any
				if err := conn.ReadJSON(&m); err != nil {
					return
				}
				s.acks <- m
			}
		}()
		for {
			select {
			case m := <-s.send:
				if err := conn.WriteJSON(m); err != nil {
					return
				}
			case <-done:
				return
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *fakeSocket) url() string { return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/link" }

func TestSocketModeApprove(t *testing.T) {
	f := newFakeSlack(t)
	ws := newFakeSocket(t)
	f.wsURL = ws.url()
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	c := newTestChannel(t, f, d, fixed(t0), func(o *Options) {
		o.Config.AppToken, o.Config.SigningSecret = appToken, ""
	})
	if !c.SocketMode() {
		t.Fatal("SocketMode() false with an app token")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()

	select {
	case <-ws.conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no Socket Mode connection")
	}
	if opens := f.callsOf("apps.connections.open"); len(opens) != 1 || opens[0].Token != appToken {
		t.Fatalf("apps.connections.open calls %+v", opens)
	}
	form, _ := url.ParseQuery(blockActions("T123", "U456", actionApprove, "approve:01JREQ"))
	ws.send <- map[string]any{"type": "interactive", "envelope_id": "env-42",
		"payload": json.RawMessage(form.Get("payload")), "accepts_response_payload": false}

	select {
	case ack := <-ws.acks:
		if ack["envelope_id"] != "env-42" {
			t.Errorf("ack %v, want envelope_id env-42", ack)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("envelope not acked")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(d.taken()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := d.taken()
	if len(got) != 1 || !got[0].Approve || got[0].Actor != "slack:T123/U456" || got[0].Via != "ops-slack" {
		t.Errorf("decisions %+v", got)
	}

	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

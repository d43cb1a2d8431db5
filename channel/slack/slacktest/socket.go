package slacktest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// Socket is Slack's Socket Mode endpoint: it greets each connection with
// hello, writes what is put on Send, and hands back on Acks what the client
// writes (the envelope acks). Conns gets a value for each connection.
type Socket struct {
	Send  chan any
	Acks  chan map[string]any
	Conns chan struct{}

	srv *httptest.Server
}

// NewSocket starts a Socket Mode endpoint, closed when tb's test ends.
// Acks beyond the 16 not yet read are dropped.
func NewSocket(tb testing.TB) *Socket {
	s := &Socket{Send: make(chan any, 4), Acks: make(chan map[string]any, 16), Conns: make(chan struct{}, 4)}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			tb.Errorf("fake slack socket: upgrade: %v", err)
			return
		}
		defer conn.Close()
		_ = conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1,
			"connection_info": map[string]any{"app_id": "A1"}})
		s.Conns <- struct{}{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				var m map[string]any
				if err := conn.ReadJSON(&m); err != nil {
					return
				}
				select {
				case s.Acks <- m:
				default:
				}
			}
		}()
		for {
			select {
			case m := <-s.Send:
				if err := conn.WriteJSON(m); err != nil {
					return
				}
			case <-done:
				return
			}
		}
	}))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the wss-style address apps.connections.open hands out.
func (s *Socket) URL() string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/link/?ticket=test"
}

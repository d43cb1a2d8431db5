package feishu

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/gatehouse-dev/gatehouse/config"
)

func wsMode(o *Options) { o.Config.Mode = config.FeishuWebsocket }

func TestLongConnectionDispatcher(t *testing.T) {
	e := newTestEnv(t, wsMode)
	if !e.ch.LongConnection() {
		t.Fatal("websocket mode is not a long connection")
	}
	d := e.ch.dispatcher()
	payload, _ := json.Marshal(tap("ev_ws_1", "reject", "not today"))

	out, err := d.Do(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(*callback.CardActionTriggerResponse)
	if !ok || resp.Toast == nil || resp.Toast.Type != "success" || resp.Card == nil || resp.Card.Type != "raw" {
		t.Fatalf("response = %#v", out)
	}
	ds := e.decider.Decisions()
	if len(ds) != 1 || ds[0].Actor != "feishu:ou_alice" || ds[0].Approve || ds[0].Reason != "not today" ||
		ds[0].Via != "ops-feishu" || !ds[0].CardUpdated || len(ds[0].Identities) != 2 {
		t.Fatalf("decisions = %+v", ds)
	}

	t.Run("replay", func(t *testing.T) {
		if _, err := d.Do(context.Background(), payload); err == nil {
			t.Error("a replayed event_id was accepted")
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		p := tap("ev_ws_2", "approve", "")
		p["header"].(map[string]any)["token"] = "forged"
		b, _ := json.Marshal(p)
		if _, err := d.Do(context.Background(), b); err == nil {
			t.Error("a wrong verification token was accepted")
		}
	})
	t.Run("another app", func(t *testing.T) {
		p := tap("ev_ws_3", "approve", "")
		p["header"].(map[string]any)["app_id"] = "cli_other"
		b, _ := json.Marshal(p)
		if _, err := d.Do(context.Background(), b); err == nil {
			t.Error("another app's callback was accepted")
		}
	})
	if n := len(e.decider.Decisions()); n != 1 {
		t.Errorf("decisions = %d after refused callbacks, want 1", n)
	}
}

// fakeLongConnection is Feishu's long-connection service: the endpoint
// bootstrap and a WebSocket that pushes one card callback and records the
// client's answer.
type fakeLongConnection struct {
	*httptest.Server
	push    []byte
	answers chan larkws.Response
}

func newFakeLongConnection(t *testing.T, push []byte) *fakeLongConnection {
	f := &fakeLongConnection{push: push, answers: make(chan larkws.Response, 4)}
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /callback/ws/endpoint", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"AppID":"cli_test"`) {
			w.WriteHeader(403)
			return
		}
		url := "ws" + strings.TrimPrefix(f.URL, "http") + "/ws?device_id=d1&service_id=7"
		json.NewEncoder(w).Encode(map[string]any{"code": 0, "data": map[string]any{"URL": url,
			"ClientConfig": map[string]any{"PingInterval": 120, "ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 1}}})
	})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		hs := larkws.Headers{}
		hs.Add(larkws.HeaderType, string(larkws.MessageTypeEvent))
		hs.Add(larkws.HeaderMessageID, "msg_1")
		hs.Add(larkws.HeaderTraceID, "trace_1")
		hs.Add(larkws.HeaderSum, "1")
		hs.Add(larkws.HeaderSeq, "0")
		frame := larkws.Frame{SeqID: 1, LogID: 1, Service: 7, Method: int32(larkws.FrameTypeData), Headers: hs, Payload: f.push}
		b, _ := frame.Marshal()
		if err := conn.WriteMessage(websocket.BinaryMessage, b); err != nil {
			return
		}
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var got larkws.Frame
			if got.Unmarshal(msg) != nil || got.Method != int32(larkws.FrameTypeData) {
				continue // pings
			}
			var resp larkws.Response
			if json.Unmarshal(got.Payload, &resp) == nil {
				f.answers <- resp
			}
		}
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func TestRunLongConnectionEndToEnd(t *testing.T) {
	payload, _ := json.Marshal(tap("ev_ws_e2e", "approve", ""))
	fake := newFakeLongConnection(t, payload)
	e := newTestEnv(t, wsMode, func(o *Options) { o.Config.BaseURL = fake.URL })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.ch.Run(ctx) }()

	select {
	case resp := <-fake.answers:
		if resp.StatusCode != 200 {
			t.Fatalf("answer code = %d", resp.StatusCode)
		}
		var body callback.CardActionTriggerResponse
		if err := json.Unmarshal(resp.Data, &body); err != nil || body.Toast == nil || body.Toast.Type != "success" || body.Card == nil {
			t.Fatalf("answer = %s (%v)", resp.Data, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer over the long connection")
	}
	if ds := e.decider.Decisions(); len(ds) != 1 || ds[0].Actor != "feishu:ou_alice" || !ds[0].Approve {
		t.Fatalf("decisions = %+v", ds)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after ctx ends", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
	}{
		{"webhook mode", func(*Options) {}},
		{"websocket mode, Feishu unreachable", func(o *Options) {
			wsMode(o)
			o.Config.BaseURL = "http://127.0.0.1:1"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, tc.mutate)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.ch.Run(ctx) }()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Run did not return after ctx ended")
			}
		})
	}
}

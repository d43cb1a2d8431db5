package slack

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

func TestSocketModeApprove(t *testing.T) {
	f := newFakeSlack(t)
	ws := slacktest.NewSocket(t)
	f.SetSocketURL(ws.URL())
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
	case <-ws.Conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no Socket Mode connection")
	}
	if opens := f.CallsOf("apps.connections.open"); len(opens) != 1 || opens[0].Token != appToken {
		t.Fatalf("apps.connections.open calls %+v", opens)
	}
	form, _ := url.ParseQuery(blockActions("T123", "U456", actionApprove, "approve:01JREQ"))
	ws.Send <- map[string]any{"type": "interactive", "envelope_id": "env-42",
		"payload": json.RawMessage(form.Get("payload")), "accepts_response_payload": false}

	select {
	case ack := <-ws.Acks:
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

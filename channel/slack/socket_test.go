package slack

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/gate"
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

// Two channels of one Slack app in Socket Mode: Slack hands an app's
// events to one of its connections, so they share one, and a tap on the
// second channel's card is decided through the second channel.
func TestSocketModeSharedApp(t *testing.T) {
	f := newFakeSlack(t)
	ws := slacktest.NewSocket(t)
	f.SetSocketURL(ws.URL())
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	d.calls = make(chan gate.Decision, 4)
	socket := func(name, conv string) func(*Options) {
		return func(o *Options) {
			o.Name, o.Config.ChannelID, o.Config.AppToken, o.Config.SigningSecret = name, conv, appToken, ""
		}
	}
	a := newTestChannel(t, f, d, fixed(t0), socket("ops-slack", slackCh))
	b := newTestChannel(t, f, d, fixed(t0), socket("eng-slack", "C999"))
	runners := SocketRunners([]*Channel{a, b})
	if len(runners) != 1 {
		t.Fatalf("%d Socket Mode connections for one app, want 1", len(runners))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go runners[0].Run(ctx)
	select {
	case <-ws.Conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no Socket Mode connection")
	}
	form, _ := url.ParseQuery(slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: "T123", User: "U456", Channel: "C999",
		ActionID: actionApprove, Value: "approve:01JREQ"})))
	ws.Send <- map[string]any{"type": "interactive", "envelope_id": "env-1", "payload": json.RawMessage(form.Get("payload"))}
	select {
	case got := <-d.calls:
		if got.Via != "eng-slack" || !got.Approve {
			t.Fatalf("decision %+v, want an approval via eng-slack", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no decision")
	}
	if n := len(f.CallsOf("apps.connections.open")); n != 1 {
		t.Fatalf("%d connections opened, want 1", n)
	}
}

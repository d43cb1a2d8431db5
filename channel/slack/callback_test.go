package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// What verify refuses (errors.Is), as channel.HMACScheme names them.
var (
	errUnsigned = channel.ErrUnsigned
	errStale    = channel.ErrStale
	errBadSig   = channel.ErrBadSignature
)

// verify checks Slack's v0 request signature over the raw body as the
// callback handler does (scheme.Verify).
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	_, _, err := scheme.Verify([]byte(secret), h, body, now)
	return err
}

func TestVerifySlackVector(t *testing.T) {
	// Slack's documented example ("Verifying requests from Slack").
	const (
		vSecret = "8f742231b10e8888abcd99yyyzzz85a5"
		vTS     = "1531420618"
		vBody   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
		vSig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	)
	at := time.Unix(1531420618, 0)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", vTS)
	h.Set("X-Slack-Signature", vSig)
	tests := []struct {
		name   string
		secret string
		body   string
		now    time.Time
		want   error
	}{
		{"documented vector", vSecret, vBody, at.Add(30 * time.Second), nil},
		{"just inside the window", vSecret, vBody, at.Add(5 * time.Minute), nil},
		{"stale", vSecret, vBody, at.Add(5*time.Minute + time.Second), errStale},
		{"from the future", vSecret, vBody, at.Add(-6 * time.Minute), errStale},
		{"tampered body", vSecret, vBody + "&x=1", at, errBadSig},
		{"wrong secret", "other", vBody, at, errBadSig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := verify(tt.secret, h, []byte(tt.body), tt.now); !errors.Is(err, tt.want) {
				t.Errorf("verify = %v, want %v", err, tt.want)
			}
		})
	}
}

// blockActions is a button tap as Slack sends it, form-encoded.
func blockActions(team, user, action, value string) string {
	return slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: team, User: user, Channel: slackCh, ActionID: action, Value: value}))
}

// viewSubmission is the reason modal's submission, form-encoded.
func viewSubmission(team, user, id, reason string) string {
	meta, _ := json.Marshal(reasonMeta{ID: id, Channel: slackCh})
	return slacktest.Form(slacktest.ViewSubmission(slacktest.Submission{Team: team, User: user, CallbackID: reasonCallback,
		Metadata: string(meta), Block: reasonBlock, Action: reasonAction, Value: reason}))
}

// post sends body to h with the given headers and returns the status.
func post(h http.Handler, body string, header http.Header) int {
	req := httptest.NewRequest(http.MethodPost, "/callbacks/slack", strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestCallbackRefusesUnverified(t *testing.T) {
	f := newFakeSlack(t)
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	c := newTestChannel(t, f, d, fixed(t0))
	h := NewCallbackHandler([]*Channel{c})
	body := blockActions("T1", "U1", actionApprove, "approve:01JREQ")
	badHex := slacktest.Sign(secret, t0, body)
	badHex.Set("X-Slack-Signature", "v0=zz")
	tests := []struct {
		name   string
		header http.Header
	}{
		{"unsigned", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}},
		{"forged with another secret", slacktest.Sign("not-the-secret", t0, body)},
		{"signed over another body", slacktest.Sign(secret, t0, body+"&x=1")},
		{"stale", slacktest.Sign(secret, t0.Add(-6*time.Minute), body)},
		{"from the future", slacktest.Sign(secret, t0.Add(6*time.Minute), body)},
		{"signature not hex", badHex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := post(h, body, tt.header); code != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", code)
			}
		})
	}
	c.Flush()
	if got := d.taken(); len(got) != 0 {
		t.Errorf("unverified callbacks reached Decide: %+v", got)
	}
	if n := len(f.CallsOf("chat.postEphemeral")) + len(f.CallsOf("views.open")); n != 0 {
		t.Errorf("unverified callbacks made %d Slack calls", n)
	}
}

func TestCallbackApproveAndReplay(t *testing.T) {
	f := newFakeSlack(t)
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	c := newTestChannel(t, f, d, fixed(t0))
	h := NewCallbackHandler([]*Channel{c})
	body := blockActions("T123", "U456", actionApprove, "approve:01JREQ")
	hdr := slacktest.Sign(secret, t0.Add(-time.Minute), body)
	if code := post(h, body, hdr); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	c.Flush()
	got := d.taken()
	if len(got) != 1 {
		t.Fatalf("%d decisions, want 1", len(got))
	}
	want := gate.Decision{RequestID: "01JREQ", Approve: true, Actor: "slack:T123/U456", Via: "ops-slack"}
	if g := got[0]; g.RequestID != want.RequestID || g.Approve != want.Approve || g.Actor != want.Actor || g.Via != want.Via || g.Reason != "" {
		t.Errorf("decision %+v, want %+v", g, want)
	}
	if n := len(f.CallsOf("chat.postEphemeral")); n != 0 {
		t.Errorf("a taken decision sent %d ephemeral messages", n)
	}

	// The same signed request again, still within the window: refused.
	if code := post(h, body, hdr); code != http.StatusUnauthorized {
		t.Errorf("replay: status %d, want 401", code)
	}
	c.Flush()
	if n := len(d.taken()); n != 1 {
		t.Errorf("replay reached Decide: %d decisions", n)
	}
	if r := d.refused(); len(r) != 1 || !strings.HasPrefix(r[0], "01JREQ|slack:T123/U456|replayed") {
		t.Errorf("replay not audited: %q", r)
	}

	// The same signature in upper-case hex verifies too, and is the same
	// replay (the cache once keyed the header's text and let it through).
	upper := hdr.Clone()
	upper.Set("X-Slack-Signature", "v0="+strings.ToUpper(strings.TrimPrefix(hdr.Get("X-Slack-Signature"), "v0=")))
	if code := post(h, body, upper); code != http.StatusUnauthorized {
		t.Errorf("replay in upper-case hex: status %d, want 401", code)
	}
	c.Flush()
	if n := len(d.taken()); n != 1 {
		t.Errorf("an upper-case replay reached Decide: %d decisions", n)
	}
}

func TestCallbackRefusalsAreTold(t *testing.T) {
	pending := testRequest("01JPEND", t0)
	pending.Approvers = []string{"slack:T123/UBOSS"}
	done := testRequest("01JDONE", t0)
	done.Status, done.DecidedBy = gate.StatusApproved, "web:alice"
	old := testRequest("01JOLD", t0.Add(-time.Hour))
	tests := []struct {
		name, user, value, want string
	}{
		{"not an approver", "U456", "approve:01JPEND", "not an approver"},
		{"already decided", "U456", "reject:01JDONE", "Already decided: already approved by web:alice"},
		{"expired", "U456", "approve:01JOLD", "expired"},
		{"unknown request", "U456", "approve:01JNONE", "does not know this request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlack(t)
			d := newFakeDecider(fixed(t0), pending, done, old)
			c := newTestChannel(t, f, d, fixed(t0))
			body := blockActions("T123", tt.user, actionApprove, tt.value)
			if code := post(NewCallbackHandler([]*Channel{c}), body, slacktest.Sign(secret, t0, body)); code != http.StatusOK {
				t.Fatalf("status %d", code)
			}
			c.Flush()
			eph := f.CallsOf("chat.postEphemeral")
			if len(eph) != 1 {
				t.Fatalf("%d ephemeral messages, want 1", len(eph))
			}
			e := eph[0]
			if e.Form.Get("user") != tt.user || e.Form.Get("channel") != slackCh || !strings.Contains(e.Form.Get("text"), tt.want) {
				t.Errorf("ephemeral to %s in %s: %q, want it to say %q", e.Form.Get("user"), e.Form.Get("channel"), e.Form.Get("text"), tt.want)
			}
		})
	}
}

func TestRejectWithReason(t *testing.T) {
	f := newFakeSlack(t)
	r := testRequest("01JREQ", t0)
	r.Summary = "Pay with key AKIAIOSFODNN7EXAMPLE"
	d := newFakeDecider(fixed(t0), r)
	c := newTestChannel(t, f, d, fixed(t0), withPresenter(""))
	h := NewCallbackHandler([]*Channel{c})

	tap := blockActions("T123", "U456", actionReason, "reason:01JREQ")
	if code := post(h, tap, slacktest.Sign(secret, t0, tap)); code != http.StatusOK {
		t.Fatalf("tap: status %d", code)
	}
	c.Flush()
	if n := len(d.taken()); n != 0 {
		t.Fatalf("opening the modal decided already")
	}
	views := f.CallsOf("views.open")
	if len(views) != 1 {
		t.Fatalf("%d views.open calls, want 1", len(views))
	}
	v := views[0]
	if !v.JSON || v.Token != botToken || v.Body["trigger_id"] != "trig.123" {
		t.Errorf("views.open: json=%v token=%q trigger=%v", v.JSON, v.Token, v.Body["trigger_id"])
	}
	view, _ := v.Body["view"].(map[string]any)
	if shown := fmt.Sprint(view["blocks"]); strings.Contains(shown, "AKIA") || !strings.Contains(shown, "Reject: The agent says: Pay with key [redacted]") {
		t.Errorf("modal shows %s", shown)
	}
	var meta reasonMeta
	_ = json.Unmarshal([]byte(fmt.Sprint(view["private_metadata"])), &meta)
	if view["callback_id"] != reasonCallback || meta.ID != "01JREQ" {
		t.Errorf("modal callback %v, metadata %+v", view["callback_id"], meta)
	}

	sub := viewSubmission("T123", "U456", "01JREQ", "  amount over budget <!channel> ")
	if code := post(h, sub, slacktest.Sign(secret, t0.Add(10*time.Second), sub)); code != http.StatusOK {
		t.Fatalf("submission: status %d", code)
	}
	c.Flush()
	got := d.taken()
	if len(got) != 1 || got[0].Approve || got[0].Reason != "amount over budget <!channel>" ||
		got[0].Actor != "slack:T123/U456" || got[0].Via != "ops-slack" {
		t.Errorf("decisions %+v", got)
	}
}

func TestReasonModalNotForNonApprovers(t *testing.T) {
	f := newFakeSlack(t)
	r := testRequest("01JREQ", t0)
	r.Approvers = []string{"slack:T123/UBOSS"}
	d := newFakeDecider(fixed(t0), r)
	c := newTestChannel(t, f, d, fixed(t0))
	tap := blockActions("T123", "U456", actionReason, "reason:01JREQ")
	post(NewCallbackHandler([]*Channel{c}), tap, slacktest.Sign(secret, t0, tap))
	c.Flush()
	if n := len(f.CallsOf("views.open")); n != 0 {
		t.Errorf("modal opened for a non-approver")
	}
	if eph := f.CallsOf("chat.postEphemeral"); len(eph) != 1 || !strings.Contains(eph[0].Form.Get("text"), "not an approver") {
		t.Errorf("ephemeral %+v", eph)
	}
	if ref := d.refused(); len(ref) != 1 || !strings.Contains(ref[0], "not an approver") {
		t.Errorf("refusal not audited: %q", ref)
	}
}

func TestCallbackPicksChannelBySecret(t *testing.T) {
	f := newFakeSlack(t)
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	a := newTestChannel(t, f, d, fixed(t0))
	b := newTestChannel(t, f, d, fixed(t0), func(o *Options) {
		o.Name, o.Config.SigningSecret, o.Config.ChannelID = "eng-slack", "second-secret", "C999"
	})
	body := blockActions("T1", "U1", actionReject, "reject:01JREQ")
	if code := post(NewCallbackHandler([]*Channel{a, b}), body, slacktest.Sign("second-secret", t0, body)); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	b.Flush()
	if got := d.taken(); len(got) != 1 || got[0].Via != "eng-slack" || got[0].Approve {
		t.Errorf("decisions %+v, want one reject via eng-slack", got)
	}
}

// Two channels of one Slack app (one signing secret): a reason modal
// opened from the second channel's card is submitted with no conversation
// to tell them apart, and its reject still goes through that channel,
// which the modal names; credited to the first, the gate would refuse it
// for a request sent only to the second.
func TestReasonSubmissionKeepsItsChannel(t *testing.T) {
	f := newFakeSlack(t)
	d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
	a := newTestChannel(t, f, d, fixed(t0))
	b := newTestChannel(t, f, d, fixed(t0), func(o *Options) { o.Name, o.Config.ChannelID = "eng-slack", "C999" })
	h := NewCallbackHandler([]*Channel{a, b})
	tap := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: "T123", User: "U456", Channel: "C999", ActionID: actionReason,
		Value: "reason:01JREQ", TriggerID: "trig.1"}))
	if code := post(h, tap, slacktest.Sign(secret, t0, tap)); code != http.StatusOK {
		t.Fatalf("tap: status %d", code)
	}
	b.Flush()
	submitReason(t, f, h, a, b)
	if got := d.taken(); len(got) != 1 || got[0].Via != "eng-slack" || got[0].Approve || got[0].Reason != "not now" {
		t.Errorf("decisions %+v, want one reject via eng-slack", got)
	}
}

func TestCallbackOnlyPost(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	req := httptest.NewRequest(http.MethodGet, "/callbacks/slack", nil)
	rec := httptest.NewRecorder()
	NewCallbackHandler([]*Channel{c}).ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}

// slowDecider holds every Decide until release is closed.
type slowDecider struct {
	*fakeDecider
	release chan struct{}
}

func (d slowDecider) Decide(ctx context.Context, dec gate.Decision) (*gate.Request, error) {
	<-d.release
	return d.fakeDecider.Decide(ctx, dec)
}

// The ack of an HTTP tap waits for a quick verdict (so it follows the
// verdict), and for a verdict that hangs no longer than ackWait: well
// inside Slack's 3 seconds, with the verdict still taken afterwards.
func TestCallbackAckWaitsBriefly(t *testing.T) {
	t.Run("quick verdict", func(t *testing.T) {
		f := newFakeSlack(t)
		d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
		c := newTestChannel(t, f, d, fixed(t0))
		body := blockActions("T1", "U1", actionApprove, "approve:01JREQ")
		if code := post(NewCallbackHandler([]*Channel{c}), body, slacktest.Sign(secret, t0, body)); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		if n := len(d.taken()); n != 1 {
			t.Fatalf("acked before the verdict: %d decisions at ack time", n)
		}
	})
	t.Run("the private note after a refusal is not waited for", func(t *testing.T) {
		f := newFakeSlack(t)
		f.FailNext("chat.postEphemeral", func(w http.ResponseWriter) {
			time.Sleep(ackWait) // Slack being slow
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		})
		d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
		c := newTestChannel(t, f, d, fixed(t0))
		body := blockActions("T1", "U1", actionApprove, "approve:01JNOPE") // unknown: refused
		start := time.Now()
		code := post(NewCallbackHandler([]*Channel{c}), body, slacktest.Sign(secret, t0, body))
		if took := time.Since(start); code != http.StatusOK || took > ackWait/2 {
			t.Fatalf("status %d after %s; want 200 at once, the note after", code, took)
		}
		c.Flush()
		if n := len(f.CallsOf("chat.postEphemeral")); n != 1 {
			t.Fatalf("%d private notes, want 1", n)
		}
	})
	t.Run("hung verdict", func(t *testing.T) {
		f := newFakeSlack(t)
		d := slowDecider{newFakeDecider(fixed(t0), testRequest("01JREQ", t0)), make(chan struct{})}
		c := newTestChannel(t, f, d, fixed(t0))
		body := blockActions("T1", "U1", actionApprove, "approve:01JREQ")
		start := time.Now()
		code := post(NewCallbackHandler([]*Channel{c}), body, slacktest.Sign(secret, t0, body))
		took := time.Since(start)
		// The bound that matters is Slack's: an ack later than 3 s is an
		// error shown to the approver (a tighter one failed on a saturated
		// machine).
		if code != http.StatusOK || took < ackWait || took >= 3*time.Second {
			t.Fatalf("status %d after %s; want 200 after about %s, within Slack's 3 s", code, took, ackWait)
		}
		close(d.release)
		c.Flush()
		if n := len(d.taken()); n != 1 {
			t.Fatalf("%d decisions after the hung one went through, want 1", n)
		}
	})
}

// TestTapOutsideTheChannelIsElsewhere: a tap on a copy of the card outside
// its channel (shared, forwarded, a direct message) reaches the gate
// marked Elsewhere, which the gate refuses on a route with no approvers
// list, as it does Feishu's; before, Slack handed it over as the channel's
// audience (a sixth reader). A tap in the channel is not.
func TestTapOutsideTheChannelIsElsewhere(t *testing.T) {
	for _, tc := range []struct {
		from      string
		elsewhere bool
	}{{slackCh, false}, {"C_ELSEWHERE", true}, {"D_DIRECT", true}} {
		f := newFakeSlack(t)
		d := newFakeDecider(fixed(t0), testRequest("01JREQ", t0))
		c := newTestChannel(t, f, d, fixed(t0))
		h := NewCallbackHandler([]*Channel{c})
		body := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: "T1", User: "U_SOMEONE", Channel: tc.from,
			ActionID: actionApprove, Value: "approve:01JREQ"}))
		if code := post(h, body, slacktest.Sign(secret, t0.Add(-time.Minute), body)); code != http.StatusOK {
			t.Fatalf("%s: status %d", tc.from, code)
		}
		c.Flush()
		if got := d.taken(); len(got) != 1 || got[0].Elsewhere != tc.elsewhere {
			t.Errorf("tap from %s (the channel is %s): %+v, want Elsewhere %v", tc.from, slackCh, got, tc.elsewhere)
		}
	}
}

// A tap on a direct card comes from the approver's own conversation with
// the bot (D…), which is no channel's channel_id. With several channels on
// one Slack app, it counts through the request's own channel, not the
// first channel configured, and a "reject with reason" form opened from it
// names that channel too; a channel of another Slack app is never taken,
// whatever the request names. Found by a reader.
func TestDirectCardTapKeepsItsChannel(t *testing.T) {
	for _, tc := range []struct {
		name, action, value, engSecret, want string
	}{
		{"approve", actionApprove, "approve:01JREQ", secret, "eng-slack"},
		{"reject with reason", actionReason, "reason:01JREQ", secret, "eng-slack"},
		{"the request's channel on another app", actionApprove, "approve:01JREQ", "another-app-secret", "ops-slack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSlack(t)
			r := testRequest("01JREQ", t0)
			r.Channels = []string{"eng-slack"}
			r.Approvers = []string{"slack:T123/U456"}
			d := newFakeDecider(fixed(t0), r)
			a := newTestChannel(t, f, d, fixed(t0))
			b := newTestChannel(t, f, d, fixed(t0), func(o *Options) {
				o.Name, o.Config.ChannelID, o.Config.SigningSecret = "eng-slack", "C999", tc.engSecret
			})
			h := NewCallbackHandler([]*Channel{a, b})
			tap := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: "T123", User: "U456", Channel: slacktest.DirectChannel("U456"),
				ActionID: tc.action, Value: tc.value}))
			if code := post(h, tap, slacktest.Sign(secret, t0, tap)); code != http.StatusOK {
				t.Fatalf("tap: status %d", code)
			}
			a.Flush()
			b.Flush()
			if tc.action == actionReason {
				submitReason(t, f, h, a, b)
			}
			got := d.taken()
			if len(got) != 1 || got[0].Via != tc.want {
				t.Errorf("decisions %+v, want one via %s", got, tc.want)
			}
		})
	}
}

// submitReason submits, as U456 of T123, the reason form the tap opened
// (the one views.open call) with the reason "not now", and flushes chs.
func submitReason(t *testing.T, f *slacktest.Server, h http.Handler, chs ...*Channel) {
	t.Helper()
	views := f.CallsOf("views.open")
	if len(views) != 1 {
		t.Fatalf("%d views.open calls, want 1", len(views))
	}
	view, _ := views[0].Body["view"].(map[string]any)
	sub := slacktest.Form(slacktest.ViewSubmission(slacktest.Submission{Team: "T123", User: "U456", CallbackID: reasonCallback,
		Metadata: fmt.Sprint(view["private_metadata"]), Block: reasonBlock, Action: reasonAction, Value: "not now"}))
	if code := post(h, sub, slacktest.Sign(secret, t0, sub)); code != http.StatusOK {
		t.Fatalf("submission: status %d", code)
	}
	for _, c := range chs {
		c.Flush()
	}
}

// TestTapInASharedConversationKeepsItsChannel: two channels of one Slack
// app may post to one conversation (recover.go); a tap on a card the
// second sent counts through the second, not the first configured, which
// the request was never sent to (on a route with no approvers list the
// gate refused the tap). Found by a ninth reader.
func TestTapInASharedConversationKeepsItsChannel(t *testing.T) {
	f := newFakeSlack(t)
	r := testRequest("01JREQ", t0)
	r.Channels = []string{"eng-slack"}
	d := newFakeDecider(fixed(t0), r)
	a := newTestChannel(t, f, d, fixed(t0))
	b := newTestChannel(t, f, d, fixed(t0), func(o *Options) { o.Name = "eng-slack" })
	body := blockActions("T1", "U1", actionApprove, "approve:01JREQ")
	if code := post(NewCallbackHandler([]*Channel{a, b}), body, slacktest.Sign(secret, t0, body)); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	a.Flush()
	b.Flush()
	if got := d.taken(); len(got) != 1 || got[0].Via != "eng-slack" {
		t.Errorf("decisions %+v, want one via eng-slack", got)
	}
}

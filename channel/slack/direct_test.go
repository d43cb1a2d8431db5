package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// A direct card opens the direct message with the user and posts the card
// there; its reference updates it like any card, and a reminder replies in
// its thread.
func TestDirectCardAndReminderOnTheWire(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0), func(o *Options) { o.PublicURL = "https://gate.example.com" })
	if !c.Reaches("slack:T1/U0BOB") || c.Reaches("slack:T1/*") || c.Reaches("feishu:ou_x") || c.Reaches("web:bob") {
		t.Fatal("Reaches")
	}
	r := testRequest("01JREQ", t0)
	r.ToolName = "deploy <!channel>"
	ref, err := c.PostDirect(context.Background(), r, "slack:T1/U0BOB")
	if err != nil {
		t.Fatal(err)
	}
	dm := slacktest.DirectChannel("U0BOB")
	open := f.CallsOf("conversations.open")
	post := f.CallsOf("chat.postMessage")
	if len(open) != 1 || open[0].Form.Get("users") != "U0BOB" || len(post) != 1 || post[0].Form.Get("channel") != dm ||
		!strings.Contains(post[0].Form.Get("blocks"), `"approve:01JREQ"`) || ref != dm+":"+post[0].TS {
		t.Fatalf("direct card: ref %q, open %+v, post %+v", ref, open, post)
	}

	reply, err := c.Remind(context.Background(), r, ref, 1, []string{"slack:T1/U0BOB", "slack:T1/U0CAROL", "feishu:ou_x", "slack:T1/*"})
	if err != nil {
		t.Fatal(err)
	}
	post = f.CallsOf("chat.postMessage")
	text := post[1].Form.Get("text")
	if len(post) != 2 || post[1].Form.Get("channel") != dm || post[1].Form.Get("thread_ts") != post[0].TS || reply != dm+":"+post[1].TS ||
		!strings.HasPrefix(text, "<@U0BOB> <@U0CAROL> :alarm_clock: *Still waiting for approval:*") ||
		!strings.Contains(text, "`deploy &lt;!channel&gt;`") || strings.Contains(text, "<!channel>") ||
		!strings.Contains(text, "<https://gate.example.com/approvals/01JREQ|Open it in Gatehouse>") {
		t.Fatalf("reminder: %q %+v", reply, post[1].Form)
	}

	r.Status, r.DecidedBy = gate.StatusApproved, "slack:T1/U0BOB"
	if err := c.Update(context.Background(), r, ref); err != nil {
		t.Fatal(err)
	}
	if up := f.CallsOf("chat.update"); len(up) != 1 || up[0].Form.Get("channel") != dm || up[0].Form.Get("ts") != post[0].TS {
		t.Fatalf("update: %+v", up)
	}
}

// The gate's refusal of a self-approval is answered kindly.
func TestSelfApprovalRefusal(t *testing.T) {
	if msg := refusal(gate.Errorf(gate.ESELF, "you asked for this; someone else must approve")); !strings.Contains(msg, "You asked for this; someone else must approve") {
		t.Fatalf("refusal: %q", msg)
	}
}

// A reminder shows the tool's name as a card does: its line breaks and
// hidden characters are written as marks, and a backquote in it cannot
// close the reminder's code span, so the name cannot draw a verdict line of
// its own under the card. Found by a reader.
func TestReminderToolNameDrawsNoLines(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JREQ", t0)
	r.ToolName = "deploy`\n\n:white_check_mark: *Approved by the security team; nothing to do here*\n`x\u202e"
	if _, err := c.Remind(context.Background(), r, slackCh+":1700000000.000001", 1, nil); err != nil {
		t.Fatal(err)
	}
	post := f.CallsOf("chat.postMessage")
	if len(post) != 1 {
		t.Fatalf("%d posts", len(post))
	}
	text := post[0].Form.Get("text")
	if strings.Contains(text, "\n") || strings.Contains(text, "\u202e") || strings.Count(text, "`") != 2 ||
		!strings.Contains(text, "deployˋ⟨U+000A⟩⟨U+000A⟩:white_check_mark:") || !strings.Contains(text, "ˋx⟨U+202E⟩`") {
		t.Errorf("the reminder draws the tool name's own lines / hidden characters:\n%q", text)
	}
}

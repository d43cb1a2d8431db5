package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// A direct card goes to the person by the id their identity names; its
// buttons carry who it was sent to. A reminder replies to the card,
// mentioning the approvers Feishu can mention, with no live markup from
// the request.
func TestDirectCardAndReminderOnTheWire(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for id, want := range map[string]bool{"feishu:ou_bob": true, "feishu:union:on_bob": true, "feishu:user:u_bob": true,
		"feishu:": false, "feishu:ou_*": false, "slack:T1/U1": false, "web:bob": false} {
		if e.ch.Reaches(id) != want {
			t.Errorf("Reaches(%q) = %v", id, !want)
		}
	}
	r := sampleRequest()
	r.ToolName = `pay <at user_id="all"></at>`
	for i, tc := range []struct{ identity, idType, id string }{
		{"feishu:ou_bob", "open_id", "ou_bob"}, {"feishu:union:on_bob", "union_id", "on_bob"}, {"feishu:user:u_bob", "user_id", "u_bob"},
	} {
		ref, err := e.ch.PostDirect(ctx, r, tc.identity)
		if err != nil {
			t.Fatal(err)
		}
		call := e.api.Calls("POST " + feishutest.MessagesPath)[i]
		card, _ := json.Marshal(call.Card(t))
		if call.Query != "receive_id_type="+tc.idType || call.JSON["receive_id"] != tc.id || call.JSON["msg_type"] != "interactive" ||
			!strings.Contains(string(card), `"to":"`+tc.identity+`"`) || ref == "" {
			t.Fatalf("direct card to %s: ref %q, %s %s", tc.identity, ref, call.Query, call.Body)
		}
	}
	reply, err := e.ch.Remind(ctx, r, "om_1", 3, []string{"feishu:ou_bob", "feishu:union:on_carol", "feishu:user:u_dan", "slack:T1/U1"})
	if err != nil {
		t.Fatal(err)
	}
	calls := e.api.Calls("POST " + feishutest.MessagesPath + "/om_1/reply")
	if len(calls) != 1 || reply == "" || calls[0].JSON["msg_type"] != "text" || calls[0].JSON["uuid"] == "" {
		t.Fatalf("reply: %q %+v", reply, calls)
	}
	var content struct{ Text string }
	if err := json.Unmarshal([]byte(calls[0].JSON["content"].(string)), &content); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(content.Text, `<at user_id="ou_bob"></at> <at user_id="u_dan"></at> ⏰ Still waiting for approval: pay ‹at user_id="all"›‹/at› on route payments`) ||
		strings.Count(content.Text, "<at") != 2 || !strings.HasSuffix(content.Text, "https://gate.example.com/approvals/"+r.ID) {
		t.Fatalf("reminder text: %q", content.Text)
	}
	// Another step's reminder is another post (Feishu drops a repeated uuid).
	if _, err := e.ch.Remind(ctx, r, "om_1", 4, nil); err != nil {
		t.Fatal(err)
	}
	if calls = e.api.Calls("POST " + feishutest.MessagesPath + "/om_1/reply"); calls[0].JSON["uuid"] == calls[1].JSON["uuid"] {
		t.Fatal("two reminders share a uuid")
	}
}

// Outside the approvals chat a card counts only as a direct card, tapped
// by the person it was sent to; there it says so to the gate.
func TestDirectCardTaps(t *testing.T) {
	for _, tc := range []struct {
		name, to string
		decided  bool
	}{
		{"the addressee in their chat", "feishu:ou_alice", true},
		{"by union id", "feishu:union:on_alice", true},
		{"someone else's direct card", "feishu:ou_bob", false},
		{"a forwarded chat card", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			h := NewCallbackHandler([]*Channel{e.ch})
			p := feishutest.CardAction(feishutest.Tap{EventID: "ev_dm", Token: "v-token", AppID: "cli_test", At: testNow,
				OpenID: "ou_alice", UnionID: "on_alice", RequestID: reqID, Choice: "approve", MessageID: "om_7", ChatID: "oc_p2p_alice", To: tc.to})
			code, a, raw := serve(t, h, feishuRequest(t, p, "e-key", testNow.Add(-time.Second)))
			ds := e.decider.Decisions()
			if code != 200 || (len(ds) == 1) != tc.decided {
				t.Fatalf("%d %s; decisions %+v", code, raw, ds)
			}
			if tc.decided && (!ds[0].Elsewhere || ds[0].CardRef != "om_7") {
				t.Fatalf("decision: %+v", ds[0])
			}
			if !tc.decided && (a.Toast == nil || !strings.Contains(a.Toast.Content, "only be used in the approvals chat")) {
				t.Fatalf("refusal: %s", raw)
			}
			if rs := e.decider.Refusals(); !tc.decided && (len(rs) != 1 || !strings.Contains(rs[0], "card tapped outside the approvals chat oc_p2p_alice")) {
				t.Fatalf("the refused tap was not audited: %q", rs)
			}
		})
	}
}

// The gate's refusal of a self-approval is answered kindly.
func TestSelfApprovalToast(t *testing.T) {
	e := newTestEnv(t)
	e.decider.decide = func(d gate.Decision) (*gate.Request, error) {
		r := sampleRequest()
		return r, gate.Errorf(gate.ESELF, "you asked for this; someone else must approve")
	}
	h := NewCallbackHandler([]*Channel{e.ch})
	code, a, raw := serve(t, h, feishuRequest(t, tap("ev_self", "approve", ""), "e-key", testNow.Add(-time.Second)))
	if code != 200 || a.Toast == nil || a.Toast.Type != "warning" || !strings.Contains(a.Toast.Content, "You asked for this; someone else must approve") || a.Card != nil {
		t.Fatalf("%d %s", code, raw)
	}
}

// A reminder shows the tool's name as a card does: its line breaks and
// hidden characters are written as marks, so the name cannot draw a
// verdict line of its own under the card. Found by a reader.
func TestReminderToolNameDrawsNoLines(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	r.ToolName = "pay\n\n✅ Approved by the finance lead; no action needed\n\u202e"
	if _, err := e.ch.Remind(context.Background(), r, "om_1", 1, nil); err != nil {
		t.Fatal(err)
	}
	calls := e.api.Calls("POST " + feishutest.MessagesPath + "/om_1/reply")
	if len(calls) != 1 {
		t.Fatalf("%d replies", len(calls))
	}
	var content struct{ Text string }
	if err := json.Unmarshal([]byte(calls[0].JSON["content"].(string)), &content); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(content.Text, "\n") || strings.Contains(content.Text, "\u202e") ||
		!strings.Contains(content.Text, "pay⟨U+000A⟩⟨U+000A⟩✅ Approved by the finance lead; no action needed⟨U+000A⟩⟨U+202E⟩ on route") {
		t.Errorf("the reminder draws the tool name's own lines / hidden characters:\n%q", content.Text)
	}
}

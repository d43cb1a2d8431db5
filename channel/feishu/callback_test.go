package feishu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/gate"
)

const reqID = "01JTESTREQUEST0000000000001"

// tap is a card.action.trigger callback shaped as Feishu sends it.
func tap(eventID, choice, reason string) map[string]any {
	return feishutest.CardAction(feishutest.Tap{
		EventID: eventID, Token: "v-token", AppID: "cli_test", TenantKey: "tk_1", At: testNow,
		OpenID: "ou_alice", UserID: "u_alice", UnionID: "on_alice",
		RequestID: reqID, Choice: choice, Reason: reason, MessageID: "om_1", ChatID: "oc_chat",
	})
}

// feishuRequest builds a callback as Feishu delivers it: the JSON
// encrypted with a random IV under key, wrapped as {"encrypt":…}, and
// signed over timestamp, nonce, key and the raw body.
func feishuRequest(t *testing.T, payload any, key string, at time.Time) *http.Request {
	t.Helper()
	d := feishutest.Callback(payload, key, key, at)
	r := httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(d.Body))
	for k, v := range d.Header {
		r.Header[k] = v
	}
	return r
}

func serve(t *testing.T, h http.Handler, r *http.Request) (int, feishutest.Reply, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var a feishutest.Reply
	_ = json.Unmarshal(w.Body.Bytes(), &a)
	return w.Code, a, w.Body.String()
}

func TestCallbackApproveAndReject(t *testing.T) {
	for _, tc := range []struct {
		choice, reason string
		status         gate.Status
	}{
		{"approve", "", gate.StatusApproved},
		{"reject", "  amount over budget ", gate.StatusRejected},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			e := newTestEnv(t)
			h := NewCallbackHandler([]*Channel{e.ch})
			code, a, raw := serve(t, h, feishuRequest(t, tap("ev_1", tc.choice, tc.reason), "e-key", testNow.Add(-3*time.Second)))
			if code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			ds := e.decider.Decisions()
			if len(ds) != 1 {
				t.Fatalf("decisions = %d", len(ds))
			}
			d := ds[0]
			if d.RequestID != reqID || d.Approve != (tc.choice == "approve") || d.Actor != "feishu:ou_alice" || d.Via != "ops-feishu" || !d.CardUpdated {
				t.Errorf("decision = %+v", d)
			}
			if strings.Join(d.Identities, ",") != "feishu:union:on_alice,feishu:user:u_alice" {
				t.Errorf("identities = %v", d.Identities)
			}
			// Votes count for the union_id: one person, whichever app's chat.
			if d.Voter != "feishu:union:on_alice" {
				t.Errorf("voter = %q, want the union_id", d.Voter)
			}
			if d.Reason != strings.TrimSpace(tc.reason) {
				t.Errorf("reason = %q", d.Reason)
			}
			if a.Toast == nil || a.Toast.Type != "success" || a.Card == nil || a.Card.Type != "raw" {
				t.Fatalf("answer = %s", raw)
			}
			if a.Card.Data["schema"] != "2.0" || tags(a.Card.Data)["button"] != 0 {
				t.Errorf("answer card is not the final card: %s", raw)
			}
			title := a.Card.Data["header"].(map[string]any)["title"].(map[string]any)["content"]
			if want := strings.ToUpper(string(tc.status)[:1]) + string(tc.status)[1:] + ": The agent says: Pay ACME ¥60,000"; title != want {
				t.Errorf("final card title = %v", title)
			}
			if len(e.decider.Refusals()) != 0 {
				t.Errorf("refusals = %v", e.decider.Refusals())
			}
		})
	}
}

func TestCallbackRefusals(t *testing.T) {
	cases := []struct {
		name    string
		req     func(t *testing.T) *http.Request
		status  int
		audited bool // the body verified, so the refusal is audited
	}{
		{"wrong verification token", func(t *testing.T) *http.Request {
			p := tap("ev_1", "approve", "")
			p["header"].(map[string]any)["token"] = "forged"
			return feishuRequest(t, p, "e-key", testNow)
		}, 401, true},
		{"bad signature", func(t *testing.T) *http.Request {
			r := feishuRequest(t, tap("ev_1", "approve", ""), "e-key", testNow)
			r.Header.Set(headerSignature, strings.Repeat("0", 64))
			return r
		}, 401, false},
		{"signed with another key", func(t *testing.T) *http.Request {
			return feishuRequest(t, tap("ev_1", "approve", ""), "attacker-key", testNow)
		}, 401, false},
		{"stale timestamp", func(t *testing.T) *http.Request {
			return feishuRequest(t, tap("ev_1", "approve", ""), "e-key", testNow.Add(-6*time.Minute))
		}, 401, true},
		{"timestamp from the future", func(t *testing.T) *http.Request {
			return feishuRequest(t, tap("ev_1", "approve", ""), "e-key", testNow.Add(6*time.Minute))
		}, 401, true},
		{"another app", func(t *testing.T) *http.Request {
			p := tap("ev_1", "approve", "")
			p["header"].(map[string]any)["app_id"] = "cli_other"
			return feishuRequest(t, p, "e-key", testNow)
		}, 401, true},
		{"unsigned plaintext", func(t *testing.T) *http.Request {
			b, _ := json.Marshal(tap("ev_1", "approve", ""))
			return httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(b))
		}, 401, false},
		{"garbage", func(t *testing.T) *http.Request {
			return httptest.NewRequest(http.MethodPost, "/callbacks/feishu", strings.NewReader("not json"))
		}, 400, false},
		{"GET", func(t *testing.T) *http.Request {
			return httptest.NewRequest(http.MethodGet, "/callbacks/feishu", nil)
		}, 405, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			h := NewCallbackHandler([]*Channel{e.ch})
			code, _, raw := serve(t, h, tc.req(t))
			if code != tc.status {
				t.Errorf("status = %d, want %d: %s", code, tc.status, raw)
			}
			if n := len(e.decider.Decisions()); n != 0 {
				t.Errorf("a refused callback reached Decide %d times", n)
			}
			refs := e.decider.Refusals()
			if tc.audited && (len(refs) != 1 || !strings.HasPrefix(refs[0], reqID+"|ops-feishu|feishu:ou_alice|")) {
				t.Errorf("refusals = %v, want one audited against the request", refs)
			}
			if !tc.audited && len(refs) != 0 {
				t.Errorf("an unverified body was audited: %v", refs)
			}
		})
	}
}

func TestCallbackReplayIsRefused(t *testing.T) {
	e := newTestEnv(t)
	h := NewCallbackHandler([]*Channel{e.ch})
	p := tap("ev_same", "approve", "")
	if code, _, raw := serve(t, h, feishuRequest(t, p, "e-key", testNow)); code != 200 {
		t.Fatalf("first delivery: %d %s", code, raw)
	}
	// The same event, freshly encrypted and signed (a replay of a captured
	// body differs only in nonce and IV).
	code, _, _ := serve(t, h, feishuRequest(t, p, "e-key", testNow))
	if code != 401 {
		t.Errorf("replay status = %d, want 401", code)
	}
	if n := len(e.decider.Decisions()); n != 1 {
		t.Errorf("decisions = %d, want only the first", n)
	}
	if refs := e.decider.Refusals(); len(refs) != 1 || !strings.Contains(refs[0], "replayed event_id ev_same") {
		t.Errorf("refusals = %v", refs)
	}
}

func TestCallbackGateAnswers(t *testing.T) {
	final := sampleRequest()
	at := testNow.Add(-time.Minute)
	final.Status, final.DecidedAt, final.DecidedBy, final.DecidedVia = gate.StatusApproved, &at, "feishu:ou_bob", "ops-feishu"
	expired := sampleRequest()
	expired.Status, expired.DecidedAt, expired.DecidedBy = gate.StatusExpired, &at, gate.ActorSystem
	pending := sampleRequest()
	pending.Quorum = 2
	cases := []struct {
		name      string
		decide    func(gate.Decision) (*gate.Request, error)
		toastType string
		toast     string
		card      bool
	}{
		{"not an approver", func(d gate.Decision) (*gate.Request, error) {
			return pending, gate.Errorf(gate.EFORBIDDEN, "%s is not an approver of this request", d.Actor)
		}, "error", "not an approver", false},
		{"already decided", func(gate.Decision) (*gate.Request, error) {
			return final, gate.Errorf(gate.ECONFLICT, "already approved by feishu:ou_bob")
		}, "info", "Already approved by feishu:ou_bob", true},
		{"expired", func(gate.Decision) (*gate.Request, error) {
			return expired, gate.Errorf(gate.EEXPIRED, "expired at x")
		}, "info", "expired", true},
		{"same approver twice under a quorum", func(gate.Decision) (*gate.Request, error) {
			return pending, gate.Errorf(gate.ECONFLICT, "feishu:ou_alice already approved; 1 of 2 approvals so far")
		}, "info", "feishu:ou_alice already approved", false},
		{"quorum vote", func(gate.Decision) (*gate.Request, error) { return pending, nil }, "info", "more approvals are needed", false},
		{"unknown request", func(gate.Decision) (*gate.Request, error) {
			return nil, gate.Errorf(gate.ENOTFOUND, "no such request")
		}, "error", "does not know", false},
		{"database down", func(gate.Decision) (*gate.Request, error) {
			return nil, gate.Errorf(gate.EUNAVAILABLE, "database unreachable")
		}, "error", "try again", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.decider.decide = tc.decide
			code, a, raw := serve(t, NewCallbackHandler([]*Channel{e.ch}), feishuRequest(t, tap("ev_1", "approve", ""), "e-key", testNow))
			if code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			if a.Toast == nil || a.Toast.Type != tc.toastType || !strings.Contains(a.Toast.Content, tc.toast) {
				t.Errorf("toast = %+v, want %s %q", a.Toast, tc.toastType, tc.toast)
			}
			if (a.Card != nil) != tc.card {
				t.Errorf("card in answer = %v, want %v: %s", a.Card != nil, tc.card, raw)
			}
			if a.Card != nil && tags(a.Card.Data)["button"] != 0 {
				t.Error("the answer's card has buttons")
			}
		})
	}
}

func TestCallbackOutsideTheChat(t *testing.T) {
	e := newTestEnv(t)
	p := tap("ev_1", "approve", "")
	p["event"].(map[string]any)["context"].(map[string]any)["open_chat_id"] = "oc_elsewhere"
	code, a, _ := serve(t, NewCallbackHandler([]*Channel{e.ch}), feishuRequest(t, p, "e-key", testNow))
	if code != 200 || a.Toast == nil || a.Toast.Type != "error" || len(e.decider.Decisions()) != 0 || len(e.decider.Refusals()) != 1 {
		t.Errorf("status %d toast %+v decisions %d refusals %v", code, a.Toast, len(e.decider.Decisions()), e.decider.Refusals())
	}
}

// A tap that names no chat is not known to come from the approvals chat:
// it was handed to the gate as the chat audience's, so on a route without
// an approvers list anyone could decide it. Now only a direct card's
// addressee may. Found by a second reader.
func TestCallbackWithNoChat(t *testing.T) {
	e := newTestEnv(t)
	p := tap("ev_1", "approve", "")
	delete(p["event"].(map[string]any)["context"].(map[string]any), "open_chat_id")
	code, a, _ := serve(t, NewCallbackHandler([]*Channel{e.ch}), feishuRequest(t, p, "e-key", testNow))
	if code != 200 || a.Toast == nil || a.Toast.Type != "error" || len(e.decider.Decisions()) != 0 || len(e.decider.Refusals()) != 1 {
		t.Errorf("status %d toast %+v decisions %+v refusals %v", code, a.Toast, e.decider.Decisions(), e.decider.Refusals())
	}
}

func TestURLChallenge(t *testing.T) {
	e := newTestEnv(t)
	h := NewCallbackHandler([]*Channel{e.ch})
	ch := map[string]any{"challenge": "ajls384kdjx98XX", "token": "v-token", "type": "url_verification"}

	// Encrypted, as Feishu sends it when an encrypt key is set (unsigned).
	plain, _ := json.Marshal(ch)
	body := feishutest.Encrypted(ch, "e-key")
	code, a, raw := serve(t, h, httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(body)))
	if code != 200 || a.Challenge != "ajls384kdjx98XX" || strings.TrimSpace(raw) != `{"challenge":"ajls384kdjx98XX"}` {
		t.Errorf("encrypted challenge: %d %s", code, raw)
	}
	// Signed and encrypted works too.
	if code, a, _ = serve(t, h, feishuRequest(t, ch, "e-key", testNow)); code != 200 || a.Challenge != "ajls384kdjx98XX" {
		t.Errorf("signed challenge: %d", code)
	}
	// Plaintext, for apps without an encrypt key.
	if code, a, _ = serve(t, h, httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(plain))); code != 200 || a.Challenge != "ajls384kdjx98XX" {
		t.Errorf("plaintext challenge: %d", code)
	}
	ch["token"] = "forged"
	plain, _ = json.Marshal(ch)
	if code, _, _ = serve(t, h, httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(plain))); code != 401 {
		t.Errorf("challenge with a wrong token: %d, want 401", code)
	}
}

func TestCallbackPicksTheChannel(t *testing.T) {
	a := newTestEnv(t)
	b := newTestEnv(t, func(o *Options) {
		o.Name = "legal-feishu"
		o.Config.AppID, o.Config.EncryptKey, o.Config.VerificationToken, o.Config.ChatID = "cli_legal", "legal-key", "legal-token", "oc_legal"
	})
	h := NewCallbackHandler([]*Channel{a.ch, b.ch})
	p := tap("ev_1", "reject", "no")
	p["header"].(map[string]any)["app_id"] = "cli_legal"
	p["header"].(map[string]any)["token"] = "legal-token"
	p["event"].(map[string]any)["context"].(map[string]any)["open_chat_id"] = "oc_legal"
	if code, _, raw := serve(t, h, feishuRequest(t, p, "legal-key", testNow)); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if len(a.decider.Decisions()) != 0 || len(b.decider.Decisions()) != 1 || b.decider.Decisions()[0].Via != "legal-feishu" {
		t.Errorf("decisions: ops %d, legal %v", len(a.decider.Decisions()), b.decider.Decisions())
	}
	// The same app's token under the other channel's key is refused.
	if code, _, _ := serve(t, h, feishuRequest(t, p, "e-key", testNow)); code != 401 {
		t.Errorf("cross-channel token: %d, want 401", code)
	}
}

// A tap on a direct card comes from the approver's own chat with the app,
// which is no channel's chat_id. With several channels on one app, it
// counts through the request's own channel, not the first channel
// configured; a channel of another app is never taken, whatever the
// request names. Found by a reader.
func TestDirectCardTapKeepsItsChannel(t *testing.T) {
	for _, tc := range []struct {
		name, engApp, want string
	}{
		{"the request's channel on the same app", "cli_test", "eng-feishu"},
		{"the request's channel on another app", "cli_other", "ops-feishu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDecider{get: func(id string) (*gate.Request, error) {
				r := sampleRequest()
				r.ID, r.Channels, r.Approvers = id, []string{"eng-feishu"}, []string{"feishu:ou_alice"}
				return r, nil
			}}
			a := newTestEnv(t, func(o *Options) { o.Decider = d })
			b := newTestEnv(t, func(o *Options) {
				o.Name, o.Config.ChatID, o.Config.AppID, o.Decider = "eng-feishu", "oc_eng", tc.engApp, d
			})
			h := NewCallbackHandler([]*Channel{a.ch, b.ch})
			p := feishutest.CardAction(feishutest.Tap{EventID: "ev_dm", Token: "v-token", AppID: "cli_test", At: testNow, OpenID: "ou_alice",
				UnionID: "on_alice", RequestID: reqID, Choice: "approve", MessageID: "om_7", ChatID: "oc_p2p_alice", To: "feishu:ou_alice"})
			if code, _, raw := serve(t, h, feishuRequest(t, p, "e-key", testNow)); code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			if ds := d.Decisions(); len(ds) != 1 || ds[0].Via != tc.want {
				t.Errorf("decisions %+v, want one via %s", ds, tc.want)
			}
		})
	}
}

// TestTapInASharedChatKeepsItsChannel: two channels of one app posting to
// one chat; a tap on the card the second sent counts through the second,
// which the request was sent to, not the first configured. Found by a
// ninth reader.
func TestTapInASharedChatKeepsItsChannel(t *testing.T) {
	a := newTestEnv(t)
	b := newTestEnv(t, func(o *Options) { o.Name = "legal-feishu" })
	get := func(id string) (*gate.Request, error) {
		r := sampleRequest()
		r.ID, r.Channels = id, []string{"legal-feishu"}
		return r, nil
	}
	a.decider.get, b.decider.get = get, get
	h := NewCallbackHandler([]*Channel{a.ch, b.ch})
	if code, _, raw := serve(t, h, feishuRequest(t, tap("ev_1", "approve", ""), "e-key", testNow)); code != 200 {
		t.Fatalf("status %d: %s", code, raw)
	}
	if len(b.decider.Decisions()) != 1 || len(a.decider.Decisions()) != 0 {
		t.Errorf("decisions: ops %v, legal %v; want one via legal-feishu", a.decider.Decisions(), b.decider.Decisions())
	}
}

// A user_id is the tenant's own (docs/feishu.md): in an external chat
// (Feishu's Slack Connect), a member of another tenant may carry the same
// user_id as an approver here. Their tap must not decide as that approver:
// the gate is given feishu:user:<user_id> only for an operator of the
// app's own tenant (header.tenant_key). An operator that names no tenant
// (the SDK's Operator has tenant_key as optional) is not known to be of
// the app's tenant either.
func TestUserIDOfAnotherTenantIsNotAnApprover(t *testing.T) {
	for name, tenant := range map[string]any{"another tenant": "tk_other", "no tenant named": nil} {
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t)
			approvers := []string{"feishu:user:u_alice"}
			e.decider.decide = func(d gate.Decision) (*gate.Request, error) {
				// What gate.Decide asks of the tapper (decide.go, Admit).
				if !gate.MayDecide(approvers, append([]string{d.Actor}, d.Identities...)...) {
					return nil, gate.Errorf(gate.EFORBIDDEN, "%s is not an approver of this request", d.Actor)
				}
				r := sampleRequest()
				r.Approvers, r.Status, r.DecidedBy = approvers, gate.StatusApproved, d.Actor
				return r, nil
			}
			p := feishutest.CardAction(feishutest.Tap{
				EventID: "ev_x", Token: "v-token", AppID: "cli_test", TenantKey: "tk_1", At: testNow,
				OpenID: "ou_mallory", UserID: "u_alice", UnionID: "on_mallory", // another person
				RequestID: reqID, Choice: "approve", MessageID: "om_1", ChatID: "oc_chat",
			})
			op := p["event"].(map[string]any)["operator"].(map[string]any)
			if op["tenant_key"] = tenant; tenant == nil {
				delete(op, "tenant_key")
			}
			code, a, raw := serve(t, NewCallbackHandler([]*Channel{e.ch}), feishuRequest(t, p, "e-key", testNow))
			if code != 200 {
				t.Fatalf("status %d: %s", code, raw)
			}
			if a.Toast == nil || a.Toast.Type == "success" {
				t.Errorf("an operator (tenant %v) with user_id u_alice approved as feishu:user:u_alice: toast %+v, decisions %+v",
					tenant, a.Toast, e.decider.Decisions())
			}
		})
	}
}

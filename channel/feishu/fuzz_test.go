package feishu

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
)

// FuzzDecrypt: what Feishu encrypts under a key decrypts to itself under
// that key; one changed byte of the ciphertext or IV, or another key,
// never decrypts to it; and no input makes decrypt panic.
func FuzzDecrypt(f *testing.F) {
	f.Add([]byte("hello world"), "test key", uint(0), "P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=")
	f.Add([]byte(`{"challenge":"abc","token":"v-token","type":"url_verification"}`), "e-key", uint(20), "")
	f.Add([]byte{}, "", uint(1), "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	f.Add(bytes.Repeat([]byte{16}, 16), "k", uint(31), "%%%")
	f.Fuzz(func(t *testing.T, plain []byte, key string, at uint, raw string) {
		_, _ = decrypt(raw, key) // hostile input: no panic
		enc := feishutest.Encrypt(plain, key)
		got, err := decrypt(enc, key)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("decrypt(encrypt(%q)) = %q, %v", plain, got, err)
		}
		if got, err := decrypt(enc, key+"x"); err == nil && bytes.Equal(got, plain) {
			t.Fatal("another key decrypts it")
		}
		buf, _ := base64.StdEncoding.DecodeString(enc)
		buf[at%uint(len(buf))] ^= 1 + byte(at>>8)%255
		if got, err := decrypt(base64.StdEncoding.EncodeToString(buf), key); err == nil && bytes.Equal(got, plain) {
			t.Fatalf("a ciphertext with byte %d changed decrypts to the plaintext", at%uint(len(buf)))
		}
	})
}

// FuzzCallback posts hostile callbacks, encrypted and signed as Feishu
// does, to the callback handler. Whatever the plaintext (schema 1 or 2,
// URL challenges, card actions with any token, app or operator), nothing
// panics, and a verdict reaches the gate only for a card.action.trigger
// event (schema 2.0) with the channel's verification token and an operator,
// and outside the approvals chat only from the person a direct card was
// sent to. The same body
// with one byte changed, unsigned, signed with another key or outside the
// time window never decides anything.
func FuzzCallback(f *testing.F) {
	seed := func(v any) []byte { b, _ := json.Marshal(v); return b }
	for i, p := range [][]byte{
		seed(tap("ev-seed-1", choiceApprove, "")), seed(tap("ev-seed-2", choiceReject, "too risky")),
		[]byte(`{"type":"url_verification","challenge":"c","token":"v-token"}`),
		[]byte(`{"type":"url_verification","challenge":"c","token":"wrong"}`),
		// Schema 1 (the old card callback): no header, never a verdict.
		[]byte(`{"open_id":"ou_alice","user_id":"u_alice","open_message_id":"om_1","open_chat_id":"oc_chat","tenant_key":"tk_1","token":"v-token","action":{"value":{"request_id":"01JTESTREQUEST0000000000001","choice":"approve"},"tag":"button"}}`),
		[]byte(`{"schema":"2.0","header":{"event_id":"e","event_type":"card.action.trigger","token":"v-token"},"event":null}`),
		[]byte(`{"schema":"2.0","header":{"event_id":"e2","event_type":"card.action.trigger","token":"v-token"},"event":{"operator":{},"action":{"value":"approve:1"}}}`),
		[]byte(`[]`), []byte(`null`), []byte(`"x"`),
		// A card tapped in another chat (index 10: sent as Feishu sends
		// it): forwarded, so inert; and a direct card its addressee taps.
		seed(feishutest.CardAction(feishutest.Tap{EventID: "ev-seed-fwd", Token: "v-token", AppID: "cli_test", TenantKey: "tk_1", At: testNow,
			OpenID: "ou_mallory", RequestID: reqID, Choice: choiceApprove, MessageID: "om_9", ChatID: "oc_elsewhere", To: "feishu:ou_alice"})),
		seed(feishutest.CardAction(feishutest.Tap{EventID: "ev-seed-direct", Token: "v-token", AppID: "cli_test", TenantKey: "tk_1", At: testNow,
			OpenID: "ou_alice", RequestID: reqID, Choice: choiceApprove, MessageID: "om_7", ChatID: "oc_p2p_alice", To: "feishu:ou_alice"})),
	} {
		f.Add(p, uint(i*37), uint8(i))
	}
	e := newTestEnv(f)
	h := NewCallbackHandler([]*Channel{e.ch})
	post := func(body []byte, hdr http.Header) int {
		r := httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(body))
		for k, v := range hdr {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	f.Fuzz(func(t *testing.T, plain []byte, at uint, mode uint8) {
		body, _ := json.Marshal(map[string]string{"encrypt": feishutest.Encrypt(plain, "e-key")})
		ts := strconv.FormatInt(testNow.Unix(), 10)
		signed := func(b []byte, key, ts string) http.Header {
			return http.Header{"X-Lark-Request-Timestamp": {ts}, "X-Lark-Request-Nonce": {"n"}, "X-Lark-Signature": {feishutest.Sign(ts, "n", key, b)}}
		}
		before := len(e.decider.Decisions())
		var hdr http.Header
		sendBody := body
		switch mode % 5 {
		case 0: // as Feishu sends it
			hdr = signed(body, "e-key", ts)
		case 1: // one byte changed after signing
			hdr = signed(body, "e-key", ts)
			sendBody = bytes.Clone(body)
			sendBody[at%uint(len(body))] ^= 1 + byte(at>>8)%255
		case 2: // unsigned
		case 3: // signed with another key
			hdr = signed(body, "other-key", ts)
		case 4: // outside the window
			ts = strconv.FormatInt(testNow.Unix()-int64(window.Seconds())-1-int64(at%1000), 10)
			hdr = signed(body, "e-key", ts)
		}
		code := post(sendBody, hdr)
		decided := len(e.decider.Decisions()) - before
		if mode%5 != 0 {
			if decided != 0 || (code == http.StatusOK && !challenge(plain)) {
				t.Fatalf("mode %d: answered %d and decided %d times", mode%5, code, decided)
			}
			return
		}
		if decided == 0 {
			return
		}
		var env struct {
			Header struct {
				EventType string `json:"event_type"`
				Token     string `json:"token"`
			} `json:"header"`
			Event struct {
				Operator struct {
					OpenID  string `json:"open_id"`
					UnionID string `json:"union_id"`
					UserID  string `json:"user_id"`
				} `json:"operator"`
				Action struct {
					Value struct {
						To string `json:"to"`
					} `json:"value"`
				} `json:"action"`
				Context struct {
					OpenChatID string `json:"open_chat_id"`
				} `json:"context"`
			} `json:"event"`
		}
		if err := json.Unmarshal(plain, &env); err != nil || env.Header.EventType != "card.action.trigger" ||
			env.Header.Token != "v-token" || env.Event.Operator.OpenID == "" || code != http.StatusOK {
			t.Fatalf("a verdict from %s (answered %d)", plain, code)
		}
		// Outside the approvals chat, only a direct card's addressee decides.
		if chat, to, op := env.Event.Context.OpenChatID, env.Event.Action.Value.To, env.Event.Operator; chat != "oc_chat" &&
			(to == "" || (to != "feishu:"+op.OpenID && (op.UnionID == "" || to != "feishu:union:"+op.UnionID) && (op.UserID == "" || to != "feishu:user:"+op.UserID))) {
			t.Fatalf("a verdict from a card tapped in chat %s by someone it was not sent to: %s", chat, plain)
		}
	})
}

// challenge reports whether plain is a URL verification with the right
// token, which is answered even unsigned (Feishu signs none).
func challenge(plain []byte) bool {
	var c struct{ Type, Token string }
	return json.Unmarshal(plain, &c) == nil && c.Type == "url_verification" && c.Token == "v-token"
}

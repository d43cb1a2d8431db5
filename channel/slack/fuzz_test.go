package slack

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

// FuzzVerify signs a body at a time and checks the v0 signature: what was
// signed, inside the window, verifies; the same signature never covers a
// body with one byte changed, another timestamp, another secret, or a
// time outside the five minutes.
func FuzzVerify(f *testing.F) {
	f.Add("8f742231b10e8888abcd99yyyzzz85a5", []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"),
		int64(1531420618), int64(30), uint(7))
	f.Add("s", []byte(blockActions("T1", "U1", actionApprove, "approve:01JREQ")), int64(1777000000), int64(-300), uint(0))
	f.Add("", []byte{}, int64(-1), int64(300), uint(1))
	f.Add("k", []byte("payload=%7B%7D"), int64(1<<62), int64(0), uint(99))
	f.Fuzz(func(t *testing.T, secret string, body []byte, ts, skew int64, at uint) {
		if ts < -1<<40 || ts > 1<<40 {
			return // time.Unix far outside any clock
		}
		now := time.Unix(ts, 0).Add(time.Duration(skew) * time.Second)
		h := slacktest.Sign(secret, time.Unix(ts, 0), string(body))
		err := verify(secret, h, body, now)
		inWindow := skew >= -300 && skew <= 300
		if inWindow != (err == nil) {
			t.Fatalf("skew %ds: verify = %v", skew, err)
		}
		if !inWindow {
			return
		}
		if len(body) > 0 {
			tampered := append([]byte(nil), body...)
			tampered[at%uint(len(body))] ^= 1 + byte(at>>8)%255
			if verify(secret, h, tampered, now) == nil {
				t.Fatalf("a body with byte %d changed verifies", at%uint(len(body)))
			}
		}
		if verify(secret, h, append(append([]byte(nil), body...), '&'), now) == nil {
			t.Fatal("a longer body verifies")
		}
		if verify(secret+"x", h, body, now) == nil {
			t.Fatal("another secret verifies")
		}
		other := h.Clone()
		other.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts+1, 10))
		if verify(secret, other, body, now) == nil {
			t.Fatal("another timestamp verifies")
		}
		if verify(secret, h, body, time.Unix(ts, 0).Add(signatureWindow+time.Second)) == nil {
			t.Fatal("a stale signature verifies")
		}
		for _, k := range []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"} {
			missing := h.Clone()
			missing.Del(k)
			if err := verify(secret, missing, body, now); !errors.Is(err, errUnsigned) {
				t.Fatalf("without %s: verify = %v", k, err)
			}
		}
	})
}

// FuzzParsePayload decodes hostile interaction payloads. The lean decoder
// must never panic, and wherever the SDK (which the Socket Mode path uses)
// reads a payload, the lean decoder reads the very same taps from it:
// the same buttons, blocks and values, the same tapper, the same request.
func FuzzParsePayload(f *testing.F) {
	for _, p := range []string{
		realBlockActions, realViewSubmission,
		`{"type":"block_actions","team":{"id":"T9"},"user":{"id":"U9"},"container":{"channel_id":"C9"},"actions":[{"type":"button","block_id":"b","action_id":"gatehouse_reject","value":"reject:1"}]}`,
		`{"type":"block_actions","team":{"id":"T9"},"user":{"id":"U9"},"actions":[{"type":"button","name":"x","value":"approve:1"}]}`,
		`{"type":"block_actions","user":{"id":"U9"},"actions":[{"block_id":null,"action_id":"gatehouse_approve","value":"approve:1"}]}`,
		`{"type":"block_actions","user":{"id":"U9"},"actions":[{"block_id":1,"action_id":"gatehouse_approve","value":"approve:1"}]}`,
		`{"type":"block_actions","user":{"id":"U9"},"actions":[{"BLOCK_ID":"b","action_id":"gatehouse_approve","value":"approve:1"}]}`,
		`{"type":"view_submission","user":{"id":"U9"},"view":{"callback_id":"gatehouse_reason_modal","private_metadata":"{\"id\":\"1\"}","state":{"values":{"a":{"b":{}}}}}}`,
		`{"actions":[null],"view":{"state":null}}`, `[]`, `null`, `{"type":"block_actions","actions":{}}`,
	} {
		f.Add(url.Values{"payload": {p}}.Encode())
	}
	f.Add("payload=%zz")
	f.Add("other=1&payload=")
	f.Fuzz(func(t *testing.T, body string) {
		got, err := parsePayload([]byte(body))
		form, ferr := url.ParseQuery(body)
		if ferr != nil {
			if err == nil {
				t.Fatalf("a body that is no form was read: %q", body)
			}
			return
		}
		var sdk slack.InteractionCallback
		if json.Unmarshal([]byte(form.Get("payload")), &sdk) != nil {
			return // the SDK refuses it; the lean decoder may read less
		}
		if err != nil {
			t.Fatalf("the SDK reads %q, the lean decoder does not: %v", form.Get("payload"), err)
		}
		if want, have := read(sdk), read(got); !reflect.DeepEqual(want, have) {
			t.Fatalf("lean decoder read\n%v\nthe SDK read\n%v", have, want)
		}
		if want, have := blockIDs(sdk), blockIDs(got); !reflect.DeepEqual(want, have) {
			t.Fatalf("lean decoder read block ids %q, the SDK %q", have, want)
		}
	})
}

// blockIDs are the block ids of a payload's block actions.
func blockIDs(ic slack.InteractionCallback) []string {
	var ids []string
	for _, a := range ic.ActionCallback.BlockActions {
		ids = append(ids, a.BlockID)
	}
	return ids
}

package slack

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

// Payloads shaped as Slack sends them (api.slack.com/reference/interaction-payloads):
// a block_actions payload carries the whole message, blocks and state
// included, and a view_submission the whole view.
const (
	realBlockActions = `{"type":"block_actions","user":{"id":"U0CA5","username":"amy","name":"amy","team_id":"T3MDE"},
"api_app_id":"A0CA5","token":"Shh_its_a_seekrit","container":{"type":"message","message_ts":"1548261231.000200",
"channel_id":"C0CA5","is_ephemeral":false},"trigger_id":"12466734323.1395872398.f2a4c2d3e6b7","team":{"id":"T0CA5",
"domain":"acme"},"enterprise":null,"is_enterprise_install":false,"channel":{"id":"C0CA5","name":"approvals"},
"message":{"bot_id":"B0CA5","type":"message","text":"oa__purchase_pay needs approval","user":"U0BOT","ts":"1548261231.000200",
"team":"T0CA5","blocks":[{"type":"header","block_id":"h","text":{"type":"plain_text","text":"Approval needed","emoji":true}},
{"type":"section","block_id":"s","text":{"type":"mrkdwn","text":"*Tool* oa__purchase_pay","verbatim":false},
"fields":[{"type":"mrkdwn","text":"*Amount*\n60000"}]},{"type":"context","block_id":"c","elements":[{"type":"mrkdwn","text":"agent a-1"}]},
{"type":"actions","block_id":"gatehouse_actions","elements":[{"type":"button","action_id":"gatehouse_approve",
"text":{"type":"plain_text","text":"Approve","emoji":true},"style":"primary","value":"approve:01JD3X"},
{"type":"button","action_id":"gatehouse_reject","text":{"type":"plain_text","text":"Reject","emoji":true},"style":"danger","value":"reject:01JD3X"}]}]},
"state":{"values":{}},"response_url":"https://hooks.slack.com/actions/T0CA5/1/abc",
"actions":[{"action_id":"gatehouse_approve","block_id":"gatehouse_actions","text":{"type":"plain_text","text":"Approve","emoji":true},
"value":"approve:01JD3X","style":"primary","type":"button","action_ts":"1548426417.840180"}]}`
	realViewSubmission = `{"type":"view_submission","team":{"id":"T0CA5","domain":"acme"},"user":{"id":"U0CA5","username":"amy",
"name":"amy","team_id":"T0CA5"},"api_app_id":"A0CA5","token":"Shh_its_a_seekrit","trigger_id":"12466734323.1395872398.ad8",
"view":{"id":"V0CA5","team_id":"T0CA5","type":"modal","blocks":[{"type":"input","block_id":"gatehouse_reason",
"label":{"type":"plain_text","text":"Reason"},"element":{"type":"plain_text_input","action_id":"gatehouse_reason_text","multiline":true}}],
"private_metadata":"{\"id\":\"01JD3X\",\"ch\":\"C0CA5\"}","callback_id":"gatehouse_reason_modal",
"state":{"values":{"gatehouse_reason":{"gatehouse_reason_text":{"type":"plain_text_input","value":"not this vendor"}}}},
"hash":"156772938.1827394","title":{"type":"plain_text","text":"Reject request"},"submit":{"type":"plain_text","text":"Reject"}},
"response_urls":[]}`
)

// read is what interact reads of a payload; the lean decoder and the SDK's
// must agree on every part of it.
func read(ic slack.InteractionCallback) map[string]any {
	var actions [][2]string
	for _, a := range ic.ActionCallback.BlockActions {
		actions = append(actions, [2]string{a.ActionID, a.Value})
	}
	values := map[string]string{}
	if ic.View.State != nil {
		for b, as := range ic.View.State.Values {
			for a, v := range as {
				values[b+"/"+a] = v.Value
			}
		}
	}
	return map[string]any{"type": ic.Type, "trigger": ic.TriggerID, "team": ic.Team.ID, "user": ic.User.ID,
		"user_team": ic.User.TeamID, "channel": ic.Channel.ID, "container": ic.Container.ChannelID, "actions": actions,
		"callback": ic.View.CallbackID, "meta": ic.View.PrivateMetadata, "state": ic.View.State != nil, "values": values,
		"tap_channel": tapChannel(ic), "request": requestIDOf(ic)}
}

func TestParsePayloadReadsWhatTheSDKReads(t *testing.T) {
	for name, p := range map[string]string{
		"block_actions":   realBlockActions,
		"view_submission": realViewSubmission,
		"test builder tap": mustJSON(t, slacktest.BlockActions(slacktest.Tap{Team: "T1", User: "U1", Channel: "C1",
			ActionID: "gatehouse_approve", Value: "approve:01JD3X"})),
		"no channel, no user team": `{"type":"block_actions","team":{"id":"T9"},"user":{"id":"U9"},"container":{"channel_id":"C9"},"actions":[{"type":"button","block_id":"b","action_id":"gatehouse_reject","value":"reject:1"}]}`,
		"an attachment action":     `{"type":"block_actions","team":{"id":"T9"},"user":{"id":"U9"},"actions":[{"type":"button","name":"x","value":"approve:1"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var sdk slack.InteractionCallback
			if err := json.Unmarshal([]byte(p), &sdk); err != nil {
				t.Fatal(err)
			}
			got, err := parsePayload([]byte(url.Values{"payload": {p}}.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			if want, have := read(sdk), read(got); !reflect.DeepEqual(want, have) {
				t.Errorf("lean decoder read\n%v\nthe SDK read\n%v", have, want)
			}
		})
	}
}

func TestParsePayloadErrors(t *testing.T) {
	for body, want := range map[string]string{
		"payload=%zz":                  "form: ",
		"other=1":                      "no payload field",
		"payload=%7Bnot+json":          "payload: ",
		`payload=%7B%22type%22%3A5%7D`: "payload: ",
	} {
		_, err := parsePayload([]byte(body))
		if err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("%s: got %v, want an error starting %q", body, err, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkParsePayload: go test ./channel/slack -run '^$' -bench ParsePayload
func BenchmarkParsePayload(b *testing.B) {
	body := []byte(url.Values{"payload": {realBlockActions}}.Encode())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parsePayload(body); err != nil {
			b.Fatal(err)
		}
	}
}

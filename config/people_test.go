package config

import (
	"strings"
	"testing"
	"time"
)

const peopleBase = `
auth:
  api_tokens:
    - { name: alice-laptop, token: alice-token-0123456789, person: alice }
channels:
  - { name: ops-slack, type: slack, bot_token: b, signing_secret: s, channel_id: C1 }
  - { name: ops-feishu, type: feishu, app_id: cli_x, app_secret: s, verification_token: v, encrypt_key: e, chat_id: oc_1 }
people:
  - name: alice
    identities: ["slack:T0123/U0456", "feishu:union:on_abc", "web:alice"]
    users: ["u_42", "alice@example.com"]
  - name: bob
    identities: ["slack:T0123/U0789"]
  - name: carol
    identities: ["feishu:ou_carol"]
`

func TestPeopleAndReach(t *testing.T) {
	c, err := Parse([]byte(peopleBase+`
routes:
  - name: payments
    approvers: ["person:alice", "person:bob", "slack:T0123/*"]
    channels: [ops-slack]
    quorum: 2
    self_approval: forbid
    notify: both
    remind: 1500ms
    timeout: 1h
    escalate:
      - after: 30m
        channels: [ops-feishu]
        approvers: ["person:carol"]
`), t.TempDir(), env(nil))
	if err != nil {
		t.Fatalf("valid config refused:\n%v", err)
	}
	r := c.Routes[0]
	if r.SelfApproval != SelfApprovalForbid || r.Notify != NotifyBoth || r.Remind.D() != 1500*time.Millisecond ||
		len(r.Escalate) != 1 || r.Escalate[0].After.D() != 30*time.Minute || r.Escalate[0].Approvers[0] != "person:carol" {
		t.Fatalf("route: %+v", r)
	}
	if c.Auth.APITokens[0].Person != "alice" || len(c.People) != 3 || c.People[0].Users[1] != "alice@example.com" {
		t.Fatalf("people: %+v %+v", c.Auth.APITokens, c.People)
	}
}

func TestPeopleErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown people and claimed twice", `
auth:
  api_tokens:
    - { name: t, token: t-token-0123456789abc, person: alcie }
people:
  - name: alice
    identities: ["slack:T1/U1", "slack:T1/*", "person:bob", "nocolon"]
    users: [u_1]
  - name: bob
    identities: ["slack:T1/U1"]
    users: [u_1, ""]
  - name: alice
    identities: [web:alice2]
  - name: "x y"
    users: [u_2]
  - name: ghost
routes:
  - name: r
    approvers: ["person:alise", "person:bob"]
    quorum: 3
`, []string{
			`auth.api_tokens[0].person: no person named "alcie" (did you mean alice?)`,
			`people[0].identities[1]: "slack:T1/*" is a glob`,
			`people[0].identities[2]: "person:bob" names a person`,
			`people[0].identities[3]: "nocolon" is not an identity`,
			`people[1].identities[0]: "slack:T1/U1" is already alice's (people[0].identities[0])`,
			`people[1].users[0]: "u_1" is already alice's (people[0].users[0])`,
			`people[1].users[1]: empty`,
			`people[2].name: "alice" is used twice (also people[0])`,
			`people[3].name: "x y": a person's name is written person:NAME`,
			`people[4]: give identities`,
			`routes[0].approvers[0]: no person named "alise" (did you mean alice?)`,
			`routes[0].quorum: needs 3 approvals but only 2 approvers are listed`,
		}},
		{"an identity no tap could ever have", `
people:
  - name: carol
    identities: ["slak:T1/U1", "slack:U0456", "webhook:relay/Carol@Corp.com"]
routes:
  - name: r
    approvers: ["slak:T1/U2", "slack:t1/u2", "webhook:relay", "fieshu:ou_1", "web:", "slack:T1/*", "feishu:ou_x", "webhook:relay/bob", "webhook:Relay/*@Corp.com"]
`, []string{
			`people[0].identities[0]: "slak:T1/U1" has no known kind "slak" (did you mean slack:?)`,
			`people[0].identities[1]: "slack:U0456" is not slack:TEAM/USER`,
			`people[0].identities[2]: "webhook:relay/Carol@Corp.com" has capitals, but a webhook actor that is an email is recorded in lower case: write "webhook:relay/carol@corp.com"`,
			`routes[0].approvers[0]: "slak:T1/U2" has no known kind "slak" (did you mean slack:?)`,
			`routes[0].approvers[1]: "slack:t1/u2" is not slack:TEAM/USER with Slack's upper-case ids`,
			`routes[0].approvers[2]: "webhook:relay" is not webhook:<channel>/<actor>`,
			`routes[0].approvers[3]: "fieshu:ou_1" has no known kind "fieshu" (did you mean feishu:?)`,
			`routes[0].approvers[4]: "web:" names nobody`,
			`routes[0].approvers[8]: "webhook:Relay/*@Corp.com" has capitals, but a webhook actor that is an email is recorded in lower case: write "webhook:Relay/*@corp.com"`,
		}},
		{"a person with no identities cannot approve", `
people:
  - name: dave
    users: [u_d]
defaults:
  approvers: ["person:dave"]
routes:
  - name: r
    approvers: ["person:dave"]
`, []string{
			`defaults.approvers[0]: person "dave" has no identities, so nobody could approve as them`,
			`routes[0].approvers[0]: person "dave" has no identities, so nobody could approve as them`,
		}},
		{"one person counts once toward a quorum", peopleBase + `
routes:
  - name: r
    approvers: ["person:alice", "slack:T0123/U0456", "feishu:union:on_abc"]
    quorum: 2
`, []string{"routes[0].quorum: needs 2 approvals but only 1 approvers are listed"}},
		{"reach", peopleBase + `
routes:
  - name: r
    channels: [ops-feishu]
    approvers: ["slack:T0123/U0456", "web:bob"]
    self_approval: never
    notify: pager
    remind: 2h
    escalate:
      - after: 0s
      - after: 20m
        channels: [nope]
        approvers: ["person:zed"]
      - after: 5m
        channels: [ops-slack]
  - name: s
    approvers: ["slack:T0123/U0456"]
    channels: [ops-feishu]
    notify: dm
  - name: u
    notify: both
    escalate:
      - { after: 1m, approvers: ["person:bob"] }
  - name: v
    action: allow
    remind: 1m
`, []string{
			`routes[0].self_approval: "never" is not one of allow, forbid`,
			`routes[0].notify: "pager" is not one of channel, dm, both`,
			`routes[0].remind: 2h0m0s is not shorter than the route's timeout (10m0s)`,
			`routes[0].escalate[0].after: required`,
			`routes[0].escalate[0]: give channels, approvers or both`,
			`routes[0].escalate[1].after: 20m0s is not shorter than the route's timeout`,
			`routes[0].escalate[1].channels[0]: no channel named "nope"`,
			`routes[0].escalate[1].approvers[0]: no person named "zed"`,
			`routes[0].escalate[2].after: must be later than the step before it (20m0s)`,
			`routes[1].notify: dm: no approver has an identity the route's channels can send a direct card to`,
			`routes[2].notify: both sends cards to the approvers, but the route lists none`,
			`routes[2].escalate[0].approvers: the route lists no approvers`,
			`routes[3].remind: the route decides on its own (action: allow)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErrors(t, tc.yaml, tc.want) })
	}
}

// check-config reports every problem in one pass: misspelt keys (with the
// key that was meant), values of the wrong kind, and what validation finds
// in the rest, each once.
func TestEveryProblemInOnePass(t *testing.T) {
	want := []string{
		"databse: unknown key (did you mean database?)",
		`defaults.timeout: "soon" is not a duration`,
		"auth.api_tokens[0].tokn: unknown key (did you mean token?)",
		"channels[0].bot_tokn: unknown key (did you mean bot_token?)",
		"routes[0].match.tools: unknown key (did you mean tool?)",
		"routes[0].remnd: unknown key (did you mean remind?)",
		"auth.api_tokens[0].token: required",
		"channels[0].bot_token: required",
		"channels[0].channel_id: required",
		`routes[0].channels[0]: no channel named "nope"`,
		"routes[0].quorum: must not be negative",
	}
	errs := wantErrors(t, `
listen: 0.0.0.0:8080
databse: {}
defaults:
  timeout: soon
auth:
  api_tokens:
    - name: a
      tokn: x
channels:
  - name: s
    type: slack
    bot_tokn: b
routes:
  - name: r
    match: { tools: "x" }
    channels: [nope]
    remnd: 1m
    quorum: -1
`, want)
	seen := map[string]bool{}
	for _, e := range errs {
		if seen[e.Error()] {
			t.Errorf("reported twice: %s", e)
		}
		seen[e.Error()] = true
		if e.Path == "defaults.timeout" && !strings.Contains(e.Msg, "not a duration") {
			t.Errorf("a key check named is reported again: %s", e)
		}
	}
	if got := closest("chanels", []string{"channels", "routes", "people"}); got != "channels" {
		t.Errorf("closest: %q", got)
	}
	if got := closest("xyz", []string{"channels", "routes"}); got != "" {
		t.Errorf("closest suggests %q for a word nothing like a key", got)
	}
}

func TestSelfApprovalWarning(t *testing.T) {
	const route = `
routes:
  - name: pay
    self_approval: forbid
`
	for _, tc := range []struct {
		yaml string
		warn bool
	}{{route, true}, {peopleBase + route, false}} {
		c, err := Parse([]byte(tc.yaml), t.TempDir(), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Join(c.Warnings(), "\n")
		if got := strings.Contains(w, "routes[0].self_approval: forbid, but no API token names a person"); got != tc.warn {
			t.Errorf("warned %v, want %v: %s", got, tc.warn, w)
		}
	}
}

// TestEveryIdentityKindPasses: the identity check refuses misspellings,
// not the identities taps really have.
func TestEveryIdentityKindPasses(t *testing.T) {
	yaml := `
people:
  - name: carol
    identities: ["slack:T0123/U0456", "feishu:ou_abc", "feishu:union:on_abc", "feishu:user:u1", "web:carol", "webhook:relay/carol"]
routes:
  - name: r
    approvers: ["slack:T1/*", "slack:*", "feishu:*", "web:*", "webhook:relay/*", "person:carol", "slack:E0AB/W012"]
`
	if _, err := Parse([]byte(yaml), t.TempDir(), env(nil)); err != nil {
		t.Fatal(err)
	}
}

// A person's web identity that no sign-in is would leave the person unknown
// on the web page, where self_approval: forbid would then let them approve
// their own request (found by a reader): single sign-on records the email
// in lower case, a password login its user's name exactly. The identities
// that are someone's pass.
func TestWebIdentitiesAreWhoSignsIn(t *testing.T) {
	const yaml = `
auth:
  users:
    - { name: Alice, password_bcrypt: "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Yo3XjY8y0qzVw0YJ7wE5Y2", role: approver }
    - { name: Ops@Example.com, password_bcrypt: "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Yo3XjY8y0qzVw0YJ7wE5Y2", role: approver }
people:
  - name: alice
    identities: ["web:alice", "web:Alice"]
  - name: bob
    identities: ["web:Bob@Example.com", "web:bob@example.com", "web:Ops@Example.com"]
`
	errs := wantErrors(t, yaml, []string{
		`people[0].identities[0]: "web:alice" is not user "Alice": a web identity names its user exactly`,
		`people[1].identities[0]: "web:Bob@Example.com" has capitals, but a single sign-on identity is the email in lower case: write "web:bob@example.com"`,
	})
	if len(errs) != 2 {
		t.Errorf("want 2 errors, got %d:\n%v", len(errs), errs)
	}
}

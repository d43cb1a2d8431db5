package config

import (
	"strings"
	"testing"
)

// Found by a reader: a second YAML document is dropped without a word, and with it
// every route (deny routes included) written there.
func TestTwoDocumentsAreRefused(t *testing.T) {
	y := "routes:\n  - name: read\n    match: {tool: Read}\n    action: allow\n" +
		"---\n" +
		"routes:\n  - name: no-bash\n    match: {tool: Bash}\n    action: deny\n"
	c, err := Parse([]byte(y), t.TempDir(), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatalf("a file of two YAML documents was accepted; routes in force: %d (%s) — the deny route of the second document is gone", len(c.Routes), c.Routes[0].Name)
	}
	if err != nil && !strings.Contains(err.Error(), "more than one YAML document") {
		t.Errorf("refused, but not for what is wrong: %v", err)
	}
}

// Found by a reader: an unset ${VAR} in an OIDC role glob is no error, and
// "${ADMIN_PREFIX}*" becomes "*": every single-sign-on user is admin.
func TestUnsetVariableInASignOnRoleIsRefused(t *testing.T) {
	y := "public_url: https://gh.example.com\nauth:\n  oidc:\n    issuer: https://idp.example.com\n    client_id: gh\n    client_secret: s3cret\n" +
		"    roles:\n      approver: ['*@example.com']\n      admin: ['${ADMIN_PREFIX}*@example.com']\n"
	c, err := Parse([]byte(y), t.TempDir(), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatalf("unset ${ADMIN_PREFIX} accepted: roles.admin = %q (every approver is now admin)", c.Auth.OIDC.Roles.Admin)
	}
	if err != nil && !strings.Contains(err.Error(), "${ADMIN_PREFIX} is not set") {
		t.Errorf("refused, but not for what is wrong: %v", err)
	}
}

// Found by a reader: a secret tagged !!null slips past check (which skips !!null
// nodes) and the decoder's error, returned verbatim, prints it.
func TestNullTaggedSecretIsNotPrinted(t *testing.T) {
	const secret = "xoxb-very-secret-bot-token-000"
	y := "channels:\n  - name: ops\n    type: slack\n    bot_token: !!null ${SLACK_BOT_TOKEN}\n    signing_secret: abcdefabcdefabcdef\n    channel_id: C0123456789\n"
	_, err := Parse([]byte(y), t.TempDir(), func(k string) (string, bool) { return secret, k == "SLACK_BOT_TOKEN" })
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error prints the secret: %v", err)
	}
	if err != nil && !strings.Contains(err.Error(), "tagged !!null but holds a value") {
		t.Errorf("refused, but not for what is wrong: %v", err)
	}
}

// Found by a reader: a mapping tagged !!null is skipped by check but still decoded,
// so its unknown keys (here a misspelt when) are dropped without a word.
func TestNullTaggedMappingIsRefused(t *testing.T) {
	y := "routes:\n  - name: small-refunds\n    match: !!null {tool: Refund, wehn: 'args.amount < 100'}\n    action: allow\n"
	c, err := Parse([]byte(y), t.TempDir(), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatalf("accepted: route matches tool=%q when=%q (every refund allowed)", c.Routes[0].Match.Tool, c.Routes[0].Match.When)
	}
	if err != nil && !strings.Contains(err.Error(), "tagged !!null but holds a value") {
		t.Errorf("refused, but not for what is wrong: %v", err)
	}
}

// A second document that does not parse, or one tagged !!null, is one too:
// Unmarshal reads the first alone, so nothing else said it was dropped. A
// second reader of the fix.
func TestASecondDocumentThatDoesNotParseIsRefused(t *testing.T) {
	first := "routes:\n  - name: read\n    match: {tool: Read}\n    action: allow\n"
	for name, second := range map[string]string{
		"syntax error":  "---\nroutes:\n  - name: no-bash\n    match: {tool: Bash\n    action: deny\n",
		"tagged !!null": "--- !!null\nroutes:\n  - name: no-bash\n    match: {tool: Bash}\n    action: deny\n",
	} {
		if c, err := Parse([]byte(first+second), t.TempDir(), func(string) (string, bool) { return "", false }); err == nil {
			t.Errorf("%s: accepted with %d route(s); the deny route after --- is gone", name, len(c.Routes))
		}
	}
	for _, ok := range []string{"---\n" + first, first + "---\n", first + "...\n", "--- # the config\n" + first, first + "--- ~\n"} {
		if _, err := Parse([]byte(ok), t.TempDir(), func(string) (string, bool) { return "", false }); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// A token may not be named as the grants of a tokenless agent_id are kept
// (agent_id:NAME): it would take them. A reader of the grants' change.
func TestTokenNamedAsATokenlessGrantIsRefused(t *testing.T) {
	y := "auth:\n  api_tokens:\n    - {name: 'agent_id:build-bot', token: build-bot-token-0123456789}\n"
	if _, err := Parse([]byte(y), t.TempDir(), func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "names starting with agent_id: are the grants of agents without a token") {
		t.Errorf("a token named agent_id:build-bot: %v", err)
	}
}

package config

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const full = `
listen: 0.0.0.0:8080
public_url: https://gate.example.com/
database:
  driver: postgres
  dsn: postgres://gate@db:5432/gate
defaults:
  timeout: 10m
  on_timeout: deny
cards:
  workers: 8
auth:
  api_tokens:
    - name: build-agent
      token: ${GATEHOUSE_TOKEN}
    - name: hashed
      token_sha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
      scopes: [read_all, cancel_all]
  users:
    - name: alice
      password_bcrypt: "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Yo3XjY8y0qzVw0YJ7wE5Y2"
      role: auditor
  oidc:
    issuer: https://idp.example.com
    client_id: gatehouse
    client_secret_file: slack.secret
    roles:
      approver: ["*@example.com"]
      admin: [platform-admins]
channels:
  - name: ops-slack
    type: slack
    bot_token: ${SLACK_BOT_TOKEN}
    signing_secret_file: slack.secret
    channel_id: C0123456789
    api_url: http://127.0.0.1:9999/api
  - name: ops-feishu
    type: feishu
    app_id: cli_xxx
    app_secret: ${FEISHU_APP_SECRET:-dev-secret}
    verification_token: vt
    encrypt_key: ek
    chat_id: oc_xxx
routes:
  - name: payments
    match: { tool: "oa__purchase_*" }
    channels: [ops-feishu]
    approvers: ["feishu:ou_abc", "feishu:ou_def"]
    quorum: 2
    timeout: 30m
    on_timeout: deny
    label: Payments over ¥50,000
    severity: critical
  - name: reads
    match: { tool: "read_*" }
    confirm: false
audit:
  signing_key_file: audit.key
  checkpoint_dir: ${CHECKPOINTS}
retention:
  keep: 400d
redact:
  keys: [password, "*token*"]
  patterns: ["AKIA[0-9A-Z]{16}"]
`

func TestParseFullConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "slack.secret"), []byte("s3cret\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "audit.key"), testKeyPEM(t), 0o600)
	c, err := Parse([]byte(full), dir, env(map[string]string{"GATEHOUSE_TOKEN": "tok-0123456789abcdef", "SLACK_BOT_TOKEN": "xoxb-1", "CHECKPOINTS": dir}))
	if err != nil {
		t.Fatalf("valid config refused:\n%v", err)
	}
	if c.PublicURL != "https://gate.example.com" || c.Database.Driver != "postgres" || c.Defaults.Timeout.D() != 10*time.Minute || c.Cards.Workers != 8 {
		t.Fatalf("top level: %+v", c)
	}
	if c.Auth.APITokens[0].Token != "tok-0123456789abcdef" {
		t.Fatalf("${VAR} not expanded: %q", c.Auth.APITokens[0].Token)
	}
	if tk := c.Auth.APITokens; tk[0].HasScope(ScopeReadAll) || !tk[1].HasScope(ScopeReadAll) || !tk[1].HasScope(ScopeCancelAll) {
		t.Fatalf("scopes: %+v", tk)
	}
	s := c.Channels[0].Slack
	if s == nil || s.BotToken != "xoxb-1" || s.SigningSecret != "s3cret" || s.APIURL != "http://127.0.0.1:9999/api/" {
		t.Fatalf("slack channel: %+v", s)
	}
	f := c.Channels[1].Feishu
	if f == nil || f.AppSecret != "dev-secret" || f.Mode != FeishuWebhook || f.BaseURL != "https://open.feishu.cn" {
		t.Fatalf("feishu channel: %+v", f)
	}
	if r := c.Routes[0]; r.Quorum != 2 || r.Timeout.D() != 30*time.Minute || r.Match.Tool != "oa__purchase_*" {
		t.Fatalf("route: %+v", r)
	}
	if r := c.Routes[0]; r.Label != "Payments over ¥50,000" || r.Severity != SeverityCritical {
		t.Fatalf("route looks: %q %q", r.Label, r.Severity)
	}
	if rd := c.Redact; len(rd.Keys) != 2 || rd.Keys[1] != "*token*" || rd.Patterns[0] != "AKIA[0-9A-Z]{16}" {
		t.Fatalf("redact: %+v", rd)
	}
	if c.Routes[1].Confirm == nil || *c.Routes[1].Confirm {
		t.Fatalf("confirm: false lost")
	}
	if o := c.Auth.OIDC; o == nil || o.ClientSecret != "s3cret" || o.Roles.Admin[0] != "platform-admins" {
		t.Fatalf("oidc: %+v", o)
	}
	if !strings.Contains(c.Audit.SigningKey, "BEGIN PRIVATE KEY") || c.Audit.CheckpointDir != dir || c.Audit.CheckpointInterval.D() != time.Hour ||
		c.Retention.Keep.D() != 400*24*time.Hour {
		t.Fatalf("audit and retention: %+v %+v", c.Audit, c.Retention)
	}
}

func testKeyPEM(t *testing.T) []byte {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "400d": 400 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0d": 0,
		"106751d": 106751 * 24 * time.Hour} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"d", "1.5d", "-1d", "1dx", "1d-1h", "12 days", "99999999d",
		// past what a time.Duration holds: these wrapped (213505d to a day)
		"106752d", "213505d", "365000d", "106751d24h"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) took it", bad)
		}
	}
}

func TestDefaultConfigIsValid(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.Database.Driver != "sqlite" || c.Database.DSN != "gatehouse.db" {
		t.Fatalf("defaults: %+v", c)
	}
}

// TestErrorsNameEveryKey checks that every problem is reported, each with
// the path of its key.
func TestErrorsNameEveryKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown keys everywhere", `
listen: 127.0.0.1:8080
databse: {}
auth:
  api_tokens:
    - name: a
      tokn: x
channels:
  - name: s
    type: slack
    bot_token: b
    signing_secret: s
    channel_id: C
    chat_id: oc_wrong_type_key
routes:
  - name: r
    match: { tools: "x" }
`, []string{"databse: unknown key", "auth.api_tokens[0].tokn: unknown key", "channels[0].chat_id: unknown key", "routes[0].match.tools: unknown key"}},
		{"wrong kinds", `
defaults:
  timeout: 10 minutes
routes:
  - name: r
    quorum: two
    confirm: maybe
`, []string{`defaults.timeout: "10 minutes" is not a duration`, "routes[0].quorum: must be a whole number", "routes[0].confirm: must be true or false"}},
		{"missing and bad values", `
listen: 0.0.0.0:8080
database:
  driver: mysql
defaults:
  on_timeout: maybe
auth:
  api_tokens:
    - name: short
      token: abc
  users:
    - name: bob
      password_bcrypt: plain
      role: boss
channels:
  - name: s
    type: slack
  - name: f
    type: feishu
    mode: carrier-pigeon
  - name: web
    type: teams
routes:
  - name: r
    channels: [nope]
    approvers: [alice]
    quorum: 3
`, []string{
			`database.driver: "mysql" is not one of sqlite, postgres`,
			`defaults.on_timeout: "maybe" is not one of deny, allow`,
			"auth.api_tokens[0].token: too short",
			"auth.users[0].password_bcrypt: not a bcrypt hash",
			`auth.users[0].role: "boss" is not one of auditor, approver, admin`,
			"channels[0].bot_token: required", "channels[0].signing_secret: required", "channels[0].channel_id: required",
			"channels[1].app_id: required", "channels[1].app_secret: required", "channels[1].chat_id: required",
			`channels[1].mode: "carrier-pigeon" is not one of webhook, websocket`,
			`channels[2].name: "web" is the built-in web channel`, `channels[2].type: "teams" is not one of slack, feishu`,
			`routes[0].channels[0]: no channel named "nope"`, `routes[0].approvers[0]: "alice" is not an identity`,
			"routes[0].quorum: needs 3 approvals but only 1 approvers are listed",
		}},
		{"channels named as verdicts no channel gave", `
channels:
  - {name: policy, type: webhook, url: 'https://relay.example.com/a', secret: 0123456789abcdef0123}
  - {name: grant, type: webhook, url: 'https://relay.example.com/b', secret: 1123456789abcdef0123}
  - {name: timeout, type: webhook, url: 'https://relay.example.com/c', secret: 2123456789abcdef0123}
  - {name: api, type: webhook, url: 'https://relay.example.com/d', secret: 3123456789abcdef0123}
  - {name: hook, type: webhook, url: 'https://relay.example.com/e', secret: 4123456789abcdef0123}
`, []string{`channels[0].name: "policy" is what Gatehouse records as the channel of verdicts no channel gave`,
			`channels[1].name: "grant" is what`, `channels[2].name: "timeout" is what`, `channels[3].name: "api" is what`,
			`channels[4].name: "hook" is what`}},
		{"call given with no pattern", `
routes:
  - {name: listed, match: {tool: "oa__*", call: []}, action: allow}
  - {name: null, match: {tool: "oa__*", call: ~}, action: allow}
  - {name: blank, match: {tool: "oa__*", call: }, action: allow}
  - {name: null-item, match: {tool: "oa__*", call: [~]}, action: allow}
  - name: empty-item
    match:
      call:
        -
    action: allow
`, []string{"routes[0].match.call: no pattern", "routes[1].match.call: no pattern", "routes[2].match.call: no pattern",
			"routes[3].match.call[0]: empty: name a pattern", "routes[4].match.call[0]: empty: name a pattern"}},
		// A setting of a route or of the defaults with no value read as
		// one left out: the allow routes below allowed every tool, every
		// agent, every amount, and the asks let anyone approve, at any rate.
		{"policy settings given with no value", `
defaults:
  approvers:
routes:
  - {name: tool-blank, match: {tool: }, action: allow}
  - {name: tool-null, match: {tool: ~}, action: allow}
  - {name: agent-null, match: {tool: "oa__*", agent: null}, action: allow}
  - name: when-blank
    match:
      tool: "oa__purchase_*"
      when:
    action: allow
  - name: match-blank
    match:
    action: allow
  - {name: approvers-blank, match: {tool: deploy}, approvers: , channels: [web]}
  - {name: rate-blank, match: {tool: fetch}, action: allow, rate: ~}
  -
`, []string{"routes[0].match.tool: empty", "routes[1].match.tool: empty", "routes[2].match.agent: empty",
			"routes[3].match.when: empty", "routes[4].match: empty", "routes[5].approvers: empty", "routes[6].rate: empty",
			"routes[7]: empty", "defaults.approvers: empty"}},
		// The same settings given as an empty string: a template whose
		// value was quoted ("{{ .Values.when }}") and came out empty, or
		// a !!str with nothing after it. Each matched every call.
		{"policy match keys given as an empty string", `
log: {format: &e ""}
routes:
  - {name: tool-empty, match: {tool: ""}, action: allow}
  - {name: when-empty, match: {tool: "oa__purchase_*", when: ""}, action: allow}
  - {name: when-space, match: {tool: "oa__purchase_*", when: "  "}, action: allow}
  - {name: agent-empty, match: {tool: "oa__*", agent: ''}, action: allow}
  - {name: tool-str, match: {tool: !!str }, action: allow}
  - {name: tool-alias, match: {tool: *e}, action: allow}
`, []string{"routes[0].match.tool: empty", "routes[1].match.when: empty", "routes[2].match.when: empty",
			"routes[3].match.agent: empty", "routes[4].match.tool: empty", "routes[5].match.tool: empty"}},
		{"a long connection on a Feishu app another channel uses", `
channels:
  - {name: ops, type: feishu, mode: websocket, app_id: cli_a, app_secret: s, chat_id: oc_ops}
  - {name: legal, type: feishu, mode: websocket, app_id: cli_a, app_secret: s, chat_id: oc_legal}
  - {name: finance, type: feishu, mode: websocket, app_id: cli_b, app_secret: s, chat_id: oc_fin}
  - {name: hr, type: feishu, mode: webhook, app_id: cli_c, app_secret: s, chat_id: oc_hr, verification_token: t, encrypt_key: k}
  - {name: it, type: feishu, mode: websocket, app_id: cli_c, app_secret: s, chat_id: oc_it}
  - {name: sales, type: feishu, mode: webhook, app_id: cli_d, app_secret: s, chat_id: oc_s, verification_token: t, encrypt_key: k}
  - {name: support, type: feishu, mode: webhook, app_id: cli_d, app_secret: s, chat_id: oc_sup, verification_token: t, encrypt_key: k}
`, []string{`channels[0].mode: websocket, on the same app_id as channel "legal"`, `channels[1].mode: websocket, on the same app_id as channel "ops"`,
			`channels[4].mode: websocket, on the same app_id as channel "hr"`}},
		{"bad token scopes", `
auth:
  api_tokens:
    - name: ops
      token: ops-token-0123456789
      scopes: [read_all, admin, cancel-all]
`, []string{`auth.api_tokens[0].scopes[1]: "admin" is not one of read_all, cancel_all`,
			`auth.api_tokens[0].scopes[2]: "cancel-all" is not one of read_all, cancel_all`}},
		{"token scopes not a list", `
auth:
  api_tokens:
    - name: scalar
      token: scalar-token-0123456789
      scopes: read_all
`, []string{"auth.api_tokens[0].scopes: must be a list"}},
		// The holder of a token two entries share acted as the last one (its
		// scopes, its person); the error names entries, never the secret.
		{"one token twice", `
auth:
  api_tokens:
    - { name: reader, token: shared-token-0123456789 }
    - { name: ops, token: shared-token-0123456789, scopes: [read_all, cancel_all] }
    - { name: hashed, token_sha256: EECCE33B1835BF3A802AFAFF3848D4AE1A2B37C506C08269A912B095D12D3BB1 }
    - { name: other, token: other-token-0123456789 }
`, []string{"auth.api_tokens[1].token: the same token as auth.api_tokens[0]: give each its own",
			"auth.api_tokens[2].token: the same token as auth.api_tokens[0]: give each its own"}},
		{"audit and retention", `
audit:
  signing_key: not a key
  checkpoint_interval: 10s
retention:
  keep: 30m
`, []string{"audit.signing_key: not a PEM private key (make one with: openssl genpkey -algorithm ed25519",
			"audit.checkpoint_interval: must be at least 1m", "retention.keep: must be at least 1h"}},
		{"checkpoints without a key", "audit:\n  checkpoint_dir: /nonexistent\n", []string{"audit.checkpoint_dir: needs audit.signing_key_file"}},
		{"retention not a duration", "retention:\n  keep: a year\n", []string{`retention.keep: "a year" is not a duration`}},
		{"audit key file missing", "audit:\n  signing_key_file: /nonexistent/audit.key\n", []string{"audit.signing_key: cannot read the secret in signing_key_file: open /nonexistent/audit.key"}},
		{"single sign-on", `
auth:
  users:
    - name: carol@example.com
      password_bcrypt: "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3Yo3XjY8y0qzVw0YJ7wE5Y2"
      role: auditor
  oidc:
    issuer: http://idp.example.com
    roles:
      approver: ["", "*@example.com"]
`, []string{`auth.oidc.issuer: "http://idp.example.com" is not an https URL`, "auth.oidc.client_id: required",
			"auth.oidc.client_secret: required", "public_url: required with auth.oidc", "auth.oidc.roles.approver[0]: empty",
			`auth.users[0].name: "carol@example.com" contains @`}},
		{"single sign-on without roles", `
public_url: https://gate.example.com
auth:
  oidc:
    issuer: https://idp.example.com
    client_id: gatehouse
    client_secret: s3cret
    rolez: {}
`, []string{"auth.oidc.rolez: unknown key"}},
		{"single sign-on with no role given", `
public_url: https://gate.example.com
auth:
  oidc:
    issuer: https://idp.example.com
    client_id: gatehouse
    client_secret: s3cret
`, []string{"auth.oidc.roles: give at least one role"}},
		{"open API off loopback", "listen: 0.0.0.0:8080\n", []string{"auth.api_tokens: required when listen is not a loopback address"}},
		{"card workers out of range", "cards:\n  workers: -1\n", []string{"cards.workers: must be between 1 and 1024"}},
		{"card workers not a number", "cards:\n  workers: many\n", []string{"cards.workers: must be a whole number"}},
		{"secret given twice", `
channels:
  - name: s
    type: slack
    bot_token: b
    bot_token_file: /x
    signing_secret: s
    channel_id: C
`, []string{"channels[0].bot_token_file: give bot_token or bot_token_file, not both"}},
		{"unreadable secret file", `
auth:
  api_tokens:
    - name: a
      token_file: /nonexistent/token
`, []string{"auth.api_tokens[0].token: cannot read the secret in token_file: open /nonexistent/token"}},
		{"not YAML", "listen: [", []string{"not valid YAML"}},
		{"route looks", `
routes:
  - name: r
    severity: urgent
    label: "two\nlines"
  - name: long
    label: "` + strings.Repeat("x", 101) + `"
`, []string{`routes[0].severity: "urgent" is not one of low, high, critical`, "routes[0].label: must be one line",
			"routes[1].label: 101 characters: at most 100"}},
		{"redaction rules", `
redact:
  keys: [password, ""]
  patterns: ["AKIA[0-9A-Z]{16}", "AKIA[0-9", ".*", "ok"]
  keyz: []
`, []string{"redact.keyz: unknown key"}},
		{"bad redaction rules", `
redact:
  keys: [password, ""]
  patterns: ["AKIA[0-9A-Z]{16}", "AKIA[0-9", ".*"]
`, []string{"redact.keys[1]: empty", `redact.patterns[1]: "AKIA[0-9" is not a regular expression: missing closing ]`,
			`redact.patterns[2]: ".*" matches the empty string`}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErrors(t, tc.yaml, tc.want) })
	}
}

// wantErrors parses yaml and checks that the problems it reports include
// each of want.
func wantErrors(t *testing.T, yaml string, want []string) Errors {
	t.Helper()
	_, err := Parse([]byte(yaml), t.TempDir(), env(nil))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want config.Errors, got %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	return errs
}

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"A": "1", "EMPTY": ""})
	for _, tc := range []struct {
		in, want string
		unset    []string
	}{
		{"${A}", "1", nil},
		{"x${A}y${A}", "x1y1", nil},
		{"${MISSING}", "", []string{"MISSING"}},
		{"${EMPTY}", "", []string{"EMPTY"}},
		{"${MISSING:-dflt}", "dflt", nil},
		{"${EMPTY:-dflt}", "dflt", nil},
		{"${MISSING:-}", "", nil},
		{"$2a$10$abc", "$2a$10$abc", nil},
		{"${unterminated", "${unterminated", nil},
		{"plain", "plain", nil},
		{"$${A}", "${A}", nil},
		{"x$$${A}", "x$${A}", nil},
		{"$$${A}${A}", "$${A}1", nil},
	} {
		got, unset, err := expand(tc.in, lookup)
		if err != nil || got != tc.want || !slices.Equal(unset, tc.unset) {
			t.Errorf("expand(%q) = %q, unset %q, %v; want %q, unset %q", tc.in, got, unset, err, tc.want, tc.unset)
		}
	}
	// The shell's other forms, and names no variable has, were read as a
	// variable nobody set, so they expanded to nothing.
	for _, bad := range []string{"${A-x}", "${A:?required}", "${A?}", "${A:=x}", "${}", "${1A}", "${A B}", "x${A}${-}"} {
		if got, _, err := expand(bad, lookup); err == nil {
			t.Errorf("expand(%q) = %q, want an error", bad, got)
		}
	}
}

// An unset variable in a route or the defaults is an error: empty, a call
// pattern's path, a tool or agent glob or a condition's operand covers
// more than was meant, so Read(${WORKSPACE}/**) allowed Read(/**).
func TestUnsetVariablesInRulesAreErrors(t *testing.T) {
	doc := `defaults:
  approvers: ["web:${BOSS}"]
routes:
  - name: workspace
    match: { call: "Read(${WORKSPACE}/**)", agent: "${AGENT}" }
    action: allow
  - name: on-purpose
    match: { tool: "x${SUFFIX:-}", when: 'args.path.startsWith("${WS:-/srv}/")' }
    action: allow
channels:
  - { name: s, type: slack, channel_id: C1, bot_token: "${SLACK_BOT_TOKEN}", signing_secret: "${SLACK_SIGNING_SECRET}", app_token: "${SLACK_APP_TOKEN}" }
`
	_, err := Parse([]byte(doc), t.TempDir(), env(map[string]string{"AGENT": "", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "0123456789abcdef"}))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	want := []string{
		"defaults.approvers[0]: ${BOSS} is not set",
		"routes[0].match.call: ${WORKSPACE} is not set: empty, this rule would cover more than it says (write ${WORKSPACE:-} if empty is meant)",
		"routes[0].match.agent: ${AGENT} is not set",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	// The optional Socket Mode token may stay unset, and ${X:-} says empty
	// on purpose.
	if len(errs) != len(want) {
		t.Errorf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
}

// A plain ${VAR} is read as what it expands to, so numbers and switches can
// come from the environment; a quoted one stays a string.
func TestVariablesInNumbersAndSwitches(t *testing.T) {
	c, err := Parse([]byte("cards:\n  workers: ${W}\nroutes:\n  - name: r\n    match: { tool: \"${T}\" }\n    confirm: ${C}\n    record: ${R:-true}\n"),
		t.TempDir(), env(map[string]string{"W": "8", "C": "true", "T": "123"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Cards.Workers != 8 || c.Routes[0].Confirm == nil || !*c.Routes[0].Confirm || c.Routes[0].Record == nil || !*c.Routes[0].Record || c.Routes[0].Match.Tool != "123" {
		t.Errorf("workers %d, confirm %v, record %v, tool %q", c.Cards.Workers, c.Routes[0].Confirm, c.Routes[0].Record, c.Routes[0].Match.Tool)
	}
	// A secret that looks like a number or null is still that text.
	c, err = Parse([]byte("auth:\n  api_tokens:\n    - name: a\n      token: ${T1}\n    - name: b\n      token: ${T2}\n"),
		t.TempDir(), env(map[string]string{"T1": "12345678901234567890", "T2": "0x1234567890abcdef"}))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := c.Auth.APITokens[0].Token, c.Auth.APITokens[1].Token; a != "12345678901234567890" || b != "0x1234567890abcdef" {
		t.Errorf("tokens %q, %q", a, b)
	}
}

// A config in which nothing demands confirmation of every call leaves the
// decision to the agent's requires_confirmation for calls no route matches:
// legal (it is the documented default), but check-config says so.
func TestWarningWhenTheAgentDecides(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		routes []Route
		warn   bool
	}{
		{"no routes", nil, true},
		{"routes for some tools", []Route{{Name: "pay", Match: Match{Tool: "oa__*"}}}, true},
		{"a catch-all that does not confirm", []Route{{Name: "all", Match: Match{Tool: "*"}, Confirm: &no}}, true},
		{"a catch-all for one agent", []Route{{Name: "ci", Match: Match{Agent: "ci-*"}}}, true},
		{"a catch-all that confirms", []Route{{Name: "pay", Match: Match{Tool: "oa__*"}}, {Name: "rest", Match: Match{Tool: "*"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Routes = tc.routes
			ws := c.Warnings()
			if got := len(ws) > 0; got != tc.warn {
				t.Fatalf("warnings %q, want a warning: %v", ws, tc.warn)
			}
			if tc.warn && !strings.Contains(ws[0], `"requires_confirmation": false`) {
				t.Fatalf("the warning does not say what happens: %q", ws[0])
			}
		})
	}
}

func TestWarningForLooksNobodySees(t *testing.T) {
	c := Default()
	c.Defaults.Action = ActionAsk
	c.Routes = []Route{{Name: "reads", Action: ActionAllow, Severity: SeverityLow}, {Name: "pay", Severity: SeverityCritical, Label: "Payments"}}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "routes[0] (reads)") || !strings.Contains(ws[0], "asks nobody") {
		t.Fatalf("warnings %q", ws)
	}
}

// defaults.approvers read as if a route without approvers took them, as it
// takes the defaults' channels and timeout; it does not: anyone who sees
// the route's cards may decide them, and check-config says so.
func TestWarningWhenARouteHasNoApprovers(t *testing.T) {
	no := false
	c := Default()
	c.Defaults.Action = ActionAsk
	c.Defaults.Approvers = []string{"web:boss"}
	c.Routes = []Route{{Name: "pay"}, {Name: "listed", Approvers: []string{"web:alice"}}, {Name: "reads", Action: ActionAllow},
		{Name: "old-allow", Confirm: &no}, {Name: "deploys", Action: ActionAsk}}
	ws := c.Warnings()
	if len(ws) != 2 || !strings.Contains(ws[0], "routes[0] (pay) lists no approvers, so anyone who sees its cards may decide them") ||
		!strings.Contains(ws[1], "routes[4] (deploys)") {
		t.Fatalf("warnings %q", ws)
	}
	c.Defaults.Approvers = nil // nothing reads as a fallback
	if ws := c.Warnings(); len(ws) != 0 {
		t.Fatalf("warnings %q", ws)
	}
}

func TestWebhookChannel(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hook.secret"), []byte("0123456789abcdef-relay\n"), 0o600)
	c, err := Parse([]byte(`
channels:
  - name: teams-relay
    type: webhook
    url: https://relay.example.com/gatehouse
    secret_file: hook.secret
routes:
  - name: deploys
    channels: [teams-relay]
    approvers: ["webhook:teams-relay/*"]
`), dir, env(nil))
	if err != nil {
		t.Fatalf("valid webhook config refused:\n%v", err)
	}
	w := c.Channels[0].Webhook
	if w == nil || w.URL != "https://relay.example.com/gatehouse" || w.Secret != "0123456789abcdef-relay" {
		t.Fatalf("webhook channel: %+v", w)
	}

	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"missing keys", "channels:\n  - {name: w, type: webhook}\n",
			[]string{"channels[0].url: required", "channels[0].secret: required"}},
		{"bad values", "channels:\n  - {name: w, type: webhook, url: 'ftp://relay', secret: short}\n",
			[]string{`channels[0].url: "ftp://relay" is not an http(s) URL`, "channels[0].secret: too short"}},
		{"a key of another type", "channels:\n  - {name: w, type: webhook, url: 'https://r', secret: 0123456789abcdef, bot_token: x}\n",
			[]string{"channels[0].bot_token: unknown key"}},
		{"a name that is no path segment", "channels:\n  - {name: 'ops/relay', type: webhook, url: 'https://r', secret: 0123456789abcdef}\n",
			[]string{`channels[0].name: "ops/relay" cannot be a webhook channel's name`}},
		{"two channels sharing a secret", "channels:\n  - {name: teams, type: webhook, url: 'https://r', secret: 0123456789abcdef}\n" +
			"  - {name: discord, type: webhook, url: 'https://r', secret: 0123456789abcdef}\n",
			[]string{`channels[1].secret: the same as channel "teams"'s: a verdict signed for one would be taken by the other as another approver's`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), t.TempDir(), env(nil))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
		})
	}
}

// TestSigningKeyNamedAsASecret: a signing key that is not one is named
// audit.signing_key, as every secret is, whether written inline or read
// from signing_key_file; an inline key is never reported as a file.
func TestSigningKeyNamedAsASecret(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "audit.key"), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, yaml := range map[string]string{
		"inline": "audit:\n  signing_key: garbage\n",
		"file":   "audit:\n  signing_key_file: audit.key\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(yaml), dir, env(nil))
			var errs Errors
			if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "audit.signing_key: not a PEM private key") {
				t.Errorf("want the one problem audit.signing_key: not a PEM private key, got:\n%v", err)
			}
		})
	}
}

// TestSecretFileProblemsNamedOnce: a <key>_file that cannot be read, or
// that is given beside <key>, is one problem, not also an unknown key and a
// missing or malformed <key>.
func TestSecretFileProblemsNamedOnce(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unreadable token": {"auth:\n  api_tokens:\n    - name: a\n      token_file: /nonexistent/t\n", "auth.api_tokens[0].token: cannot read the secret in token_file"},
		"unreadable key":   {"audit:\n  signing_key_file: /nonexistent/k\n", "audit.signing_key: cannot read the secret in signing_key_file"},
		"unreadable bot":   {"channels:\n  - name: s\n    type: slack\n    bot_token_file: /nonexistent/b\n    signing_secret: s\n    channel_id: C1\n", "channels[0].bot_token: cannot read the secret in bot_token_file"},
		"both given":       {"channels:\n  - name: s\n    type: slack\n    bot_token: xoxb-1\n    bot_token_file: /x\n    signing_secret: s\n    channel_id: C1\n", "channels[0].bot_token_file: give bot_token or bot_token_file, not both"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := wantErrors(t, tc.yaml, []string{tc.want})
			if len(errs) != 1 {
				t.Errorf("want one problem, got %d:\n%v", len(errs), errs)
			}
		})
	}
}

// A channel's type given by an alias or through a merge key had its keys
// checked as an unknown type's (not at all), then decoded as the real type,
// which drops a misspelt key: a webhook's sekret was silently ignored.
func TestChannelTypeByAliasOrMerge(t *testing.T) {
	wantErrors(t, `channels:
  - { name: a, type: &t webhook, url: "http://127.0.0.1:1/a", secret: 0123456789abcdef0 }
  - { name: b, type: *t, url: "http://127.0.0.1:1/b", secret: 0123456789abcdef1, sekret: typo }
`, []string{"channels[1].sekret: unknown key"})
	wantErrors(t, `channels:
  - <<: { type: webhook }
    name: b
    url: "http://127.0.0.1:1/b"
    secret: 0123456789abcdef1
`, []string{"channels[0].<<: unknown key"})
}

// A secret with a tag it cannot be read as is refused without showing it.
func TestSecretsAreNotShownInErrors(t *testing.T) {
	_, err := Parse([]byte("auth:\n  api_tokens:\n    - name: a\n      token: !!int TOPSECRET-0123456789\n"), t.TempDir(), env(nil))
	if err == nil || strings.Contains(err.Error(), "TOPSECRET") || !strings.Contains(err.Error(), "auth.api_tokens[0].token: cannot be read as a string") {
		t.Errorf("err = %v", err)
	}
	_, err = Parse([]byte("auth:\n  api_tokens:\n    - name: a\n      token: TOPSECRET${X-y}0123456789\n"), t.TempDir(), env(nil))
	if err == nil || strings.Contains(err.Error(), "TOPSECRET") || !strings.Contains(err.Error(), "auth.api_tokens[0].token: a ${ in this secret") {
		t.Errorf("err = %v", err)
	}
}

// TestUnsetVariableInSecretFileIsAnError: token_file: ${SECRETS}token with
// SECRETS unset read the file "token" beside the config, a different
// secret than the one meant, and the server started with it. Found by a
// reader of the config's expansion.
func TestUnsetVariableInSecretFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok-beside-the-config-0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := "auth:\n  api_tokens:\n    - name: a\n      token_file: ${SECRETS}token\n"
	_, err := Parse([]byte(doc), dir, env(nil))
	if err == nil || !strings.Contains(err.Error(), "auth.api_tokens[0].token: ${SECRETS} in token_file is not set") {
		t.Fatalf("want the unset variable named, got %v", err)
	}
	c, err := Parse([]byte(doc), dir, env(map[string]string{"SECRETS": dir + "/"}))
	if err != nil || c.Auth.APITokens[0].Token != "tok-beside-the-config-0123" {
		t.Fatalf("with SECRETS set: %v", err)
	}
}

// A route's match keys must all hold: tool: deploy with call: Bash(git
// push:*) matches no call, and a deny written so denies nothing.
func TestWarningWhenToolAndCallNeverBothHold(t *testing.T) {
	c, err := Parse([]byte(`defaults: { action: ask }
routes:
  - name: no-force-push
    match: { tool: deploy, call: "Bash(git push --force:*)" }
    action: deny
  - name: shell-push
    match: { tool: Bash, call: "Bash(git push:*)" }
  - name: cursor-shell
    match: { tool: Shell, call: "Bash(git push:*)" }
`), t.TempDir(), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], `routes[0] (no-force-push): match.tool "deploy" names none of the tools`) {
		t.Fatalf("warnings %q", ws)
	}
}

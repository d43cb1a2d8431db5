// Package config turns Gatehouse's YAML into a typed, validated Config:
// defaults first, then a strict parse (an unknown key is an error that names
// it), ${VAR} expansion, *_file secrets, and Validate with errors naming the
// key they are about.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Config is the whole server configuration.
type Config struct {
	Listen    string    `yaml:"listen"`
	PublicURL string    `yaml:"public_url"`
	Database  Database  `yaml:"database"`
	Defaults  Defaults  `yaml:"defaults"`
	Auth      Auth      `yaml:"auth"`
	Audit     Audit     `yaml:"audit"`
	Retention Retention `yaml:"retention"`
	Log       Log       `yaml:"log"`
	Cards     Cards     `yaml:"cards"`
	Redact    Redact    `yaml:"redact"`
	Channels  []Channel `yaml:"channels"`
	Routes    []Route   `yaml:"routes"`
	// People are the humans behind identities: one person may tap from
	// Slack, Feishu and the web page, and counts once toward a quorum.
	People []Person `yaml:"people"`
}

// Person is one human: the channel identities they decide with, and the
// user_id values agents send for them. Routes name them as person:NAME,
// and tokens may belong to one (requests made with it are theirs).
type Person struct {
	Name       string   `yaml:"name"`
	Identities []string `yaml:"identities"` // exact identities: slack:T/U, feishu:ou_x, feishu:union:on_x, web:alice
	Users      []string `yaml:"users"`      // user_id values agents send for this person
}

// PersonPrefix marks a person in a route's approvers: person:alice.
const PersonPrefix = "person:"

// Audit configures the tamper-evident trail's signed checkpoints.
type Audit struct {
	// SigningKey is an Ed25519 private key in PEM (PKCS #8), usually given
	// as signing_key_file. With it the server signs checkpoints of the
	// chain's head: GET /api/v1/audit/checkpoint, and files in CheckpointDir.
	SigningKey string `yaml:"signing_key" secret:"true"`
	// CheckpointDir is where a checkpoint is written every
	// CheckpointInterval (1h when zero) while the chain grows.
	CheckpointDir      string   `yaml:"checkpoint_dir"`
	CheckpointInterval Duration `yaml:"checkpoint_interval"`
}

// Retention says how long requests are kept.
type Retention struct {
	// Keep: final requests created longer ago than this are deleted, with
	// their events, cards and votes; the audit chain records the cut. Zero
	// keeps everything. Days may be written with a d suffix ("400d").
	Keep Duration `yaml:"keep"`
}

// Redact names the secrets that must never reach a person: values under
// matching argument keys, and matches of the patterns in any text, are shown
// as [redacted] on cards, pages, exports, webhook messages and log lines.
// What is stored (and sealed in the audit trail) is never changed.
type Redact struct {
	// Keys are globs (* and ?), matched without regard to case against
	// argument keys at any depth: "password", "*token*".
	Keys []string `yaml:"keys"`
	// Patterns are RE2 regular expressions matched in string values and
	// in summaries and reasons: "AKIA[0-9A-Z]{16}".
	Patterns []string `yaml:"patterns"`
}

// Cards tunes the card worker, which posts and updates the cards.
type Cards struct {
	// Workers bounds the platform calls in flight at once, per replica.
	// 64 when zero.
	Workers int `yaml:"workers"`
}

// Database says where the rows live.
type Database struct {
	Driver string `yaml:"driver"` // sqlite | postgres
	DSN    string `yaml:"dsn" secret:"true"`
	// MaxOpenConns bounds the connection pool (PostgreSQL). 20 when zero.
	MaxOpenConns int `yaml:"max_open_conns"`
}

// Defaults apply to requests that match no route.
type Defaults struct {
	// Action is what happens to calls no route matches: ask, allow or
	// deny. Empty: the agent's requires_confirmation decides (true, or
	// absent: ask; false: allow).
	Action     string   `yaml:"action"`
	Timeout    Duration `yaml:"timeout"`
	MaxTimeout Duration `yaml:"max_timeout"`
	OnTimeout  string   `yaml:"on_timeout"`
	Channels   []string `yaml:"channels"`
	Approvers  []string `yaml:"approvers"`
}

// Auth holds the agents' bearer tokens and the web page's logins.
type Auth struct {
	APITokens []APIToken `yaml:"api_tokens"`
	Users     []User     `yaml:"users"`
	// OIDC, when set, signs people into the web page through the company's
	// identity provider; password logins (Users) keep working beside it.
	OIDC *OIDC `yaml:"oidc"`
	// SessionTTL is how long a web login lasts. 12h when zero.
	SessionTTL Duration `yaml:"session_ttl"`
}

// APIToken is one agent credential; give the token or its SHA-256. A token
// reads, lists and cancels only the requests made with it, unless its scopes
// widen that.
type APIToken struct {
	Name        string   `yaml:"name"`
	Token       string   `yaml:"token" secret:"true"`
	TokenSHA256 string   `yaml:"token_sha256"`
	Scopes      []string `yaml:"scopes"` // read_all | cancel_all
	// Person names the person the token belongs to: requests made with it
	// are theirs (self_approval: forbid keeps them from approving them).
	Person string `yaml:"person"`
}

// Token scopes, for operators' tools.
const (
	// ScopeReadAll lets a token read, list and follow every request and its trail.
	ScopeReadAll = "read_all"
	// ScopeCancelAll lets a token cancel every request.
	ScopeCancelAll = "cancel_all"
)

// Sum is the SHA-256 a caller's bearer token is checked against: of token,
// or token_sha256 decoded; ok is false when neither is given as it must be.
func (t APIToken) Sum() (sum [32]byte, ok bool) {
	switch b, err := hex.DecodeString(t.TokenSHA256); {
	case t.Token != "" && t.TokenSHA256 == "":
		return sha256.Sum256([]byte(t.Token)), true
	case t.Token == "" && err == nil && len(b) == len(sum):
		copy(sum[:], b)
		return sum, true
	}
	return sum, false
}

// HasScope reports whether the token was given scope.
func (t APIToken) HasScope(scope string) bool {
	for _, s := range t.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// User is one web login.
type User struct {
	Name           string `yaml:"name"`
	PasswordBcrypt string `yaml:"password_bcrypt" secret:"true"`
	Role           string `yaml:"role"` // auditor | approver | admin
}

// OIDC is single sign-on through an OpenID Connect provider. A person's web
// identity is "web:<email>", and their role the highest whose globs match
// their email or one of their groups.
type OIDC struct {
	Issuer       string    `yaml:"issuer"`
	ClientID     string    `yaml:"client_id"`
	ClientSecret string    `yaml:"client_secret" secret:"true"`
	Roles        OIDCRoles `yaml:"roles"`
	// GroupsClaim names the ID token's claim that lists the person's
	// groups. "groups" when empty.
	GroupsClaim string `yaml:"groups_claim"`
	// Scopes are asked for besides openid, email and profile (some
	// providers send groups only for a "groups" scope).
	Scopes []string `yaml:"scopes"`
}

// OIDCRoles maps emails and groups to web roles, by globs (* any run of
// characters): "*@example.com", "ops-oncall". Emails match without regard
// to case.
type OIDCRoles struct {
	Approver []string `yaml:"approver"`
	Auditor  []string `yaml:"auditor"`
	Admin    []string `yaml:"admin"`
}

// Roles of web users, from least to most.
const (
	RoleAuditor  = "auditor"
	RoleApprover = "approver"
	RoleAdmin    = "admin"
)

// Log configures the server's log.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// Channel types.
const (
	TypeSlack   = "slack"
	TypeFeishu  = "feishu"
	TypeWebhook = "webhook"
)

// Channel is one configured chat destination. Name and Type are common; the
// rest belongs to the type, and a key of another type is an unknown key.
type Channel struct {
	Name    string   `yaml:"name"`
	Type    string   `yaml:"type"`
	Slack   *Slack   `yaml:"-"`
	Feishu  *Feishu  `yaml:"-"`
	Webhook *Webhook `yaml:"-"`
}

// Slack is a Slack channel's settings.
type Slack struct {
	BotToken      string `yaml:"bot_token" secret:"true"`
	SigningSecret string `yaml:"signing_secret" secret:"true"`
	ChannelID     string `yaml:"channel_id"`
	APIURL        string `yaml:"api_url"`
	AppToken      string `yaml:"app_token" secret:"true"`
}

// Feishu is a Feishu (Lark) channel's settings.
type Feishu struct {
	AppID             string `yaml:"app_id"`
	AppSecret         string `yaml:"app_secret" secret:"true"`
	VerificationToken string `yaml:"verification_token" secret:"true"`
	EncryptKey        string `yaml:"encrypt_key" secret:"true"`
	ChatID            string `yaml:"chat_id"`
	BaseURL           string `yaml:"base_url"`
	Mode              string `yaml:"mode"` // webhook | websocket
}

// Webhook is a generic webhook channel's settings: cards and final states
// go to URL as signed JSON POSTs, and verdicts come back on
// POST /callbacks/webhook/{name}, signed with the same Secret.
type Webhook struct {
	URL    string `yaml:"url"`
	Secret string `yaml:"secret" secret:"true"`
}

// MinWebhookSecret is the shortest secret a webhook channel accepts: the
// HMAC key that lets a relay approve requests.
const MinWebhookSecret = 16

// Feishu connection modes.
const (
	FeishuWebhook   = "webhook"
	FeishuWebsocket = "websocket"
)

// Route is an operator's rule for a class of tool calls: which calls it
// matches, and what happens to them.
type Route struct {
	Name  string `yaml:"name"`
	Match Match  `yaml:"match"`
	// Action is ask (the default), allow or deny.
	Action string `yaml:"action"`
	// Message is told to the agent with a policy verdict (and shown on cards).
	Message string `yaml:"message"`
	// Confirm is the older form of action: true is ask, false lets the
	// agent's requires_confirmation decide. Give one or the other.
	Confirm   *bool    `yaml:"confirm,omitempty"`
	Channels  []string `yaml:"channels"`
	Approvers []string `yaml:"approvers"`
	Quorum    int      `yaml:"quorum"`
	Timeout   Duration `yaml:"timeout"`
	OnTimeout string   `yaml:"on_timeout"`
	// Remember lets approvers "approve for D": a grant (see CONTRACT.md).
	Remember *Remember `yaml:"remember,omitempty"`
	// Rate limits the calls the route matches, across replicas.
	Rate *Rate `yaml:"rate,omitempty"`
	// Record false skips storing calls an allow route lets through (they
	// are counted in the metrics only).
	Record *bool `yaml:"record,omitempty"`
	// Label names the route for people, on its cards and pages
	// ("Payments over ¥50,000").
	Label string `yaml:"label"`
	// Severity is low, high or critical: it colours the route's cards,
	// and on a critical route approvers confirm an approval.
	Severity string `yaml:"severity"`
	// SelfApproval is allow (the default) or forbid: the person who asked
	// may not approve (they may still reject).
	SelfApproval string `yaml:"self_approval"`
	// Notify is channel (the default: cards to the route's channels), dm
	// (cards to the approvers themselves) or both.
	Notify string `yaml:"notify"`
	// Remind re-notifies the approvers of a still-pending request this
	// often, in the thread of each card.
	Remind Duration `yaml:"remind"`
	// Escalate widens a request nobody answered: after each step's time,
	// its card goes to more channels and more approvers may decide.
	Escalate []Escalation `yaml:"escalate"`
}

// Escalation is one step of a route's escalation: After the request was
// made, post its card to Channels and let Approvers decide too.
type Escalation struct {
	After     Duration `yaml:"after"`
	Channels  []string `yaml:"channels"`
	Approvers []string `yaml:"approvers"`
}

// Values of a route's self_approval and notify.
const (
	SelfApprovalAllow  = "allow"
	SelfApprovalForbid = "forbid"
	NotifyChannel      = "channel"
	NotifyDM           = "dm"
	NotifyBoth         = "both"

	// Severities of a route.
	SeverityLow      = "low"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// Match selects the tool calls a route covers; every given key must hold.
type Match struct {
	Tool  string   `yaml:"tool,omitempty"`  // a glob over the tool name
	Agent string   `yaml:"agent,omitempty"` // a glob over the authenticated agent (the token's name)
	When  string   `yaml:"when,omitempty"`  // a CEL condition over the call
	Call  Patterns `yaml:"call,omitempty"`  // Claude Code permission-rule patterns; any may match (omitted when none: an empty list is refused)
}

// Patterns is one pattern or a list of them.
type Patterns []string

// Remember is a route's grants: `remember: 1h`, or `{for: 1h, args: any}`.
type Remember struct {
	For Duration `yaml:"for"`
	// Args is same (the default: a grant covers the same arguments only)
	// or any.
	Args string `yaml:"args"`
}

// Rate limits a route's calls: at most Limit per Per, counted by agent
// (the default), user, session or for the whole route.
type Rate struct {
	Limit int      `yaml:"limit"`
	Per   Duration `yaml:"per"`
	By    string   `yaml:"by"`
}

// Actions of a route.
const (
	ActionAsk   = "ask"
	ActionAllow = "allow"
	ActionDeny  = "deny"
)

// Duration is a time.Duration written as a Go duration ("90s", "10m"),
// optionally after a whole number of days ("400d", "1d12h").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Default returns the built-in configuration: SQLite in the working
// directory, loopback only, approvals on the web page.
func Default() *Config {
	return &Config{
		Listen:   "127.0.0.1:8080",
		Database: Database{Driver: "sqlite", DSN: "gatehouse.db"},
		Defaults: Defaults{Timeout: Duration(10 * time.Minute), MaxTimeout: Duration(24 * time.Hour), OnTimeout: "deny"},
		Auth:     Auth{SessionTTL: Duration(12 * time.Hour)},
		Log:      Log{Level: "info", Format: "text"},
	}
}

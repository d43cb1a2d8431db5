// Package config turns Gatehouse's YAML into a typed, validated Config:
// defaults first, then a strict parse (an unknown key is an error that names
// it), ${VAR} expansion, *_file secrets, and Validate with errors naming the
// key they are about.
package config

import (
	"time"
)

// Config is the whole server configuration.
type Config struct {
	Listen    string    `yaml:"listen"`
	PublicURL string    `yaml:"public_url"`
	Database  Database  `yaml:"database"`
	Defaults  Defaults  `yaml:"defaults"`
	Auth      Auth      `yaml:"auth"`
	Log       Log       `yaml:"log"`
	Cards     Cards     `yaml:"cards"`
	Channels  []Channel `yaml:"channels"`
	Routes    []Route   `yaml:"routes"`
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
	// SessionTTL is how long a web login lasts. 12h when zero.
	SessionTTL Duration `yaml:"session_ttl"`
}

// APIToken is one agent credential; give the token or its SHA-256.
type APIToken struct {
	Name        string `yaml:"name"`
	Token       string `yaml:"token" secret:"true"`
	TokenSHA256 string `yaml:"token_sha256"`
}

// User is one web login.
type User struct {
	Name           string `yaml:"name"`
	PasswordBcrypt string `yaml:"password_bcrypt" secret:"true"`
	Role           string `yaml:"role"` // auditor | approver | admin
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

// Route is an operator's rule for a class of tool calls.
type Route struct {
	Name      string   `yaml:"name"`
	Match     Match    `yaml:"match"`
	Confirm   *bool    `yaml:"confirm"` // true when absent
	Channels  []string `yaml:"channels"`
	Approvers []string `yaml:"approvers"`
	Quorum    int      `yaml:"quorum"`
	Timeout   Duration `yaml:"timeout"`
	OnTimeout string   `yaml:"on_timeout"`
}

// Match selects the tool calls a route covers.
type Match struct {
	Tool  string `yaml:"tool"`
	Agent string `yaml:"agent"`
}

// Duration is a time.Duration written as a Go duration ("90s", "10m").
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

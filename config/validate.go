package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/internal/text"
	"github.com/gatehouse-dev/gatehouse/policy"
)

// Validate checks the whole config and fills the few defaults that depend
// on other keys. It returns every problem, each naming its key, or nil.
func (c *Config) Validate() error {
	var errs Errors
	if host, port, err := net.SplitHostPort(c.Listen); err != nil || port == "" {
		errs.add("listen", "%q is not host:port", c.Listen)
	} else if len(c.Auth.APITokens) == 0 && !loopback(host) {
		errs.add("auth.api_tokens", "required when listen is not a loopback address (agents would be unauthenticated)")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.add("public_url", "%q is not an http(s) URL", c.PublicURL)
		}
		c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	}
	c.validateDatabase(&errs)
	c.validateDefaults(&errs)
	c.validateAuth(&errs)
	c.validatePeople(&errs)
	c.validateAudit(&errs)
	switch c.Log.Level {
	case "", "debug", "info", "warn", "error":
	default:
		errs.add("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		errs.add("log.format", "%q is not one of text, json", c.Log.Format)
	}
	c.validateRedact(&errs)
	names := c.validateChannels(&errs)
	c.validateRoutes(names, &errs)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validateDatabase(errs *Errors) {
	switch c.Database.Driver {
	case "sqlite":
		if c.Database.DSN == "" {
			errs.add("database.dsn", "required (a file path for sqlite)")
		}
	case "postgres":
		if c.Database.DSN == "" {
			errs.add("database.dsn", "required (postgres://user@host:5432/db)")
		} else if strings.Contains(c.Database.DSN, "://") {
			if u, err := url.Parse(c.Database.DSN); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
				errs.add("database.dsn", "not a postgres:// URL")
			}
		} else if !strings.Contains(c.Database.DSN, "=") {
			errs.add("database.dsn", "neither a postgres:// URL nor key=value pairs")
		}
	default:
		errs.add("database.driver", "%q is not one of sqlite, postgres", c.Database.Driver)
	}
	if c.Database.MaxOpenConns < 0 {
		errs.add("database.max_open_conns", "must not be negative")
	}
	if c.Cards.Workers < 0 || c.Cards.Workers > 1024 {
		errs.add("cards.workers", "must be between 1 and 1024 (0: the default, 64)")
	}
}

func (c *Config) validateDefaults(errs *Errors) {
	d := &c.Defaults
	if d.Timeout <= 0 {
		errs.add("defaults.timeout", "must be positive")
	}
	if d.MaxTimeout <= 0 {
		errs.add("defaults.max_timeout", "must be positive")
	} else if d.MaxTimeout < d.Timeout {
		errs.add("defaults.max_timeout", "must not be shorter than defaults.timeout")
	}
	checkVerdict(d.OnTimeout, "defaults.on_timeout", errs)
	if d.OnTimeout == "" {
		d.OnTimeout = "deny"
	}
	checkAction(d.Action, "defaults.action", errs)
}

func checkAction(a, path string, errs *Errors) {
	switch a {
	case "", ActionAsk, ActionAllow, ActionDeny:
	default:
		errs.add(path, "%q is not one of ask, allow, deny", a)
	}
}

func checkVerdict(v, path string, errs *Errors) {
	if v != "" && v != "deny" && v != "allow" {
		errs.add(path, "%q is not one of deny, allow", v)
	}
}

func (c *Config) validateAuth(errs *Errors) {
	seen := map[string]bool{}
	// Two entries with one secret would let its holder act as the last of
	// them (its name, scopes and person), so a token is told apart by its
	// hash, whichever way it is given; the error names the entries only.
	bySum := map[[32]byte]string{}
	for i, t := range c.Auth.APITokens {
		p := fmt.Sprintf("auth.api_tokens[%d]", i)
		switch {
		case t.Name == "":
			errs.add(p+".name", "required")
		case seen[t.Name]:
			errs.add(p+".name", "%q is used twice", t.Name)
		case strings.HasPrefix(t.Name, "agent_id:"):
			// The grants a server without tokens gave to an agent_id are
			// kept under that name (gate.TokenlessGrant): a token so named
			// would take them.
			errs.add(p+".name", "%q: names starting with agent_id: are the grants of agents without a token", t.Name)
		}
		seen[t.Name] = true
		sum, ok := t.Sum()
		switch {
		case t.Token == "" && t.TokenSHA256 == "":
			errs.add(p+".token", "required (or token_sha256)")
		case t.Token != "" && t.TokenSHA256 != "":
			errs.add(p+".token", "give token or token_sha256, not both")
		case t.Token != "" && len(t.Token) < 16:
			errs.add(p+".token", "too short: use at least 16 random characters")
		case t.TokenSHA256 != "" && !ok:
			errs.add(p+".token_sha256", "not a hex SHA-256 (64 hex digits)")
		}
		if ok {
			if first, dup := bySum[sum]; dup {
				errs.add(p+".token", "the same token as %s: give each its own", first)
			} else {
				bySum[sum] = p
			}
		}
		for j, sc := range t.Scopes {
			if sc != ScopeReadAll && sc != ScopeCancelAll {
				errs.add(fmt.Sprintf("%s.scopes[%d]", p, j), "%q is not one of %s, %s", sc, ScopeReadAll, ScopeCancelAll)
			}
		}
	}
	seen = map[string]bool{}
	for i, u := range c.Auth.Users {
		p := fmt.Sprintf("auth.users[%d]", i)
		if u.Name == "" {
			errs.add(p+".name", "required")
		} else if seen[u.Name] {
			errs.add(p+".name", "%q is used twice", u.Name)
		}
		seen[u.Name] = true
		if _, err := bcrypt.Cost([]byte(u.PasswordBcrypt)); err != nil {
			errs.add(p+".password_bcrypt", "not a bcrypt hash (make one with: gatehouse user add %s --role %s)", cmp.Or(u.Name, "NAME"), cmp.Or(u.Role, RoleApprover))
		}
		switch u.Role {
		case RoleAuditor, RoleApprover, RoleAdmin:
		default:
			errs.add(p+".role", "%q is not one of auditor, approver, admin", u.Role)
		}
	}
	if c.Auth.SessionTTL <= 0 {
		errs.add("auth.session_ttl", "must be positive")
	}
	if o := c.Auth.OIDC; o != nil {
		c.validateOIDC(o, errs)
	}
}

func (c *Config) validateOIDC(o *OIDC, errs *Errors) {
	const p = "auth.oidc"
	if u, err := url.Parse(o.Issuer); o.Issuer == "" {
		errs.add(p+".issuer", "required (the provider's issuer URL, such as https://accounts.google.com)")
	} else if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		errs.add(p+".issuer", "%q is not an https URL (http only on loopback, for tests)", o.Issuer)
	}
	if o.ClientID == "" {
		errs.add(p+".client_id", "required")
	}
	if o.ClientSecret == "" {
		errs.add(p+".client_secret", "required")
	}
	if c.PublicURL == "" {
		errs.add("public_url", "required with auth.oidc: the provider sends people back to public_url/auth/oidc/callback")
	}
	n := 0
	for _, r := range []struct {
		role  string
		globs []string
	}{{RoleApprover, o.Roles.Approver}, {RoleAuditor, o.Roles.Auditor}, {RoleAdmin, o.Roles.Admin}} {
		role := r.role
		for i, g := range r.globs {
			n++
			if strings.TrimSpace(g) == "" {
				errs.add(fmt.Sprintf("%s.roles.%s[%d]", p, role, i), "empty: give an email glob such as *@example.com, or a group")
			}
		}
	}
	if n == 0 {
		errs.add(p+".roles", "give at least one role an email glob or a group, or nobody can sign in")
	}
	for i, u := range c.Auth.Users {
		if strings.Contains(u.Name, "@") {
			errs.add(fmt.Sprintf("auth.users[%d].name", i), "%q contains @: with auth.oidc, names with @ are the emails of single sign-on (web:<email>)", u.Name)
		}
	}
}

// reservedVia are the words a verdict records as its channel when no
// channel's card gave it (gate's ViaPolicy, ViaGrant, a deadline, a cancel
// through the API, a client's report that the tool ran). A channel named
// one of them would pass a person's taps off as the route's own verdict,
// a grant or an expiry, and the pages that show people's decisions first
// would hide them.
var reservedVia = []string{"policy", "grant", "timeout", "api", "hook"}

// validateChannels checks each channel and returns the set of channel names
// routes may use (the built-in web channel included).
func (c *Config) validateChannels(errs *Errors) map[string]bool {
	names := map[string]bool{"web": true}
	webhookSecrets := map[string]string{} // secret → the first webhook channel with it
	feishuApps := map[string][]int{}      // Feishu app id → its channels
	for i := range c.Channels {
		ch := &c.Channels[i]
		p := fmt.Sprintf("channels[%d]", i)
		switch {
		case ch.Name == "":
			errs.add(p+".name", "required")
		case ch.Name == "web":
			errs.add(p+".name", `"web" is the built-in web channel; choose another name`)
		case slices.Contains(reservedVia, ch.Name):
			errs.add(p+".name", "%q is what Gatehouse records as the channel of verdicts no channel gave; choose another name", ch.Name)
		case names[ch.Name]:
			errs.add(p+".name", "%q is used twice", ch.Name)
		}
		names[ch.Name] = true
		switch ch.Type {
		case TypeSlack:
			ch.Slack.validate(p, errs)
		case TypeFeishu:
			ch.Feishu.validate(p, errs)
			if ch.Feishu.AppID != "" {
				feishuApps[ch.Feishu.AppID] = append(feishuApps[ch.Feishu.AppID], i)
			}
		case TypeWebhook:
			ch.Webhook.validate(p, ch.Name, errs)
			// A verdict's signature names no channel, and a relay's actors
			// are recorded per channel (webhook:<channel>/<actor>): a verdict
			// signed for one channel and sent again to another with the
			// same secret would count as a second approver.
			if other, ok := webhookSecrets[ch.Webhook.Secret]; ok {
				errs.add(p+".secret", "the same as channel %q's: a verdict signed for one would be taken by the other as another approver's; give each webhook channel its own secret", other)
			} else if ch.Webhook.Secret != "" {
				webhookSecrets[ch.Webhook.Secret] = ch.Name
			}
		case "":
			errs.add(p+".type", "required (slack, feishu or webhook)")
		default:
			errs.add(p+".type", "%q is not one of slack, feishu, webhook", ch.Type)
		}
	}
	// A Feishu app sends its callbacks one way, and a channel in websocket
	// mode takes what comes over its connection as its own: with another
	// channel on the same app (either mode), a tap on the other's card
	// would reach it, which would refuse it or record it through a channel
	// the request never used. Webhook mode serves every channel of an app
	// at one URL.
	for i, ch := range c.Channels {
		if ch.Type != TypeFeishu || ch.Feishu == nil || ch.Feishu.Mode != FeishuWebsocket || len(feishuApps[ch.Feishu.AppID]) < 2 {
			continue
		}
		at := feishuApps[ch.Feishu.AppID]
		other := at[0]
		if other == i {
			other = at[1]
		}
		errs.add(fmt.Sprintf("channels[%d].mode", i), "websocket, on the same app_id as channel %q: Feishu would hand either channel's taps to this one's connection; give each channel its own app, or put them all in mode: webhook", c.Channels[other].Name)
	}
	for i, n := range c.Defaults.Channels {
		if !names[n] {
			errs.add(fmt.Sprintf("defaults.channels[%d]", i), "no channel named %q", n)
		}
	}
	c.checkApprovers(c.Defaults.Approvers, "defaults.approvers", errs)
	return names
}

func (s *Slack) validate(p string, errs *Errors) {
	if s.BotToken == "" {
		errs.add(p+".bot_token", "required")
	}
	if s.SigningSecret == "" && s.AppToken == "" {
		errs.add(p+".signing_secret", "required (or app_token, for Socket Mode)")
	}
	if s.AppToken != "" && !strings.HasPrefix(s.AppToken, "xapp-") {
		errs.add(p+".app_token", "not an app-level token (they start with xapp-)")
	}
	if s.ChannelID == "" {
		errs.add(p+".channel_id", "required")
	} else if !slackChannelID.MatchString(s.ChannelID) {
		// Taps are told apart by the channel they come from, which Slack
		// sends as an ID.
		errs.add(p+".channel_id", "%q is not a channel ID; copy the ID (C0123456789) from the channel's details in Slack", s.ChannelID)
	}
	if s.APIURL == "" {
		s.APIURL = "https://slack.com/api/"
	} else if u, err := url.Parse(s.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs.add(p+".api_url", "%q is not an http(s) URL", s.APIURL)
	} else if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/"
	}
}

func (f *Feishu) validate(p string, errs *Errors) {
	if f.AppID == "" {
		errs.add(p+".app_id", "required")
	}
	if f.AppSecret == "" {
		errs.add(p+".app_secret", "required")
	}
	if f.ChatID == "" {
		errs.add(p+".chat_id", "required")
	}
	switch f.Mode {
	case "":
		f.Mode = FeishuWebhook
	case FeishuWebhook, FeishuWebsocket:
	default:
		errs.add(p+".mode", "%q is not one of webhook, websocket", f.Mode)
	}
	if f.Mode == FeishuWebhook {
		if f.VerificationToken == "" {
			errs.add(p+".verification_token", "required in webhook mode: callbacks cannot be verified without it")
		}
		if f.EncryptKey == "" {
			errs.add(p+".encrypt_key", "required in webhook mode: callbacks cannot be signed without it")
		}
	}
	if f.BaseURL == "" {
		f.BaseURL = "https://open.feishu.cn"
	} else if u, err := url.Parse(f.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs.add(p+".base_url", "%q is not an http(s) URL", f.BaseURL)
	}
	f.BaseURL = strings.TrimRight(f.BaseURL, "/")
}

// webhookName is what a webhook channel's name may hold: it is a path
// segment of its callback URL, /callbacks/webhook/{name}.
var webhookName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// slackChannelID is a Slack conversation's ID: a public (C…) or private
// (G…) channel, or a direct message (D…).
var slackChannelID = regexp.MustCompile(`^[CGD][A-Z0-9]+$`)

func (w *Webhook) validate(p, name string, errs *Errors) {
	if name != "" && !webhookName.MatchString(name) {
		errs.add(p+".name", "%q cannot be a webhook channel's name: its callback URL is /callbacks/webhook/<name>, so use letters, digits, '.', '_' and '-'", name)
	}
	if w.URL == "" {
		errs.add(p+".url", "required (where cards and final states are posted)")
	} else if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs.add(p+".url", "%q is not an http(s) URL", w.URL)
	}
	switch {
	case w.Secret == "":
		errs.add(p+".secret", "required (signs cards and verifies verdicts)")
	case len(w.Secret) < MinWebhookSecret:
		errs.add(p+".secret", "too short: use at least %d random characters", MinWebhookSecret)
	}
}

func (c *Config) validateRoutes(channels map[string]bool, errs *Errors) {
	seen := map[string]bool{"default": true}
	for i := range c.Routes {
		r := &c.Routes[i]
		p := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Name == "":
			errs.add(p+".name", "required")
		case seen[r.Name]:
			errs.add(p+".name", "%q is used twice (or is the reserved name default)", r.Name)
		}
		seen[r.Name] = true
		for j, n := range r.Channels {
			if !channels[n] {
				errs.add(fmt.Sprintf("%s.channels[%d]", p, j), "no channel named %q", n)
			}
		}
		if r.Timeout < 0 {
			errs.add(p+".timeout", "must not be negative")
		} else if r.Timeout > c.Defaults.MaxTimeout {
			errs.add(p+".timeout", "longer than defaults.max_timeout")
		}
		checkVerdict(r.OnTimeout, p+".on_timeout", errs)
		if r.Quorum < 0 {
			errs.add(p+".quorum", "must not be negative")
		} else if n := c.distinctApprovers(r.Approvers); r.Quorum > 1 && len(r.Approvers) > 0 && n >= 0 && r.Quorum > n {
			errs.add(p+".quorum", "needs %d approvals but only %d approvers are listed (a person counts once, however many of their identities are listed)", r.Quorum, n)
		}
		c.checkApprovers(r.Approvers, p+".approvers", errs)
		r.validatePolicy(p, errs)
		r.validateLooks(p, errs)
		r.validateReach(c, p, channels, errs)
	}
}

// maxLabel bounds a route's label, which every card and page shows.
const maxLabel = 100

// validateLooks checks how the route is shown to people.
func (r *Route) validateLooks(p string, errs *Errors) {
	switch r.Severity {
	case "", SeverityLow, SeverityHigh, SeverityCritical:
	default:
		errs.add(p+".severity", "%q is not one of low, high, critical", r.Severity)
	}
	if n := utf8.RuneCountInString(r.Label); n > maxLabel {
		errs.add(p+".label", "%d characters: at most %d (it heads every card of the route)", n, maxLabel)
	} else if text.Clean(r.Label) != r.Label || strings.ContainsAny(r.Label, "\r\n") {
		errs.add(p+".label", "must be one line of text")
	}
}

// validateRedact compiles the redaction rules, naming each bad one.
func (c *Config) validateRedact(errs *Errors) {
	for i, k := range c.Redact.Keys {
		if strings.TrimSpace(k) == "" {
			errs.add(fmt.Sprintf("redact.keys[%d]", i), "empty: give a key name or glob such as password or *token*")
		}
	}
	for i, p := range c.Redact.Patterns {
		if _, err := redact.Compile(p); err != nil {
			errs.add(fmt.Sprintf("redact.patterns[%d]", i), "%v", err)
		}
	}
}

// validatePolicy checks what a route matches and what it does.
func (r *Route) validatePolicy(p string, errs *Errors) {
	checkAction(r.Action, p+".action", errs)
	if r.Action != "" && r.Confirm != nil {
		errs.add(p+".confirm", "give action (ask, allow or deny) or the older confirm, not both")
	}
	if strings.TrimSpace(r.Match.When) != "" {
		if err := policy.CheckWhen(r.Match.When); err != nil {
			errs.add(p+".match.when", "route %q: %v", r.Name, err)
		}
	}
	for j, c := range r.Match.Call {
		if err := policy.CheckCall(c); err != nil {
			errs.add(fmt.Sprintf("%s.match.call[%d]", p, j), "route %q: %v", r.Name, err)
		}
	}
	if m := r.Remember; m != nil {
		switch {
		case m.For <= 0:
			errs.add(p+".remember", "must be a positive duration such as 1h")
		case m.For.D() > 30*24*time.Hour:
			errs.add(p+".remember", "at most 720h (30 days): a grant is a shortcut, not a policy (write an allow route instead)")
		}
		if m.Args != "" && m.Args != "same" && m.Args != "any" {
			errs.add(p+".remember.args", "%q is not one of same, any", m.Args)
		}
		if r.Action == ActionAllow || r.Action == ActionDeny {
			errs.add(p+".remember", "grants are given by approvers, so only a route that asks may remember")
		}
		if r.Quorum > 1 {
			errs.add(p+".remember", "a grant would let one approver stand in for a quorum of %d", r.Quorum)
		}
	}
	if rt := r.Rate; rt != nil {
		if rt.Limit < 1 {
			errs.add(p+".rate.limit", "must be at least 1")
		}
		if rt.Per <= 0 {
			errs.add(p+".rate.per", "must be a positive duration such as 1h")
		}
		switch rt.By {
		case "":
			rt.By = "agent"
		case "agent", "user", "session", "route":
		default:
			errs.add(p+".rate.by", "%q is not one of agent, user, session, route", rt.By)
		}
	}
	if r.Record != nil && !*r.Record && r.Action != ActionAllow {
		errs.add(p+".record", "only a route whose action is allow may skip the record (asks and denials are always kept)")
	}
}

func (c *Config) validateAudit(errs *Errors) {
	a := &c.Audit
	if a.SigningKey != "" {
		if _, err := audit.ParseKey([]byte(a.SigningKey)); err != nil {
			// Named as every secret is, whether written inline or read
			// from signing_key_file (as an unreadable file is).
			errs.add("audit.signing_key", "%v", err)
		}
	}
	if a.CheckpointDir != "" {
		if a.SigningKey == "" {
			errs.add("audit.checkpoint_dir", "needs audit.signing_key_file: checkpoints are signed")
		} else if st, err := os.Stat(a.CheckpointDir); err != nil || !st.IsDir() {
			errs.add("audit.checkpoint_dir", "%q is not a directory", a.CheckpointDir)
		}
	}
	switch {
	case a.CheckpointInterval < 0:
		errs.add("audit.checkpoint_interval", "must not be negative")
	case a.CheckpointInterval == 0:
		a.CheckpointInterval = Duration(time.Hour)
	case a.CheckpointInterval.D() < time.Minute:
		errs.add("audit.checkpoint_interval", "must be at least 1m")
	}
	if k := c.Retention.Keep; k != 0 && k.D() < time.Hour {
		errs.add("retention.keep", "must be at least 1h (or absent, to keep everything)")
	}
}

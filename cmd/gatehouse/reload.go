package main

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/web"
)

// reloader applies the config file again on SIGHUP: routes, defaults,
// people, API tokens and web users. A file that does not validate (also
// with the listen address in force), or whose routes name a channel the
// server did not start with, is refused and logged,
// and the config in force stays. Everything else (listen, database,
// channels, single sign-on, audit, retention, log, cards, redaction) is read at
// start only; at every reload, a key whose value differs from the one the
// server started with is logged as waiting for a restart.
type reloader struct {
	path string // "" is the built-in default
	// started is the config the server started with, never replaced: what
	// is in force of the keys a reload does not apply.
	started  *config.Config
	channels []string // the channels registered at start
	svc      *gate.Service
	srv      *web.Server
	log      *slog.Logger
}

// reload reads the file and puts what it may change in force, or refuses.
func (r *reloader) reload() error {
	next, err := config.Load(r.path)
	if err != nil {
		return fmt.Errorf("the config does not validate, so the running one stays:\n%s", indent(err))
	}
	// The server keeps listening where it started until a restart, so the
	// new tokens are judged with that address: a file that drops
	// auth.api_tokens and moves listen to loopback validates on its own,
	// but would open the agent API on the address still served. Single
	// sign-on too runs as started: the new password users are judged with
	// it (no @ in their names, which are single sign-on's emails).
	inForce := *next
	inForce.Listen, inForce.PublicURL, inForce.Auth.OIDC = r.started.Listen, r.started.PublicURL, r.started.Auth.OIDC
	if err := inForce.Validate(); err != nil {
		return fmt.Errorf("the config does not validate with listen %s and single sign-on as the server runs them until a restart, so the running one stays:\n%s", r.started.Listen, indent(err))
	}
	gr, gd := routes(next), defaults(next)
	for _, rt := range append(gr, gate.Route{Name: "defaults", Channels: gd.Channels}) {
		used := slices.Clone(rt.Channels) // appended to: not into the config's array
		for _, e := range rt.Plan.Escalate {
			used = append(used, e.Channels...)
		}
		for _, ch := range used {
			if !slices.Contains(r.channels, ch) {
				return fmt.Errorf("route %q uses channel %q, which this server did not start with (channels change at a restart), so the running config stays", rt.Name, ch)
			}
		}
	}
	// Routes, defaults and people go in force in one step: a call is
	// decided by the old config or the new one, never a mix.
	if err := r.svc.Reconfigure(gr, gd, people(next)); err != nil {
		return fmt.Errorf("the routes do not compile, so the running config stays: %w", err)
	}
	r.srv.SetAuth(next.Auth.APITokens, next.Auth.Users)
	// Against the config the server started with, not the last reload's:
	// a change stays named at every reload until a restart puts it in
	// force, and a change reverted is no longer named.
	if later := restartOnly(r.started, next); len(later) > 0 {
		r.log.Warn("config reload: these keys differ from the config the server started with and take effect at the next restart", "keys", strings.Join(later, ", "))
	}
	for _, w := range next.Warnings() {
		r.log.Warn(w)
	}
	r.log.Info("config reloaded", "routes", len(next.Routes), "api_tokens", len(next.Auth.APITokens), "users", len(next.Auth.Users))
	return nil
}

// restartOnly names the keys that differ between two configs and that a
// reload does not apply.
func restartOnly(old, next *config.Config) []string {
	var out []string
	for _, f := range []struct {
		key  string
		a, b any
	}{
		{"listen", old.Listen, next.Listen},
		{"public_url", old.PublicURL, next.PublicURL},
		{"database", old.Database, next.Database},
		{"channels", old.Channels, next.Channels},
		{"auth.oidc", old.Auth.OIDC, next.Auth.OIDC},
		{"auth.session_ttl", old.Auth.SessionTTL, next.Auth.SessionTTL},
		{"audit", old.Audit, next.Audit},
		{"retention", old.Retention, next.Retention},
		{"log", old.Log, next.Log},
		{"cards", old.Cards, next.Cards},
		{"redact", old.Redact, next.Redact},
	} {
		if !reflect.DeepEqual(f.a, f.b) {
			out = append(out, f.key)
		}
	}
	return out
}

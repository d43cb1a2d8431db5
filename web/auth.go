package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// callerKey is the echo context key holding who the call authenticated
// as (an authed).
const callerKey = "gatehouse.caller"

// authed is who a call authenticated as: the token, as a gate.Caller with
// its scopes, or, on a server without tokens, nobody (open).
type authed struct {
	gate.Caller
	open bool
	gen  uint64 // the config generation of the tokens that read it
}

// authSet is what a config reload replaces as a whole: the API tokens and
// the web users. A call reads it once, so it is judged by the old set or
// the new one, never a mix.
type authSet struct {
	tokens []tokenHash
	users  []config.User
	// creds[i] is users[i]'s credential, and bootstrap the bootstrap
	// admin's (session.go), worked out once here.
	creds     []string
	bootstrap string
	gen       uint64 // the gate's config generation these came with (gate.WithGeneration)
}

// SetAuth puts API tokens and web users in force (at start, and on a
// config reload). Sessions of users no longer configured, and those made
// with a password the config no longer holds, end at their next request; a
// user's role is read from the config at every request.
func (s *Server) SetAuth(tokens []config.APIToken, users []config.User) {
	a := &authSet{users: users, creds: make([]string, len(users))}
	for i, u := range users {
		a.creds[i] = credential(bcryptSecret, u.PasswordBcrypt)
	}
	if s.opts.BootstrapPassword != "" {
		a.bootstrap = credential(bootstrapSecret, s.opts.BootstrapPassword)
	}
	if s.svc != nil {
		a.gen = s.svc.Generation() // a reload puts the routes in force first
	}
	for _, t := range tokens {
		sum, ok := t.Sum()
		if !ok {
			panic("web: api token " + t.Name + " passed config validation but has no token or hex token_sha256")
		}
		a.tokens = append(a.tokens, tokenHash{name: t.Name, sum: sum, readAll: t.HasScope(config.ScopeReadAll), cancelAll: t.HasScope(config.ScopeCancelAll)})
	}
	s.auth.Store(a)
}

// requireToken checks "Authorization: Bearer <token>" against the configured
// tokens' SHA-256 in constant time. With no tokens configured (a loopback-only
// server, which config validation enforces) agents are let in as "anonymous".
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := s.authenticate(c)
		if err != nil {
			return s.apiError(c, err)
		}
		s.admit(c, who)
		return next(c)
	}
}

// admit records who makes the call: for the handlers, and in the request's
// context for the plain net/http ones (POST /mcp) and for the gate, with
// the config generation of the tokens that read it (gate.WithGeneration).
func (s *Server) admit(c echo.Context, who authed) {
	c.Set(callerKey, who)
	r := c.Request()
	c.SetRequest(r.WithContext(gate.WithGeneration(context.WithValue(r.Context(), authedKey{}, who), who.gen)))
}

// authedKey holds the authed in the request's context, for handlers that
// are plain net/http (POST /mcp).
type authedKey struct{}

// authenticate names the token of the call, with its scopes. On a server
// without tokens the caller is "anonymous" and has none.
func (s *Server) authenticate(c echo.Context) (authed, error) {
	a := s.auth.Load()
	if len(a.tokens) == 0 {
		return authed{Caller: gate.Caller{Name: "anonymous"}, open: true, gen: a.gen}, s.anonymousOK(c.Request())
	}
	h := c.Request().Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return authed{}, gate.Errorf(gate.EUNAUTHORIZED, "missing bearer token (Authorization: Bearer <token>)")
	}
	who, ok := a.caller(tok)
	if !ok {
		return authed{}, gate.Errorf(gate.EUNAUTHORIZED, "invalid bearer token")
	}
	return authed{Caller: who, gen: a.gen}, nil
}

// caller returns the configured token tok is, with its scopes,
// comparing SHA-256 sums in constant time.
func (a *authSet) caller(tok string) (gate.Caller, bool) {
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *tokenHash
	for i, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	if found == nil {
		return gate.Caller{}, false
	}
	return gate.Caller{Name: found.name, ReadAll: found.readAll, CancelAll: found.cancelAll}, true
}

// who is the call's authed, as requireToken found it.
func who(c echo.Context) (authed, bool) {
	a, ok := c.Get(callerKey).(authed)
	return a, ok
}

// caller is the authenticated token's name for routing, or "" on a server
// without tokens, where nobody is authenticated and agent_id stands in.
func (s *Server) caller(c echo.Context) string {
	if a, ok := who(c); ok && a.open {
		return ""
	}
	return agentName(c)
}

// access is the authenticated token as the gate checks reads and cancels:
// its name and its scopes. On a server without tokens it is the caller "",
// which every request there has.
func (s *Server) access(c echo.Context) gate.Caller {
	a, ok := who(c)
	switch {
	case !ok:
		// Unreachable behind requireToken; should a route ever miss it,
		// a name no request has reads nothing rather than the "" rows.
		return gate.Caller{Name: "\x00unauthenticated"}
	case a.open:
		return gate.Caller{}
	}
	return a.Caller
}

// agentName is the authenticated token's name.
func agentName(c echo.Context) string {
	if a, ok := who(c); ok && a.Name != "" {
		return a.Name
	}
	return "anonymous"
}

// anonymousOK guards a server without tokens, which config allows only on
// loopback. A loopback listener is still reachable from any web page the
// operator's browser opens: a page can POST a "simple" (non-JSON) body to
// 127.0.0.1, or rebind its own host name to it. Requiring a loopback Host and
// a JSON body shuts both doors, since a cross-site JSON POST needs a CORS
// preflight that this server never grants.
func (s *Server) anonymousOK(r *http.Request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
		return gate.Errorf(gate.EUNAUTHORIZED, "this server has no auth.api_tokens, so it answers only clients that reach it as localhost (Host %q): configure api_tokens to serve others", r.Host)
	}
	if r.Method == http.MethodPost {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			return gate.Errorf(gate.EINVALID, "Content-Type must be application/json (got %q)", r.Header.Get("Content-Type"))
		}
	}
	return nil
}

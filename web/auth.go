package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// callerKey is the echo context key holding the authenticated token as a
// gate.Caller: its name and its scopes.
const callerKey = "gatehouse.caller"

// requireToken checks "Authorization: Bearer <token>" against the configured
// tokens' SHA-256 in constant time. With no tokens configured (a loopback-only
// server, which config validation enforces) agents are let in as "anonymous".
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		who, err := s.authenticate(c)
		if err != nil {
			return s.apiError(c, err)
		}
		c.Set(callerKey, who)
		return next(c)
	}
}

// authenticate names the token of the call, with its scopes. On a server
// without tokens the caller is "anonymous" and has none.
func (s *Server) authenticate(c echo.Context) (gate.Caller, error) {
	if len(s.tokens) == 0 {
		return gate.Caller{Name: "anonymous"}, s.anonymousOK(c.Request())
	}
	h := c.Request().Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return gate.Caller{}, gate.Errorf(gate.EUNAUTHORIZED, "missing bearer token (Authorization: Bearer <token>)")
	}
	who, ok := s.tokenCaller(tok)
	if !ok {
		return gate.Caller{}, gate.Errorf(gate.EUNAUTHORIZED, "invalid bearer token")
	}
	return who, nil
}

// tokenCaller returns the configured token tok is, with its scopes,
// comparing SHA-256 sums in constant time.
func (s *Server) tokenCaller(tok string) (gate.Caller, bool) {
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *tokenHash
	for i, t := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			found = &s.tokens[i]
		}
	}
	if found == nil {
		return gate.Caller{}, false
	}
	return gate.Caller{Name: found.name, ReadAll: found.readAll, CancelAll: found.cancelAll}, true
}

// caller is the authenticated token's name for routing, or "" on a server
// without tokens, where nobody is authenticated and agent_id stands in.
func (s *Server) caller(c echo.Context) string {
	if len(s.tokens) == 0 {
		return ""
	}
	return agentName(c)
}

// access is the authenticated token as the gate checks reads and cancels:
// its name and its scopes. On a server without tokens it is the caller "",
// which every request there has.
func (s *Server) access(c echo.Context) gate.Caller {
	if len(s.tokens) == 0 {
		return gate.Caller{}
	}
	who, ok := c.Get(callerKey).(gate.Caller)
	if !ok {
		// Unreachable behind requireToken; should a route ever miss it,
		// a name no request has reads nothing rather than the "" rows.
		return gate.Caller{Name: "\x00unauthenticated"}
	}
	return who
}

// agentName is the authenticated token's name.
func agentName(c echo.Context) string {
	if who, ok := c.Get(callerKey).(gate.Caller); ok && who.Name != "" {
		return who.Name
	}
	return "anonymous"
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic("web: token_sha256 passed config validation but is not hex: " + err.Error())
	}
	return b
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

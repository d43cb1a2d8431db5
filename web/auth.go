package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// agentKey is the echo context key holding the authenticated token's name.
const agentKey = "gatehouse.agent"

// requireToken checks "Authorization: Bearer <token>" against the configured
// tokens' SHA-256 in constant time. With no tokens configured (a loopback-only
// server, which config validation enforces) agents are let in as "anonymous".
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		name, err := s.authenticate(c)
		if err != nil {
			return s.apiError(c, err)
		}
		c.Set(agentKey, name)
		return next(c)
	}
}

func (s *Server) authenticate(c echo.Context) (string, error) {
	if len(s.tokens) == 0 {
		return "anonymous", nil
	}
	h := c.Request().Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return "", gate.Errorf(gate.EUNAUTHORIZED, "missing bearer token (Authorization: Bearer <token>)")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	name := ""
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			name = t.name
		}
	}
	if name == "" {
		return "", gate.Errorf(gate.EUNAUTHORIZED, "invalid bearer token")
	}
	return name, nil
}

// caller is the authenticated token's name for routing, or "" on a server
// without tokens, where nobody is authenticated and agent_id stands in.
func (s *Server) caller(c echo.Context) string {
	if len(s.tokens) == 0 {
		return ""
	}
	return agentName(c)
}

// agentName is the authenticated token's name.
func agentName(c echo.Context) string {
	if v, ok := c.Get(agentKey).(string); ok {
		return v
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

package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// argsHash identifies a call's arguments for a grant: SHA-256 of their
// canonical JSON, so that key order and spacing do not matter.
func argsHash(args []byte) string {
	canon, err := jsonx.Canonical(args)
	if err != nil {
		canon = args // validated JSON always canonicalises; never match on garbage otherwise
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// grantFor is the grant an approval of r by who gives ("approve for"). It
// belongs to the agent r came from (agentKey): on a server without tokens
// that is the agent's name, never "" (which would cover every agent).
func (s *Service) grantFor(r *Request, who, via string, at time.Time) (*Grant, Event) {
	g := &Grant{ID: s.newID(), Route: r.Route, Caller: agentKey(r.Caller, r.AgentID), Tool: r.ToolName, GivenBy: who, GivenVia: via,
		RequestID: r.ID, CreatedAt: at, ExpiresAt: at.Add(r.RememberFor())}
	scope := "the same arguments"
	if r.RememberAnyArgs {
		scope = "any arguments"
	} else {
		g.ArgsHash = argsHash(r.ToolArgs)
	}
	return g, Event{RequestID: r.ID, At: at, Type: EventGrantGiven, Actor: who, Channel: via,
		Detail: fmt.Sprintf("grant %s: %s may run %s with %s on route %s until %s", g.ID, orAnyone(g.Caller), r.ToolName, scope,
			r.Route, g.ExpiresAt.Format(time.RFC3339))}
}

func orAnyone(s string) string {
	if s == "" {
		return "any agent"
	}
	return s
}

// Grants lists grants, newest first: those of one caller (token) when
// caller is not nil, only the active ones when active is set.
func (s *Service) Grants(ctx context.Context, caller *string, active bool) ([]Grant, error) {
	return s.store.Grants(ctx, caller, active, s.stamp())
}

// RevokeGrant ends a grant at once; its giving request's trail says who
// ended it.
func (s *Service) RevokeGrant(ctx context.Context, id, by string) (*Grant, error) {
	g, err := s.store.RevokeGrant(ctx, id, by, s.stamp())
	if err == nil {
		s.log.Info("grant revoked", "grant_id", id, "by", by)
	}
	return g, err
}

// agentKey is who a call comes from, for policy, grants and rate limits:
// its API token, else (a server without tokens) the agent's own name,
// which is all there is.
func agentKey(caller, agentID string) string {
	if caller != "" {
		return caller
	}
	return agentID
}

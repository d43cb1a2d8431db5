package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// argsHash identifies a call's arguments for a grant: SHA-256 of their
// canonical JSON, so that key order and spacing do not matter, and of where
// the call runs as an agent client reported it (placeOf): the same
// arguments in another directory, or sent to another MCP server, are
// another call.
func argsHash(args, metadata []byte) string {
	canon, err := jsonx.Canonical(args)
	if err != nil {
		canon = args // validated JSON always canonicalises; never match on garbage otherwise
	}
	h := sha256.New()
	h.Write(canon)
	// Only what the metadata names is written, so a grant given before the
	// MCP server counted still matches a call that names none.
	for i, v := range placeOf(metadata) {
		if v != nil {
			h.Write([]byte("\x00" + placeKeys[i] + "\x00"))
			h.Write(v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// anyArgsHash is the args_hash of a grant for any arguments: AnyArgsPrefix
// and the hash of what the route matched (Route.matchKey) with the call's
// place. A grant for any arguments on one MCP server (or in one
// directory) covers no other: the Cursor MCP tool database_query approved
// for a while on a dev server is not approved on prod. Nor does it cover
// more after a reload widens its route: "any staging deploy" stays that
// when the route's condition lets prod deploys in. Grants given before
// the match counted here ("" or AnyArgsPrefix and the place alone) cover
// nothing.
func anyArgsHash(metadata []byte, matched string) string {
	m, _ := json.Marshal(matched) // a string: never fails
	return AnyArgsPrefix + argsHash(m, metadata)
}

// placeKeys are the metadata that say where a call runs: the working
// directory hooks report (cwd), where a relative path such as
// `rm -rf build` points, and the MCP server of a Cursor MCP call (mcp_url
// or mcp_command, as package hook names them), whose bare tool name does
// not say which server it goes to.
var placeKeys = []string{"cwd", "mcp_url", "mcp_command", "workspace_roots"}

// placeOf is the value of each of placeKeys in a call's metadata, as
// canonical JSON of the value sent, whatever its type ({"cwd": 5} is not
// "no cwd"), or nil where the metadata names none: the same call in
// another place is another call.
func placeOf(metadata []byte) [][]byte {
	place := make([][]byte, len(placeKeys))
	var md map[string]json.RawMessage
	if json.Unmarshal(metadata, &md) != nil {
		return place
	}
	for i, k := range placeKeys {
		if md[k] == nil {
			continue
		}
		place[i] = md[k]
		if c, err := jsonx.Canonical(md[k]); err == nil {
			place[i] = c
		}
	}
	return place
}

// grantHash is the args_hash of the grant that covers request r, and of
// the grant an approval of r gives: of its arguments and place, or, on a
// route that remembers any arguments, of what the route matched
// (Plan.Matched) and its place. The one function for both, so the grant
// given and the grant looked up cannot be hashed apart.
func grantHash(r *Request) string {
	if r.RememberAnyArgs {
		return anyArgsHash(r.Metadata, r.Plan.Matched)
	}
	return argsHash(r.ToolArgs, r.Metadata)
}

// grantFor is the grant an approval of r by who gives ("approve for"). It
// belongs to the agent r came from (agentKey): on a server without tokens
// that is the agent's name, never "" (which would cover every agent).
func (s *Service) grantFor(r *Request, who string, ids []string, via string, at time.Time) (*Grant, Event) {
	g := &Grant{ID: s.newID(), Route: r.Route, Caller: grantKey(r.Caller, r.AgentID), Tool: r.ToolName, GivenBy: who, GivenIDs: ids, GivenVia: via,
		RequestID: r.ID, CreatedAt: at, ExpiresAt: at.Add(r.RememberFor())}
	g.ArgsHash = grantHash(r)
	scope := "the same arguments"
	if r.RememberAnyArgs {
		scope = "any arguments"
	}
	return g, Event{RequestID: r.ID, At: at, Type: EventGrantGiven, Actor: who, Channel: via,
		Detail: fmt.Sprintf("grant %s: %s may run %s with %s on route %s until %s", g.ID, orAnyone(g.Caller), r.ToolName, scope,
			r.Route, g.ExpiresAt.Format(time.RFC3339))}
}

// grantHolds says a grant found for a call still holds under the route as
// the config has it now: a reload that shortens remember, raises the
// quorum, or takes the giver off the approvers (or, with no approvers
// list, the channel the grant came through off the route) ends the
// grants given under the old rules. With self_approval: forbid, a grant
// does not approve a call of the person who gave it: they could not
// approve it themselves (the giver is counted as Decide counts them, by
// the people in force now). A grant that does not hold is passed over and
// the call asks a person.
func (s *Service) grantHolds(g *Grant, r *Request, rt Route, people *People, now time.Time) bool {
	if !g.CreatedAt.Add(rt.Remember).After(now) || rt.Quorum > 1 {
		return false
	}
	// The giver as Decide knows them: every identity they tapped with (a
	// Feishu tap's union_id says who the person is, its open_id does not).
	tapped := g.identities()
	givers := people.of(tapped...)
	if rt.Plan.ForbidSelf && slices.ContainsFunc(people.askers(r), func(a string) bool { return slices.Contains(givers, a) }) {
		return false
	}
	if g.GivenVia == WebChannel && !s.webMayApprove(strings.TrimPrefix(g.GivenBy, "web:")) {
		return false // a web user since demoted or removed gave it
	}
	if len(rt.Approvers) == 0 {
		return slices.Contains(rt.Channels, g.GivenVia)
	}
	return people.mayDecide(rt.Approvers, tapped...)
}

// webMayApprove is the web server's word on whether a web user may approve
// now (SetWebGiverCheck); true when the server gave none.
func (s *Service) webMayApprove(user string) bool {
	check := s.webGiver.Load()
	return check == nil || (*check)(user)
}

// SetWebGiverCheck gives the gate the web server's word on whether a web
// user may approve now: a grant given on the web page by a user a reload
// (or a restart with a new config) has since demoted to auditor or
// removed holds no more, as their taps would not.
func (s *Service) SetWebGiverCheck(mayApprove func(user string) bool) {
	s.webGiver.Store(&mayApprove)
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

// grantKey is whose a grant is: the token's name, or on a server without
// tokens the agent_id it sent, marked as such, so that a label never
// names a token's grants (nor a token a label's).
func grantKey(caller, agentID string) string {
	if caller != "" {
		return caller
	}
	return TokenlessGrant + agentID
}

// TokenlessGrant begins the Caller of a grant given on a server without
// tokens, before the agent_id it is for.
const TokenlessGrant = "agent_id:"

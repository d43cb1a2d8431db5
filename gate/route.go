package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/policy"
)

// Route is an operator's rule for a class of tool calls: which calls it
// matches, what happens to them, and, for those it asks about, who is
// asked, through which channels, for how long and what silence means.
type Route struct {
	Name  string
	Tool  string   // a glob over the tool name; "" matches every tool
	Agent string   // a glob over the authenticated agent; "" matches every agent
	When  string   // a CEL condition over the call
	Calls []string // Claude Code permission-rule patterns; any may match
	// Action is ask (when empty), allow, deny, or agent (the older
	// `confirm: false`: the agent's requires_confirmation decides).
	Action  policy.Action
	Message string // told to the agent with a policy verdict
	// Remember lets approvers "approve for" this long: a grant covering
	// the same agent, tool and route (and arguments, unless RememberAny).
	Remember    time.Duration
	RememberAny bool
	Rate        *Rate
	// NoRecord skips storing the calls an allow route lets through.
	NoRecord  bool
	Channels  []string
	Approvers []string // identity globs; empty means anyone who sees the card
	Quorum    int      // distinct approvals needed; 1 when zero
	Timeout   time.Duration
	OnTimeout Verdict
	// Looks is how the route's requests are shown to people.
	Looks Looks
	// Plan is what the route asks of people beyond the first cards:
	// self-approval, direct cards, reminders, escalation.
	Plan Plan
}

// matchKey identifies what the route matches: its tool, agent, condition
// and call patterns. A grant for any arguments is given under one
// (Plan.Matched) and covers calls only while the route still matches what
// it matched then: a reload that widens the route does not widen the
// grants given on it.
func (rt Route) matchKey() string {
	calls := rt.Calls
	if len(calls) == 0 {
		calls = nil
	}
	b, _ := json.Marshal([]any{rt.Tool, rt.Agent, rt.When, calls}) // strings only: never fails
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Looks is how a route's requests are shown to people: a label that names
// the route, and a severity (low, high, critical) that colours its cards
// and, when critical, asks approvers to confirm an approval.
type Looks struct {
	Label    string
	Severity string
}

// Critical is the severity whose approvals are confirmed first.
const Critical = "critical"

// RouteLooks returns how the named route is shown, by the routes in force
// now (a reload restyles cards already posted when they are next updated);
// the zero Looks for the default route or a route no longer configured.
func (s *Service) RouteLooks(name string) Looks {
	rt, _ := s.rules.Load().route(name)
	return rt.Looks
}

// Rate limits a route's calls: at most Limit per Per, by agent, user,
// session or for the whole route.
type Rate struct {
	Limit int
	Per   time.Duration
	By    string
}

// compile turns routes into the policy that matches calls to them.
func compile(routes []Route) (*policy.Policy, error) {
	specs := make([]policy.Route, len(routes))
	for i, r := range routes {
		specs[i] = policy.Route{Name: r.Name, Tool: r.Tool, Agent: r.Agent, When: r.When, Calls: r.Calls, Action: r.Action}
	}
	return policy.Compile(specs)
}

// Glob matches s against a pattern where * stands for any run of characters
// (slashes included, unlike path.Match) and ? for one character.
func Glob(pattern, s string) bool {
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, n := []rune(pattern), []rune(s)
	// Iterative wildcard match with one backtrack point: linear in practice
	// and never exponential, whatever a config holds.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// MayDecide reports whether any of the decider's identities is one the
// request's approvers list names. An empty list admits everyone who can see
// the card.
func MayDecide(approvers []string, ids ...string) bool {
	if len(approvers) == 0 {
		return true
	}
	for _, a := range approvers {
		for _, id := range ids {
			if id != "" && Glob(a, id) {
				return true
			}
		}
	}
	return false
}

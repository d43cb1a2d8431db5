package gate

import (
	"strings"
	"time"
)

// Route is an operator's rule for a class of tool calls: who is asked,
// through which channels, for how long, and what silence means.
type Route struct {
	Name  string
	Tool  string // a glob over the tool name; "" matches every tool
	Agent string // a glob over the agent id; "" matches every agent
	// Confirm says matching calls need a human even when the caller says
	// requires_confirmation: false (hooks leave that decision to routes).
	Confirm   bool
	Channels  []string
	Approvers []string // identity globs; empty means anyone who sees the card
	Quorum    int      // distinct approvals needed; 1 when zero
	Timeout   time.Duration
	OnTimeout Verdict
}

// Matches reports whether the route covers a tool call by this agent.
func (r Route) Matches(tool, agent string) bool {
	return (r.Tool == "" || Glob(r.Tool, tool)) && (r.Agent == "" || Glob(r.Agent, agent))
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

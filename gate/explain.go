package gate

import (
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/text"
	"github.com/gatehouse-dev/gatehouse/policy"
)

// Explanation is a dry run of the policy over one call, as `gatehouse
// policy test` prints it: the route the call takes, what happens to it,
// and why, route by route.
type Explanation struct {
	Route  string        `json:"route"`
	Action policy.Action `json:"action"`
	// Hook is what a hook answers its client, for a hook's call: allow,
	// deny, ask (it waits for a person), or defer (the client's own
	// permission prompt decides: an allow the agent's flag gave).
	Hook string   `json:"hook,omitempty"`
	Why  []string `json:"why"`
	// AgentDecided: the agent's requires_confirmation gave the action.
	AgentDecided bool `json:"-"`
}

// Explain decides a call with routes and defaults exactly as Submit would,
// without a database: the same validation, the same policy, the same
// agent's flag. What needs the database (a grant that would approve the
// call at once, a rate limit's count) is named, not consulted.
func Explain(routes []Route, d Defaults, in Submission, now time.Time) (Explanation, error) {
	rs, err := newRules(routes, d)
	if err != nil {
		return Explanation{}, err
	}
	if err := validate(&in, rs.defaults.MaxTimeout); err != nil {
		return Explanation{}, err
	}
	dec, err := rs.decide(&in, now, true)
	if err != nil {
		return Explanation{}, err
	}
	ex := Explanation{Route: dec.route.Name, Action: dec.action, AgentDecided: dec.byAgent}
	for _, st := range dec.steps {
		verb := "does not match"
		if st.Matched {
			verb = "matches"
		}
		ex.Why = append(ex.Why, fmt.Sprintf("route %s %s: %s", st.Route, verb, st.Why))
	}
	for _, e := range dec.errors {
		ex.Why = append(ex.Why, "error (written to the request's trail): "+e)
	}
	rt := dec.route
	switch {
	case !dec.matched && dec.byAgent:
		ex.Why = append(ex.Why, fmt.Sprintf("no route matches and defaults.action is unset: the agent's requires_confirmation decides (%s)", dec.action))
	case !dec.matched:
		ex.Why = append(ex.Why, fmt.Sprintf("no route matches: defaults.action is %s", dec.action))
	case dec.byAgent:
		ex.Why = append(ex.Why, fmt.Sprintf("route %s leaves it to the agent (confirm: false): its requires_confirmation decides (%s)", rt.Name, dec.action))
	case dec.raised:
		ex.Why = append(ex.Why, fmt.Sprintf("route %s allows, but the agent sent requires_confirmation true: a person is asked", rt.Name))
	}
	if rt.Rate != nil && dec.action != policy.Deny {
		ex.Why = append(ex.Why, fmt.Sprintf("rate limit: %d per %s by %s, counted by the server (over it, the call is denied at once)",
			rt.Rate.Limit, text.Duration(rt.Rate.Per), rt.Rate.By))
	}
	switch dec.action {
	case policy.Ask:
		if why := dec.askedAlone(); why != "" {
			ex.Why = append(ex.Why, why+": a person is asked about it alone (no grant covers it, silence denies it, it cannot be approved for a while)")
			break
		}
		if timeout, onTimeout := rs.waitOf(rt); onTimeout == VerdictAllow {
			ex.Why = append(ex.Why, fmt.Sprintf("on_timeout: allow: with no verdict within %s (or the longer wait the agent asks for), the call is allowed, unless the policy in force then denies it",
				text.Duration(timeout)))
		}
		if rt.Remember > 0 {
			scope := "agent, tool and arguments, in the same directory (and MCP server)"
			if rt.RememberAny {
				scope = "agent and tool, in the same directory (and MCP server)"
			}
			ex.Why = append(ex.Why, fmt.Sprintf("an active grant from an earlier \"Approve for %s\" on this route (same %s) would approve it at once",
				text.Duration(rt.Remember), scope))
		}
	case policy.Allow:
		switch {
		case rt.NoRecord && !dec.byAgent && len(dec.errors) > 0:
			ex.Why = append(ex.Why, "record: false, but a condition failed on the way: the call is stored, with the error in its trail")
		case rt.NoRecord && !dec.byAgent:
			ex.Why = append(ex.Why, "record: false: the allow is counted in the metrics, not stored")
		}
	}
	return ex, nil
}

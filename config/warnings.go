package config

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/policy"
)

// Warnings are findings that do not stop the server but that an operator
// should see: check-config prints them and serve logs them at start.
func (c *Config) Warnings() []string {
	var out []string
	if c.Defaults.Action == "" && !c.confirmsEveryCall() {
		out = append(out, "no route matches every call and demands confirmation, so a call that no route matches is "+
			`allowed at once when its agent sends "requires_confirmation": false; to have a person asked for every `+
			`other call, set defaults.action: ask (or end the routes with one that matches every tool)`)
	}
	for i, r := range c.Routes {
		if policy.NeverBoth(r.Match.Tool, r.Match.Call) {
			// All of match must hold: a deny written so denies nothing.
			out = append(out, fmt.Sprintf("routes[%d] (%s): match.tool %q names none of the tools its match.call patterns apply to, "+
				"so the route matches no call; a pattern names its tool already (Bash(…) every client's shell), so drop match.tool", i, r.Name, r.Match.Tool))
		}
		if (r.Severity != "" || r.Label != "") && (r.Action == ActionAllow || r.Action == ActionDeny) {
			out = append(out, fmt.Sprintf("routes[%d] (%s): label and severity show on the cards of calls a person decides, "+
				"and this route (action: %s) asks nobody, so they only name it in the history", i, r.Name, r.Action))
		}
	}
	out = append(out, c.selfApprovalWarnings()...)
	if len(c.Defaults.Approvers) > 0 {
		// Channels, timeout and on_timeout fall back to the defaults';
		// approvers do not, which reads as if they did.
		for i, r := range c.Routes {
			asks := r.Action == ActionAsk || r.Action == "" && (r.Confirm == nil || *r.Confirm)
			if asks && len(r.Approvers) == 0 {
				out = append(out, fmt.Sprintf("routes[%d] (%s) lists no approvers, so anyone who sees its cards may decide them: "+
					"defaults.approvers decide only the calls no route takes", i, r.Name))
			}
		}
	}
	return out
}

// selfApprovalWarnings: self_approval: forbid refuses the person who asked,
// who is known by the token's person or the user_id's; with neither
// configured, nobody is ever known to have asked.
func (c *Config) selfApprovalWarnings() []string {
	known := false
	for _, t := range c.Auth.APITokens {
		known = known || t.Person != ""
	}
	for _, p := range c.People {
		known = known || len(p.Users) > 0
	}
	var out []string
	for i, r := range c.Routes {
		if r.SelfApproval == SelfApprovalForbid && !known {
			out = append(out, fmt.Sprintf("routes[%d].self_approval: forbid, but no API token names a person and no person lists users, "+
				"so the gate never knows who asked and refuses nobody: give tokens a person, or people the user_id values agents send", i))
		}
	}
	return out
}

// confirmsEveryCall reports whether some route matches every call (any
// tool, any agent) and demands confirmation, so no call falls through to
// the defaults, where the agent's requires_confirmation decides.
func (c *Config) confirmsEveryCall() bool {
	for _, r := range c.Routes {
		everyTool := r.Match.Tool == "" || r.Match.Tool == "*"
		everyAgent := r.Match.Agent == "" || r.Match.Agent == "*"
		every := everyTool && everyAgent && r.Match.When == "" && len(r.Match.Call) == 0
		confirms := r.Action == ActionAsk || r.Action == ActionDeny || r.Action == "" && (r.Confirm == nil || *r.Confirm)
		if every && confirms {
			return true
		}
	}
	return false
}

package config

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// people indexes the config's people by name, identity and user id. It is
// built without judging them; validatePeople reports what is wrong.
type people struct {
	byName     map[string]*Person
	byIdentity map[string]string // identity → the first person claiming it
	byUser     map[string]string // user_id → the first person claiming it
}

func (c *Config) peopleIndex() people {
	ix := people{byName: map[string]*Person{}, byIdentity: map[string]string{}, byUser: map[string]string{}}
	for i := range c.People {
		p := &c.People[i]
		if p.Name == "" {
			continue
		}
		if _, dup := ix.byName[p.Name]; !dup {
			ix.byName[p.Name] = p
		}
		for _, id := range p.Identities {
			if _, taken := ix.byIdentity[id]; !taken {
				ix.byIdentity[id] = p.Name
			}
		}
		for _, u := range p.Users {
			if _, taken := ix.byUser[u]; !taken {
				ix.byUser[u] = p.Name
			}
		}
	}
	return ix
}

// principal is who an approvers entry stands for when approvals are
// counted: the person it names or belongs to, else the entry itself.
func (ix people) principal(entry string) string {
	if name, ok := strings.CutPrefix(entry, PersonPrefix); ok {
		return PersonPrefix + name
	}
	if name, ok := ix.byIdentity[entry]; ok {
		return PersonPrefix + name
	}
	return entry
}

// identities are the exact identities an approvers entry stands for: a
// person's, or the entry itself when it is no glob.
func (ix people) identities(entry string) []string {
	if name, ok := strings.CutPrefix(entry, PersonPrefix); ok {
		if p := ix.byName[name]; p != nil {
			return p.Identities
		}
		return nil
	}
	if strings.ContainsAny(entry, "*?") {
		return nil
	}
	return []string{entry}
}

// validatePeople checks the people and the tokens that name them: names
// given once, identities and user ids each claimed by one person.
func (c *Config) validatePeople(errs *Errors) {
	names := map[string]string{}      // name → where first given
	identities := map[string]string{} // identity → "alice (people[0].identities[1])"
	users := map[string]string{}
	for i, p := range c.People {
		path := fmt.Sprintf("people[%d]", i)
		switch {
		case p.Name == "":
			errs.add(path+".name", "required")
		case strings.ContainsAny(p.Name, ":*?, \t"):
			errs.add(path+".name", "%q: a person's name is written person:NAME in approvers, so use no ':', '*', '?', ',' or spaces", p.Name)
		case names[p.Name] != "":
			errs.add(path+".name", "%q is used twice (also %s)", p.Name, names[p.Name])
		default:
			names[p.Name] = path
		}
		if len(p.Identities) == 0 && len(p.Users) == 0 {
			errs.add(path, "give identities (who they decide as), users (the user_id agents send for them), or both")
		}
		for j, id := range p.Identities {
			ip := fmt.Sprintf("%s.identities[%d]", path, j)
			switch {
			case strings.HasPrefix(id, PersonPrefix):
				errs.add(ip, "%q names a person; a person's identities are channel identities", id)
			case strings.ContainsAny(id, "*?"):
				errs.add(ip, "%q is a glob; a person's identities are exact (a glob would make strangers this person)", id)
			case identityProblem(id) != "":
				errs.add(ip, "%q %s", id, identityProblem(id))
			case c.webIdentityProblem(id) != "":
				errs.add(ip, "%q %s", id, c.webIdentityProblem(id))
			case identities[id] != "":
				errs.add(ip, "%q is already %s: an identity belongs to one person", id, identities[id])
			default:
				identities[id] = fmt.Sprintf("%s's (%s)", cmp.Or(p.Name, "another person"), ip)
			}
		}
		for j, u := range p.Users {
			up := fmt.Sprintf("%s.users[%d]", path, j)
			switch {
			case strings.TrimSpace(u) == "":
				errs.add(up, "empty: give a user_id agents send")
			case users[u] != "":
				errs.add(up, "%q is already %s: a user_id belongs to one person", u, users[u])
			default:
				users[u] = fmt.Sprintf("%s's (%s)", cmp.Or(p.Name, "another person"), up)
			}
		}
	}
	for i, t := range c.Auth.APITokens {
		if t.Person != "" && names[t.Person] == "" {
			errs.add(fmt.Sprintf("auth.api_tokens[%d].person", i), "no person named %q%s", t.Person, c.didYouMeanPerson(t.Person))
		}
	}
}

// webIdentityProblem says why a person's web identity would never be who
// signs in, so that the person would go unknown there (and could approve
// their own request under self_approval: forbid): single sign-on records
// the email in lower case, and a password login its user's name exactly.
func (c *Config) webIdentityProblem(id string) string {
	name, ok := strings.CutPrefix(id, "web:")
	if !ok {
		return ""
	}
	for _, u := range c.Auth.Users {
		if u.Name == name {
			return ""
		}
	}
	if emailCased(name) {
		return fmt.Sprintf("has capitals, but a single sign-on identity is the email in lower case: write %q", "web:"+strings.ToLower(name))
	}
	for _, u := range c.Auth.Users {
		if strings.EqualFold(u.Name, name) {
			return fmt.Sprintf("is not user %q: a web identity names its user exactly", u.Name)
		}
	}
	return ""
}

// didYouMeanPerson suggests a configured person for a misspelt name.
func (c *Config) didYouMeanPerson(name string) string {
	var known []string
	for _, p := range c.People {
		known = append(known, p.Name)
	}
	if m := closest(name, known); m != "" {
		return fmt.Sprintf(" (did you mean %s?)", m)
	}
	return " (add it under people)"
}

// checkApprovers checks one approvers list: identities or globs with a
// channel prefix, or person:NAME for a configured person.
func (c *Config) checkApprovers(list []string, path string, errs *Errors) {
	ix := c.peopleIndex()
	for j, a := range list {
		p := fmt.Sprintf("%s[%d]", path, j)
		name, isPerson := strings.CutPrefix(a, PersonPrefix)
		switch {
		case isPerson && ix.byName[name] == nil:
			errs.add(p, "no person named %q%s", name, c.didYouMeanPerson(name))
		case isPerson && len(ix.byName[name].Identities) == 0:
			errs.add(p, "person %q has no identities, so nobody could approve as them", name)
		case !isPerson:
			if why := identityProblem(a); why != "" {
				errs.add(p, "%q %s", a, why)
			}
		}
	}
}

// distinctApprovers counts the approvals a list can give at most: one a
// person, however many of their identities are listed; -1 when a glob
// makes it open-ended.
func (c *Config) distinctApprovers(list []string) int {
	ix := c.peopleIndex()
	seen := map[string]bool{}
	for _, a := range list {
		if strings.ContainsAny(a, "*?") {
			return -1
		}
		seen[ix.principal(a)] = true
	}
	return len(seen)
}

// validateReach checks what a route asks of people beyond its approvers:
// self-approval, direct cards, reminders and escalation.
func (r *Route) validateReach(c *Config, p string, channels map[string]bool, errs *Errors) {
	switch r.SelfApproval {
	case "", SelfApprovalAllow, SelfApprovalForbid:
	default:
		errs.add(p+".self_approval", "%q is not one of allow, forbid", r.SelfApproval)
	}
	timeout := r.Timeout.D()
	if timeout <= 0 {
		timeout = c.Defaults.Timeout.D()
	}
	switch {
	case r.Remind < 0:
		errs.add(p+".remind", "must not be negative")
	case r.Remind > 0 && r.Remind.D() >= timeout:
		errs.add(p+".remind", "%s is not shorter than the route's timeout (%s), so no reminder would ever be sent", r.Remind.D(), timeout)
	}
	var after time.Duration
	for i, e := range r.Escalate {
		ep := fmt.Sprintf("%s.escalate[%d]", p, i)
		switch {
		case e.After <= 0:
			errs.add(ep+".after", "required: a positive duration such as 30m")
		case e.After.D() >= timeout:
			errs.add(ep+".after", "%s is not shorter than the route's timeout (%s), so the escalation would never happen", e.After.D(), timeout)
		case e.After.D() <= after:
			errs.add(ep+".after", "must be later than the step before it (%s)", after)
		}
		after = max(after, e.After.D())
		if len(e.Channels) == 0 && len(e.Approvers) == 0 {
			errs.add(ep, "give channels, approvers or both")
		}
		for j, n := range e.Channels {
			if !channels[n] {
				errs.add(fmt.Sprintf("%s.channels[%d]", ep, j), "no channel named %q", n)
			}
		}
		if len(e.Approvers) > 0 && len(r.Approvers) == 0 {
			errs.add(ep+".approvers", "the route lists no approvers (anyone who sees the card decides), so naming some here would narrow who may decide, not widen it: list the route's approvers too")
		}
		c.checkApprovers(e.Approvers, ep+".approvers", errs)
	}
	if r.Action == ActionAllow || r.Action == ActionDeny {
		for key, set := range map[string]bool{"remind": r.Remind > 0, "escalate": len(r.Escalate) > 0, "notify": r.Notify != "", "self_approval": r.SelfApproval != ""} {
			if set {
				errs.add(p+"."+key, "the route decides on its own (action: %s), so nobody is asked", r.Action)
			}
		}
	}
	switch r.Notify {
	case "", NotifyChannel:
	case NotifyDM, NotifyBoth:
		r.validateDirect(c, p, errs)
	default:
		errs.add(p+".notify", "%q is not one of channel, dm, both", r.Notify)
	}
}

// validateDirect checks that direct cards can reach someone: an approver
// whose identity one of the route's channels can send a direct card to.
func (r *Route) validateDirect(c *Config, p string, errs *Errors) {
	if len(r.Approvers) == 0 {
		errs.add(p+".notify", "%s sends cards to the approvers, but the route lists none", r.Notify)
		return
	}
	types := map[string]bool{}
	chs := r.Channels
	if len(chs) == 0 {
		chs = c.Defaults.Channels
	}
	for _, n := range chs {
		for _, ch := range c.Channels {
			if ch.Name == n {
				types[ch.Type] = true
			}
		}
	}
	ix := c.peopleIndex()
	for _, a := range r.Approvers {
		for _, id := range ix.identities(a) {
			if t := DirectType(id); t != "" && types[t] {
				return
			}
		}
	}
	errs.add(p+".notify", "%s: no approver has an identity the route's channels can send a direct card to (slack:TEAM/USER through a slack channel, feishu:ou_…, feishu:union:… or feishu:user:… through a feishu channel)", r.Notify)
}

// identityKinds are the channels' identities, as the gate compares them
// with a tap's: an entry of another shape matches nobody, and a route
// whose approvers are all such entries could never be decided.
var identityKinds = []string{"slack", "feishu", "web", "webhook"}

// slackIdentity is slack:TEAM/USER as Slack writes its ids.
var slackIdentity = regexp.MustCompile(`^slack:[A-Z0-9]+/[A-Z0-9]+$`)

// identityProblem says why an approvers entry or a person's identity
// cannot be anyone's identity; "" when it can. Globs are checked for
// their kind only.
func identityProblem(id string) string {
	const forms = "slack:TEAM/USER, feishu:<open_id>, feishu:union:<union_id>, feishu:user:<user_id>, web:<user>, webhook:<channel>/<actor> or person:<name>"
	kind, rest, ok := strings.Cut(id, ":")
	switch {
	case !ok || kind == "":
		return "is not an identity: write " + forms
	case !slices.Contains(identityKinds, kind):
		hint := ""
		if m := closest(kind, append(identityKinds, strings.TrimSuffix(PersonPrefix, ":"))); m != "" {
			hint = fmt.Sprintf(" (did you mean %s:?)", m)
		}
		return fmt.Sprintf("has no known kind %q%s: write %s", kind, hint, forms)
	case rest == "":
		return "names nobody: write " + forms
	case kind == "webhook" && emailCased(webhookActor(rest)):
		ch, actor, _ := strings.Cut(rest, "/")
		return fmt.Sprintf("has capitals, but a webhook actor that is an email is recorded in lower case: write %q", "webhook:"+ch+"/"+strings.ToLower(actor))
	case strings.ContainsAny(id, "*?"):
		return ""
	case kind == "slack" && !slackIdentity.MatchString(id):
		return "is not slack:TEAM/USER with Slack's upper-case ids (slack:T0123/U0456): a tap never matches it"
	case kind == "webhook" && !strings.Contains(strings.Trim(rest, "/"), "/"):
		return "is not webhook:<channel>/<actor>: a verdict never matches it"
	}
	return ""
}

// webhookActor is the actor of a webhook identity's CHANNEL/ACTOR.
func webhookActor(rest string) string {
	_, actor, _ := strings.Cut(rest, "/")
	return actor
}

// emailCased says s is an email written with capitals, which no identity
// matches: single sign-on and the webhook channel record an email in lower
// case (text.LowerEmail).
func emailCased(s string) bool {
	return strings.Contains(s, "@") && s != strings.ToLower(s)
}

// DirectType is the type of channel that can send a direct card to an
// identity: slack for slack:TEAM/USER, feishu for feishu:<open_id>,
// feishu:union:<union_id> and feishu:user:<user_id>; "" for any other.
func DirectType(identity string) string {
	switch {
	case strings.ContainsAny(identity, "*?"):
		return ""
	case strings.HasPrefix(identity, "slack:"):
		team, user, ok := strings.Cut(strings.TrimPrefix(identity, "slack:"), "/")
		if ok && team != "" && user != "" {
			return TypeSlack
		}
	case strings.HasPrefix(identity, "feishu:") && len(identity) > len("feishu:"):
		return TypeFeishu
	}
	return ""
}

// closest is the candidate nearest to s by edit distance, when it is near
// enough to be a slip of the keyboard: at most 2 edits, and fewer than half
// of s. "" when none is.
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD && 2*d < len([]rune(s))+1 {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

package gate

import (
	"slices"
	"strings"
)

// PersonPrefix marks a person in an approvers list: "person:alice".
const PersonPrefix = "person:"

// Person is one human: the identities they decide with on each channel
// ("slack:T1/U2", "feishu:union:on_x", "web:alice") and the user_id values
// agents send for them.
type Person struct {
	Name       string
	Identities []string
	Users      []string
}

// People says who is who: the person an identity, a user_id or an API
// token belongs to. It is built once from the config and never changed.
type People struct {
	byName     map[string]Person
	byIdentity map[string]string
	byUser     map[string]string
	byToken    map[string]string
}

// NewPeople indexes persons, and tokens (an API token's name → its
// person's name). The config has checked that an identity or a user_id
// belongs to one person; should two claim one, the first keeps it.
func NewPeople(persons []Person, tokens map[string]string) *People {
	p := &People{byName: map[string]Person{}, byIdentity: map[string]string{}, byUser: map[string]string{}, byToken: map[string]string{}}
	for _, ps := range persons {
		if _, dup := p.byName[ps.Name]; ps.Name == "" || dup {
			continue
		}
		p.byName[ps.Name] = ps
		for _, id := range ps.Identities {
			if _, taken := p.byIdentity[id]; !taken {
				p.byIdentity[id] = ps.Name
			}
		}
		for _, u := range ps.Users {
			if _, taken := p.byUser[u]; !taken {
				p.byUser[u] = ps.Name
			}
		}
	}
	for tok, name := range tokens {
		if _, ok := p.byName[name]; ok {
			p.byToken[tok] = name
		}
	}
	return p
}

// of returns the people the identities belong to, each once, in the order
// of the identities. Nil people know nobody.
func (p *People) of(ids ...string) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, id := range ids {
		if name, ok := p.byIdentity[id]; ok && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// asker is the person who made a request with token caller for user: the
// token's person, else the one the user_id belongs to; "" when neither is
// known.
func (p *People) asker(caller, user string) string {
	if name := p.byTokenOf(caller); name != "" {
		return name
	}
	return p.byUserOf(user)
}

// askers are everyone a request may be said to come from, by the people
// in force now: the person recorded when it was made, and the persons its
// token and its user_id belong to. Self-approval is refused to all of
// them, so a token that changed hands or an agent naming a user cannot
// open a way around it.
func (p *People) askers(r *Request) []string {
	var out []string
	for _, name := range []string{r.Person, p.byTokenOf(r.Caller), p.byUserOf(r.UserID)} {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func (p *People) byTokenOf(caller string) string {
	if p == nil {
		return ""
	}
	return p.byToken[caller]
}

func (p *People) byUserOf(user string) string {
	if p == nil || user == "" {
		return ""
	}
	return p.byUser[user]
}

// Identities returns the exact identities an approvers entry stands for:
// a person's identities for "person:NAME", the entry itself for an
// identity, nothing for a glob (which names no one in particular).
func (p *People) Identities(entry string) []string {
	if name, ok := strings.CutPrefix(entry, PersonPrefix); ok {
		if p == nil {
			return nil
		}
		return p.byName[name].Identities
	}
	if strings.ContainsAny(entry, "*?") {
		return nil
	}
	return []string{entry}
}

// asked are who a request's cards and reminders are for, one list of
// exact identities each: a person's identities, or a lone identity the
// approvers list names (globs name no one in particular). The person who
// asked is left out where they may not approve.
func (p *People) asked(r *Request) [][]string {
	var askers []string
	if r.Plan.ForbidSelf {
		askers = p.askers(r)
	}
	var out [][]string
	seen := map[string]bool{}
	for _, a := range r.Approvers {
		name, isPerson := p.personOf(a)
		key := a
		if isPerson {
			key = PersonPrefix + name
		}
		ids := p.Identities(key)
		if seen[key] || len(ids) == 0 || (isPerson && slices.Contains(askers, name)) {
			continue
		}
		seen[key] = true
		out = append(out, ids)
	}
	return out
}

// mentions are the exact identities a reminder names: everyone asked who
// has not approved yet.
func (p *People) mentions(r *Request, v Votes) []string {
	var out []string
	for _, ids := range p.asked(r) {
		if !slices.ContainsFunc(ids, func(id string) bool { return p.votedAs(id, v) }) {
			out = append(out, ids...)
		}
	}
	return out
}

// votedAs says an approvers entry (a person, or an identity) has approved:
// it tapped an approval, or one counts for it (a person's key when the
// people know who tapped).
func (p *People) votedAs(entry string, v Votes) bool {
	if slices.Contains(v.Voters, entry) || slices.Contains(v.Tappers, entry) {
		return true
	}
	name, isPerson := p.personOf(entry)
	return isPerson && slices.Contains(v.Voters, PersonPrefix+name)
}

// personOf is the person an approvers entry names: "person:<name>", or an
// identity of a known person.
func (p *People) personOf(entry string) (name string, ok bool) {
	if name, ok = strings.CutPrefix(entry, PersonPrefix); ok || p == nil {
		return name, ok
	}
	name, ok = p.byIdentity[entry]
	return name, ok
}

// MightDecide is MayDecide for a channel that does not know the people:
// it also admits whoever an approvers list names as a person, leaving the
// gate (which knows who they are) to decide. Use it for courtesies such as
// not opening a form for a stranger, never for the verdict itself.
func MightDecide(approvers []string, ids ...string) bool {
	if MayDecide(approvers, ids...) {
		return true
	}
	for _, a := range approvers {
		if strings.HasPrefix(a, PersonPrefix) {
			return true
		}
	}
	return false
}

// deciding are the votes whose identities may still decide under every
// approvers list, by the people in force now: a vote from an identity a
// reload took from an approver, or off the route, counts no more than a
// new tap from it would (one person with two identities, one of them
// taken away, must not meet a quorum of 2). A vote whose identities are
// not known (cast before votes kept them) is judged by the voter it was
// counted for. A vote of one of askers (the people the request comes from,
// on a route that forbids self-approval) counts no more either: one cast
// before a reload told whose it was must not meet a quorum for its asker.
func (p *People) deciding(lists [][]string, askers []string, casts []Cast) []Cast {
	return slices.DeleteFunc(slices.Clone(casts), func(c Cast) bool {
		ids := c.Identities
		if len(ids) == 0 {
			ids = []string{c.Voter}
		}
		if slices.ContainsFunc(lists, func(approvers []string) bool { return !p.mayDecide(approvers, ids...) }) {
			return true
		}
		who := p.of(ids...)
		if name, ok := strings.CutPrefix(c.Voter, PersonPrefix); ok {
			who = append(who, name)
		}
		return slices.ContainsFunc(who, func(n string) bool { return slices.Contains(askers, n) })
	})
}

// mayDecide says identities may decide under approvers, which name them
// or, as person:NAME, the people they belong to now.
func (p *People) mayDecide(approvers []string, ids ...string) bool {
	all := slices.Clone(ids)
	for _, name := range p.of(ids...) {
		all = append(all, PersonPrefix+name)
	}
	return MayDecide(approvers, all...)
}

// tally counts a request's approvals by the people in force now: two
// votes are one approver's when they have the same voter, share an
// identity, or have identities of the same person. An earlier vote is
// read again by its identities, not only by the voter it was counted for
// then: a reload that gives an identity a person, takes it away or
// renames the person must not let one approver count twice.
func (p *People) tally(mine Cast, earlier []Cast) (fresh bool, votes int) {
	all := append(slices.Clone(earlier), mine)
	persons := make([][]string, len(all))
	for i, c := range all {
		persons[i] = p.of(append([]string{c.Voter}, c.Identities...)...)
		if name, ok := strings.CutPrefix(c.Voter, PersonPrefix); ok && len(c.Identities) == 0 && !slices.Contains(persons[i], name) {
			// A vote whose identities are not known is the person it
			// was counted for. One whose identities are known is theirs
			// now: an identity moved from alice to bob is bob's.
			persons[i] = append(persons[i], name)
		}
	}
	same := func(i, j int) bool {
		a, b := all[i], all[j]
		// The same voter is the same approver when a vote's identities are
		// not known (cast before votes kept them); known identities say
		// who it is now.
		return a.Voter == b.Voter && (len(a.Identities) == 0 || len(b.Identities) == 0) ||
			slices.ContainsFunc(a.Identities, func(id string) bool { return slices.Contains(b.Identities, id) }) ||
			slices.ContainsFunc(persons[i], func(n string) bool { return slices.Contains(persons[j], n) })
	}
	// Group the votes (sameness may chain: a shares an identity with b, b
	// a person with c) and count the groups.
	group := make([]int, len(all))
	for i := range group {
		group[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if group[i] != i {
			group[i] = find(group[i])
		}
		return group[i]
	}
	for i := range all {
		for j := range i {
			if same(i, j) {
				group[find(i)] = find(j)
			}
		}
	}
	me := len(all) - 1
	fresh = true
	for i := range earlier {
		if find(i) == find(me) {
			fresh = false
		}
	}
	for i := range all {
		if find(i) == i {
			votes++
		}
	}
	return fresh, votes
}

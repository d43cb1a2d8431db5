// Package present turns a request into what a person is shown first: one
// sentence saying what will happen, the amount or command that carries the
// risk, the route's label and severity, and the request itself with its
// secrets redacted. Slack, Feishu, the webhook channel and the web pages
// all show requests through it, so they say the same thing and none of
// them can forget the redaction.
package present

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	bigmath "math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Presenter shows requests to people. A nil *Presenter redacts nothing and
// knows no route's looks.
type Presenter struct {
	// Redact hides secrets in everything a View holds.
	Redact *redact.Redactor
	// Looks returns a route's label and severity (gate.Service.RouteLooks).
	Looks func(route string) gate.Looks
}

// Kinds of the value a View puts in large type.
const (
	KindAmount  = "amount"
	KindCommand = "command"
	KindPath    = "path"
	KindURL     = "url"
)

// View is a request as people see it. Request is a redacted copy: show its
// fields, never the original's.
type View struct {
	*gate.Request
	// Sentence says what will happen: one built from the tool and its key
	// arguments ("Run `git push` in /repo"), or the agent's summary, marked
	// as its words (SaidBy).
	Sentence string
	// Big is the amount or command the approver must not miss, with Kind
	// saying which ("" when the arguments have neither).
	Big  string
	Kind string
	// Edited: an approver edited the arguments, and the agent runs
	// ModifiedArgs. It is judged before redaction, which shows an edit of
	// a hidden value (another key in place of the agent's) as no change.
	Edited bool
	gate.Looks
}

// SaidBy begins a sentence that is the agent's summary: its words, not
// Gatehouse's reading of the arguments.
const SaidBy = "The agent says: "

// Limits of what a View holds, in characters.
const (
	maxSentence = 300
	maxBig      = 500
)

// View presents r.
func (p *Presenter) View(r *gate.Request) View {
	v := View{Request: p.redactor().Request(r), Edited: Edited(r)}
	if p != nil && p.Looks != nil {
		v.Looks = p.Looks(r.Route)
	}
	args := object(v.ToolArgs)
	if v.Edited {
		// The agent runs the approver's edit: what is shown first (the
		// sentence, the amount or command in large type) is that call;
		// the pages show the one proposed beside it.
		args = object(v.ModifiedArgs)
	}
	v.Big, v.Kind = big(args)
	if said := strings.Join(strings.Fields(v.Summary), " "); said != "" {
		// The agent's own words, which may not be what its arguments do
		// ("Count rows" over DROP TABLE users): said so on every face.
		v.Sentence = text.Ellipsis(SaidBy+said, maxSentence)
	} else {
		v.Sentence = text.Ellipsis(sentence(v.ToolName, args, object(v.Metadata)), maxSentence)
	}
	// Cut in the middle: a command's or a URL's end is where an agent
	// would put what it wants unread (ls -a -a … ; rm -rf ~). Cut as
	// drawn, its hidden characters written as marks (below): 480
	// zero-width spaces are 3,840 characters drawn.
	v.Big = text.Middle(text.Reveal(v.Big), maxBig)
	// What people read is what is there: hidden characters (bidirectional
	// controls, zero-width ones) are written as visible marks, on a copy.
	// Fields that are one line by nature have their line breaks and other
	// control characters marked too: an agent id must not draw a line of
	// its own ("Amount: ¥10") on a card, nor the sentence that heads it,
	// made of the tool's name and argument values when there is no
	// summary.
	c := *v.Request
	for _, s := range []*string{&c.Summary, &c.Reason} {
		*s = text.Reveal(*s)
	}
	for _, s := range []*string{&v.Sentence, &c.ToolName, &c.AgentID, &c.UserID, &c.SessionID, &c.DecidedBy} {
		*s = text.RevealLine(*s)
	}
	for _, j := range []*json.RawMessage{&c.ToolArgs, &c.ModifiedArgs, &c.Metadata} {
		if len(*j) > 0 {
			*j = json.RawMessage(text.RevealJSON(string(*j)))
		}
	}
	v.Request = &c
	return v
}

// Edited says an approver edited r's arguments: the agent runs
// ModifiedArgs. Judge it on r before redaction.
func Edited(r *gate.Request) bool {
	return jsonx.Edited(r.ModifiedArgs, r.ToolArgs)
}

// Redactor is the presenter's redactor (nil when there is none).
func (p *Presenter) Redactor() *redact.Redactor { return p.redactor() }

func (p *Presenter) redactor() *redact.Redactor {
	if p == nil {
		return nil
	}
	return p.Redact
}

// Event is e as people see it: its detail redacted.
func (p *Presenter) Event(e gate.Event) gate.Event {
	e = p.redactor().Event(e)
	e.Detail = text.Reveal(e.Detail)
	return e
}

// Critical reports whether approving asks for a confirmation.
func (v View) Critical() bool { return v.Severity == gate.Critical }

// BigUnsaid is what is in large type, cut in the middle to n characters,
// for a few words that stand in for the card (a critical approval's
// confirmation, a relay's one line) beside shown, the sentence as they show
// it: always when the sentence is the agent's summary, whose words may
// belie the amount or the command (JP¥6,000,000 said for ¥6,000,000), and
// when a sentence built from the arguments was cut before it; "" when there
// is none, or shown says it whole.
func (v View) BigUnsaid(shown string, n int) string {
	if v.Big == "" || v.Summary == "" && strings.Contains(shown, v.Big) {
		return ""
	}
	return text.Middle(v.Big, n)
}

// Who is the agent and the person behind it: "procurement-bot for u_42".
func (v View) Who() string {
	switch {
	case v.AgentID != "" && v.UserID != "":
		return v.AgentID + " for " + v.UserID
	case v.AgentID != "":
		return v.AgentID
	case v.UserID != "":
		return "an agent for " + v.UserID
	}
	return "an agent"
}

// RouteName is the route and its label: "payments (Payments over ¥50,000)".
func (v View) RouteName() string {
	if v.Label == "" || v.Label == v.Route {
		return v.Route
	}
	return v.Route + " (" + v.Label + ")"
}

// RememberLabel is the words of the third button on a route that
// remembers: an approval that also lets repeats of the call through for a
// while, without asking.
func (v View) RememberLabel() string {
	d := text.Duration(v.RememberFor())
	if v.RememberAnyArgs {
		return "Approve & allow this tool for " + d
	}
	return "Approve & allow repeats for " + d
}

// RememberScope says what that button gives, in one sentence.
func (v View) RememberScope() string {
	args := "these arguments"
	if v.RememberAnyArgs {
		args = "any arguments"
	}
	// A grant is the token's (gate.grantFor), not the agent_id's, which
	// is a label any agent with the token may send.
	who := "the same agent"
	if v.Caller != "" {
		who = "the same agent (anything using token " + text.RevealLine(v.Caller) + ")"
	}
	return fmt.Sprintf("Approves this call, and for %s lets %s run %s with %s on route %s without asking anyone (revocable on the grants page).",
		text.Duration(v.RememberFor()), who, v.ToolName, args, v.Route)
}

// Left is the time left to decide, as people read it, or "" once final.
func (v View) Left(now time.Time) string {
	if v.Status.Final() {
		return ""
	}
	d := v.ExpiresAt.Sub(now)
	if d <= 0 {
		return "no time left"
	}
	if d >= time.Minute {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	return text.Duration(d) + " left"
}

// object reads raw as a JSON object, or nil.
func object(raw json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// get is m's value under k, or under the one key that differs from k only
// in case (as Go's encoding/json, Jackson and others read a struct field):
// the gate refuses objects that hold two such keys (jsonx.DuplicateKey).
func get(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	for mk, v := range m {
		if strings.EqualFold(mk, k) {
			return v
		}
	}
	return nil
}

// str is the first non-empty string among keys.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := get(m, k).(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

var (
	commandKeys = []string{"command", "cmd", "script", "shell"}
	amountKeys  = []string{"amount", "total", "price", "sum", "value"}
	partyKeys   = []string{"vendor", "payee", "recipient", "merchant", "to", "account"}
	pathKeys    = []string{"file_path", "path", "filename", "file", "notebook_path"}
	urlKeys     = []string{"url", "uri", "href"}
	dirKeys     = []string{"cwd", "workdir", "working_directory", "dir"}
)

// big finds the value that carries the risk.
func big(args map[string]any) (string, string) {
	if c := command(args); c != "" {
		return c, KindCommand
	}
	if a := amount(args); a != "" {
		return a, KindAmount
	}
	if p := str(args, pathKeys...); p != "" {
		return p, KindPath
	}
	if u := str(args, urlKeys...); u != "" {
		return u, KindURL
	}
	return "", ""
}

// command is the command among the arguments: the command key's string
// (or any other value as JSON: "command": ["rm", "-rf", "~"]), or, when
// several command keys hold something, each of them named ("command:
// ["ls"] · cmd: rm -rf ~"): which one runs is the tool's to say, and the
// card must never show the harmless one alone.
func command(args map[string]any) string {
	var found []string
	var named []string
	for _, k := range commandKeys {
		v := get(args, k)
		c, ok := v.(string)
		if ok {
			c = strings.TrimSpace(c)
		} else if v != nil {
			b, _ := jsonx.Marshal(v)
			c = string(b)
		}
		if c != "" {
			found = append(found, c)
			named = append(named, k+": "+c)
		}
	}
	switch len(found) {
	case 0:
		return ""
	case 1:
		return found[0]
	}
	return strings.Join(named, " · ")
}

// oneLine is a command on one line, its line breaks (which end a shell
// command) written ⏎, not a space: "echo hi\nrm -rf ~" is not
// "echo hi rm -rf ~".
func oneLine(c string) string {
	lines := strings.FieldsFunc(c, func(r rune) bool { return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029' })
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), " ⏎ ")
}

// number is a decimal number as JSON writes it, exponent and all.
var number = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// amount is the first amount among the arguments, with its currency:
// "¥60,000", "$1,200.50", "300 CHF". The first amount key the arguments
// hold decides: when its value does not read as a number, no amount is
// shown, rather than the next key's ("amount": 6e6 beside "price": 10
// must never show ¥10). An exponent is written out in full (6e6 is
// 6,000,000).
func amount(args map[string]any) string {
	for _, k := range amountKeys {
		var n string
		switch v := get(args, k).(type) {
		case nil:
			continue
		case json.Number:
			n = v.String()
		case string:
			n = strings.TrimSpace(v)
		}
		n, ok := plainDecimal(n)
		if !ok {
			return ""
		}
		n = thousands(n)
		cur := strings.ToUpper(str(args, "currency", "ccy"))
		// One currency to a sign: ¥ is the yuan's here (the yen is JP¥,
		// some 20 times smaller), $ the US dollar's; others keep their code.
		switch cur {
		case "CNY", "RMB":
			return "¥" + n
		case "JPY":
			return "JP¥" + n
		case "USD":
			return "$" + n
		case "EUR":
			return "€" + n
		case "GBP":
			return "£" + n
		case "":
			return n
		}
		return n + " " + text.Ellipsis(cur, 8)
	}
	return ""
}

// plainDecimal writes a number in plain decimal notation, exactly: "6e6"
// is "6000000", "1.5e-2" is "0.015"; one without an exponent is kept as
// written ("1200.50"). It refuses what is not a number, and exponents
// beyond ±100, which no amount has.
func plainDecimal(s string) (string, bool) {
	m := number.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	if m[2] == "" {
		return s, true
	}
	exp, err := strconv.Atoi(m[2][1:])
	if err != nil || exp < -100 || exp > 100 {
		return "", false
	}
	r, ok := new(bigmath.Rat).SetString(s)
	if !ok {
		return "", false
	}
	if r.IsInt() {
		return r.Num().String(), true
	}
	return r.FloatString(max(len(strings.TrimPrefix(m[1], "."))-exp, 0)), true
}

// thousands groups the whole part of a decimal number: 60000 → 60,000.
func thousands(n string) string {
	sign := ""
	if strings.HasPrefix(n, "-") {
		sign, n = "-", n[1:]
	}
	whole, frac, _ := strings.Cut(n, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		return sign + b.String() + "." + frac
	}
	return sign + b.String()
}

// sentence says what the call will do when the agent gave no summary.
func sentence(tool string, args, meta map[string]any) string {
	if c := command(args); c != "" {
		s := "Run `" + text.Ellipsis(oneLine(c), 120) + "`"
		if dir := str(args, dirKeys...); dir != "" {
			return s + " in " + dir
		} else if dir := str(meta, "cwd"); dir != "" {
			return s + " in " + dir
		}
		return s
	}
	if a := amount(args); a != "" {
		party := text.Ellipsis(str(args, partyKeys...), 60)
		if verb := moneyVerb(tool); verb != "" {
			if party != "" {
				return verb + " " + party + " " + a
			}
			return verb + " " + a
		}
		if party != "" {
			return tool + ": " + a + " for " + party
		}
		return tool + ": " + a
	}
	if p := str(args, pathKeys...); p != "" {
		return tool + " " + p
	}
	if u := str(args, urlKeys...); u != "" {
		return tool + " " + u
	}
	return "Call " + tool + scalars(args)
}

// moneyVerb reads what a tool does with an amount from its name.
func moneyVerb(tool string) string {
	t := strings.ToLower(tool)
	for _, v := range []struct{ in, verb string }{{"refund", "Refund"}, {"transfer", "Transfer"}, {"pay", "Pay"}, {"purchase", "Buy from"}, {"buy", "Buy from"}} {
		if strings.Contains(t, v.in) {
			return v.verb
		}
	}
	return ""
}

// scalars lists up to two short scalar arguments: " (env: prod, force: true)".
func scalars(args map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(args) {
		var s string
		switch v := args[k].(type) {
		case string:
			s = v
		case json.Number, bool:
			s = fmt.Sprint(v)
		default:
			continue
		}
		parts = append(parts, k+": "+text.Ellipsis(strings.Join(strings.Fields(s), " "), 40))
		if len(parts) == 2 {
			break
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

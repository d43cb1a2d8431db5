// Package redact hides secrets in what Gatehouse shows people: cards, web
// pages, exports, webhook messages and log lines. Agents pass API keys and
// passwords as tool arguments; an operator names them in the config
// (redact: {keys, patterns}) and they are shown as [redacted].
//
// Redaction is applied on the way out, never to what is stored: the
// request row and the sealed audit trail keep what the agent sent, so the
// hash chain stays verifiable and the agent can still be given back the
// arguments it must run.
//
// Key globs (* any run of characters, ? one character, case-insensitive)
// match object keys at any depth of a JSON value, and the whole value under
// a matching key is replaced. Patterns (RE2 regular expressions) match in
// strings: in JSON string values and keys, and in free text such as a
// summary or a reason; each match is replaced, the rest of the text stays.
package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// Mark is what a hidden value is shown as.
const Mark = "[redacted]"

// Redactor hides what its rules name. A nil *Redactor hides nothing, so
// code that shows values can always call one. It is safe for concurrent use.
type Redactor struct {
	keys     []string // lower-cased globs
	patterns []*regexp.Regexp
}

// New compiles the rules. A pattern that is not an RE2 regular expression,
// or that matches the empty string (and so would redact between every two
// characters), is an error that names it.
func New(keys, patterns []string) (*Redactor, error) {
	r := &Redactor{}
	for i, k := range keys {
		if strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("redact.keys[%d]: empty", i)
		}
		r.keys = append(r.keys, strings.ToLower(k))
	}
	for i, p := range patterns {
		re, err := Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact.patterns[%d]: %w", i, err)
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

// Compile checks one pattern as New does.
func Compile(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("%q is not a regular expression: %v", p, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("%q matches the empty string, so it would redact everything", p)
	}
	return re, nil
}

// Active reports whether r has any rule.
func (r *Redactor) Active() bool { return r != nil && (len(r.keys) > 0 || len(r.patterns) > 0) }

// Key reports whether values under the object key k are hidden.
func (r *Redactor) Key(k string) bool {
	if r == nil || len(r.keys) == 0 {
		return false
	}
	k = strings.ToLower(k)
	for _, g := range r.keys {
		if gate.Glob(g, k) {
			return true
		}
	}
	return false
}

// Text replaces every match of the patterns in s with Mark.
func (r *Redactor) Text(s string) string {
	if r == nil {
		return s
	}
	for _, re := range r.patterns {
		s = re.ReplaceAllLiteralString(s, Mark)
	}
	return s
}

// JSON returns raw with the values under matching keys replaced by Mark and
// the patterns' matches replaced in every string, keys and order kept.
// When nothing matched it returns raw itself, byte for byte. Input that is
// not JSON is redacted as text and returned as a JSON string.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if !r.Active() || len(bytes.TrimSpace(raw)) == 0 {
		return raw
	}
	out, changed, err := jsonx.Rewrite(raw, r.Text, r.Key, Mark)
	if err != nil {
		s := string(raw)
		if t := r.Text(s); t != s {
			b, _ := jsonx.Marshal(t)
			return b
		}
		return raw
	}
	if !changed {
		return raw
	}
	return out
}

// Request returns a copy of req with what people are shown redacted: the
// arguments, the edited arguments, the metadata (by keys and patterns), and
// the summary and reason (by patterns). The stored row is never changed.
func (r *Redactor) Request(req *gate.Request) *gate.Request {
	if !r.Active() || req == nil {
		return req
	}
	c := *req
	c.ToolArgs = r.JSON(req.ToolArgs)
	if len(req.ModifiedArgs) > 0 {
		c.ModifiedArgs = r.JSON(req.ModifiedArgs)
	}
	c.Metadata = r.JSON(req.Metadata)
	c.Summary = r.Text(req.Summary)
	c.Reason = r.Text(req.Reason)
	return &c
}

// Unlinked returns e without its links of the audit chain (hash and
// prev_hash) when the server redacts: the chain runs through every
// request's events, so the links on either side of another's let a reader
// test guesses at what it hides. The request's own token is shown its
// trail unredacted, but unlinked too.
func (r *Redactor) Unlinked(e gate.Event) gate.Event {
	if r.Active() {
		e.PrevHash, e.Hash = "", ""
	}
	return e
}

// Event returns e with its detail redacted by the patterns over its whole
// text (a reason; a number or a "key": "value" pair a pattern names), and
// first by the keys where it is a JSON object or list (a tool's outcome,
// which was redacted when stored by the rules of the day: a key rule added
// later must hide it as it hides the arguments).
//
// It carries no hash either: the seals of the call and the verdict are
// shown as Mark, and hash and prev_hash are left empty. Each is SHA-256
// over values stored unredacted, so a reader could hash guesses at a
// hidden value (a four-digit pin takes 10,000) until one gave the digest.
// The chain is checked on the server, by `gatehouse audit verify`.
func (r *Redactor) Event(e gate.Event) gate.Event {
	if !r.Active() {
		return e
	}
	e = r.Unlinked(e)
	e.Detail = audit.MaskSeals(e.Type, e.Detail, Mark)
	if d := bytes.TrimSpace([]byte(e.Detail)); len(d) > 0 && (d[0] == '{' || d[0] == '[') && json.Valid(d) {
		e.Detail = string(r.JSON(json.RawMessage(e.Detail)))
	}
	e.Detail = r.Text(e.Detail)
	return e
}

// Grant returns g as shown to someone who reads its request redacted: its
// args_hash as Mark. The hash is SHA-256 of the arguments, unsalted, so a
// reader could hash guesses at a hidden value (a four-digit pin takes
// 10,000) until one gives it; Mark still says the grant is for the
// arguments approved, and AnyArgsPrefix+Mark that it is for any arguments
// in one place (whose hash would give the place away).
func (r *Redactor) Grant(g gate.Grant) gate.Grant {
	switch {
	case !r.Active() || g.ArgsHash == "":
	case g.AnyArgs():
		g.ArgsHash = gate.AnyArgsPrefix + Mark
	default:
		g.ArgsHash = Mark
	}
	return g
}

// Restore makes an approver's edit of redacted arguments whole again.
// People edit what they were shown: original redacted by r. Every value
// the approver left as shown (a Mark, or a string with one inside) is put
// back as the agent sent it, at the same place; any Mark left after that
// (moved, or typed in) is an error, because approving it would run the tool
// with the literal "[redacted]": a call nobody approved.
func (r *Redactor) Restore(edited, original json.RawMessage) (json.RawMessage, error) {
	if !r.Active() {
		return edited, nil
	}
	sub, err1 := decode(edited)
	orig, err2 := decode(original)
	if err1 != nil || err2 != nil {
		return edited, nil // not JSON: the gate refuses it with its own words
	}
	if !leftover(sub, nil) {
		return edited, nil // no mark to put back: the edit as the approver wrote it
	}
	if depth(sub) > maxRestoreDepth {
		// restore compares each level's value whole with what was shown:
		// work of the depth times the size. 10,000 lists deep (20 KB)
		// took 35 s of a core and 18 GB.
		return nil, fmt.Errorf("the edited arguments are nested more than %d levels deep, too deep to put the redacted "+
			"values in them back; approve the call as the agent sent it, or reject it", maxRestoreDepth)
	}
	shown, err := decode(r.JSON(original))
	if err != nil {
		return edited, nil
	}
	restored := restore(sub, shown, orig)
	if leftover(restored, orig) {
		return nil, fmt.Errorf("the edited arguments hold %s where the agent sent no such value; "+
			"leave redacted values where they are shown (they are put back as the agent sent them) or replace them", Mark)
	}
	return jsonx.Marshal(restored)
}

// maxRestoreDepth is the deepest edit Restore puts redacted values back
// into, far past any tool's arguments.
const maxRestoreDepth = 64

// depth is how deeply lists and objects nest in a decoded value.
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

func decode(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// restore walks what the approver sent (sub) beside what they were shown
// (shown) and what the agent sent (orig): a value left as shown, where
// showing it redacted it, becomes the agent's.
func restore(sub, shown, orig any) any {
	switch s := sub.(type) {
	case string:
		if sh, ok := shown.(string); ok && sh == s && strings.Contains(s, Mark) {
			return orig
		}
	case map[string]any:
		sh, _ := shown.(map[string]any)
		o, _ := orig.(map[string]any)
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = restore(v, sh[k], o[k])
		}
		return out
	case []any:
		// A list's places are not names. An entry left as shown is the
		// entry shown so, its own place first (deleting or moving entries
		// shifts the rest). A changed entry keeps its place's value only
		// when every other entry is the one shown at its place: else it
		// may be another entry moved there, and the place's value
		// another's. Otherwise its marks are not put back, and the edit
		// is refused for them.
		sh, _ := shown.([]any)
		o, _ := orig.([]any)
		inPlace := make([]bool, len(s))
		moved := 0
		for i, v := range s {
			if inPlace[i] = len(s) == len(sh) && i < len(o) && reflect.DeepEqual(v, sh[i]); !inPlace[i] {
				moved++
			}
		}
		var places map[string]*shownAlike
		out := make([]any, len(s))
		for i, v := range s {
			j := i
			if !inPlace[i] {
				if places == nil {
					places = placesOf(sh, o, inPlace)
				}
				if p := places[key(v)]; p != nil {
					j = p.take()
				} else if j = -1; len(s) == len(sh) && moved == 1 {
					j = i
				}
			}
			var shi, oi any
			if j >= 0 && j < len(sh) && j < len(o) {
				shi, oi = sh[j], o[j]
			}
			out[i] = restore(v, shi, oi)
		}
		return out
	}
	return sub
}

// shownAlike are the places of a list's entries shown alike that no entry
// left at its own place stands for, each to be taken once: a copy of an
// entry is not that entry.
type shownAlike struct {
	at []int
	// differ: their originals differ, so which one an approver kept
	// cannot be told.
	differ bool
}

// take is the next place, or -1 (none left) or -2 (differ).
func (p *shownAlike) take() int {
	switch {
	case p.differ:
		return -2
	case len(p.at) == 0:
		return -1
	}
	j := p.at[0]
	p.at = p.at[1:]
	return j
}

// placesOf maps the entries of shown by key to their places, but for the
// places of entries left there (inPlace, by place in a list of the same
// length).
func placesOf(shown, orig []any, inPlace []bool) map[string]*shownAlike {
	places := make(map[string]*shownAlike, len(shown))
	for j := 0; j < len(shown) && j < len(orig); j++ {
		if len(inPlace) == len(shown) && inPlace[j] {
			continue
		}
		k := key(shown[j])
		p := places[k]
		if p == nil {
			p = &shownAlike{}
			places[k] = p
		} else if !reflect.DeepEqual(orig[p.at[0]], orig[j]) {
			p.differ = true
		}
		p.at = append(p.at, j)
	}
	return places
}

// key is a decoded JSON value written out, keys sorted: equal for values
// reflect.DeepEqual finds equal.
func key(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// leftover reports a Mark in v that the agent's value at the same place
// does not hold.
func leftover(v, orig any) bool {
	switch x := v.(type) {
	case string:
		o, _ := orig.(string)
		return strings.Contains(x, Mark) && o != x
	case map[string]any:
		o, _ := orig.(map[string]any)
		for k, e := range x {
			if strings.Contains(k, Mark) || leftover(e, o[k]) {
				return true
			}
		}
	case []any:
		o, _ := orig.([]any)
		for i, e := range x {
			var oi any
			if i < len(o) {
				oi = o[i]
			}
			if leftover(e, oi) {
				return true
			}
		}
	}
	return false
}

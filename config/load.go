package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FieldError is one problem with one key.
type FieldError struct {
	Path string // "channels[1].signing_secret"
	Msg  string
}

func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Errors is every problem found in a config, in file order.
type Errors []FieldError

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es *Errors) add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Load reads, parses and validates a config file. An empty path gives the
// built-in default. A file named that holds no settings (empty, or comments
// only) is refused rather than read as the built-in default, which has no
// routes, tokens or users: it is more often a file caught half-written (an
// editor that empties it first) than a config meant to drop them all, at a
// start as at a reload, and check-config says so too. The error, when
// there is one, lists every problem.
func Load(path string) (*Config, error) {
	if path == "" {
		c := Default()
		return c, c.Validate()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && (len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" ||
		doc.Content[0].Kind == yaml.MappingNode && len(doc.Content[0].Content) == 0) {
		return nil, Errors{{Msg: "the file holds no settings (empty, or comments only): write the config there in full, or run without --config for the built-in default"}}
	}
	return Parse(data, filepath.Dir(path), os.LookupEnv)
}

// Parse parses YAML over the defaults. Relative *_file paths resolve
// against dir; ${VAR} expands through lookup.
func Parse(data []byte, dir string, lookup func(string) (string, bool)) (*Config, error) {
	c := Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return c, c.Validate()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Errors{{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	// Unmarshal reads the first document alone: the routes, tokens and
	// users after a --- line would be dropped without a word, a deny route
	// among them.
	if many, err := manyDocuments(data); err != nil {
		return nil, Errors{{Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
	} else if many {
		return nil, Errors{{Msg: ManyDocuments}}
	}
	if len(doc.Content) == 0 {
		return c, c.Validate()
	}
	root := doc.Content[0]
	var errs Errors
	prepare(root, "", dir, lookup, &errs)
	ck := checker{errs: &errs, left: maxValues}
	ck.check(root, reflect.TypeOf(Config{}), "")
	if ck.left < 0 {
		// Aliases that multiply (a "billion laughs"): refuse before
		// anything expands them further.
		return nil, errs
	}
	if len(errs) == 0 {
		if err := root.Decode(c); err != nil {
			return nil, Errors{{Msg: err.Error()}}
		}
		return c, c.Validate()
	}
	// Report every problem in one pass: what the keys' names and kinds got
	// wrong, and what validating the rest finds. The keys check rejected
	// are left at their defaults; their values' own complaints are dropped,
	// since check has already named the key.
	bad := map[string]bool{}
	for _, e := range errs {
		bad[e.Path] = true
	}
	prune(root, "", bad)
	_ = root.Decode(c) // what is left has the right keys and kinds
	if verr := c.Validate(); verr != nil {
		var more Errors
		if errors.As(verr, &more) {
			for _, e := range more {
				if !reported(errs, e.Path) {
					errs = append(errs, e)
				}
			}
		}
	}
	return nil, errs
}

// prune drops from the tree the keys at the paths check reported, so the
// rest decodes: an entry of a mapping goes, an item of a list becomes null
// (so the items after it keep their indexes).
func prune(n *yaml.Node, path string, bad map[string]bool) {
	switch n.Kind {
	case yaml.MappingNode:
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := keyPath(path, n.Content[i])
			if bad[p] {
				continue
			}
			prune(n.Content[i+1], p, bad)
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if bad[p] {
				n.Content[i] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
				continue
			}
			prune(c, p, bad)
		}
	}
}

// reported says whether check already named path or a key above it.
func reported(errs Errors, path string) bool {
	for _, e := range errs {
		if e.Path == "" {
			continue
		}
		if path == e.Path || strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(path, e.Path+"[") {
			return true
		}
	}
	return false
}

// secretKeys are the keys that may instead be given as <key>_file.
var secretKeys = map[string]bool{}

func init() {
	for _, t := range []reflect.Type{reflect.TypeOf(Database{}), reflect.TypeOf(APIToken{}), reflect.TypeOf(User{}),
		reflect.TypeOf(Slack{}), reflect.TypeOf(Feishu{}), reflect.TypeOf(Webhook{}), reflect.TypeOf(Audit{}), reflect.TypeOf(OIDC{})} {
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).Tag.Get("secret") == "true" {
				secretKeys[yamlName(t.Field(i))] = true
			}
		}
	}
}

// matchKey is a route's match key whose empty value matches every call.
var matchKey = regexp.MustCompile(`^routes\[\d+\]\.match\.(tool|agent|when)$`)

// widensWhenEmpty says v, written at path, is empty where empty reads as
// left out: a match key with no text.
func widensWhenEmpty(path, v string) bool {
	return strings.TrimSpace(v) == "" && matchKey.MatchString(path)
}

// prepare rewrites the tree in place: <secret>_file keys become the secret
// read from the file, and ${VAR} / ${VAR:-default} in values expand.
func prepare(n *yaml.Node, path, dir string, lookup func(string) (string, bool), errs *Errors) {
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			seen[n.Content[i].Value] = true
		}
		// A <key>_file that cannot be used is reported once and dropped, so
		// it is not also named an unknown key; when it cannot be read, the
		// error is filed under <key>, which silences <key>'s follow-on
		// complaints (required, prefix) about the value it would have held.
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				kept = append(kept, k, v) // check refuses the key
				continue
			}
			p := join(path, k.Value)
			if base, ok := strings.CutSuffix(k.Value, "_file"); ok && secretKeys[base] {
				if seen[base] {
					errs.add(p, "give %s or %s, not both", base, k.Value)
					continue
				}
				file, unset, err := expand(v.Value, lookup)
				if err != nil {
					errs.add(p, "%v", err)
					continue
				}
				if len(unset) > 0 {
					// ${SECRETS}/slack with SECRETS unset is /slack: some
					// other file, or none, not the one meant.
					errs.add(join(path, base), "${%s} in %s is not set: the secret would be read from %q, not the file meant", unset[0], k.Value, file)
					continue
				}
				if !filepath.IsAbs(file) {
					file = filepath.Join(dir, file)
				}
				b, err := os.ReadFile(file)
				if err != nil {
					errs.add(join(path, base), "cannot read the secret in %s: %v", k.Value, err)
					continue
				}
				k.Value = base
				v.Kind, v.Tag, v.Style, v.Value = yaml.ScalarNode, "!!str", 0, strings.TrimRight(string(b), "\r\n")
			} else {
				prepare(v, p, dir, lookup, errs)
			}
			kept = append(kept, k, v)
		}
		n.Content = kept
	case yaml.SequenceNode:
		for i, c := range n.Content {
			prepare(c, fmt.Sprintf("%s[%d]", path, i), dir, lookup, errs)
		}
	case yaml.AliasNode:
		if a := n.Alias; a != nil && a.Kind == yaml.ScalarNode && a.Tag != "!!null" && widensWhenEmpty(path, a.Value) {
			errs.add(path, "empty: give a value, or leave %s out", lastKey(path))
		}
	case yaml.ScalarNode:
		if n.Tag != "!!null" && widensWhenEmpty(path, n.Value) {
			// Written empty ("" or !!str): read as left out, the key then
			// matches every call, as with no value at all (see check).
			// ${VAR:-}, empty on purpose, is not written empty.
			errs.add(path, "empty: give a value, or leave %s out", lastKey(path))
		}
		if !strings.Contains(n.Value, "${") || path == "" { // a document that is one value is not a mapping, said once
			return
		}
		v, unset, err := expand(n.Value, lookup)
		switch {
		case err != nil && secretKeys[lastKey(path)]:
			errs.add(path, "a ${ in this secret is neither ${NAME} nor ${NAME:-default} (write $${ for a literal ${)")
		case err != nil:
			errs.add(path, "%v", err)
		case len(unset) > 0 && (strings.HasPrefix(path, "routes[") || strings.HasPrefix(path, "defaults.") ||
			strings.HasPrefix(path, "auth.oidc.roles.")):
			// Empty, a tool or agent glob, a call pattern's path, a
			// condition's operand or a sign-on role's glob matches more
			// than was meant: Read(${WORKSPACE}/**) would allow Read(/**),
			// and admin: ['${ADMINS}*@example.com'] every account.
			errs.add(path, "${%s} is not set: empty, this rule would cover more than it says (write ${%[1]s:-} if empty is meant)", unset[0])
		}
		if err != nil {
			n.Kind, n.Tag, n.Style, n.Value = yaml.ScalarNode, "!!null", 0, ""
			return
		}
		n.Value = v
		// A plain ${W} is read as what it expands to (cards.workers: 8,
		// confirm: true); a quoted one, or one tagged, stays as written, and
		// one that expands to nothing or to null stays an empty string.
		const written = yaml.TaggedStyle | yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
		if n.Style&written == 0 {
			switch v {
			case "", "~", "null", "Null", "NULL":
				n.Tag = "!!str"
			default:
				n.Tag = ""
			}
		}
	}
}

// lastKey is the last key of a path: token of auth.api_tokens[0].token.
func lastKey(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// expand replaces ${VAR} and ${VAR:-default}, and $${ with a literal ${.
// A bare $ is left alone, so bcrypt hashes ($2a$10$…) pass through
// untouched. It returns the variables that were unset or empty and had no
// default, and an error for a ${…} that is neither form (${VAR-x} and
// ${VAR:?msg} of the shell, a name that is no variable's) rather than
// reading it as a variable nobody set.
func expand(s string, lookup func(string) (string, bool)) (string, []string, error) {
	var b strings.Builder
	var unset []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), unset, nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), unset, nil
		}
		b.WriteString(s[:i])
		name, def, hasDef := strings.Cut(s[i+2:i+j], ":-")
		if !isVarName(name) {
			return "", nil, fmt.Errorf("%s: write ${NAME} or ${NAME:-default} (and $${ for a literal ${)", s[i:i+j+1])
		}
		if v, ok := lookup(name); ok && v != "" {
			b.WriteString(v)
		} else {
			b.WriteString(def)
			if !hasDef {
				unset = append(unset, name)
			}
		}
		s = s[i+j+1:]
	}
}

// isVarName says whether s is an environment variable's name.
func isVarName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

var (
	durationType = reflect.TypeOf(Duration(0))
	patternsType = reflect.TypeOf(Patterns(nil))
	rememberType = reflect.TypeOf(Remember{})
)

// maxValues bounds the values a config holds once its aliases are
// expanded: a real config has a few thousand, and a few lines of aliases
// of aliases would otherwise expand to billions.
const maxValues = 100000

// checker walks the tree against the Go types.
type checker struct {
	errs *Errors
	left int // values still allowed; below zero once maxValues is passed
}

// noPatterns refuses a route's call given with no pattern: any of its
// patterns may match, so with none it would match nothing, but a route
// whose call is left out matches every call, and the two must not be
// mistaken for each other (an allow route whose list came out empty from
// a template would allow every tool).
const noPatterns = "no pattern: a call list with none would match nothing; name a pattern, or leave call out to match every call"

// check walks the tree against the Go types and reports every unknown key
// and every value of the wrong kind, each with its path. It stops at the
// first value past maxValues, which it reports.
func (ck *checker) check(n *yaml.Node, t reflect.Type, path string) {
	if ck.left < 0 {
		return
	}
	if ck.left--; ck.left < 0 {
		ck.errs.add(path, "aliases expand the config beyond %d values", maxValues)
		return
	}
	errs := ck.errs
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		if n.Kind != yaml.ScalarNode || !slices.Contains([]string{"", "~", "null", "Null", "NULL"}, n.Value) {
			// !!null written on a value: the decoder would read the
			// mapping past this check (its unknown keys unseen), or fail
			// with the value, a secret perhaps, in its message.
			errs.add(path, "tagged !!null but holds a value")
			return
		}
		switch {
		case t == patternsType:
			errs.add(path, noPatterns)
		case strings.HasPrefix(path, "routes[") || strings.HasPrefix(path, "defaults."):
			// A setting of the policy given with no value reads as one
			// left out, which widens a route: a match key then matches
			// every call, approvers admit anyone, a rate limit is gone.
			// A template that lost a value must not allow more.
			errs.add(path, "empty: give a value, or leave %s out", lastKey(path))
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			errs.add(path, "must be a duration such as 90s or 10m")
		} else if _, err := ParseDuration(n.Value); err != nil {
			errs.add(path, "%q is not a duration (use Go durations such as 90s or 10m, or days such as 400d)", n.Value)
		}
	case t == reflect.TypeOf(Channel{}):
		ck.checkChannel(n, path)
	case t == patternsType:
		if n.Kind == yaml.ScalarNode {
			return
		}
		if n.Kind != yaml.SequenceNode {
			errs.add(path, "must be a pattern or a list of patterns")
			return
		}
		if len(n.Content) == 0 {
			errs.add(path, noPatterns)
		}
		for i, c := range n.Content {
			if c.Tag == "!!null" || c.Kind == yaml.AliasNode && c.Alias.Tag == "!!null" {
				// An empty item (- with nothing after it) is no pattern.
				errs.add(fmt.Sprintf("%s[%d]", path, i), "empty: name a pattern")
				continue
			}
			ck.check(c, reflect.TypeOf(""), fmt.Sprintf("%s[%d]", path, i))
		}
	case t == rememberType && n.Kind == yaml.ScalarNode:
		ck.check(n, durationType, path) // remember: 1h
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			errs.add(path, "must be a mapping")
			return
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			if name := yamlName(t.Field(i)); name != "-" {
				fields[name] = t.Field(i).Type
			}
		}
		ck.checkMapping(n, fields, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			errs.add(path, "must be a list")
			return
		}
		for i, c := range n.Content {
			ck.check(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Int:
		if _, err := strconv.Atoi(n.Value); n.Kind != yaml.ScalarNode || err != nil {
			errs.add(path, "must be a whole number")
		} else {
			checkDecode(n, t, path, errs)
		}
	case t.Kind() == reflect.Bool:
		if _, err := strconv.ParseBool(n.Value); n.Kind != yaml.ScalarNode || err != nil {
			errs.add(path, "must be true or false")
		} else {
			checkDecode(n, t, path, errs)
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			errs.add(path, "must be a string")
		} else {
			checkDecode(n, t, path, errs)
		}
	}
}

// checkDecode reports a scalar that looks right but that YAML will not
// decode into t (a !!binary string that is not base64, !!str 5 for a
// number), so that the error names the key rather than a line.
func checkDecode(n *yaml.Node, t reflect.Type, path string, errs *Errors) {
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		if secretKeys[lastKey(path)] { // YAML's message shows the value
			errs.add(path, "cannot be read as a %s (tagged %s; the value is not shown, it is a secret)", t.Kind(), n.Tag)
			return
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if _, after, ok := strings.Cut(msg, ": cannot"); ok {
			msg = "cannot" + after // "unmarshal errors:\n  line 3: cannot unmarshal …"
		}
		errs.add(path, "%s", msg)
	}
}

func (ck *checker) checkMapping(n *yaml.Node, fields map[string]reflect.Type, path string) {
	ck.checkKeys(n, fields, path, true)
}

// checkKeys checks a mapping's keys, each given once and plain, and the
// values of those in fields; a key not in fields is an error only when
// unknownIsError.
func (ck *checker) checkKeys(n *yaml.Node, fields map[string]reflect.Type, path string, unknownIsError bool) {
	errs := ck.errs
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		p := keyPath(path, n.Content[i])
		if n.Content[i].Kind != yaml.ScalarNode || k == "" {
			// An alias, a list or a mapping as a key names no setting,
			// and an empty key none either.
			errs.add(p, "a key must be a plain, non-empty name")
			continue
		}
		if seen[k] {
			errs.add(p, "given twice")
		}
		seen[k] = true
		ft, ok := fields[k]
		if !ok && !unknownIsError && k != "<<" { // a merge could bring any key
			continue
		}
		if !ok {
			known := make([]string, 0, len(fields))
			for f := range fields {
				known = append(known, f)
			}
			sort.Strings(known) // the same suggestion every run
			if m := closest(k, known); m != "" {
				errs.add(p, "unknown key (did you mean %s?)", m)
			} else {
				errs.add(p, "unknown key")
			}
			continue
		}
		ck.check(v, ft, p)
	}
}

// checkChannel checks a channel's keys against the settings of its type.
func (ck *checker) checkChannel(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		ck.errs.add(path, "must be a mapping")
		return
	}
	typ := ""
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode { // type: *t, as decoding reads it
				v = v.Alias
			}
			typ = v.Value
		}
	}
	fields := map[string]reflect.Type{"name": reflect.TypeOf(""), "type": reflect.TypeOf("")}
	var settings reflect.Type
	switch typ {
	case TypeSlack:
		settings = reflect.TypeOf(Slack{})
	case TypeFeishu:
		settings = reflect.TypeOf(Feishu{})
	case TypeWebhook:
		settings = reflect.TypeOf(Webhook{})
	default:
		// Validate names the bad type; report no key as unknown meanwhile,
		// but check the keys and the common values, so that an error names
		// its key (a name that is a mapping was "line 3: cannot unmarshal
		// !!map into string", a key given twice "line 3: mapping key "n"
		// already defined"; found by fuzzing).
		ck.checkKeys(n, fields, path, false)
		return
	}
	for i := 0; i < settings.NumField(); i++ {
		fields[yamlName(settings.Field(i))] = settings.Field(i).Type
	}
	ck.checkMapping(n, fields, path)
}

// UnmarshalYAML decodes the common keys and the settings of the channel's type.
func (c *Channel) UnmarshalYAML(n *yaml.Node) error {
	var head struct {
		Name string `yaml:"name"`
		Type string `yaml:"type"`
	}
	if err := n.Decode(&head); err != nil {
		return err
	}
	c.Name, c.Type = head.Name, head.Type
	// Decode the settings from a copy without the common keys.
	rest := *n
	rest.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "name" && k != "type" {
			rest.Content = append(rest.Content, n.Content[i], n.Content[i+1])
		}
	}
	switch c.Type {
	case TypeSlack:
		c.Slack = &Slack{}
		return rest.Decode(c.Slack)
	case TypeFeishu:
		c.Feishu = &Feishu{}
		return rest.Decode(c.Feishu)
	case TypeWebhook:
		c.Webhook = &Webhook{}
		return rest.Decode(c.Webhook)
	}
	return nil
}

// MarshalYAML writes the channel flat, as it is configured.
func (c Channel) MarshalYAML() (any, error) {
	m := map[string]any{"name": c.Name, "type": c.Type}
	var settings any
	switch {
	case c.Slack != nil:
		settings = c.Slack
	case c.Feishu != nil:
		settings = c.Feishu
	case c.Webhook != nil:
		settings = c.Webhook
	}
	if settings != nil {
		b, err := yaml.Marshal(settings)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// UnmarshalYAML reads one pattern or a list; check has vetted it.
func (p *Patterns) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*p = Patterns{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*p = list
	return nil
}

// UnmarshalYAML reads `remember: 1h` or `remember: {for: 1h, args: any}`.
func (r *Remember) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return r.For.UnmarshalYAML(n)
	}
	type plain Remember
	return n.Decode((*plain)(r))
}

// UnmarshalYAML parses a duration; check has already vetted it.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return errors.New("not a duration: " + n.Value)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads a Go duration ("90s", "10m"), optionally after a
// whole number of days: "400d", "1d12h". A day is 24 hours.
func ParseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: days must be a whole number before d", s)
	}
	// A time.Duration holds about 292 years; past that, n days would wrap
	// (213505d was a day and a bit, so a retention of centuries cut the
	// history after a day).
	if n > uint64(math.MaxInt64/int64(24*time.Hour)) {
		return 0, fmt.Errorf("%q: longer than the 106751 days a duration can hold", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("%q: %q after the days is not a duration", s, rest)
		}
		if r > math.MaxInt64-d {
			return 0, fmt.Errorf("%q: longer than the 106751 days a duration can hold", s)
		}
		d += r
	}
	return d, nil
}

// MarshalYAML writes the duration as Go writes it.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// keyPath is the path of a mapping's key: by its name, or by its line
// when it has no plain name to go by.
func keyPath(path string, k *yaml.Node) string {
	if k.Kind != yaml.ScalarNode || k.Value == "" {
		return join(path, fmt.Sprintf("(the key on line %d)", k.Line))
	}
	return join(path, k.Value)
}

// ManyDocuments refuses a file of more than one YAML document.
const ManyDocuments = "more than one YAML document (settings after a --- line): write the config as one document"

// manyDocuments says whether data holds more than one YAML document with
// settings in it (a leading --- and an empty last one are fine); a later
// document that does not parse is one too, and its error is returned.
func manyDocuments(data []byte) (bool, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var d yaml.Node
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if i > 0 && len(d.Content) > 0 && (d.Content[0].Kind != yaml.ScalarNode || d.Content[0].Tag != "!!null") {
			return true, nil
		}
	}
}

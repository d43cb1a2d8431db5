package config

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParse loads hostile YAML. It must never panic or blow up (aliases
// expand, anchors nest), a config it accepts must validate again and
// survive being written out and read back, and every error it returns must
// name the key at fault (only a document that is not YAML, or not a
// mapping at all, has no key to name).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		full, "", "listen: 127.0.0.1:8080\n", "- a\n- b\n", "just a string", "{", "listen: [1, 2]\n",
		"defaults:\n  timeout: 10 minutes\n", "retention:\n  keep: 99999999999d\n", "channels:\n  - type: slack\n    name: s\n    bot_token: x\n",
		"routes:\n  - name: r\n    match: { tool: \"x*\" }\n    when: 'args.amount > 1'\n    channels: [web]\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", "listen: &l 127.0.0.1:1\npublic_url: *l\n",
		"\"\": 1\n", "routes:\n  - \"\": x\n", "? [a, b]\n: c\n", "listen: ${NOPE:-127.0.0.1:9}\n", "auth:\n  api_tokens:\n    - name: a\n      token_file: /nonexistent\n",
		"channels:\n  - name: w\n    type: webhook\n    url: http://127.0.0.1:1/x\n    secret: s\n", "listen: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(seed))
	}
	lookup := env(map[string]string{"GATEHOUSE_TOKEN": "tok", "SLACK_BOT_TOKEN": "xoxb-1", "CHECKPOINTS": "/tmp"})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, dir, lookup)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error is not a list of problems: %T %v", err, err)
			}
			for _, e := range es {
				if e.Path == "" && !strings.HasPrefix(e.Msg, "not valid YAML") && e.Msg != "must be a mapping" && e.Msg != ManyDocuments {
					t.Fatalf("error names no key: %q (in %v)", e.Msg, err)
				}
			}
			return
		}
		if c == nil {
			t.Fatal("no config and no error")
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("an accepted config does not validate again: %v", err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("an accepted config cannot be written: %v", err)
		}
		// What the config holds is literal: a ${ in it is written as $${.
		out = bytes.ReplaceAll(out, []byte("${"), []byte("$${"))
		c2, err := Parse(out, dir, lookup)
		if err != nil {
			t.Fatalf("an accepted config, written out, is refused: %v\n%s", err, out)
		}
		// and it means the same: written out again, it is the same text.
		out2, err := yaml.Marshal(c2)
		if err != nil {
			t.Fatalf("a config read back cannot be written: %v", err)
		}
		if out2 = bytes.ReplaceAll(out2, []byte("${"), []byte("$${")); !bytes.Equal(out, out2) {
			t.Fatalf("a config written out and read back changed:\n%s\nbecame\n%s", out, out2)
		}
	})
}

// TestAliasesThatMultiply: a few KB of aliases of aliases (a "billion
// laughs") are refused by name, not expanded into millions of errors.
func TestAliasesThatMultiply(t *testing.T) {
	doc := "routes:\n  - &r {name: r, channels: &c [" + strings.Repeat("[1],", 399) + "[1]]}\n" + strings.Repeat("  - *r\n", 400)
	_, err := Parse([]byte(doc), "", env(nil))
	var es Errors
	if !errors.As(err, &es) || len(es) > 100000 || !strings.Contains(err.Error(), "aliases expand the config beyond 100000 values") {
		t.Fatalf("err = %.300v (%d problems)", err, len(es))
	}
}

// TestKeysThatAreNoNames: an empty key, an alias or a list as a key are
// refused, each named by its line.
func TestKeysThatAreNoNames(t *testing.T) {
	wantErrors(t, "\"\": 1\nroutes:\n  - name: &a r\n    *a : x\n  - name: s\n    ? [a]\n    : b\n", []string{
		"(the key on line 1): a key must be a plain, non-empty name",
		"routes[0].(the key on line 4): a key must be a plain, non-empty name",
		"routes[1].(the key on line 6): a key must be a plain, non-empty name",
	})
}

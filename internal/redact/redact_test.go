package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
)

func mustNew(t *testing.T, keys, patterns []string) *Redactor {
	t.Helper()
	r, err := New(keys, patterns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var rules = struct{ keys, patterns []string }{
	keys:     []string{"password", "*token*", "*secret*"},
	patterns: []string{`AKIA[0-9A-Z]{16}`, `密钥[0-9]+`},
}

const aws = "AKIAIOSFODNN7EXAMPLE"

func TestJSON(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	tests := []struct {
		name, in, want string
	}{
		{"top-level key", `{"user":"bob","password":"hunter2"}`, `{"user":"bob","password":"[redacted]"}`},
		{"key in another case", `{"PassWord":"x","API_Token":"y","X-Secret-Key":{"a":1}}`,
			`{"PassWord":"[redacted]","API_Token":"[redacted]","X-Secret-Key":"[redacted]"}`},
		{"nested in arrays of objects", `[[{"deep":[{"password":[1,2,{"x":"y"}]}]}],"ok"]`,
			`[[{"deep":[{"password":"[redacted]"}]}],"ok"]`},
		{"a whole object under a key", `{"secrets":{"db":"p","api":["k1","k2"]},"n":1}`, `{"secrets":"[redacted]","n":1}`},
		{"pattern inside a string", `{"cmd":"aws --key ` + aws + ` s3 ls"}`, `{"cmd":"aws --key [redacted] s3 ls"}`},
		{"pattern in a key", `{"` + aws + `":"v"}`, `{"[redacted]":"v"}`},
		{"pattern spanning multi-byte characters", `{"note":"用密钥12345登录"}`, `{"note":"用[redacted]登录"}`},
		{"numbers keep their digits, order is kept", `{"z":1.50,"big":123456789012345678901234567890,"a":"` + aws + `"}`,
			`{"z":1.50,"big":123456789012345678901234567890,"a":"[redacted]"}`},
		{"nulls and booleans", `{"t":true,"f":false,"n":null,"token":null}`, `{"t":true,"f":false,"n":null,"token":"[redacted]"}`},
		{"a bare string", `"` + aws + `"`, `"[redacted]"`},
		{"escapes are kept readable", `{"q":"a \u0026\u0026 b <i> — ` + aws + `"}`, `{"q":"a && b <i> — [redacted]"}`},
		{"not JSON is redacted as text", `not json ` + aws, `"not json [redacted]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(r.JSON(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if tt.name != "not JSON is redacted as text" && !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestJSONUnchangedIsTheSameBytes(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	in := json.RawMessage("{ \"a\" : [1, 2],\n \"b\": \"\\u00e9\" }")
	if got := r.JSON(in); !bytes.Equal(got, in) {
		t.Errorf("nothing matched, yet %s became %s", in, got)
	}
	var none *Redactor
	if got := none.JSON(json.RawMessage(`{"password":"x"}`)); string(got) != `{"password":"x"}` {
		t.Errorf("a nil redactor changed %s", got)
	}
	if none.Active() || none.Key("password") || none.Text(aws) != aws {
		t.Error("a nil redactor redacts")
	}
}

func TestHugeAndDeepInput(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	big := strings.Repeat("é", 200_000) + aws + strings.Repeat("x", 200_000)
	raw, _ := json.Marshal(map[string]string{"blob": big})
	got := r.JSON(raw)
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(back["blob"], aws) || !strings.Contains(back["blob"], Mark) || !utf8.ValidString(back["blob"]) {
		t.Errorf("huge string not redacted cleanly")
	}
	deep := strings.Repeat(`{"a":`, 5000) + `{"token":"t"}` + strings.Repeat(`}`, 5000)
	out := r.JSON(json.RawMessage(deep))
	if bytes.Contains(out, []byte(`"t"`)) || !json.Valid(out) {
		t.Errorf("deep input: %.80s", out)
	}
}

func TestText(t *testing.T) {
	r := mustNew(t, nil, rules.patterns)
	if got := r.Text("key " + aws + " and 密钥9"); got != "key [redacted] and [redacted]" {
		t.Errorf("got %q", got)
	}
	// $ in the text is not a replacement template.
	r2 := mustNew(t, nil, []string{`pw=\S+`})
	if got := r2.Text("pw=$1 ok"); got != "[redacted] ok" {
		t.Errorf("got %q", got)
	}
}

func TestNewNamesTheBadRule(t *testing.T) {
	for _, tt := range []struct {
		keys, patterns []string
		want           string
	}{
		{nil, []string{`ok`, `AKIA[0-9`}, `redact.patterns[1]: "AKIA[0-9" is not a regular expression: missing closing ]`},
		{nil, []string{`a*`}, `redact.patterns[0]: "a*" matches the empty string`},
		{[]string{"x", " "}, nil, `redact.keys[1]: empty`},
	} {
		_, err := New(tt.keys, tt.patterns)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %q) = %v, want %q", tt.keys, tt.patterns, err, tt.want)
		}
	}
}

func TestRequest(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	req := &gate.Request{ID: "01J", ToolArgs: json.RawMessage(`{"password":"p"}`), ModifiedArgs: json.RawMessage(`{"password":"q"}`),
		Metadata: json.RawMessage(`{"api_token":"m"}`), Summary: "uses " + aws, Reason: "saw " + aws}
	got := r.Request(req)
	for _, s := range []string{string(got.ToolArgs), string(got.ModifiedArgs), string(got.Metadata), got.Summary, got.Reason} {
		if !strings.Contains(s, Mark) {
			t.Errorf("not redacted: %s", s)
		}
	}
	if string(req.ToolArgs) != `{"password":"p"}` || req.Summary != "uses "+aws {
		t.Error("the original request was changed")
	}
	if e := r.Event(gate.Event{Detail: "out: " + aws}); e.Detail != "out: [redacted]" {
		t.Errorf("event detail %q", e.Detail)
	}
}

// TestEventDetailJSON: a tool's report that is JSON is redacted by the
// keys and, over its whole text, by the patterns: read as JSON alone (as
// for a while), a number a pattern names and a "key": "value" pair a
// pattern spans were shown.
func TestEventDetailJSON(t *testing.T) {
	r := mustNew(t, []string{"*token*"}, []string{`4[0-9]{15}`, `"api_key"\s*:\s*"[^"]*"`})
	for detail, hidden := range map[string]string{
		`{"access_token":"abc-123","ok":true}`:   "abc-123",
		`{"card":4111111111111111,"ok":true}`:    "4111111111111111",
		`{"stdout":"x","api_key":"sk-live-123"}`: "sk-live-123",
		`[{"card":"4111111111111111"}]`:          "4111111111111111",
	} {
		got := r.Event(gate.Event{Type: gate.EventToolRan, Detail: detail}).Detail
		if strings.Contains(got, hidden) || !strings.Contains(got, Mark) {
			t.Errorf("detail %s shown as %s", detail, got)
		}
	}
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

func TestLogHandler(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	var buf bytes.Buffer
	// No time attribute: its digits could hold "42" by chance.
	noTime := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	log := slog.New(Handler(slog.NewJSONHandler(&buf, noTime), r))
	log = log.With("api_token", "t-1", "who", "key "+aws)
	log.WithGroup("g").Info("summary "+aws, "args", json.RawMessage(`{"password":"p","n":1}`),
		"err", errors.New("failed on "+aws), "s", stringer{aws}, "password", 42, slog.Group("inner", "secret_x", "v", "ok", aws))
	out := buf.String()
	if strings.Contains(out, aws) || strings.Contains(out, `"p"`) || strings.Contains(out, "t-1") || strings.Contains(out, `"v"`) ||
		strings.Contains(out, "42") {
		t.Errorf("a secret reached the log: %s", out)
	}
	for _, want := range []string{`"msg":"summary [redacted]"`, `"api_token":"[redacted]"`, `"n\":1`, `"ok":"[redacted]"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s: %s", want, out)
		}
	}
	plain := slog.NewJSONHandler(&buf, nil)
	if Handler(plain, nil) != slog.Handler(plain) {
		t.Error("a nil redactor wraps the handler")
	}
}

// An approver edits what they were shown. Values left redacted go back as
// the agent sent them; a [redacted] that cannot go back is refused, never
// passed on to the tool.
func TestRestore(t *testing.T) {
	r := mustNew(t, []string{"password", "*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	orig := json.RawMessage(`{"user":"bob","password":"hunter2","auth":{"api_token":{"v":1}},"cmd":"aws --key ` + aws + ` ls","list":["a","` + aws + `"]}`)
	for _, tt := range []struct {
		name, edited, want, err string
	}{
		{"as shown", string(r.JSON(orig)), `{"auth":{"api_token":{"v":1}},"cmd":"aws --key ` + aws + ` ls","list":["a","` + aws + `"],"password":"hunter2","user":"bob"}`, ""},
		{"one field edited, redacted ones kept", `{"user":"alice","password":"[redacted]","auth":{"api_token":"[redacted]"},"cmd":"aws --key [redacted] ls","list":["b","[redacted]"]}`,
			`{"auth":{"api_token":{"v":1}},"cmd":"aws --key ` + aws + ` ls","list":["b","` + aws + `"],"password":"hunter2","user":"alice"}`, ""},
		{"a redacted value replaced, keys kept in the approver's order", `{"user":"bob","password":"new-one"}`, `{"user":"bob","password":"new-one"}`, ""},
		{"a mark written with escapes", `{"user":"\u005bredacted]"}`, "", "hold [redacted]"},
		{"a redacted value moved", `{"user":"[redacted]"}`, "", "hold [redacted]"},
		{"a redacted string edited around its mark", `{"cmd":"aws --key [redacted] rm"}`, "", "hold [redacted]"},
		{"a mark typed in a new key", `{"extra":{"x":"[redacted]"}}`, "", "hold [redacted]"},
		{"a mark as a key", `{"[redacted]":1}`, "", "hold [redacted]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Restore(json.RawMessage(tt.edited), orig)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %s, %v; want an error", got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
	// The agent's own "[redacted]" may stay where it was.
	own := json.RawMessage(`{"note":"[redacted] by hand"}`)
	if got, err := r.Restore(own, own); err != nil || string(got) != `{"note":"[redacted] by hand"}` {
		t.Errorf("the agent's own mark: %s, %v", got, err)
	}
	var none *Redactor
	if got, err := none.Restore(json.RawMessage(`{"a":"[redacted]"}`), orig); err != nil || string(got) != `{"a":"[redacted]"}` {
		t.Errorf("without rules: %s, %v", got, err)
	}
}

// TestGrantHashes: a grant's hash is hidden from a redacted reader; a
// grant for any arguments still says so (its hash is of its place, which
// it would give away), and one with no hash has none to hide.
func TestGrantHashes(t *testing.T) {
	r := mustNew(t, rules.keys, rules.patterns)
	for in, want := range map[string]string{
		"9f86d081884c7d65": Mark, gate.AnyArgsPrefix + "9f86d081884c7d65": gate.AnyArgsPrefix + Mark, "": "",
	} {
		g := r.Grant(gate.Grant{ArgsHash: in})
		if g.ArgsHash != want || g.AnyArgs() != (gate.Grant{ArgsHash: in}).AnyArgs() {
			t.Errorf("%q: %q (any arguments %v), want %q", in, g.ArgsHash, g.AnyArgs(), want)
		}
	}
	if g := mustNew(t, nil, nil).Grant(gate.Grant{ArgsHash: "9f86"}); g.ArgsHash != "9f86" {
		t.Errorf("no redaction: %q", g.ArgsHash)
	}
}

// TestRestoreDeepEdit: restore compares each level's value whole with what
// was shown, work of the depth times the size: an edit 10,000 lists deep
// (20 KB) took 35 s of a core and allocated 18 GB. An edit deeper than
// maxRestoreDepth that leaves a redacted value is refused, in work in
// proportion to its size; one at that depth is still put back.
func TestRestoreDeepEdit(t *testing.T) {
	r := mustNew(t, []string{"password"}, nil)
	nested := func(d int, inner string) string {
		return strings.Repeat("[", d) + inner + strings.Repeat("]", d)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	got, err := r.Restore(json.RawMessage(nested(3000, `{"password":"[redacted]","a":2}`)),
		json.RawMessage(nested(3000, `{"password":"s","a":1}`)))
	runtime.ReadMemStats(&m1)
	if err == nil || !strings.Contains(err.Error(), "nested more than 64 levels deep") {
		t.Errorf("an edit 3,000 deep: %.60s, %v; want refused", got, err)
	}
	if mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20; mb > 20 {
		t.Errorf("refusing an edit 3,000 deep allocated %d MB", mb)
	}
	d := maxRestoreDepth - 1 // the object inside is the last level
	got, err = r.Restore(json.RawMessage(nested(d, `{"password":"[redacted]","a":2}`)), json.RawMessage(nested(d, `{"password":"s","a":1}`)))
	if want := nested(d, `{"a":2,"password":"s"}`); err != nil || string(got) != want {
		t.Errorf("an edit %d deep: %.60s, %v; want the password put back", d+1, got, err)
	}
}

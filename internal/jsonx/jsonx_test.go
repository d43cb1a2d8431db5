package jsonx

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

func TestMarshalKeepsHTMLAndDropsNewline(t *testing.T) {
	got, err := Marshal(map[string]string{"cmd": "a && b <main>"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cmd":"a && b <main>"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("a func encoded without error")
	}
}

func TestPrettyShowsStringsAsWritten(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"z":"a \u2014 b","a":"\u003cscript\u003e \u0026"}`, "{\n  \"z\": \"a — b\",\n  \"a\": \"<script> &\"\n}"},
		{`{"n":1.50e3,"big":123456789012345678901234567890,"l":[true,null]}`,
			"{\n  \"n\": 1.50e3,\n  \"big\": 123456789012345678901234567890,\n  \"l\": [\n    true,\n    null\n  ]\n}"},
		{`["line\nbreak","tab\t","quote\"","back\\slash","\u0007","\ud83d\ude00","\u2028"]`,
			"[\n  \"line\\nbreak\",\n  \"tab\\t\",\n  \"quote\\\"\",\n  \"back\\\\slash\",\n  \"\\u0007\",\n  \"😀\",\n  \"\\u2028\"\n]"},
		{`not json`, `not json`},
		{`{"a":1} {"b":2}`, `{"a":1} {"b":2}`},
		{``, ``},
	} {
		if got := Pretty([]byte(tt.in)); got != tt.want {
			t.Errorf("Pretty(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// Indenting costs two spaces a level on every line: deep values are
// shown re-encoded but not indented rather than hundreds of times their
// size (20 KB 10,000 deep were 200 MB and 2 s of a core indented, 200 KB
// of numbers 1,000 deep 200 MB), and values of ordinary depth are indented
// as before, strings with brackets, commas and escaped quotes included.
func TestPrettyOfDeepValuesIsBounded(t *testing.T) {
	for _, raw := range []string{
		strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
		`{"a":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat("}", 5001),
		strings.Repeat("[", 1000) + strings.Repeat("0,", 100000) + "0" + strings.Repeat("]", 1000),
	} {
		got := Pretty([]byte(raw))
		if len(got) > 8*len(raw)+64<<10 {
			t.Errorf("%.20s… (%d bytes): shown in %d bytes", raw, len(raw), len(got))
		}
		if !Same([]byte(got), []byte(raw)) {
			t.Errorf("%.20s…: shown as another value", raw)
		}
	}
	deep := strings.Repeat("[", 30) + `"a\"[,{"` + strings.Repeat("]", 30)
	var want bytes.Buffer
	if err := json.Indent(&want, []byte(deep), "", "  "); err != nil {
		t.Fatal(err)
	}
	if got := Pretty([]byte(deep)); got != want.String() {
		t.Errorf("30 levels not indented:\n%s", got)
	}
}

func TestRewrite(t *testing.T) {
	upper := func(s string) string {
		if s == "x" {
			return "X"
		}
		return s
	}
	out, changed, err := Rewrite([]byte(`{"k":"x","hide":{"deep":[1]},"l":["x",2]}`), upper, func(k string) bool { return k == "hide" }, "[h]")
	if err != nil || !changed || string(out) != `{"k":"X","hide":"[h]","l":["X",2]}` {
		t.Fatalf("got %s %v %v", out, changed, err)
	}
	if _, changed, _ := Rewrite([]byte(`{"a":"b"}`), nil, nil, ""); changed {
		t.Fatal("nothing to change, yet changed")
	}
	for _, bad := range []string{`{"a":`, `[1,]`, `{"a":1}x`} {
		if _, _, err := Rewrite([]byte(bad), nil, nil, ""); err == nil {
			t.Errorf("Rewrite(%s): no error", bad)
		}
	}
}

// TestShrinkStaysJSON: a report too long to keep is shrunk value by value,
// so it stays JSON whose keys read whole (a key rule added later still
// finds them when it is shown); a value is cut without splitting a word.
func TestShrinkStaysJSON(t *testing.T) {
	long := `{"access_token":"tok-123","stdout":"` + strings.Repeat("word ", 1000) + `","nested":{"k":["` + strings.Repeat("a b ", 500) + `"]},"n":12345678901234567890}`
	out, ok := Shrink([]byte(long), 2048)
	if !ok || len(out) > 2048 || !json.Valid(out) {
		t.Fatalf("Shrink: ok %v, %d bytes, valid %v: %s", ok, len(out), json.Valid(out), out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || m["access_token"] != "tok-123" || !strings.HasSuffix(m["stdout"].(string), "word…") {
		t.Fatalf("shrunk: %v %s", err, out)
	}
	if !strings.Contains(string(out), `"n":12345678901234567890`) {
		t.Errorf("a number lost its digits: %s", out)
	}
	if _, ok := Shrink([]byte(`{"a":1`), 4); ok {
		t.Error("text that is not JSON shrank")
	}
	// A length in many values, numbers or keys: lists and objects keep
	// their first members, and the keys still read whole (a second reader:
	// cut as text, such a report lost its key redaction).
	for _, raw := range []string{
		`{"access_token":"tok-123","ids":[` + strings.Repeat("1234567,", 400) + `1]}`,
		"[" + strings.Repeat(`{"token":"t","n":1},`, 300) + `{"token":"t"}]`,
		`{"a":` + strings.Repeat(`{"b":`, 600) + "1" + strings.Repeat("}", 600) + "}",
	} {
		out, ok := Shrink([]byte(raw), 200)
		if !ok || len(out) > 200 || !json.Valid(out) {
			t.Errorf("Shrink of %.40s…: ok %v, %d bytes, valid %v: %s", raw, ok, len(out), json.Valid(out), out)
		}
	}
	if out, _ := Shrink([]byte(`{"access_token":"tok-123","ids":[`+strings.Repeat("1234567,", 400)+`1]}`), 200); !strings.Contains(string(out), `"access_token":"tok-123"`) {
		t.Errorf("the key and its value are gone: %s", out)
	}
}

func TestDuplicateKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"amount":60000,"amount":50}`:                "amount",
		`{"a":{"b":1,"b":2}}`:                         "b",
		`[{"x":1},{"x":2,"y":[1,{"z":0,"z":1}]}]`:     "z",
		`{"a":"b","b":"a","c":{"a":1},"a":[]}`:        "a",
		`{"k":{"k":{"k":1}},"v":["k","k"],"k2":"k2"}`: "",
		`{"a":1,"A":2}`:                               "A",
		`{"amount":10,"AMOUNT":6000000}`:              "AMOUNT",
		`{"sum":10,"ſum":6000000}`:                    "ſum",
		`{"kelvin":1,"\u212aelvin":2}`:                "\u212aelvin",
		`{"ab":1,"a_b":2,"aB2":3}`:                    "",
		`[1,"a","a",{}]`:                              "",
		`"x"`:                                         "",
		`{"a":1,"a"`:                                  "a",
		`{"a":`:                                       "",
		`{"n":1e400,"a":1,"a":2}`:                     "a",
		`{"n":[-1e999],"command":"ls","COMMAND":"x"}`: "COMMAND",
	} {
		got, dup := DuplicateKey([]byte(in))
		if got != want || dup != (want != "") {
			t.Errorf("%s: %q %v, want %q", in, got, dup, want)
		}
	}
}

// Edited: no edit given (empty, null) and the same value spelled
// otherwise are no edit; another value is.
func TestEdited(t *testing.T) {
	asked := json.RawMessage(`{"env":"prod","n":1}`)
	for modified, want := range map[string]bool{"": false, "null": false, " null ": false, `{ "n": 1, "env": "prod" }`: false,
		`{"env":"staging","n":1}`: true, `{"env":"prod"}`: true, `[]`: true} {
		if got := Edited(json.RawMessage(modified), asked); got != want {
			t.Errorf("Edited(%q) = %v, want %v", modified, got, want)
		}
	}
}

// TestShrinkDeepText: text that is not JSON, nested deeper than
// encoding/json reads (a hook's error: 1 MiB of "["), is refused without
// a level of stack per "[": json.Decoder.Token has no depth limit, and
// the rewriter's recursion took 128 B a level (256 MB of stack for 1 MiB).
func TestShrinkDeepText(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(32 << 20))
	done := make(chan bool)
	go func() {
		_, ok := Shrink([]byte(strings.Repeat("[", 1<<20)), 2<<10)
		_, ok2, _ := Rewrite([]byte(strings.Repeat("[", 1<<19)+strings.Repeat("]", 1<<19)), nil, nil, "")
		done <- ok || ok2
	}()
	if <-done {
		t.Error("text nested past 10,000 levels read as JSON")
	}
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	if _, ok := Shrink([]byte(deep), 2<<10); !ok {
		t.Error("JSON 9,999 levels deep not shrunk")
	}
}

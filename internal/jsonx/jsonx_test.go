package jsonx

import "testing"

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

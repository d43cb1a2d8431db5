package text

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestCutBytesKeepsCharactersWhole(t *testing.T) {
	cjk := strings.Repeat("拒绝", 3000) // 3 bytes a character
	for _, n := range []int{0, 1, 2, 3, 4, 4095, 4096, 4097} {
		got, cut := CutBytes(cjk, n)
		if !cut || len(got) > n || !utf8.ValidString(got) || !strings.HasPrefix(cjk, got) {
			t.Fatalf("CutBytes(cjk, %d) = %d bytes, cut %v, valid %v", n, len(got), cut, utf8.ValidString(got))
		}
		if len(got) < n-3 {
			t.Fatalf("CutBytes(cjk, %d) cut too much: %d bytes", n, len(got))
		}
	}
	if got, cut := CutBytes("short", 10); got != "short" || cut {
		t.Fatalf("a short string was cut: %q %v", got, cut)
	}
	emoji := "ok 👍🏽 done"
	for n := 0; n <= len(emoji); n++ {
		if got, _ := CutBytes(emoji, n); !utf8.ValidString(got) {
			t.Fatalf("CutBytes(emoji, %d) = %q: invalid UTF-8", n, got)
		}
	}
}

func TestCutRunesAndEllipsis(t *testing.T) {
	if got, cut := CutRunes("héllo wörld", 5); got != "héllo" || !cut {
		t.Fatalf("CutRunes = %q %v", got, cut)
	}
	if got, cut := CutRunes("abc", 3); got != "abc" || cut {
		t.Fatalf("CutRunes(abc, 3) = %q %v", got, cut)
	}
	if got := Ellipsis("付款给供应商", 4); got != "付款给…" {
		t.Fatalf("Ellipsis = %q", got)
	}
	if got := EllipsisBytes("付款给供应商", 10); got != "付款…" || len(got) > 10 {
		t.Fatalf("EllipsisBytes = %q (%d bytes)", got, len(got))
	}
}

func TestCleanAndUpperFirst(t *testing.T) {
	if got := Clean("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Fatalf("Clean = %q", got)
	}
	if got := UpperFirst("über"); got != "Über" {
		t.Fatalf("UpperFirst = %q", got)
	}
	if got := UpperFirst(""); got != "" {
		t.Fatalf("UpperFirst(\"\") = %q", got)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1h", 30 * time.Minute: "30m", 90 * time.Minute: "1h30m",
		48 * time.Hour: "2d", 45 * time.Second: "45s", 25 * time.Hour: "25h", 61 * time.Second: "1m1s"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

// Hidden characters are written as marks in text and as escapes in JSON;
// text without them comes back as it was, emoji joiners included.
func TestReveal(t *testing.T) {
	for in, want := range map[string]string{
		"rm -rf \u202e ~ #":     "rm -rf ⟨U+202E⟩ ~ #",
		"a\u200bb\u2066c\ufeff": "a⟨U+200B⟩b⟨U+2066⟩c⟨U+FEFF⟩",
		"plain — 日本語":           "plain — 日本語",
		"👨\u200d👩\u200d👧":       "👨\u200d👩\u200d👧",
		// Drawn as nothing, found by a tenth reader: /etc/passwd on the page.
		"/etc/pass\u00ad\U000E0077wd":         "/etc/pass⟨U+00AD⟩⟨U+E0077⟩wd",
		"a\u3164b\u180ec":                     "a⟨U+3164⟩b⟨U+180E⟩c",
		"❤\ufe0f":                             "❤\ufe0f",
		"/etc/pass\ufe00wd\u034f\u17b4\u2065": "/etc/pass⟨U+FE00⟩wd⟨U+034F⟩⟨U+17B4⟩⟨U+2065⟩",
		"\u0600\u0661 ١٢":                     "\u0600\u0661 ١٢",
	} {
		if got := Reveal(in); got != want {
			t.Errorf("Reveal(%q) = %q, want %q", in, got, want)
		}
	}
	raw := `{"command":"rm -rf ` + "\u202e" + ` ~ #"}`
	got := RevealJSON(raw)
	if got != `{"command":"rm -rf \u202e ~ #"}` {
		t.Fatalf("RevealJSON: %s", got)
	}
	var a, b map[string]string
	if json.Unmarshal([]byte(raw), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || a["command"] != b["command"] {
		t.Fatalf("the escaped JSON reads back as another value: %q against %q", b, a)
	}
	// Past U+FFFF, an escape is a UTF-16 pair: \ue0077 would read back
	// as U+E007 and a 7.
	raw = `{"path":"/etc/pass` + "\U000E0077" + `wd"}`
	if got = RevealJSON(raw); got != `{"path":"/etc/pass\udb40\udc77wd"}` {
		t.Fatalf("RevealJSON: %s", got)
	}
	if json.Unmarshal([]byte(raw), &a) != nil || json.Unmarshal([]byte(got), &b) != nil || a["path"] != b["path"] {
		t.Fatalf("the escaped JSON reads back as another value: %q against %q", b, a)
	}
}

// TestEllipsisWordsKeepsNoPartOfAWord: text is cut before it is redacted,
// so a secret the cut would split must go whole, or its first part stays
// where no pattern finds it.
func TestEllipsisWordsKeepsNoPartOfAWord(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"aws s3 ls --key=AKIAIOSFODNN7EXAMPLE", 26, "aws s3 ls …"},
		{`{"token":"tok-123456789"}`, 16, `{"token":"…`},
		{"run: échappé-très-long", 12, "run: …"},
		{"short", 10, "short"},
		{"a b", 3, "a b"},
		{"ab cd ef", 7, "ab …"}, // "ab c" would split cd
		{"ab cd ef", 9, "ab cd ef"},
		{"oneverylongword", 8, "…"},
		{"deploy\u3000" + strings.Repeat("x", 40), 20, "deploy\u3000…"}, // a break of three bytes (a second reader)
		{"deploy\u00a0" + strings.Repeat("x", 40), 20, "deploy\u00a0…"},
	} {
		got := EllipsisWords(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) || len(got) > max(tc.n, len(tc.in)) {
			t.Errorf("EllipsisWords(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// Middle keeps a long text's start and end, on character boundaries, and
// says where it cut; what fits is left alone.
func TestMiddle(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"ls -la", 10, "ls -la"},
		{"ls -a -a -a -a -a -a -a; rm -rf ~", 20, "ls -a -a -a …  -rf ~"},
		{"日本語のコマンドをここに書く", 10, "日本語の … に書く"},
	} {
		got := Middle(tc.in, tc.n)
		if got != tc.want || utf8.RuneCountInString(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("Middle(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// LowerEmail folds case, and refuses a character that would fold into
// ASCII (the Kelvin sign, dotted capital I): another address would become
// this one.
func TestLowerEmail(t *testing.T) {
	for in, want := range map[string]string{"Alice@Corp.COM": "alice@corp.com", "élodie@Exemple.fr": "élodie@exemple.fr"} {
		if got, ok := LowerEmail(in); !ok || got != want {
			t.Errorf("LowerEmail(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"\u212Aate@corp.com", "al\u0130ce@corp.com"} {
		if got, ok := LowerEmail(in); ok {
			t.Errorf("LowerEmail(%q) = %q, ok; want refused", in, got)
		}
	}
}

// Package text cuts and cleans the strings Gatehouse stores and shows.
// Every cut lands on a character boundary: a reason cut inside a UTF-8
// sequence is invalid text, which PostgreSQL refuses to store, and a verdict
// whose write is refused is a verdict lost.
package text

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Clean makes s storable everywhere: invalid UTF-8 sequences become U+FFFD
// and NUL characters (which PostgreSQL's text type cannot hold) are dropped.
func Clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// CutBytes returns the longest prefix of s that is at most n bytes long and
// ends on a character boundary. It reports whether anything was cut.
func CutBytes(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	if n <= 0 {
		return "", true
	}
	i := n
	// Back up to the start of the character that straddles byte n.
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// CutRunes returns at most n characters (runes, which is how Slack and
// Feishu count their limits) of s. It reports whether anything was cut.
func CutRunes(s string, n int) (string, bool) {
	if n <= 0 {
		return "", s != ""
	}
	if len(s) <= n { // fewer bytes than n means fewer runes too
		return s, false
	}
	k := 0
	for i := range s {
		if k == n {
			return s[:i], true
		}
		k++
	}
	return s, false
}

// Ellipsis cuts s to at most n characters, the last of them "…" when
// anything was cut.
func Ellipsis(s string, n int) string {
	if cut, ok := CutRunes(s, n); ok {
		cut, _ = CutRunes(cut, n-1)
		return cut + "…"
	}
	return s
}

// Middle cuts s to at most n characters by taking them out of its middle,
// where " … " then stands: the first two thirds of what fits and the rest
// from its end. For what ends in what matters (a command whose last part
// is "; rm -rf ~", a long value before the argument that follows it), which
// Ellipsis would cut away.
func Middle(s string, n int) string {
	const mark = " … "
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= len([]rune(mark))+1 {
		return Ellipsis(s, n)
	}
	keep := n - len([]rune(mark))
	head, _ := CutRunes(s, keep*2/3)
	r := []rune(s)
	return head + mark + string(r[len(r)-(keep-keep*2/3):])
}

// MiddleFit is s cut in the middle (Middle) to the most that fits, as fits
// measures it (escaped, encoded), a tenth shorter at each try; it reports
// whether it cut, and is "" when no cut fits.
func MiddleFit(s string, fits func(string) bool) (string, bool) {
	if fits(s) {
		return s, false
	}
	for n := utf8.RuneCountInString(s) * 9 / 10; n > 0; n = n * 9 / 10 {
		if m := Middle(s, n); fits(m) {
			return m, true
		}
	}
	return "", true
}

// EllipsisBytes cuts s to at most n bytes, ending in "…" when anything was
// cut, on a character boundary.
func EllipsisBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut, _ := CutBytes(s, n-len("…"))
	return cut + "…"
}

// EllipsisWords is EllipsisBytes for text cut before it is redacted (what
// is stored, and redacted when shown): it also drops the word the cut
// would split, so no first part of a secret is kept that its pattern no
// longer matches (AKIAIOSF… of an AWS key). A word is a run of anything
// but spaces, quotes and brackets and , ; :; text with no such boundary
// before the cut is cut to nothing.
func EllipsisWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut, _ := CutBytes(s, n-len("…"))
	if next, _ := utf8.DecodeRuneInString(s[len(cut):]); !wordBreak(next) {
		if i := strings.LastIndexFunc(cut, wordBreak); i >= 0 {
			_, size := utf8.DecodeRuneInString(cut[i:])
			cut = cut[:i+size] // after the break, which may be more than a byte
		} else {
			cut = ""
		}
	}
	return cut + "…"
}

func wordBreak(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'`,;:()[]{}<>", r)
}

// UpperFirst upper-cases the first character of s.
func UpperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// Duration writes a duration as people read it: 1h, 30m, 1h30m, 2d,
// rather than Go's 1h0m0s.
func Duration(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// hidden reports whether r is a character that changes how the text
// around it is drawn, or hides in it, without being seen itself: Unicode's
// default-ignorable characters (the format characters, the variation
// selectors and the rest of Other_Default_Ignorable_Code_Point), which
// hold the bidirectional controls (with U+202E, `rm -rf ~ #` can be drawn
// for a command that runs as `rm -rf ~`), the zero-width characters, the
// soft hyphen, the Hangul fillers and the tags (/etc/pass<U+00AD><U+E0077>wd
// is drawn /etc/passwd). Left as they are: the zero-width joiner and the
// emoji variation selectors (U+FE0E, U+FE0F), which emoji need, and the
// format characters that are drawn (the Arabic number signs and the like).
func hidden(r rune) bool {
	switch {
	case r < 0xAD, r == 0x200D, r == 0xFE0E, r == 0xFE0F:
		return false
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// Reveal writes each hidden character of s as a visible mark, "⟨U+202E⟩",
// for text shown to people: what they see is then what is there.
func Reveal(s string) string { return reveal(s, hidden, mark) }

// RevealLine is Reveal for text that is one line by nature (a tool's
// name, an agent's id): control characters, line breaks among them, and
// the line and paragraph separators (U+2028, U+2029) are marked too, so
// that no such field can draw lines of its own on a card.
func RevealLine(s string) string {
	return reveal(s, func(r rune) bool { return hidden(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }, mark)
}

// RevealJSON writes each hidden character of JSON text as an escape
// ("\u202e"; past U+FFFF, its UTF-16 pair, "\udb40\udc77"). In valid JSON
// such a character can only be inside a string, where the escape reads
// back as the same value.
func RevealJSON(s string) string {
	return reveal(s, hidden, func(r rune) string {
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			return fmt.Sprintf(`\u%04x\u%04x`, r1, r2)
		}
		return fmt.Sprintf(`\u%04x`, r)
	})
}

// mark is a character as people are shown it: "⟨U+202E⟩".
func mark(r rune) string { return fmt.Sprintf("⟨U+%04X⟩", r) }

// reveal writes the characters of s that show selects as marked.
func reveal(s string, show func(rune) bool, marked func(rune) string) string {
	if strings.IndexFunc(s, show) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if show(r) {
			b.WriteString(marked(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// LowerEmail is an email address in lower case, the one form Gatehouse
// records a person's address in (single sign-on's web:<email>, a webhook
// relay's actor): Alice@Corp.com and alice@corp.com are one person. ok is
// false when a character outside ASCII lower-cases into ASCII (U+0130 İ,
// U+212A Kelvin K become i and k), which would fold another address into
// this one: an address at kİtchen.com would be …@kitchen.com.
func LowerEmail(s string) (lower string, ok bool) {
	if strings.IndexFunc(s, func(r rune) bool { return r >= utf8.RuneSelf && unicode.ToLower(r) < utf8.RuneSelf }) >= 0 {
		return "", false
	}
	return strings.ToLower(s), true
}

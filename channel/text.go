package channel

import "unicode/utf8"

// Truncate cuts s to at most max characters (runes, which is how Slack and
// Feishu count their text limits), never splitting a UTF-8 sequence. It
// reports whether anything was cut; the caller adds its own note.
func Truncate(s string, max int) (string, bool) {
	if max <= 0 {
		return "", s != ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i], true
		}
		n++
	}
	return s, false
}

// Package jsonx holds the JSON encoding Gatehouse uses where people read
// the result (cards, canonical arguments, the client's request bodies).
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Marshal encodes v like json.Marshal but without HTML escaping, so an
// argument such as "a && b" or "<main>" reads as written, not as
// "a \u0026\u0026 b", and '<' costs one byte, not six.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Canonical returns JSON with object keys sorted and no insignificant
// space, so that two spellings of one value hash alike (numbers keep the
// digits they were written with).
func Canonical(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return Marshal(v)
}

// Same reports whether a and b hold the same JSON value, however each is
// spelled (space, key order, escapes); text that is not JSON is compared
// compacted (Compact) where it can be, else as it is.
func Same(a, b json.RawMessage) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(Compact(a), Compact(b))
	}
	return bytes.Equal(ca, cb)
}

// Edited says modified, an approval's edited arguments, are other than
// asked: none given (empty or null) is no edit, nor is the same value
// spelled otherwise.
func Edited(modified, asked json.RawMessage) bool {
	m := bytes.TrimSpace(modified)
	return len(m) > 0 && string(m) != "null" && !Same(m, asked)
}

// Compact is raw JSON without insignificant space, or raw as it is when it
// is not JSON.
func Compact(raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// Rewrite copies one JSON value, keys in their order and numbers with the
// digits they were written with, passing every string (keys included)
// through str and replacing the whole value under a key for which hide is
// true by the string mark. Strings are re-encoded without HTML escaping and
// with \u escapes only where JSON needs them, so "\u2014" reads "—".
// changed reports whether str or hide changed anything; nil funcs change
// nothing.
func Rewrite(raw []byte, str func(string) string, hide func(key string) bool, mark string) (out []byte, changed bool, err error) {
	w := rewriter{dec: json.NewDecoder(bytes.NewReader(raw)), str: str, hide: hide, mark: mark}
	w.dec.UseNumber()
	if err := w.value(); err != nil {
		return nil, false, err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return nil, false, errors.New("jsonx: data after the value")
	}
	return w.out.Bytes(), w.changed, nil
}

type rewriter struct {
	dec     *json.Decoder
	out     bytes.Buffer
	str     func(string) string
	hide    func(string) bool
	mark    string
	changed bool
	// keepKeys: str is for values only; keys are copied as they are.
	keepKeys bool
	inKey    bool
	// maxItems, when above 0, keeps a list's or an object's first members
	// only, and a "…" for the rest.
	maxItems int
	// depth is how many lists and objects the value being read is in.
	depth int
}

// maxDepth bounds the rewriter's recursion, a call a level, at
// encoding/json's own limit: json.Decoder.Token has none, and 1 MiB of "["
// (text that is not JSON, in a hook's report) took 128 MB of stack.
const maxDepth = 10000

// skipRest skips the members left in the list or object being read, and
// writes "…" for them (a member "…":"…" in an object).
func (w *rewriter) skipRest(object bool) error {
	for w.dec.More() {
		if object {
			if _, err := w.dec.Token(); err != nil {
				return err
			}
		}
		var skip json.RawMessage
		if err := w.dec.Decode(&skip); err != nil {
			return err
		}
	}
	w.out.WriteString(`,"…"`)
	if object {
		w.out.WriteString(`:"…"`)
	}
	return nil
}

// Shrink is raw, one JSON value, made to fit in max bytes and stay JSON,
// with its keys whole, so that redaction by key still finds them when it is
// shown: long string values are cut on word boundaries (text.EllipsisWords),
// and then lists and objects keep only their first members (a "…" stands
// for the rest), shorter and shorter. Where nothing fits, it is a note of
// the report's size. ok is false only when raw is not one JSON value.
func Shrink(raw []byte, max int) (out []byte, ok bool) {
	for _, items := range []int{0, 32, 4} {
		for _, n := range []int{max, max / 4, max / 16, 16} {
			w := rewriter{dec: json.NewDecoder(bytes.NewReader(raw)), keepKeys: true, maxItems: items,
				str: func(s string) string { return text.EllipsisWords(s, n) }}
			w.dec.UseNumber()
			if err := w.value(); err != nil {
				return nil, false
			}
			if _, err := w.dec.Token(); err != io.EOF {
				return nil, false
			}
			if w.out.Len() <= max {
				return w.out.Bytes(), true
			}
		}
	}
	note, _ := Marshal(map[string]string{"…": fmt.Sprintf("a report of %d bytes, too large to keep in %d", len(raw), max)})
	return note, true
}

func (w *rewriter) string(s string) {
	if w.str != nil && !(w.keepKeys && w.inKey) {
		t := w.str(s)
		w.changed = w.changed || t != s
		s = t
	}
	b, _ := Marshal(s)
	w.out.Write(b)
}

func (w *rewriter) value() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t != '{' && t != '[' {
			return fmt.Errorf("jsonx: unexpected %v", t)
		}
		if w.depth++; w.depth > maxDepth {
			return fmt.Errorf("jsonx: nested deeper than %d levels", maxDepth)
		}
		if t == '{' {
			err = w.object()
		} else {
			err = w.array()
		}
		w.depth--
		return err
	case string:
		w.string(t)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		w.out.WriteString(strconv.FormatBool(t))
	case nil:
		w.out.WriteString("null")
	}
	return nil
}

func (w *rewriter) object() error {
	w.out.WriteByte('{')
	for i := 0; w.dec.More(); i++ {
		if w.maxItems > 0 && i == w.maxItems {
			if err := w.skipRest(true); err != nil {
				return err
			}
			break
		}
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		if i > 0 {
			w.out.WriteByte(',')
		}
		w.inKey = true
		w.string(k)
		w.inKey = false
		w.out.WriteByte(':')
		if w.hide != nil && w.hide(k) {
			var skip json.RawMessage
			if err := w.dec.Decode(&skip); err != nil {
				return err
			}
			b, _ := Marshal(w.mark)
			w.out.Write(b)
			w.changed = true
			continue
		}
		if err := w.value(); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // '}'
		return err
	}
	w.out.WriteByte('}')
	return nil
}

func (w *rewriter) array() error {
	w.out.WriteByte('[')
	for i := 0; w.dec.More(); i++ {
		if w.maxItems > 0 && i == w.maxItems {
			if err := w.skipRest(false); err != nil {
				return err
			}
			break
		}
		if i > 0 {
			w.out.WriteByte(',')
		}
		if err := w.value(); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil { // ']'
		return err
	}
	w.out.WriteByte(']')
	return nil
}

// Pretty indents JSON for people to read, keys in their order and strings
// as written: an em dash is "—", not "\u2014", and "<" is "<", not
// "\u003c" (whoever shows it escapes it for its own medium). Only the
// characters that would be drawn unseen or reorder what is drawn
// (text.RevealJSON) are written as escapes. Input that is
// not one JSON value is returned as it came.
func Pretty(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	return text.RevealJSON(indent(raw))
}

// indent is raw re-encoded (Rewrite) and indented, or raw as it came when
// it is not one JSON value. Indented, a line costs two spaces a level, so
// deep values are re-encoded but not indented when that would make them
// more than maxIndented times longer: 20 KB of [[[…]]] 10,000 deep were
// 200 MB indented, and 200 KB of numbers in a list 1,000 deep the same.
func indent(raw []byte) string {
	plain, _, err := Rewrite(raw, nil, nil, "")
	if err != nil {
		return string(raw)
	}
	if indentsPast(plain, maxIndented*len(plain)+64<<10) {
		return string(plain)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, plain, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// maxIndented bounds how many times longer indenting makes a value.
const maxIndented = 8

// indentsPast reports whether compact JSON, indented by two spaces a
// level, would be longer than limit bytes (an upper bound: empty lists and
// objects, which stay as they are, count as a line each).
func indentsPast(plain []byte, limit int) bool {
	n, depth, inString, escaped := len(plain), 0, false, false
	for _, c := range plain {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			n += 1 + 2*depth
		case ',':
			n += 1 + 2*depth
		case ':':
			n++
		case '}', ']':
			depth--
			n += 1 + 2*depth
		}
		if n > limit {
			return true
		}
	}
	return false
}

// DuplicateKey finds a key that one object in the JSON text holds twice
// ({"amount":60000,"amount":50}), also under another case
// ({"amount":10,"AMOUNT":6000000}, "ſum" and "sum"), and says whether
// there is one. Readers disagree on such text: Go, JavaScript and Python
// keep the last value, other parsers the first, and Go (like Jackson or
// System.Text.Json set so) matches a struct's fields to keys whatever
// their case, where the policy reads each key as written: it could judge
// one amount and the tool pay another. Text that is not JSON has none
// (its own error says why).
func DuplicateKey(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Numbers as written: read as float64s, one beyond a float64's range
	// (1e400) is an error of Token's, which would end the search there and
	// let a key given twice after it through.
	dec.UseNumber()
	// Each open object or array; an object's keys, and whether its next
	// string is a key.
	type open struct {
		object, wantKey bool
		keys            map[string]struct{}
	}
	var stack []open
	value := func() { // a value has ended: the object around it wants a key
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, open{object: true, wantKey: true})
			case '[':
				stack = append(stack, open{})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			top := len(stack) - 1
			if top < 0 || !stack[top].object || !stack[top].wantKey {
				value()
				continue
			}
			k := foldKey(v)
			if _, seen := stack[top].keys[k]; seen {
				return v, true
			}
			if stack[top].keys == nil {
				stack[top].keys = map[string]struct{}{}
			}
			stack[top].keys[k] = struct{}{}
			stack[top].wantKey = false
		default:
			value()
		}
	}
}

// foldKey is k with each letter the least of those Unicode folds it with
// (strings.EqualFold's folding): two keys fold alike when EqualFold says
// they are equal. k folds with K and with the Kelvin sign, s with ſ.
func foldKey(k string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, k)
}

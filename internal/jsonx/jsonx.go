// Package jsonx holds the JSON encoding Gatehouse uses where people read
// the result (cards, canonical arguments, the client's request bodies).
package jsonx

import (
	"bytes"
	"encoding/json"
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

// Package audit makes the trail tamper-evident: every event is a link of one
// hash chain (seq, prev_hash, hash), sealed in order by one sealer at a time
// across replicas; Verify walks the chain; checkpoints sign its head; and
// retention cuts old requests while the chain records what it cut. The SQL
// lives in store; this package holds the rules, so a verifier needs nothing
// else.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Genesis is the prev_hash of the first link.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Kinds of links.
const (
	// KindEvent is an event of a request's trail, in the events table.
	KindEvent = "event"
	// KindRetention is the chain's own record of a retention cut.
	KindRetention = "retention"
	// KindCut is what remains of an event retention cut: its seq and its
	// hashes, so the chain stays whole, without its content.
	KindCut = "cut"
)

// Record is one link of the chain.
type Record struct {
	Seq       int64     `json:"seq"`
	Kind      string    `json:"kind"`
	ID        int64     `json:"id,omitempty"` // the event's row id
	RequestID string    `json:"request_id,omitempty"`
	At        time.Time `json:"at"`
	Type      string    `json:"type,omitempty"`
	Actor     string    `json:"actor,omitempty"`
	Channel   string    `json:"channel,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	PrevHash  string    `json:"prev_hash"`
	Hash      string    `json:"hash"`
}

// canonical is the hashed form of a link: keys in alphabetical order, no
// space, times in UTC to the microsecond.
type canonical struct {
	Actor     string `json:"actor"`
	At        string `json:"at"`
	Channel   string `json:"channel"`
	Detail    string `json:"detail"`
	ID        int64  `json:"id"`
	RequestID string `json:"request_id"`
	Seq       int64  `json:"seq"`
	Type      string `json:"type"`
}

// TimeFormat is how times enter the canonical JSON.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// Canonical is the record's canonical JSON: the object {actor, at, channel,
// detail, id, request_id, seq, type} with keys sorted, no whitespace, no
// HTML escaping, and at in UTC with six fractional digits. A retention
// record has id 0 and request_id "".
func (r *Record) Canonical() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(canonical{Actor: r.Actor, At: r.At.UTC().Format(TimeFormat), Channel: r.Channel, Detail: r.Detail,
		ID: r.ID, RequestID: r.RequestID, Seq: r.Seq, Type: r.Type})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Hash is the link's hash: hex(SHA-256(prev_hash || canonical JSON)),
// where prev_hash is the previous link's hash in lowercase hex (Genesis for
// the first).
func Hash(prevHash string, canonicalJSON []byte) string {
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write(canonicalJSON)
	return hex.EncodeToString(h.Sum(nil))
}

// Seal links r after a head: it sets r's seq, prev_hash and hash, and
// returns the new head.
func (h Head) Seal(r *Record) Head {
	r.Seq, r.PrevHash = h.Seq+1, h.Hash
	r.At = r.At.UTC().Truncate(time.Microsecond)
	r.Hash = Hash(r.PrevHash, r.Canonical())
	return Head{Seq: r.Seq, Hash: r.Hash}
}

// Head is the last link of the chain: Seq 0 and Genesis when it is empty.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// EmptyHead is the head of a chain with no links.
var EmptyHead = Head{Seq: 0, Hash: Genesis}

// Ranges writes sorted seqs as "1-5,7,9-12".
func Ranges(seqs []int64) string {
	var b strings.Builder
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(itoa(seqs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(itoa(seqs[j]))
		}
		i = j + 1
	}
	return b.String()
}

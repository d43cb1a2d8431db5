package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Source is a chain to verify, read in pages. *store.DB implements it.
type Source interface {
	// ChainRecords returns up to limit links with seq > after, by seq.
	ChainRecords(ctx context.Context, after int64, limit int) ([]Record, error)
	// ChainHead returns the head the sealer last wrote.
	ChainHead(ctx context.Context) (Head, error)
	// Stray returns the smallest seq of a sealed event the walk cannot
	// read as a link of its own, and whether there is one: a seq below
	// 1, or one a link in the other table holds (a page of the walk,
	// cut at its limit, would keep one of the two copies alone).
	Stray(ctx context.Context) (int64, bool, error)
}

// ErrNoHead says the row that holds the chain's head is gone.
var ErrNoHead = errors.New("audit: the chain's head row is gone")

// Cut is what one retention pass removed; its record's detail is this as JSON.
type Cut struct {
	// Cutoff: the requests removed were final and created before it.
	Cutoff   time.Time `json:"cutoff"`
	Requests int       `json:"requests"`
	Events   int       `json:"events"`
	// Seqs are the links whose content went, as Ranges writes them.
	Seqs string `json:"seqs"`
	// Signature is the Ed25519 signature of Message() by the server's
	// audit key (base64), when it has one: without the key, a record of a
	// cut cannot be forged to pass deleted events off as retention's.
	Signature string `json:"signature,omitempty"`
	// Held counts the requests due that retention left because their
	// trail or row did not check out (for verify to report); not recorded.
	Held int `json:"-"`
}

// Detail is the cut as its chain record's detail.
func (c Cut) Detail() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Message is what a cut's signature covers, the record's place in its
// chain included (so a record signed for one chain cannot be replayed in
// another under the same key): "gatehouse audit retention v2\nseq=N\n
// prev_hash=H\ncutoff=T\nrequests=N\nevents=M\nseqs=S\n", T as in
// TimeFormat.
func (c *Cut) Message(seq int64, prevHash string) []byte {
	return fmt.Appendf(nil, "gatehouse audit retention v2\nseq=%d\nprev_hash=%s\ncutoff=%s\nrequests=%d\nevents=%d\nseqs=%s\n",
		seq, prevHash, c.Cutoff.UTC().Format(TimeFormat), c.Requests, c.Events, c.Seqs)
}

// Sign signs the cut, recorded at seq after prevHash, with the audit key;
// a nil key leaves it unsigned.
func (c *Cut) Sign(key ed25519.PrivateKey, seq int64, prevHash string) {
	if key != nil {
		c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(key, c.Message(seq, prevHash)))
	}
}

// CheckSignature says whether the cut recorded at seq after prevHash is
// signed by trusted.
func (c *Cut) CheckSignature(trusted ed25519.PublicKey, seq int64, prevHash string) error {
	if c.Signature == "" {
		return errors.New("it is not signed (written before Gatehouse signed retention records, or forged): compare it with your retention.keep")
	}
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil || !ed25519.Verify(trusted, c.Message(seq, prevHash), sig) {
		return fmt.Errorf("its signature is not the audit key's (%s) for this place in the chain: it was forged, changed or copied from another chain", Fingerprint(trusted))
	}
	return nil
}

// Broken says where a chain stops being whole: the first seq that is
// missing, changed, out of place, or cut without a record of the cut.
type Broken struct {
	Seq    int64
	Reason string
}

func (b *Broken) Error() string { return fmt.Sprintf("chain broken at seq %d: %s", b.Seq, b.Reason) }

// Report is what Verify found in a whole chain.
type Report struct {
	Links int64 // links read
	Head  Head  // the last link
	// Cuts are the retention records, at their seq.
	Cuts []CutAt
	// Checkpoint is the checkpoint's seq that the chain matched, if one was given.
	Checkpoint int64
}

// CutAt is a retention record and where it sits in the chain.
type CutAt struct {
	Seq int64
	Cut Cut
}

// Verify reads the whole chain and checks that it is whole: seqs run 1, 2,
// 3 … without a gap or a repeat; each link's prev_hash is the previous
// link's hash; each link with content hashes to its hash; each link whose
// content retention cut is named by a later retention record; the chain
// ends at the head the sealer wrote; given a checkpoint (already checked
// for its signature), the chain holds the checkpoint's link; given the
// audit key, every retention record is signed by it; and, when
// src also reads requests (Rows), each request whose trail sealed its
// call and verdict still holds them in its row. It
// returns a *Broken naming the first seq that fails, or another error
// when the chain could not be read.
//
// It may run while servers seal: the walk goes on until no link follows,
// and only then reads the head, which the sealer writes in the transaction
// that adds the links. A head beyond the walk means either links sealed
// since (the walk resumes) or links cut off the end (none follow).
func Verify(ctx context.Context, src Source, cp *Checkpoint, key ed25519.PublicKey) (Report, error) {
	v := verifier{cp: cp, key: key, prev: EmptyHead}
	for {
		if err := v.walk(ctx, src); err != nil || v.broken != nil {
			return v.rep, v.result(err)
		}
		head, err := src.ChainHead(ctx)
		if errors.Is(err, ErrNoHead) {
			v.fail(v.prev.Seq+1, "the chain's head row (audit_head) is gone")
			break
		}
		if err != nil {
			return v.rep, err
		}
		switch {
		case head.Seq == v.prev.Seq && head.Hash != v.prev.Hash:
			v.fail(v.prev.Seq, "its hash is not the head's hash")
		case head.Seq < v.prev.Seq:
			v.fail(head.Seq+1, "a link after the head (seq %d) that the sealer never wrote", head.Seq)
		case head.Seq > v.prev.Seq:
			more, err := src.ChainRecords(ctx, v.prev.Seq, 1)
			if err != nil {
				return v.rep, err
			}
			if len(more) > 0 {
				continue // sealed while we walked
			}
			v.fail(v.prev.Seq+1, "missing: the chain ends at seq %d, but its head was sealed at seq %d (the end was cut off)", v.prev.Seq, head.Seq)
		}
		break
	}
	if len(v.undeclared) > 0 {
		v.fail(v.undeclared[0], "its content was removed, and no retention record names it")
	}
	// An event the walk never read is not in the chain, yet its request's
	// trail shows it (written with seq 0, or with the seq of a link).
	if seq, found, err := src.Stray(ctx); err != nil {
		return v.rep, err
	} else if found {
		v.fail(max(seq, 1), "an event holds seq %d, which the walk did not read as a link of its own (a seq below 1, or one another link holds): it was written outside the chain", seq)
	}
	if err := v.checkUndecided(ctx, src); err != nil {
		return v.rep, err
	}
	if v.broken == nil && cp != nil && v.rep.Checkpoint != cp.Seq {
		v.fail(v.prev.Seq+1, "missing: the checkpoint of %s holds seq %d, and the chain ends at seq %d (cut short after the checkpoint)", cp.At.Format(time.RFC3339), cp.Seq, v.prev.Seq)
	}
	v.rep.Head = v.prev
	return v.rep, v.result(nil)
}

// verifier is the state of one Verify.
type verifier struct {
	cp         *Checkpoint
	key        ed25519.PublicKey // the audit key retention records must be signed by; nil: not checked
	rep        Report
	prev       Head
	undeclared []int64 // cut links no retention record has named yet
	marked     []sealed
	broken     *Broken
	// undecided are the requests whose trail sealed their call and, so
	// far, no verdict: the seq of the call's seal.
	undecided map[string]int64
}

// checkUndecided checks, once the chain is read, the requests whose trail
// sealed their call and no verdict: a row that shows one anyway (a pending
// request given a verdict in the database) breaks the chain at the call's
// seal, unless the event that records it is not sealed yet or was sealed
// after the walk.
func (v *verifier) checkUndecided(ctx context.Context, src Source) error {
	rows, ok := src.(Rows)
	if !ok || len(v.undecided) == 0 || v.broken != nil {
		return nil
	}
	ids := make([]string, 0, len(v.undecided))
	for id := range v.undecided {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	got, err := rows.Rows(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		r, found := got[id]
		if !found || r.Unsealed || r.LastSeq > v.prev.Seq {
			continue // gone: checkCalls reported it; or its verdict is on its way
		}
		if r.Verdict.Status != "pending" || r.Verdict.By != "" || r.Verdict.Via != "" || !r.Verdict.At.IsZero() {
			v.fail(v.undecided[id], "request %s: its row shows a verdict (%s by %s) that no event of its trail sealed", id, r.Verdict.Status, r.Verdict.By)
		}
	}
	return nil
}

// sealed is an event that sealed its request's call or verdict, still to
// be checked against the request's row.
type sealed struct {
	seq             int64
	request, digest string
	verdict         bool
}

// checkCalls checks the events read since the last check that sealed a
// call or a verdict against their requests' rows, when the source can
// read them: a row changed since (its tool, arguments, status, who
// decided, …) or deleted without a retention cut breaks the chain at that
// event.
func (v *verifier) checkCalls(ctx context.Context, src Source) error {
	rows, ok := src.(Rows)
	if !ok || len(v.marked) == 0 {
		v.marked = nil
		return nil
	}
	ids := make([]string, 0, len(v.marked))
	for _, m := range v.marked {
		ids = append(ids, m.request)
	}
	got, err := rows.Rows(ctx, ids)
	if err != nil {
		return err
	}
	for _, m := range v.marked {
		c, found := got[m.request]
		switch {
		case !found:
			// Retention may have cut it since the walk read the event;
			// then the event is a cut link now.
			now, err := src.ChainRecords(ctx, m.seq-1, 1)
			if err != nil {
				return err
			}
			if len(now) == 1 && now[0].Seq == m.seq && now[0].Kind == KindCut {
				continue
			}
			v.fail(m.seq, "request %s: its row is gone, and no retention cut its trail", m.request)
		case !m.verdict && c.Call.Digest() != m.digest:
			v.fail(m.seq, "request %s: its row no longer holds the call this event sealed (its tool, arguments, summary, agent, user, session, metadata, caller, route or time was changed)", m.request)
		case m.verdict && c.Verdict.Digest() != m.digest:
			v.fail(m.seq, "request %s: its row no longer holds the verdict this event sealed (its status, who or when decided, through which channel, the reason or the edited arguments were changed)", m.request)
		case m.verdict && !ExpiryAgrees(c.Verdict, c.OnTimeout):
			v.fail(m.seq, "request %s: its row's on_timeout (%q) is not the one its sealed expiry names (%q): whether the expiry allows was changed", m.request, c.OnTimeout, c.Verdict.Reason)
		}
	}
	v.marked = nil
	return nil
}

// fail records a break; the first seq wins.
func (v *verifier) fail(seq int64, format string, args ...any) {
	if v.broken == nil || seq < v.broken.Seq {
		v.broken = &Broken{Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
}

func (v *verifier) result(err error) error {
	if err != nil {
		return err
	}
	if v.broken != nil {
		// Cut links before a break are not judged: the record that names
		// them may lie beyond it.
		return v.broken
	}
	return nil
}

// walk reads links after prev until none follow or one is broken.
func (v *verifier) walk(ctx context.Context, src Source) error {
	const page = 1000
	for {
		recs, err := src.ChainRecords(ctx, v.prev.Seq, page)
		if err != nil {
			return err
		}
		for i := range recs {
			if !v.link(&recs[i]) {
				return v.checkCalls(ctx, src)
			}
		}
		if err := v.checkCalls(ctx, src); err != nil || v.broken != nil {
			return err
		}
		if len(recs) < page {
			return nil
		}
	}
}

// link checks one link and moves prev onto it; false when it is broken.
func (v *verifier) link(r *Record) bool {
	prev := v.prev
	switch {
	case r.Seq == prev.Seq:
		v.fail(r.Seq, "seq %d appears twice", r.Seq)
	case r.Seq != prev.Seq+1:
		v.fail(prev.Seq+1, "missing: the chain jumps from seq %d to seq %d (a link was deleted)", prev.Seq, r.Seq)
	case r.PrevHash != prev.Hash:
		v.fail(r.Seq, "prev_hash %s is not the hash of seq %d (%s): a link before it was changed, inserted or deleted", short(r.PrevHash), prev.Seq, short(prev.Hash))
	case r.Kind == KindCut:
		v.undeclared = append(v.undeclared, r.Seq)
	case r.Kind != KindEvent && r.Kind != KindRetention:
		v.fail(r.Seq, "unknown kind %q", r.Kind)
	case Hash(r.PrevHash, r.Canonical()) != r.Hash:
		v.fail(r.Seq, "its content does not hash to its hash: the row was changed")
	case r.Kind == KindRetention:
		var c Cut
		seqs, err := []int64(nil), json.Unmarshal([]byte(r.Detail), &c)
		if err == nil {
			seqs, err = ParseRanges(c.Seqs)
		}
		if err != nil {
			v.fail(r.Seq, "a retention record that does not say what it cut: %v", err)
			break
		}
		if v.key != nil {
			if err := c.CheckSignature(v.key, r.Seq, r.PrevHash); err != nil {
				v.fail(r.Seq, "a retention record whose cut cannot be trusted: %v", err)
				break
			}
		}
		v.undeclared = declare(v.undeclared, seqs)
		v.rep.Cuts = append(v.rep.Cuts, CutAt{Seq: r.Seq, Cut: c})
	}
	if v.broken != nil {
		return false
	}
	if r.Kind == KindEvent {
		call, verdict := Sealed(r.Type, r.Detail)
		if call != "" {
			v.marked = append(v.marked, sealed{seq: r.Seq, request: r.RequestID, digest: call})
			if v.undecided == nil {
				v.undecided = map[string]int64{}
			}
			v.undecided[r.RequestID] = r.Seq
		}
		if verdict != "" {
			v.marked = append(v.marked, sealed{seq: r.Seq, request: r.RequestID, digest: verdict, verdict: true})
			delete(v.undecided, r.RequestID)
		}
	}
	if v.cp != nil && r.Seq == v.cp.Seq {
		if r.Hash != v.cp.Hash {
			v.fail(r.Seq, "the checkpoint of %s says its hash is %s, the chain says %s: the chain was rewritten", v.cp.At.Format(time.RFC3339), short(v.cp.Hash), short(r.Hash))
			return false
		}
		v.rep.Checkpoint = v.cp.Seq
	}
	v.prev = Head{Seq: r.Seq, Hash: r.Hash}
	v.rep.Links++
	return true
}

// declare removes from undeclared (sorted) the seqs a retention record names.
func declare(undeclared, seqs []int64) []int64 {
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	out := undeclared[:0]
	for _, s := range undeclared {
		i := sort.Search(len(seqs), func(i int) bool { return seqs[i] >= s })
		if i == len(seqs) || seqs[i] != s {
			out = append(out, s)
		}
	}
	return out
}

// ParseRanges reads what Ranges writes.
func ParseRanges(s string) ([]int64, error) {
	var out []int64
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seqs: %q is not a number", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seqs: %q is not a range", part)
			}
		}
		if b-a > 1<<24 {
			return nil, fmt.Errorf("seqs: %q is too wide", part)
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	return out, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// short is a hash's first 12 hex digits, for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// IsBroken reports whether err says the chain is broken (rather than unreadable).
func IsBroken(err error) bool {
	var b *Broken
	return errors.As(err, &b)
}

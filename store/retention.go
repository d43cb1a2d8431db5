package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// Retention. A pass cuts up to limit final requests created before the
// cutoff, with their events, cards, votes and steps, in one transaction that holds
// the chain's head (so no sealer runs meanwhile):
//
//   - only requests whose events are all sealed, so every cut event is a
//     link whose place in the chain is known;
//   - never a request whose grant is still active: its revocation is
//     written to that request's trail, and with the request gone it could
//     not be, and the grant would go on approving calls;
//   - each cut event leaves its link behind in audit_records, kind 'cut':
//     its seq, prev_hash and hash, without its content, so the chain stays
//     whole and Verify checks every link on either side;
//   - a retention record, linked at the head, says what was cut: the
//     cutoff, how many requests and events, and the cut links' seqs, which
//     is what lets Verify accept a link without content.
//
// On PostgreSQL the candidate rows are locked first, so an event being
// added to one of them waits, and then fails on the foreign key, rather
// than slipping in unsealed between the cut and the delete.
const (
	qPruneCandidates = `SELECT id FROM requests WHERE status <> 'pending' AND created_at < $1
		AND NOT EXISTS (SELECT 1 FROM events WHERE events.request_id = requests.id AND events.seq IS NULL)
		AND NOT EXISTS (SELECT 1 FROM grants WHERE grants.request_id = requests.id AND grants.revoked_at IS NULL AND grants.expires_at > $2)
		ORDER BY created_at, id LIMIT $3`
	qInsertChainRecord = `INSERT INTO audit_records (seq, kind, at, type, actor, detail, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
)

// Prune runs one retention pass (see above) and returns what it cut:
// zero requests when there was nothing to cut or another replica holds the
// chain's head.
func (s *DB) Prune(ctx context.Context, cutoff, now time.Time, limit int, key ed25519.PrivateKey) (audit.Cut, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var cut audit.Cut
	_, err := s.withHead(ctx, func(c *chainTx) error {
		cut = audit.Cut{Cutoff: utc(cutoff)}
		q := qPruneCandidates
		if s.driver == Postgres {
			q += ` FOR UPDATE OF requests`
		}
		ids, err := c.strings(q, utc(cutoff), utc(now), limit)
		if err != nil || len(ids) == 0 {
			return err
		}
		if ids, cut.Held, err = c.untouched(ids); err != nil || len(ids) == 0 {
			return err
		}
		in, args := inList(ids)
		seqs, err := c.int64s(`SELECT seq FROM events WHERE request_id IN (`+in+`) ORDER BY seq`, args...)
		if err != nil {
			return err
		}
		for _, q := range []string{
			`INSERT INTO audit_records (seq, kind, prev_hash, hash) SELECT seq, '` + audit.KindCut + `', prev_hash, hash FROM events WHERE request_id IN (` + in + `)`,
			`DELETE FROM events WHERE request_id IN (` + in + `)`,
			`DELETE FROM votes WHERE request_id IN (` + in + `)`,
			`DELETE FROM steps WHERE request_id IN (` + in + `)`,
			`DELETE FROM cards WHERE request_id IN (` + in + `)`,
			`DELETE FROM requests WHERE id IN (` + in + `)`,
		} {
			if _, err := c.tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("%.40s…: %w", q, err)
			}
		}
		cut.Requests, cut.Events, cut.Seqs = len(ids), len(seqs), audit.Ranges(seqs)
		cut.Sign(key, c.head.Seq+1, c.head.Hash) // the place Seal gives it
		rec := audit.Record{Kind: audit.KindRetention, At: now, Type: audit.KindRetention, Actor: gate.ActorSystem, Detail: cut.Detail()}
		c.head = c.head.Seal(&rec)
		_, err = c.tx.ExecContext(ctx, qInsertChainRecord, rec.Seq, rec.Kind, rec.At, rec.Type, rec.Actor, rec.Detail, rec.PrevHash, rec.Hash)
		return err
	})
	if err != nil {
		return audit.Cut{}, wrap("retention", err)
	}
	return cut, nil
}

// inList is "$1, $2, …" for ids, and ids as arguments.
func inList(ids []string) (string, []any) {
	ph := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		ph[i] = fmt.Sprintf("$%d", i+1)
		args[i] = id
	}
	return strings.Join(ph, ", "), args
}

// untouched keeps the requests whose trails and rows still check out:
// every event's link hashes to its hash, and the row holds the call
// (created_at included) and the verdict the trail sealed, with the
// on_timeout its sealed expiry names; and no event of the trail lies
// outside the chain (a seq below 1). Retention picks
// requests by their rows' created_at and status, which the chain does not
// link; it must not be the way a row changed in the database (backdated,
// or given a verdict) and its trail disappear with a signed record of the
// cut. Those stay for verify to report; held counts them.
func (c *chainTx) untouched(ids []string) (keep []string, held int, err error) {
	in, args := inList(ids)
	rows, err := c.tx.QueryContext(c.ctx, `SELECT seq, 'event', id, request_id, at, type, actor, channel, detail, prev_hash, hash
		FROM events WHERE request_id IN (`+in+`) ORDER BY seq`, args...)
	if err != nil {
		return nil, 0, err
	}
	links, err := scanLinks(rows)
	if err != nil {
		return nil, 0, err
	}
	reqs, err := c.tx.QueryContext(c.ctx, `SELECT `+requestColumns+` FROM requests WHERE id IN (`+in+`)`, args...)
	if err != nil {
		return nil, 0, err
	}
	defer reqs.Close()
	rowOf := map[string]*gate.Request{}
	for reqs.Next() {
		var row requestRow
		if err := reqs.Scan(row.scanTargets()...); err != nil {
			return nil, 0, err
		}
		rowOf[row.ID] = row.toRequest()
	}
	if err := reqs.Err(); err != nil {
		return nil, 0, err
	}
	bad := map[string]bool{}
	callSealed, verdictSealed := map[string]bool{}, map[string]bool{}
	for _, l := range links {
		r := rowOf[l.RequestID]
		call, verdict := audit.Sealed(l.Type, l.Detail)
		// A seq below 1 is no link of the chain (verify's walk never reads
		// it): an event written outside it, which verify reports.
		if r == nil || l.Seq < 1 || audit.Hash(l.PrevHash, l.Canonical()) != l.Hash || call != "" && call != r.Call().Digest() ||
			verdict != "" && (verdict != r.Verdict().Digest() || !audit.ExpiryAgrees(r.Verdict(), string(r.OnTimeout))) {
			bad[l.RequestID] = true
		}
		callSealed[l.RequestID] = callSealed[l.RequestID] || call != ""
		verdictSealed[l.RequestID] = verdictSealed[l.RequestID] || verdict != ""
	}
	for _, id := range ids {
		// Final in its row, with no event that sealed a verdict.
		if !bad[id] && !(callSealed[id] && !verdictSealed[id]) {
			keep = append(keep, id)
		}
	}
	return keep, len(ids) - len(keep), nil
}

func (c *chainTx) strings(q string, args ...any) ([]string, error) {
	return queryColumn[string](c.ctx, c.tx, q, args...)
}

func (c *chainTx) int64s(q string, args ...any) ([]int64, error) {
	return queryColumn[int64](c.ctx, c.tx, q, args...)
}

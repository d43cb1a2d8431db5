package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/audit"
)

// The sealer. The life cycle's transactions insert events unsealed (seq
// NULL) and never wait for the chain; the sealer, one transaction at a time
// across replicas, takes the committed unsealed events in id order and links
// each after the chain's head.
//
// Why this has one order without a lock on every write: the chain's order is
// the order of sealing, not of ids. On PostgreSQL an event with a smaller id
// can commit after one with a larger id (ids are drawn at insert, rows become
// visible at commit), so a sealer that remembered "sealed up to id N" would
// skip the late one for ever. This sealer remembers nothing of the kind: its
// work list is every committed row with seq NULL (events_unsealed, a partial
// index), so a late commit is simply sealed in a later round, after events
// with larger ids. Nothing is skipped and no horizon has to be guessed. The
// order is still faithful to cause: an event written after another committed
// (a verdict after its request's creation, a vote after the one before,
// which held the row's lock) has a larger id and is visible whenever the
// later one is, so it is never sealed before it.
//
// One sealer at a time: the transaction locks the audit_head row. On
// PostgreSQL it does so with SKIP LOCKED, so another replica's sealer, finding
// the head taken, does nothing this round instead of queueing; the lock is
// the lease, held only while the sealing transaction runs, and a replica that
// dies mid-seal releases it when its connection goes. SQLite's write
// transaction (BEGIN IMMEDIATE) holds the whole database, which is the lock.
const (
	qChainHead       = `SELECT seq, hash FROM audit_head WHERE id = 1`
	qChainHeadLocked = qChainHead + ` FOR UPDATE SKIP LOCKED`
	qUnsealed        = `SELECT id, request_id, at, type, actor, channel, detail FROM events WHERE seq IS NULL ORDER BY id LIMIT $1`
	qSetHead         = `UPDATE audit_head SET seq = $1, hash = $2 WHERE id = 1 AND seq = $3`
	// The whole chain in order: sealed events, and the links in
	// audit_records. Each side is limited first, so a page reads at most
	// two pages' rows on either driver (PostgreSQL merges the two index
	// scans; over the bare union it sorted every link after the cursor).
	qChainRecords = `SELECT * FROM (SELECT seq, 'event' AS kind, id, request_id, at, type, actor, channel, detail, prev_hash, hash
		FROM events WHERE seq IS NOT NULL AND seq > $1 ORDER BY seq LIMIT $2) AS e
	UNION ALL
	SELECT * FROM (SELECT seq, kind, CAST(0 AS BIGINT), '', at, type, actor, '', detail, prev_hash, hash
		FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT $2) AS r
	ORDER BY 1, 2 LIMIT $2`
	// qStray finds a sealed event outside the walk (audit.Source.Stray).
	qStray = `SELECT MIN(seq) FROM events WHERE seq IS NOT NULL AND
		(seq < 1 OR EXISTS (SELECT 1 FROM audit_records r WHERE r.seq = events.seq))`
)

// chainTx is a write transaction that holds the chain's head.
type chainTx struct {
	tx   *sql.Tx
	ctx  context.Context
	head audit.Head
	from int64 // the head's seq when the transaction took it
}

// withHead runs fn in a write transaction holding the chain's head, and
// writes the head fn leaves. held is false, and fn does not run, when
// another replica holds the head.
func (s *DB) withHead(ctx context.Context, fn func(c *chainTx) error) (held bool, err error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil || !held {
			_ = tx.Rollback()
		}
	}()
	q := qChainHead
	if s.driver == Postgres {
		q = qChainHeadLocked
	}
	c := &chainTx{tx: tx, ctx: ctx}
	switch err = tx.QueryRowContext(ctx, q).Scan(&c.head.Seq, &c.head.Hash); err {
	case nil:
	case sql.ErrNoRows:
		return false, nil // another sealer holds it (or the row is gone, which Verify reports)
	default:
		return false, err
	}
	held, c.from = true, c.head.Seq
	if err = fn(c); err != nil {
		return held, err
	}
	if c.head.Seq != c.from {
		res, err := tx.ExecContext(ctx, qSetHead, c.head.Seq, c.head.Hash, c.from)
		if err != nil {
			return held, err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return held, fmt.Errorf("the chain's head moved under the sealer (from seq %d)", c.from)
		}
	}
	return held, tx.Commit()
}

// Seal links up to limit unsealed events after the chain's head, oldest
// first, and says how many it sealed (0 when another replica is sealing).
func (s *DB) Seal(ctx context.Context, limit int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	// Nothing to seal is the common case between bursts: find it out on the
	// read pool rather than by taking the write lock every round.
	var pending int
	if err := s.rdb.WithContext(ctx).Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE seq IS NULL LIMIT 1) AS u`).Scan(&pending).Error; err != nil {
		return 0, wrap("seal events", err)
	}
	if pending == 0 {
		return 0, nil
	}
	n := 0
	_, err := s.withHead(ctx, func(c *chainTx) error {
		n = 0
		rows, err := c.tx.QueryContext(ctx, qUnsealed, limit)
		if err != nil {
			return err
		}
		var recs []audit.Record
		for rows.Next() {
			r := audit.Record{Kind: audit.KindEvent}
			if err := rows.Scan(&r.ID, &r.RequestID, &r.At, &r.Type, &r.Actor, &r.Channel, &r.Detail); err != nil {
				rows.Close()
				return err
			}
			recs = append(recs, r)
		}
		if err := rows.Err(); err != nil {
			return err // the rows are closed when Next ends
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		for i := range recs {
			c.head = c.head.Seal(&recs[i])
		}
		if err := c.sealEvents(s.driver, recs); err != nil {
			return err
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, wrap("seal events", err)
	}
	return n, nil
}

// sealEvents writes the links' seq and hashes into their events. On
// PostgreSQL one statement carries the whole batch: a statement per event
// is a network round trip each, and sealed under 6,000 events a second
// where the batch seals over 30,000. On SQLite a round trip is a function
// call, and one prepared statement run per event is the faster (85,000 a
// second against 20,000 for the batch, which SQLite compiles afresh each
// time), which matters there because sealing holds the only writer.
func (c *chainTx) sealEvents(driver string, recs []audit.Record) error {
	if driver == Postgres {
		vals := make([]string, len(recs))
		args := make([]any, 0, 4*len(recs))
		for i, r := range recs {
			k := 4 * i
			vals[i] = fmt.Sprintf("($%d::bigint, $%d::bigint, $%d, $%d)", k+1, k+2, k+3, k+4)
			args = append(args, r.ID, r.Seq, r.PrevHash, r.Hash)
		}
		res, err := c.tx.ExecContext(c.ctx, `UPDATE events SET seq = v.column2, prev_hash = v.column3, hash = v.column4
			FROM (VALUES `+strings.Join(vals, ", ")+`) AS v WHERE events.id = v.column1 AND events.seq IS NULL`, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(recs)) {
			return fmt.Errorf("sealed %d of %d events: another sealer took some", n, len(recs))
		}
		return nil
	}
	st, err := c.tx.PrepareContext(c.ctx, `UPDATE events SET seq = $1, prev_hash = $2, hash = $3 WHERE id = $4 AND seq IS NULL`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, r := range recs {
		res, err := st.ExecContext(c.ctx, r.Seq, r.PrevHash, r.Hash, r.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("event %d was sealed by another", r.ID)
		}
	}
	return nil
}

// ChainHead returns the chain's last link as the sealer wrote it.
func (s *DB) ChainHead(ctx context.Context) (audit.Head, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var h audit.Head
	rsql, err := s.rdb.DB()
	if err != nil {
		return h, err
	}
	err = rsql.QueryRowContext(ctx, qChainHead).Scan(&h.Seq, &h.Hash)
	if err == sql.ErrNoRows {
		return audit.Head{}, audit.ErrNoHead
	}
	return h, wrap("read the chain's head", err)
}

// ChainRecords returns up to limit links after seq, in order.
func (s *DB) ChainRecords(ctx context.Context, after int64, limit int) ([]audit.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rsql, err := s.rdb.DB()
	if err != nil {
		return nil, err
	}
	rows, err := rsql.QueryContext(ctx, qChainRecords, after, limit)
	if err != nil {
		return nil, wrap("read the chain", err)
	}
	out, err := scanLinks(rows)
	return out, wrap("read the chain", err)
}

// scanLinks reads rows of links (seq, kind, id, request_id, at, type,
// actor, channel, detail, prev_hash, hash) and closes them.
func scanLinks(rows *sql.Rows) ([]audit.Record, error) {
	defer rows.Close()
	var out []audit.Record
	for rows.Next() {
		var r audit.Record
		var at anyTime
		var prev, hash sql.NullString
		if err := rows.Scan(&r.Seq, &r.Kind, &r.ID, &r.RequestID, &at, &r.Type, &r.Actor, &r.Channel, &r.Detail, &prev, &hash); err != nil {
			return nil, err
		}
		r.At, r.PrevHash, r.Hash = at.t, prev.String, hash.String
		out = append(out, r)
	}
	return out, rows.Err()
}

// Rows returns what the rows of the requests that exist among ids hold
// of their calls and verdicts, for Verify to check against the digests
// their trails sealed.
func (s *DB) Rows(ctx context.Context, ids []string) (map[string]audit.Row, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out := map[string]audit.Row{}
	const batch = 500
	for start := 0; start < len(ids); start += batch {
		var rows []requestRow
		if err := s.rdb.WithContext(ctx).Where("id IN ?", ids[start:min(start+batch, len(ids))]).Find(&rows).Error; err != nil {
			return nil, wrap("read requests' rows", err)
		}
		for i := range rows {
			r := rows[i].toRequest()
			out[r.ID] = audit.Row{Call: r.Call(), Verdict: r.Verdict(), OnTimeout: string(r.OnTimeout)}
		}
		var trails []struct {
			RequestID string
			LastSeq   sql.NullInt64
			Unsealed  int64
		}
		if err := s.rdb.WithContext(ctx).Raw(`SELECT request_id, MAX(seq) AS last_seq, SUM(CASE WHEN seq IS NULL THEN 1 ELSE 0 END) AS unsealed
			FROM events WHERE request_id IN ? GROUP BY request_id`, ids[start:min(start+batch, len(ids))]).Scan(&trails).Error; err != nil {
			return nil, wrap("read requests' trails", err)
		}
		for _, tr := range trails {
			if r, ok := out[tr.RequestID]; ok {
				r.LastSeq, r.Unsealed = tr.LastSeq.Int64, tr.Unsealed > 0
				out[tr.RequestID] = r
			}
		}
	}
	return out, nil
}

// Unsealed counts the events the sealer has not reached yet.
func (s *DB) Unsealed(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var n int64
	err := s.rdb.WithContext(ctx).Raw(`SELECT COUNT(*) FROM events WHERE seq IS NULL`).Scan(&n).Error
	return n, wrap("count unsealed events", err)
}

// anyTime scans a time that a driver may hand over as a time.Time or, from
// SQLite's compound selects (which lose the column's declared type), as
// text; NULL is the zero time.
type anyTime struct{ t time.Time }

func (a *anyTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		a.t = time.Time{}
	case time.Time:
		a.t = x.UTC()
	case string:
		return a.parse(x)
	case []byte:
		return a.parse(string(x))
	default:
		return fmt.Errorf("a time stored as %T", v)
	}
	return nil
}

// sqliteTimes are the layouts go-sqlite3 writes and reads.
var sqliteTimes = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

func (a *anyTime) parse(s string) error {
	for _, l := range sqliteTimes {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			a.t = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("%q is not a time", s)
}

// Stray returns the smallest seq of a sealed event the walk cannot read as
// a link of its own (audit.Source).
func (s *DB) Stray(ctx context.Context) (int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var seq sql.NullInt64
	if err := s.rdb.WithContext(ctx).Raw(qStray).Row().Scan(&seq); err != nil {
		return 0, false, wrap("look for events outside the chain", err)
	}
	return seq.Int64, seq.Valid, nil
}

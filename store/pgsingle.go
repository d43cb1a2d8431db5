package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// On PostgreSQL the multi-statement write transactions of Create,
// Transition and FinishCard are each sent as one statement with
// data-modifying CTEs: one round trip instead of BEGIN, n statements and
// COMMIT, and a single statement is atomic on its own. The CTEs run on one
// snapshot, so each writes a row at most once; foreign keys are checked at
// the end of the statement. SQLite keeps the transactions.
//
// These statements, and the card claim, run through database/sql, not
// gorm: gorm's Raw(...).Scan formats every statement with its arguments
// for a trace recorder whatever the log level, which was a tenth of the
// server's CPU on PostgreSQL. pgx prepares and caches each statement per
// connection.

// pgQuery runs a statement written with ? placeholders on the write pool.
// Each statement text is numbered once: the texts are the static ones and
// the few shapes the builders make (by channel and event count, inline
// card, NOTIFY), so the cache stays small.
func (s *DB) pgQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	n, ok := numbered.Load(q)
	if !ok {
		n, _ = numbered.LoadOrStore(q, dollars(q))
	}
	return s.pool.QueryContext(ctx, n.(string), args...)
}

// numbered maps statement texts to their $-numbered form.
var numbered sync.Map

// dollars numbers a statement's ? placeholders as PostgreSQL's $1, $2, …,
// leaving quoted text alone.
func dollars(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 32)
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// createPG is Create's write on PostgreSQL: the request, its cards and its
// events, the last two only if the request was inserted. It reports whether
// the request was inserted.
func (s *DB) createPG(ctx context.Context, row *requestRow, channels []string, events []gate.Event, claim gate.Claim) (bool, []gate.Card, error) {
	var q strings.Builder
	args := row.insertArgs()
	q.WriteString(`WITH r AS (` + qInsertRequest + ` RETURNING id)`)
	if len(channels) > 0 {
		now := row.CreatedAt
		// The first claim.Max cards are leased to the caller at once.
		q.WriteString(`, c AS (INSERT INTO cards (request_id, channel, ref, want, have, attempts, last_error, abandoned,
			next_attempt_at, lease_until, lease_owner, updated_at)
			SELECT r.id, v.channel, '', ?::text, '', CASE WHEN v.n < ?::int THEN 1 ELSE 0 END, '', FALSE, ?::timestamptz,
				CASE WHEN v.n < ?::int THEN ?::timestamptz ELSE ?::timestamptz END,
				CASE WHEN v.n < ?::int THEN ?::text ELSE '' END, ?::timestamptz
			FROM r, (VALUES `)
		args = append(args, gate.CardPosted, claim.Max, now, claim.Max, utc(claim.Until), never, claim.Max, claim.Owner, now)
		for i, ch := range channels {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?::text, ?::int)")
			args = append(args, ch, i)
		}
		q.WriteString(`) AS v (channel, n) ORDER BY v.n RETURNING id, channel, lease_owner <> '' AS claimed)`)
	}
	if len(events) > 0 {
		q.WriteString(`, e AS (INSERT INTO events (request_id, at, type, actor, channel, detail)
			SELECT r.id, v.at, v.type, v.actor, v.channel, v.detail FROM r, (VALUES `)
		for i, e := range events {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?::timestamptz, ?::text, ?::text, ?::text, ?::text, ?::int)")
			args = append(args, utc(e.At), e.Type, e.Actor, e.Channel, e.Detail, i)
		}
		q.WriteString(`) AS v (at, type, actor, channel, detail, n) ORDER BY v.n)`)
	}
	if len(channels) > 0 {
		q.WriteString(` SELECT r.id, c.id AS card_id, c.channel, c.claimed FROM r LEFT JOIN c ON TRUE ORDER BY c.id`)
	} else {
		q.WriteString(` SELECT r.id, NULL::bigint AS card_id, NULL::text AS channel, FALSE AS claimed FROM r`)
	}
	rows, err := s.pgQuery(ctx, q.String(), args...)
	if err != nil {
		return false, nil, err
	}
	defer rows.Close()
	inserted := false
	var claimed []gate.Card
	for rows.Next() {
		var (
			id      string
			cardID  *int64
			channel *string
			claim   bool
		)
		if err := rows.Scan(&id, &cardID, &channel, &claim); err != nil {
			return false, nil, err
		}
		inserted = true
		if claim && cardID != nil && channel != nil {
			claimed = append(claimed, gate.Card{ID: *cardID, RequestID: id, Channel: *channel, Want: gate.CardPosted,
				Attempts: 1, UpdatedAt: row.CreatedAt})
		}
	}
	if err := rows.Err(); err != nil {
		return false, nil, err
	}
	return inserted, claimed, nil
}

// transitionPG is Transition on PostgreSQL. The cards UPDATE folds in the
// inline card's have = want (want being the new status), and the one
// events INSERT writes the transition's event and then, if the inline card
// was updated, its card_updated event, in that order.
func (s *DB) transitionPG(ctx context.Context, t gate.Transition) (*gate.Request, bool, error) {
	at := utc(t.At)
	pending := knownPending(t)
	q, args := transitionStatementPG(t, at, pending != nil, s.notify.Load())
	rows, err := s.pgQuery(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	var row *requestRow
	if pending != nil {
		took := rows.Next()
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, false, err
		}
		if took {
			return decided(pending, t, at), true, nil
		}
	} else if row, err = scanRequest(rows); err != nil {
		return nil, false, err
	}
	if row != nil {
		return row.toRequest(), true, nil
	}
	// Not pending, or on the wrong side of its deadline: the row as it
	// stands, for the caller to say why.
	if rows, err = s.get.QueryContext(ctx, t.ID); err != nil {
		return nil, false, err
	}
	if row, err = scanRequest(rows); err != nil {
		return nil, false, err
	}
	if row == nil {
		return nil, false, gate.Errorf(gate.ENOTFOUND, "no request %q", t.ID)
	}
	return row.toRequest(), false, nil
}

// transitionStatementPG is transitionPG's one statement and its arguments
// (? placeholders). known says the caller holds the pending row, so only
// the id is returned; notify is the NOTIFY channel, if any.
func transitionStatementPG(t gate.Transition, at time.Time, known bool, notify *string) (string, []any) {
	returning := requestColumns
	if known {
		returning = "id" // the row is known: see Transition.Pending
	}
	deadline := "expires_at > ?"
	if t.Kind == gate.AfterDeadline {
		deadline = "expires_at <= ?"
	}
	var mod *string
	if len(t.ModifiedArgs) > 0 {
		m := string(t.ModifiedArgs)
		mod = &m
	}
	to := string(t.To)
	ev := toEventRow(t.Event)
	args := []any{to, at, t.By, t.Via, t.Reason, mod, t.ID, at}
	var q strings.Builder
	// "status IS NOT DISTINCT FROM 'pending'" (status is NOT NULL, so it
	// means status = 'pending') keeps the planner on the primary key. With
	// "status = 'pending'", a generic plan made while few requests were
	// pending (a new database, a quiet hour's statistics) takes the
	// sweeper's partial index, pending rows by deadline, and pgx keeps that
	// plan: each verdict then scanned every pending request and every dead
	// entry earlier verdicts had left in that index, ~55 index entries a
	// verdict in the benchmark, thousands in a burst of waiting agents.
	q.WriteString(`WITH t AS (` + casSet + `
		WHERE id = ? AND status IS NOT DISTINCT FROM 'pending' AND ` + deadline + ` RETURNING ` + returning + `),
		c AS (UPDATE cards SET want = ?, attempts = 0, last_error = '', abandoned = FALSE, next_attempt_at = ?, updated_at = ?`)
	args = append(args, to, at, at)
	if t.InlineCard != "" {
		q.WriteString(`, have = CASE WHEN channel = ? AND have <> '' THEN ? ELSE have END
			WHERE request_id IN (SELECT id FROM t) RETURNING channel = ? AND have <> '' AS inline)`)
		args = append(args, t.InlineCard, to, t.InlineCard)
	} else {
		q.WriteString(` WHERE request_id IN (SELECT id FROM t) RETURNING FALSE AS inline)`)
	}
	q.WriteString(`, e AS (INSERT INTO events (request_id, at, type, actor, channel, detail)
		SELECT ?::text, ?::timestamptz, ?::text, ?::text, ?::text, ?::text FROM t`)
	args = append(args, ev.RequestID, ev.At, ev.Type, ev.Actor, ev.Channel, ev.Detail)
	if t.InlineCard != "" {
		q.WriteString(` UNION ALL SELECT ?::text, ?::timestamptz, ?::text, '', ?::text, ?::text WHERE EXISTS (SELECT 1 FROM c WHERE c.inline)`)
		args = append(args, t.ID, at, gate.EventUpdated, t.InlineCard, "card updated to "+to+" in the callback answer")
	}
	if ch := notify; ch != nil {
		// Delivered at commit; the listeners re-read the row.
		q.WriteString(`) SELECT t.* FROM t CROSS JOIN LATERAL (SELECT pg_notify(?, t.id)) n`)
		args = append(args, *ch)
	} else {
		q.WriteString(`) SELECT * FROM t`)
	}
	return q.String(), args
}

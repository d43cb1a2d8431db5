package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// The writes of a request's life cycle on SQLite, through the group-commit
// writer with statements prepared once. Every other write, and every read,
// goes through gorm.

const requestColumns = `id, status, tool_name, tool_args, requires_confirmation, summary, agent_id, user_id, session_id,
	tool_call_id, metadata, route, idempotency_key, channels, approvers, quorum, on_timeout, created_at, expires_at,
	decided_at, decided_by, decided_via, reason, modified_args`

const (
	qInsertRequest = `INSERT INTO requests (` + requestColumns + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`
	qInsertCard = `INSERT INTO cards (request_id, channel, ref, want, have, attempts, last_error, abandoned,
	next_attempt_at, lease_until, lease_owner, updated_at) VALUES (?, ?, '', ?, '', ?, '', FALSE, ?, ?, ?, ?)`
	qInsertEvent = `INSERT INTO events (request_id, at, type, actor, channel, detail) VALUES (?, ?, ?, ?, ?, ?)`
	// The compare-and-set, before and after the deadline; the Known forms
	// return nothing (see Transition.Pending).
	qDecideKnown = casSet + ` WHERE id = ? AND status = 'pending' AND expires_at > ?`
	qExpireKnown = casSet + ` WHERE id = ? AND status = 'pending' AND expires_at <= ?`
	qDecide      = qDecideKnown + ` RETURNING ` + requestColumns
	qExpire      = qExpireKnown + ` RETURNING ` + requestColumns
	qRequest     = `SELECT ` + requestColumns + ` FROM requests WHERE id = ?`
	qCardsWant   = `UPDATE cards SET want = ?, attempts = 0, last_error = '', abandoned = FALSE, next_attempt_at = ?, updated_at = ?
	WHERE request_id = ?`
	qCardInline = `UPDATE cards SET have = want, updated_at = ? WHERE request_id = ? AND channel = ? AND have <> ''`
	qClaimCards = claimSet + `id IN (` + claimDue + `)` + claimReturning
	qFinishCard = `UPDATE cards SET ` + finishSet + ` WHERE id = ? AND lease_owner = ? RETURNING ` + finishDue
)

// casSet is what a transition sets, on both drivers; its arguments are the
// status, decided_at, decided_by, decided_via, reason and modified_args.
const casSet = `UPDATE requests SET status = ?, decided_at = ?, decided_by = ?, decided_via = ?, reason = ?, modified_args = ?`

// A card's outcome, and whether it is still due: lagging behind its
// request (which ended while it was posted) and free to be worked on now.
const (
	finishSet = `have = ?, ref = CASE WHEN ? <> '' THEN ? ELSE ref END, last_error = ?, abandoned = ?, next_attempt_at = ?,
	lease_until = ?, lease_owner = '', attempts = CASE WHEN ? THEN 0 ELSE attempts END, updated_at = ?`
	finishDue = `want <> have AND abandoned = FALSE AND next_attempt_at <= ?`
)

// The claim of due card work. PostgreSQL's skips the rows other replicas
// hold, and the outer WHERE re-checks the lease; SQLite's single writer
// runs the statement alone. Each is written so that the rows are updated
// through the primary key: on PostgreSQL, with "id IN (subquery)" a
// generic plan on analysed tables joined the whole cards table (a
// sequential scan per claim) to the few due ids, and on SQLite the outer
// re-check made it walk every due card's index entry.
const (
	claimSet = `UPDATE cards SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 WHERE `
	claimDue = `SELECT id FROM cards WHERE want <> have AND abandoned = FALSE AND next_attempt_at <= ? AND lease_until <= ?
		ORDER BY next_attempt_at LIMIT ?`
	claimReturning = `
	RETURNING id, request_id, channel, ref, want, have, attempts, last_error, abandoned, next_attempt_at, lease_until, lease_owner, updated_at`
	claimCardsPG = claimSet + `lease_until <= ? AND want <> have AND abandoned = FALSE AND id = ANY(ARRAY(` + claimDue +
		` FOR UPDATE SKIP LOCKED))` + claimReturning
)

// hotQueries are prepared on the write connection at open.
var hotQueries = []string{qInsertRequest, qInsertCard, qInsertEvent, qDecide, qExpire, qDecideKnown, qExpireKnown, qRequest, qCardsWant,
	qCardInline, qClaimCards, qFinishCard}

func insertEvent(t *wtx, e *eventRow) error {
	_, err := t.exec(qInsertEvent, e.RequestID, e.At, e.Type, e.Actor, e.Channel, e.Detail)
	return err
}

// createSQLite is Create's write: the request and, if it was inserted,
// its cards and events.
func (s *DB) createSQLite(ctx context.Context, row *requestRow, channels []string, events []gate.Event, claim gate.Claim) (bool, []gate.Card, error) {
	created := false
	var claimed []gate.Card
	err := s.w.do(ctx, func(t *wtx) error {
		created, claimed = false, claimed[:0]
		res, err := t.exec(qInsertRequest, row.insertArgs()...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		now := row.CreatedAt
		for i, ch := range channels {
			attempts, until, owner := 0, never, ""
			if i < claim.Max {
				attempts, until, owner = 1, utc(claim.Until), claim.Owner
			}
			res, err := t.exec(qInsertCard, row.ID, ch, gate.CardPosted, attempts, now, until, owner, now)
			if err != nil {
				return err
			}
			if owner != "" {
				id, err := res.LastInsertId()
				if err != nil {
					return err
				}
				claimed = append(claimed, gate.Card{ID: id, RequestID: row.ID, Channel: ch, Want: gate.CardPosted, Attempts: 1, UpdatedAt: now})
			}
		}
		for _, e := range events {
			e.RequestID = row.ID
			if err := insertEvent(t, toEventRow(e)); err != nil {
				return err
			}
		}
		created = true
		return nil
	})
	if err != nil {
		return false, nil, err // leases of a rolled-back write lease nothing
	}
	return created, claimed, nil
}

// transitionSQLite is Transition's compare-and-set and, when it took, the
// event and the cards' new want, in one write.
func (s *DB) transitionSQLite(ctx context.Context, t gate.Transition) (*gate.Request, bool, error) {
	var row *requestRow
	var took *gate.Request
	changed := false
	at := utc(t.At)
	q, known := qDecide, qDecideKnown
	if t.Kind == gate.AfterDeadline {
		q, known = qExpire, qExpireKnown
	}
	pending := knownPending(t)
	var mod *string
	if len(t.ModifiedArgs) > 0 {
		m := string(t.ModifiedArgs)
		mod = &m
	}
	err := s.w.do(ctx, func(tx *wtx) error {
		changed, row, took = false, nil, nil
		if pending != nil {
			// The row is known: the statement need return nothing.
			res, err := tx.exec(known, string(t.To), at, t.By, t.Via, t.Reason, mod, t.ID, at)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if n == 1 {
				took = decided(pending, t, at)
			}
		} else {
			rows, err := tx.query(q, string(t.To), at, t.By, t.Via, t.Reason, mod, t.ID, at)
			if err != nil {
				return err
			}
			if row, err = scanRequest(rows); err != nil {
				return err
			}
		}
		if row == nil && took == nil {
			// Not pending, or on the wrong side of its deadline: read it
			// as it stands, for the caller to say why.
			rows, err := tx.query(qRequest, t.ID)
			if err != nil {
				return err
			}
			if row, err = scanRequest(rows); err != nil {
				return err
			}
			if row == nil {
				return gate.Errorf(gate.ENOTFOUND, "no request %q", t.ID)
			}
			return nil
		}
		if err := insertEvent(tx, toEventRow(t.Event)); err != nil {
			return err
		}
		if _, err := tx.exec(qCardsWant, string(t.To), at, at, t.ID); err != nil {
			return err
		}
		if t.InlineCard != "" {
			res, err := tx.exec(qCardInline, at, t.ID, t.InlineCard)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				e := gate.Event{RequestID: t.ID, At: at, Type: gate.EventUpdated, Channel: t.InlineCard, Detail: "card updated to " + string(t.To) + " in the callback answer"}
				if err := insertEvent(tx, toEventRow(e)); err != nil {
					return err
				}
			}
		}
		changed = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if took == nil {
		took = row.toRequest()
	}
	return took, changed, nil
}

// knownPending is the transition's known pending row (Transition.Pending),
// if it has a usable one.
func knownPending(t gate.Transition) *gate.Request {
	if p := t.Pending; p != nil && p.ID == t.ID && p.Status == gate.StatusPending {
		return p
	}
	return nil
}

// decided is the request a compare-and-set that took leaves, built from the
// pending row it started from: it sets these columns and no others. at is
// the stored (UTC, microsecond) decision time.
func decided(pending *gate.Request, t gate.Transition, at time.Time) *gate.Request {
	r := *pending
	r.Status, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason = t.To, &at, t.By, t.Via, t.Reason
	r.ModifiedArgs = nil
	if len(t.ModifiedArgs) > 0 {
		r.ModifiedArgs = append(json.RawMessage(nil), t.ModifiedArgs...)
	}
	return &r
}

// claimSQLite is ClaimCards on SQLite.
func (s *DB) claimSQLite(ctx context.Context, now time.Time, lease time.Duration, owner string, limit int) ([]cardRow, error) {
	var out []cardRow
	err := s.w.do(ctx, func(t *wtx) error {
		out = out[:0]
		rows, err := t.query(qClaimCards, owner, now.Add(lease), now, now, limit)
		if err != nil {
			return err
		}
		out, err = scanCards(rows, out)
		return err
	})
	return out, err
}

// rowReader is *sql.Rows or the writer's *rawRows.
type rowReader interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// scanCards appends the claimed cards in rows to out and closes rows.
func scanCards(rows rowReader, out []cardRow) ([]cardRow, error) {
	defer rows.Close()
	for rows.Next() {
		var c cardRow
		if err := rows.Scan(&c.ID, &c.RequestID, &c.Channel, &c.Ref, &c.Want, &c.Have, &c.Attempts, &c.LastError,
			&c.Abandoned, &c.NextAttemptAt, &c.LeaseUntil, &c.LeaseOwner, &c.UpdatedAt); err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// finishSQLite is FinishCard on SQLite: the event (written whether or not
// the claim is still ours) and the card.
func (s *DB) finishSQLite(ctx context.Context, r gate.CardResult, next, at time.Time) ([]bool, error) {
	var due []bool
	err := s.w.do(ctx, func(t *wtx) error {
		due = due[:0]
		if r.Event != nil {
			if err := insertEvent(t, toEventRow(*r.Event)); err != nil {
				return err
			}
		}
		rows, err := t.query(qFinishCard, r.Have, r.Ref, r.Ref, r.Err, r.Abandoned, next, never, r.Err == "", at, r.ID, r.Owner, at)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d bool
			if err := rows.Scan(&d); err != nil {
				return err
			}
			due = append(due, d)
		}
		return rows.Err()
	})
	return due, err
}

// addEventSQLite is AddEvent on SQLite.
func (s *DB) addEventSQLite(ctx context.Context, e gate.Event) error {
	return s.w.do(ctx, func(t *wtx) error { return insertEvent(t, toEventRow(e)) })
}

// insertArgs are qInsertRequest's arguments: the row's columns in
// requestColumns' order, as scanRequest reads them back.
func (r *requestRow) insertArgs() []any {
	return []any{r.ID, r.Status, r.ToolName, r.ToolArgs, r.RequiresConfirmation, r.Summary, r.AgentID,
		r.UserID, r.SessionID, r.ToolCallID, r.Metadata, r.Route, r.IdempotencyKey, r.Channels, r.Approvers,
		r.Quorum, r.OnTimeout, r.CreatedAt, r.ExpiresAt, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason,
		r.ModifiedArgs}
}

// scanRequest reads at most one request from rows and closes them.
func scanRequest(rows rowReader) (*requestRow, error) {
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r requestRow
	if err := rows.Scan(&r.ID, &r.Status, &r.ToolName, &r.ToolArgs, &r.RequiresConfirmation, &r.Summary, &r.AgentID,
		&r.UserID, &r.SessionID, &r.ToolCallID, &r.Metadata, &r.Route, &r.IdempotencyKey, &r.Channels, &r.Approvers,
		&r.Quorum, &r.OnTimeout, &r.CreatedAt, &r.ExpiresAt, &r.DecidedAt, &r.DecidedBy, &r.DecidedVia, &r.Reason,
		&r.ModifiedArgs); err != nil {
		return nil, err
	}
	if rows.Next() {
		return nil, errors.New("more than one request with one id")
	}
	return &r, rows.Err()
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// The request life cycle's statements: every write of a request's life
// (create, transition, vote, event, card claim and outcome) and the read by
// id. They are prepared once per connection by database/sql and run in its
// transactions. Compiling a statement afresh, and gorm's reflection around
// it, cost more than the write itself on SQLite: a verdict's transaction
// took 800 µs through gorm and takes under 300 µs prepared, which is what
// keeps a verdict's p50 under 1 ms (README, "Speed mechanisms").
//
// One text serves both drivers: placeholders are PostgreSQL's $1, $2, …,
// which SQLite reads as parameters numbered in order of first appearance,
// so every statement must use $n before $n+1 (TestStatementPlaceholders).
const requestColumns = `id, status, tool_name, tool_args, requires_confirmation, summary, agent_id, user_id, session_id,
	tool_call_id, metadata, route, caller, idempotency_key, channels, approvers, quorum, on_timeout, created_at, expires_at,
	decided_at, decided_by, decided_via, reason, modified_args, remember_seconds, remember_any, person, plan, next_step_at, mcp_server,
	confirmation_sent`

// casPending is the compare-and-set's test of a pending row. Written as
// "status IS NOT DISTINCT FROM 'pending'" (status is NOT NULL, so it means
// status = 'pending') it keeps PostgreSQL's generic plans on the primary
// key: with "status = 'pending'" a plan made while few requests were
// pending takes the sweeper's partial index of pending rows by deadline,
// and each verdict then scans every pending request (TestPostgresPlans).
const casPending = `status IS NOT DISTINCT FROM 'pending'`

const (
	qGetRequest    = `SELECT ` + requestColumns + ` FROM requests WHERE id = $1`
	qGetByKey      = `SELECT ` + requestColumns + ` FROM requests WHERE caller = $1 AND idempotency_key = $2`
	qInsertRequest = `INSERT INTO requests (` + requestColumns + `, args_text) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
		$14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33) ON CONFLICT DO NOTHING`
	// qInsertCard adds a card to post; one that exists (a step taken
	// twice would try) is left alone.
	qInsertCard = `INSERT INTO cards (request_id, channel, kind, target, step, ref, want, have, attempts, last_error, abandoned,
		next_attempt_at, lease_until, lease_owner, updated_at) VALUES ($1, $2, $3, $4, $5, '', $6, '', 0, '', FALSE, $7, $8, '', $7)
		ON CONFLICT DO NOTHING`
	qInsertEvent = `INSERT INTO events (request_id, at, type, actor, channel, detail) VALUES ($1, $2, $3, $4, $5, $6)`
	// The transition: the row read under the transaction's lock (on
	// PostgreSQL, FOR UPDATE; SQLite's write transaction holds the whole
	// database), then the compare-and-set before or after the deadline.
	qLockSQLite   = qGetRequest
	qLockPostgres = qGetRequest + ` FOR UPDATE`
	casSet        = `UPDATE requests SET status = $1, decided_at = $2, decided_by = $3, decided_via = $4, reason = $5, modified_args = $6
		WHERE id = $7 AND ` + casPending
	qDecide = casSet + ` AND expires_at > $2 RETURNING ` + requestColumns
	qExpire = casSet + ` AND expires_at <= $2 RETURNING ` + requestColumns
	// qFinalCards queues the final update of a request's cards. A reminder
	// is never updated: one that went out stays as it is, and one that did
	// not is not needed any more. A card not posted yet keeps its count of
	// claims: one that was tried may be on the platform (gate's workCard).
	qFinalCards = `UPDATE cards SET want = $1, attempts = CASE WHEN have = '' THEN attempts ELSE 0 END, last_error = '', abandoned = FALSE,
		next_attempt_at = $2, updated_at = $2
		WHERE request_id = $3 AND (kind <> 'reminder' OR have = '')`
	// qInlineCard marks the card a callback's answer replaced (by its
	// reference; without one, the channel's own card) as showing the verdict.
	qInlineCard = `UPDATE cards SET have = want WHERE request_id = $1 AND channel = $2 AND have <> '' AND kind <> 'reminder'
		AND (ref = $3 OR ($3 = '' AND kind = 'card'))`
	qInsertVote    = `INSERT INTO votes (request_id, actor, via, at, identities) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	qListVotes     = `SELECT actor, identities FROM votes WHERE request_id = $1`
	qCountOutcomes = `SELECT COUNT(*) FROM events WHERE request_id = $1 AND type IN ('` +
		gate.EventToolRan + `', '` + gate.EventToolFailed + `')`
	qNotify      = `SELECT pg_notify($1, $2)`
	qInsertGrant = `INSERT INTO grants (id, route, caller, tool, args_hash, given_by, given_via, request_id, created_at, expires_at, given_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	grantColumns = `id, route, caller, tool, args_hash, given_by, given_via, request_id, created_at, expires_at, revoked_at, revoked_by, given_ids`
	// qFindGrant finds the grant of a call: for its arguments and place on
	// a route that remembers the same arguments, for any (gate.AnyArgsPrefix
	// and the hash of its place and what the route matches) on one that
	// remembers any. A grant for any arguments, given before a reload
	// narrowed the route or changed what it matches, covers nothing.
	qFindGrant = `SELECT ` + grantColumns + ` FROM grants WHERE caller = $1 AND route = $2 AND tool = $3 AND args_hash = $4
		AND expires_at > $5 AND revoked_at IS NULL ORDER BY expires_at DESC LIMIT 1`
	qRevokeGrant = `UPDATE grants SET revoked_at = $1, revoked_by = $2 WHERE id = $3 AND revoked_at IS NULL AND expires_at > $1 RETURNING ` + grantColumns
	// qGrantActive finds a grant still active at $2, for a request Create
	// records as approved by it; on PostgreSQL FOR SHARE waits for a
	// revocation holding the row and then reads the revoked row.
	qGrantActiveSQLite   = `SELECT id FROM grants WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2`
	qGrantActivePostgres = qGrantActiveSQLite + ` FOR SHARE`
	// qCountCall adds a call to a rate counter's window, atomically on
	// both drivers, and returns the window's count.
	qCountCall = `INSERT INTO rate_counts (key, window_start, count) VALUES ($1, $2, 1)
		ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counts.count + 1 RETURNING count`
	qDropWindows = `DELETE FROM rate_counts WHERE key = $1 AND window_start < $2`
	// The claim of due card work, one statement. On PostgreSQL the inner
	// SELECT skips the rows another replica holds (FOR UPDATE SKIP
	// LOCKED), so no two workers ever hold one card; SQLite's single
	// writer gives the same. PostgreSQL reaches the rows through
	// "id = ANY(ARRAY(...))": with "id IN (subquery)" a generic plan on
	// analysed tables joined the whole cards table to the few due ids.
	claimSet = `UPDATE cards SET lease_owner = $1, lease_until = $2, attempts = attempts + 1 WHERE `
	claimDue = `SELECT id FROM cards WHERE want <> have AND abandoned = FALSE AND next_attempt_at <= $3 AND lease_until <= $3
		ORDER BY next_attempt_at LIMIT $4`
	claimReturning = ` RETURNING ` + cardColumns
	qClaimSQLite   = claimSet + `id IN (` + claimDue + `)` + claimReturning
	qClaimPostgres = claimSet + `id = ANY(ARRAY(` + claimDue + ` FOR UPDATE SKIP LOCKED))` + claimReturning
	// A card's outcome, if the claim is still the caller's, and whether
	// the card is still due (its request ended while it was posted).
	qFinishCard = `UPDATE cards SET have = $1, ref = CASE WHEN $2 <> '' THEN $2 ELSE ref END, last_error = $3, abandoned = $4,
		next_attempt_at = $5, lease_until = $6, lease_owner = '', attempts = CASE WHEN $7 THEN 0 ELSE attempts END, updated_at = $8
		WHERE id = $9 AND lease_owner = $10
		RETURNING want <> have AND abandoned = FALSE AND next_attempt_at <= $8`
)

// lifecycleStatements lists the statements each driver prepares.
func lifecycleStatements(driver string) []string {
	common := []string{qGetRequest, qInsertRequest, qInsertCard, qInsertEvent, qDecide, qExpire, qFinalCards,
		qInlineCard, qInsertVote, qListVotes, qCountOutcomes, qFinishCard, qInsertGrant, qRevokeGrant, qCountCall, qDropWindows}
	if driver == Postgres {
		return append(common, qLockPostgres, qClaimPostgres, qNotify, qGrantActivePostgres)
	}
	return append(common, qLockSQLite, qClaimSQLite, qSavepoint, qRollbackTo, qRelease, qGrantActiveSQLite)
}

// prepared holds the life cycle's statements, on the write pool and (for
// the reads by id and by key) on the read pool.
type prepared struct {
	w         map[string]*sql.Stmt
	read      *sql.Stmt // qGetRequest on the read pool
	readByKey *sql.Stmt // qGetByKey on the read pool
	findGrant *sql.Stmt // qFindGrant on the read pool: a read of committed grants, off SQLite's one writer
}

func prepare(ctx context.Context, driver string, write, read *sql.DB) (*prepared, error) {
	p := &prepared{w: map[string]*sql.Stmt{}}
	for _, q := range lifecycleStatements(driver) {
		st, err := write.PrepareContext(ctx, q)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("store: prepare %.60q: %w", q, err)
		}
		p.w[q] = st
	}
	var err error
	if p.read, err = read.PrepareContext(ctx, qGetRequest); err != nil {
		p.close()
		return nil, fmt.Errorf("store: prepare the read by id: %w", err)
	}
	if p.readByKey, err = read.PrepareContext(ctx, qGetByKey); err != nil {
		p.close()
		return nil, fmt.Errorf("store: prepare the read by key: %w", err)
	}
	if p.findGrant, err = read.PrepareContext(ctx, qFindGrant); err != nil {
		p.close()
		return nil, fmt.Errorf("store: prepare the grant lookup: %w", err)
	}
	return p, nil
}

func (p *prepared) close() {
	for _, st := range p.w {
		st.Close()
	}
	if p.read != nil {
		p.read.Close()
	}
	if p.readByKey != nil {
		p.readByKey.Close()
	}
	if p.findGrant != nil {
		p.findGrant.Close()
	}
}

// wtx is a life-cycle write transaction.
type wtx struct {
	ctx context.Context
	tx  *sql.Tx
	p   *prepared
}

func (t *wtx) exec(q string, args ...any) (sql.Result, error) {
	return t.tx.StmtContext(t.ctx, t.p.w[q]).ExecContext(t.ctx, args...)
}

func (t *wtx) query(q string, args ...any) (*sql.Rows, error) {
	return t.tx.StmtContext(t.ctx, t.p.w[q]).QueryContext(t.ctx, args...)
}

// count runs a prepared SELECT COUNT(*).
func (t *wtx) count(q string, args ...any) (n int, err error) {
	err = t.tx.StmtContext(t.ctx, t.p.w[q]).QueryRowContext(t.ctx, args...).Scan(&n)
	return n, err
}

// grantActive says whether a grant is active at at, under the
// transaction: on PostgreSQL FOR SHARE waits for a revocation in flight
// and then reads it; SQLite's write transaction holds the whole database.
func (t *wtx) grantActive(driver, id string, at time.Time) (bool, error) {
	q := qGrantActiveSQLite
	if driver == Postgres {
		q = qGrantActivePostgres
	}
	rows, err := t.query(q, id, at)
	if err != nil {
		return false, err
	}
	return firstRow(rows, func() error { return nil })
}

// lockRequest reads a request under the transaction's lock (on PostgreSQL,
// FOR UPDATE; SQLite's write transaction holds the whole database); nil
// when there is none.
func (t *wtx) lockRequest(driver, id string) (*gate.Request, error) {
	lock := qLockSQLite
	if driver == Postgres {
		lock = qLockPostgres
	}
	rows, err := t.query(lock, id)
	if err != nil {
		return nil, err
	}
	row, err := scanRequest(rows)
	if err != nil || row == nil {
		return nil, err
	}
	return row.toRequest(), nil
}

// addCards inserts cards to post for a request, as of at.
func (t *wtx) addCards(requestID string, cards []gate.Card, at time.Time) error {
	for _, c := range cards {
		kind := c.Kind
		if kind == "" {
			kind = gate.CardChannel
		}
		if _, err := t.exec(qInsertCard, requestID, c.Channel, kind, c.Target, c.Step, gate.CardPosted, utc(at), never); err != nil {
			return err
		}
	}
	return nil
}

func (t *wtx) addEvents(requestID string, events []gate.Event) error {
	for _, e := range events {
		if _, err := t.exec(qInsertEvent, requestID, utc(e.At), e.Type, e.Actor, e.Channel, e.Detail); err != nil {
			return err
		}
	}
	return nil
}

// write runs fn in one transaction on the write pool: on SQLite, a savepoint
// of the group commit's transaction on its one write connection (BEGIN
// IMMEDIATE per the DSN; groupcommit.go), on PostgreSQL a transaction of
// its own. The connection always goes back with no transaction open: an
// error or a panic in fn rolls back.
func (s *DB) write(ctx context.Context, fn func(t *wtx) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if s.group != nil {
		return s.group.write(ctx, fn)
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(&wtx{ctx: ctx, tx: tx, p: s.prep}); err != nil {
		return err
	}
	return tx.Commit()
}

// firstRow scans the first row of rows with scan, and closes them; found
// is false when there is none. A statement that fails as it steps (SQLite
// reports a full disk or an I/O error there, after the query returned) is
// its error, never "no row".
func firstRow(rows *sql.Rows, scan func() error) (found bool, err error) {
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	if err := scan(); err != nil {
		return true, err
	}
	return true, rows.Close()
}

// scanRequest reads one row of requestColumns, or nil when there is none.
func scanRequest(rows *sql.Rows) (*requestRow, error) {
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r requestRow
	if err := rows.Scan(r.scanTargets()...); err != nil {
		return nil, err
	}
	return &r, rows.Close()
}

// scanTargets are the fields a row of requestColumns scans into.
func (r *requestRow) scanTargets() []any {
	return []any{&r.ID, &r.Status, &r.ToolName, &r.ToolArgs, &r.RequiresConfirmation, &r.Summary, &r.AgentID,
		&r.UserID, &r.SessionID, &r.ToolCallID, &r.Metadata, &r.Route, &r.Caller, &r.IdempotencyKey, &r.Channels,
		&r.Approvers, &r.Quorum, &r.OnTimeout, &r.CreatedAt, &r.ExpiresAt, &r.DecidedAt, &r.DecidedBy, &r.DecidedVia,
		&r.Reason, &r.ModifiedArgs, &r.RememberSeconds, &r.RememberAny, &r.Person, &r.Plan, &r.NextStepAt, &r.MCPServer,
		&r.ConfirmationSent}
}

func (r *requestRow) insertArgs() []any {
	return []any{r.ID, r.Status, r.ToolName, r.ToolArgs, r.RequiresConfirmation, r.Summary, r.AgentID, r.UserID,
		r.SessionID, r.ToolCallID, r.Metadata, r.Route, r.Caller, r.IdempotencyKey, r.Channels, r.Approvers, r.Quorum,
		r.OnTimeout, r.CreatedAt, r.ExpiresAt, r.DecidedAt, r.DecidedBy, r.DecidedVia, r.Reason, r.ModifiedArgs,
		r.RememberSeconds, r.RememberAny, r.Person, r.Plan, r.NextStepAt, r.MCPServer, r.ConfirmationSent, r.ArgsText}
}

// Create inserts a request, its first events and, when it is pending, its
// cards, in one transaction. An idempotency key its caller already used
// inserts nothing and returns the caller's request that holds it.
func (s *DB) Create(ctx context.Context, r *gate.Request, events []gate.Event) (*gate.Request, bool, error) {
	row := toRow(r)
	created := false
	err := s.write(ctx, func(t *wtx) error {
		if r.ByGrant != "" {
			active, err := t.grantActive(s.driver, r.ByGrant, row.CreatedAt)
			if err != nil {
				return err
			}
			if !active {
				return gate.Errorf(gate.EUNAVAILABLE, "grant %s was revoked or ended as this call used it: ask again", r.ByGrant)
			}
		}
		res, err := t.exec(qInsertRequest, row.insertArgs()...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		created = true
		if r.Status == gate.StatusPending {
			cards := r.NewCards
			if cards == nil {
				for _, ch := range r.Channels {
					cards = append(cards, gate.Card{Channel: ch, Kind: gate.CardChannel})
				}
			}
			if err := t.addCards(r.ID, cards, row.CreatedAt); err != nil {
				return err
			}
		}
		return t.addEvents(r.ID, events)
	})
	if err != nil {
		return nil, false, wrap("create request", err)
	}
	if created {
		return row.toRequest(), true, nil
	}
	if r.IdempotencyKey == "" {
		return nil, false, wrap("create request", errors.New("insert ignored without an idempotency key"))
	}
	existing, err := s.ByKey(ctx, r.Caller, r.IdempotencyKey)
	if gate.ErrorCode(err) == gate.ENOTFOUND {
		err = wrap("read request by idempotency key", errors.New("the request holding the idempotency key is gone"))
	}
	return existing, false, err
}

// ByKey returns the request a caller made under an idempotency key. It
// reads on the read pool: the row it looks for is committed (Create reads
// it after its insert found the key taken).
func (s *DB) ByKey(ctx context.Context, caller, key string) (*gate.Request, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rows, err := s.prep.readByKey.QueryContext(ctx, caller, key)
	if err != nil {
		return nil, wrap("read request by idempotency key", err)
	}
	row, err := scanRequest(rows)
	if err != nil {
		return nil, wrap("read request by idempotency key", err)
	}
	if row == nil {
		return nil, gate.Errorf(gate.ENOTFOUND, "no request under key %q", key)
	}
	return row.toRequest(), nil
}

// KeyStates: see gate.Store. It reads on the read pool, as ByKey does, and
// only the columns the walk reads: the requests along one call's keys hold
// the same arguments, up to 1 MiB each.
func (s *DB) KeyStates(ctx context.Context, caller string, keys []string) (map[string]gate.KeyState, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out := make(map[string]gate.KeyState, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var rows []struct {
		IdempotencyKey string
		Status         string
		DecidedAt      *time.Time
		ToolCallID     string
	}
	err := s.rdb.WithContext(ctx).Model(&requestRow{}).Select("idempotency_key", "status", "decided_at", "tool_call_id").
		Where("caller = ? AND idempotency_key IN ?", caller, keys).Scan(&rows).Error
	if err != nil {
		return nil, wrap("read requests by idempotency key", err)
	}
	for _, r := range rows {
		ks := gate.KeyState{Status: gate.Status(r.Status), ToolCallID: r.ToolCallID}
		if r.DecidedAt != nil {
			t := r.DecidedAt.UTC()
			ks.DecidedAt = &t
		}
		out[r.IdempotencyKey] = ks
	}
	return out, nil
}

// Get returns one request.
func (s *DB) Get(ctx context.Context, id string) (*gate.Request, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rows, err := s.prep.read.QueryContext(ctx, id)
	if err != nil {
		return nil, wrap("get request", err)
	}
	row, err := scanRequest(rows)
	if err != nil {
		return nil, wrap("get request", err)
	}
	if row == nil {
		return nil, gate.Errorf(gate.ENOTFOUND, "no request %q", id)
	}
	return row.toRequest(), nil
}

// Transition applies a gate.Transition in one transaction.
func (s *DB) Transition(ctx context.Context, t gate.Transition) (gate.Outcome, error) {
	var out gate.Outcome
	var refused error
	at := utc(t.At)
	err := s.write(ctx, func(w *wtx) error {
		out, refused = gate.Outcome{}, nil
		r, err := w.lockRequest(s.driver, t.ID)
		if err != nil {
			return err
		}
		if r == nil {
			return gate.Errorf(gate.ENOTFOUND, "no request %q", t.ID)
		}
		out.Request = r
		if t.Admit != nil {
			if refused = t.Admit(r); refused != nil {
				return nil // nothing written
			}
		}
		inTime := at.Before(r.ExpiresAt)
		if t.Kind == gate.AfterDeadline {
			inTime = !inTime
		}
		if r.Status != gate.StatusPending || !inTime {
			return nil
		}
		if t.Vote != nil && r.Quorum > 1 {
			if met, err := w.vote(t, at, r.Quorum, &out); err != nil || !met {
				return err
			}
		}
		cas := qDecide
		if t.Kind == gate.AfterDeadline {
			cas = qExpire
		}
		var mod *string
		if len(t.ModifiedArgs) > 0 {
			m := string(t.ModifiedArgs)
			mod = &m
		}
		rows, err := w.query(cas, string(t.To), at, t.By, t.Via, t.Reason, mod, t.ID)
		if err != nil {
			return err
		}
		row, err := scanRequest(rows)
		if err != nil || row == nil {
			return err // none: the lock makes it unreachable; the compare-and-set is a second lock on the door
		}
		out.Request, out.Changed = row.toRequest(), true
		if _, err := w.exec(qFinalCards, string(t.To), at, t.ID); err != nil {
			return err
		}
		events := []gate.Event{t.Event}
		gate.SealVerdict(&events[0], out.Request)
		if t.Grant != nil {
			g, e := t.Grant(out.Request)
			ids, err := json.Marshal(g.GivenIDs)
			if err != nil {
				return err
			}
			if _, err := w.exec(qInsertGrant, g.ID, g.Route, g.Caller, g.Tool, g.ArgsHash, g.GivenBy, g.GivenVia, g.RequestID,
				utc(g.CreatedAt), utc(g.ExpiresAt), string(ids)); err != nil {
				return err
			}
			events = append(events, e)
		}
		if t.InlineCard != "" {
			// The callback's answer already showed the final card.
			res, err := w.exec(qInlineCard, t.ID, t.InlineCard, t.InlineRef)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				events = append(events, gate.Event{At: at, Type: gate.EventUpdated, Channel: t.InlineCard,
					Detail: "card updated to " + string(t.To) + " in the callback answer"})
			}
		}
		if err := w.addEvents(t.ID, events); err != nil {
			return err
		}
		if ch := s.notify.Load(); ch != nil {
			// Delivered when this transaction commits; other replicas'
			// waiters then read the row.
			_, err = w.exec(qNotify, *ch, t.ID)
		}
		return err
	})
	if err != nil {
		if gate.ErrorCode(err) == gate.ENOTFOUND {
			return gate.Outcome{}, err
		}
		return gate.Outcome{}, wrap("transition", err)
	}
	return out, refused
}

// vote records an approval toward a quorum of the row the transaction
// holds, and says whether the votes now meet it. The gate's Tally counts
// the approvers among the votes (one approver counts once, by the people
// in force now); without it, votes count by voter. A re-tap by someone
// who already voted still completes a quorum that is met: a request whose
// votes are in must not be left to expire.
func (w *wtx) vote(t gate.Transition, at time.Time, quorum int, out *gate.Outcome) (bool, error) {
	rows, err := w.query(qListVotes, t.ID)
	if err != nil {
		return false, err
	}
	var earlier []gate.Cast
	for rows.Next() {
		var c gate.Cast
		var ids string
		if err := rows.Scan(&c.Voter, &ids); err != nil {
			rows.Close()
			return false, err
		}
		if ids != "" {
			if err := json.Unmarshal([]byte(ids), &c.Identities); err != nil {
				rows.Close()
				return false, fmt.Errorf("vote of %s: identities: %w", c.Voter, err)
			}
		}
		earlier = append(earlier, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	mine := gate.Cast{Voter: t.Vote.Voter, Identities: t.Vote.Identities}
	tally := t.Vote.Tally
	if tally == nil {
		tally = func(earlier []gate.Cast) (bool, int) {
			if slices.ContainsFunc(earlier, func(c gate.Cast) bool { return c.Voter == mine.Voter }) {
				return false, len(earlier)
			}
			return true, len(earlier) + 1
		}
	}
	fresh, votes := tally(earlier)
	out.Fresh, out.Votes = fresh, votes
	if !fresh {
		return votes >= quorum, nil
	}
	ids, err := json.Marshal(mine.Identities)
	if err != nil {
		return false, err
	}
	key := mine.Voter
	if slices.ContainsFunc(earlier, func(c gate.Cast) bool { return c.Voter == key }) {
		// An earlier vote was counted for this person when an identity
		// of another was theirs (the tally tells them apart now): this
		// one is keyed by the identity it came from.
		key = t.Vote.Actor
	}
	res, err := w.exec(qInsertVote, t.ID, key, t.Vote.Via, at, string(ids))
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		// The same voter's row is there: Tally counted it as another.
		return false, fmt.Errorf("vote of %s: recorded already (%d rows), yet counted as fresh: %v", key, n, err)
	}
	detail := fmt.Sprintf("approval %d of %d", out.Votes, quorum)
	if t.Vote.Voter != t.Vote.Actor {
		detail += " (counted for " + t.Vote.Voter + ")"
	}
	if err := w.addEvents(t.ID, []gate.Event{{At: at, Type: gate.EventVote, Actor: t.Vote.Actor, Channel: t.Vote.Via, Detail: detail}}); err != nil {
		return false, err
	}
	return out.Votes >= quorum, nil
}

// AddEvent appends to the audit trail.
func (s *DB) AddEvent(ctx context.Context, e gate.Event) error {
	return wrap("add event", s.write(ctx, func(t *wtx) error { return t.addEvents(e.RequestID, []gate.Event{e}) }))
}

// AddOutcome appends what became of a call unless its trail holds an
// outcome already, under the request's row lock: see gate.Store.
func (s *DB) AddOutcome(ctx context.Context, e gate.Event) (added bool, err error) {
	err = s.write(ctx, func(t *wtx) error {
		added = false
		r, err := t.lockRequest(s.driver, e.RequestID)
		if err != nil {
			return err
		}
		if r == nil {
			return gate.Errorf(gate.ENOTFOUND, "no request %q", e.RequestID)
		}
		if n, err := t.count(qCountOutcomes, e.RequestID); err != nil || n > 0 {
			return err
		}
		added = true
		return t.addEvents(e.RequestID, []gate.Event{e})
	})
	return added, wrap("add outcome", err)
}

// ClaimCards leases due card work.
func (s *DB) ClaimCards(ctx context.Context, now time.Time, lease time.Duration, owner string, limit int) ([]gate.Card, error) {
	now = utc(now)
	q := qClaimSQLite
	if s.driver == Postgres {
		q = qClaimPostgres
	}
	var out []gate.Card
	err := s.write(ctx, func(t *wtx) error {
		rows, err := t.query(q, owner, now.Add(lease), now, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			c, err := scanCard(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	return out, wrap("claim cards", err)
}

// FinishCard records a claimed card's outcome, if the claim is still ours,
// and its event in any case, in one transaction.
func (s *DB) FinishCard(ctx context.Context, r gate.CardResult) (bool, error) {
	next := never
	if !r.NextAttempt.IsZero() {
		next = utc(r.NextAttempt)
	}
	at := utc(r.At)
	due := false
	err := s.write(ctx, func(t *wtx) error {
		if r.Event != nil {
			if err := t.addEvents(r.Event.RequestID, []gate.Event{*r.Event}); err != nil {
				return err
			}
		}
		rows, err := t.query(qFinishCard, r.Have, r.Ref, r.Err, r.Abandoned, next, never, r.Err == "", at, r.ID, r.Owner)
		if err != nil {
			return err
		}
		defer rows.Close()
		due = false
		if rows.Next() {
			if err := rows.Scan(&due); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return due, wrap("finish card", err)
}

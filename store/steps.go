package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// The steps of a waiting request: reminders and escalations. Not on the
// path of a verdict, so plain statements in the life cycle's transactions.
const (
	qDueSteps = `SELECT id FROM requests WHERE status = 'pending' AND next_step_at IS NOT NULL AND next_step_at <= $1
		ORDER BY next_step_at LIMIT $2`
	qSteps      = `SELECT step, kind, due_at, at FROM steps WHERE request_id = $1 ORDER BY step`
	qCardsOf    = `SELECT ` + cardColumns + ` FROM cards WHERE request_id = $1 ORDER BY id`
	qVoters     = `SELECT actor FROM votes WHERE request_id = $1 ORDER BY at, actor`
	qTappers    = `SELECT DISTINCT actor FROM events WHERE request_id = $1 AND type = '` + gate.EventVote + `'`
	qInsertStep = `INSERT INTO steps (request_id, step, kind, due_at, at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	qWiden      = `UPDATE requests SET approvers = $1, channels = $2 WHERE id = $3`
	qNextStep   = `UPDATE requests SET next_step_at = $1 WHERE id = $2`
)

// errStepTaken rolls back a step whose number another transaction
// recorded first.
var errStepTaken = errors.New("step already taken")

// DueSteps returns pending requests whose next step is due at now.
func (s *DB) DueSteps(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var ids []string
	err := s.rdb.WithContext(ctx).Raw(qDueSteps, utc(now), limit).Scan(&ids).Error
	return ids, wrap("list due steps", err)
}

// Advance takes a request's due step: see gate.Store. The row is held
// (FOR UPDATE on PostgreSQL; SQLite's write transaction holds the
// database), so a replica that comes second reads the row the first one
// wrote, whose next step is not due; and the step's number is its primary
// key, so even a step planned twice is recorded, and its cards and events
// written, once.
func (s *DB) Advance(ctx context.Context, id string, now time.Time, plan func(gate.StepState) gate.StepWork) (gate.StepWork, error) {
	now = utc(now)
	var done gate.StepWork
	err := s.write(ctx, func(t *wtx) error {
		done = gate.StepWork{}
		r, err := t.lockRequest(s.driver, id)
		if err != nil || r == nil {
			return err
		}
		if r.Status != gate.StatusPending || r.NextStepAt == nil || r.NextStepAt.After(now) {
			return nil
		}
		st := gate.StepState{Request: r}
		if st.Steps, err = t.steps(id); err != nil {
			return err
		}
		if st.Cards, err = t.cards(id); err != nil {
			return err
		}
		if st.Votes, err = votes(t.ctx, t.tx, id); err != nil {
			return err
		}
		w := plan(st)
		if w.Step.Kind != "" {
			if err := t.takeStep(r, w, now); err != nil {
				return err
			}
		}
		var next *time.Time
		if w.Next != nil {
			n := utc(*w.Next)
			next = &n
		}
		if _, err := t.tx.ExecContext(t.ctx, qNextStep, next, id); err != nil {
			return err
		}
		done = w
		return nil
	})
	if errors.Is(err, errStepTaken) {
		return gate.StepWork{}, nil
	}
	return done, wrap("advance", err)
}

// takeStep records a step under its number and writes what it changes.
func (t *wtx) takeStep(r *gate.Request, w gate.StepWork, now time.Time) error {
	res, err := t.tx.ExecContext(t.ctx, qInsertStep, r.ID, w.Step.N, w.Step.Kind, utc(w.Step.Due), now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(errStepTaken, err)
	}
	if w.Approvers != nil || w.Channels != nil {
		approvers, channels := r.Approvers, r.Channels
		if w.Approvers != nil {
			approvers = w.Approvers
		}
		if w.Channels != nil {
			channels = w.Channels
		}
		if _, err := t.tx.ExecContext(t.ctx, qWiden, jsonList(approvers), jsonList(channels), r.ID); err != nil {
			return err
		}
	}
	if err := t.addCards(r.ID, w.Cards, now); err != nil {
		return err
	}
	return t.addEvents(r.ID, w.Events)
}

func (t *wtx) steps(id string) ([]gate.Step, error) {
	rows, err := t.tx.QueryContext(t.ctx, qSteps, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []gate.Step
	for rows.Next() {
		var st gate.Step
		if err := rows.Scan(&st.N, &st.Kind, &st.Due, &st.At); err != nil {
			return nil, err
		}
		st.Due, st.At = st.Due.UTC(), st.At.UTC()
		out = append(out, st)
	}
	return out, rows.Err()
}

// querier is a transaction or a pool.
type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// queryColumn runs a query of one column and returns its values.
func queryColumn[T any](ctx context.Context, db querier, q string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// votes are a request's approvals so far toward its quorum: who each
// counts for, and the identities that tapped them (their vote events).
func votes(ctx context.Context, db querier, id string) (v gate.Votes, err error) {
	if v.Voters, err = queryColumn[string](ctx, db, qVoters, id); err != nil {
		return v, err
	}
	v.Tappers, err = queryColumn[string](ctx, db, qTappers, id)
	return v, err
}

// Votes returns a request's approvals so far: see gate.Store.
func (s *DB) Votes(ctx context.Context, id string) (gate.Votes, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rsql, err := s.rdb.DB()
	if err != nil {
		return gate.Votes{}, err
	}
	v, err := votes(ctx, rsql, id)
	return v, wrap("list votes", err)
}

func (t *wtx) cards(id string) ([]gate.Card, error) {
	rows, err := t.tx.QueryContext(t.ctx, qCardsOf, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []gate.Card
	for rows.Next() {
		c, err := scanCard(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

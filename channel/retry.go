// Package channel holds small helpers shared by the chat adapters
// (channel/slack, channel/feishu, channel/webhook): bounded in-call
// retries, text truncation, and the replay cache of signed callbacks.
// Adapter-specific knowledge (which platform errors are transient) stays in
// the adapters; they mark errors with Temporary.
package channel

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"time"
)

// RetryPolicy bounds the retries of one call. The gate retries failed posts
// and updates durably on its own schedule, so these retries only smooth over
// a blip: few tries, short waits, a hard total budget.
type RetryPolicy struct {
	Attempts   int           // tries in all, including the first; 3 when zero
	Base       time.Duration // wait before the second try, doubling after; 500ms when zero
	MaxWait    time.Duration // cap on one backoff wait; 5s when zero
	Budget     time.Duration // total time for every try and wait; 25s when zero
	PerAttempt time.Duration // timeout of one try; 10s when zero
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 3
	}
	if p.Base <= 0 {
		p.Base = 500 * time.Millisecond
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 5 * time.Second
	}
	if p.Budget <= 0 {
		p.Budget = 25 * time.Second
	}
	if p.PerAttempt <= 0 {
		p.PerAttempt = 10 * time.Second
	}
	return p
}

// TemporaryError marks a failure worth retrying, optionally with the wait the
// server asked for (HTTP 429 Retry-After).
type TemporaryError struct {
	Err   error
	After time.Duration // 0: use the policy's backoff
}

func (e *TemporaryError) Error() string { return e.Err.Error() }

// Unwrap exposes the cause.
func (e *TemporaryError) Unwrap() error { return e.Err }

// Temporary wraps err as retryable, after a wait of at least after (0: backoff).
func Temporary(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &TemporaryError{Err: err, After: after}
}

// IsTimeout reports whether err is a network timeout or a deadline that ran
// out: worth another try when the caller's own context is still alive.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Retry calls fn until it succeeds, returns an error that is not a
// *TemporaryError (and not a per-try timeout), the tries run out, or the
// budget would be exceeded by the next wait. Each try gets its own timeout.
// It returns fn's last error unwrapped from TemporaryError, so callers see
// the platform's error.
func Retry(ctx context.Context, p RetryPolicy, fn func(ctx context.Context) error) error {
	p = p.withDefaults()
	deadline := time.Now().Add(p.Budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	wait := p.Base
	var err error
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, min(p.PerAttempt, time.Until(deadline)))
		err = fn(tctx)
		cancel()
		if err == nil {
			return nil
		}
		var te *TemporaryError
		temporary := errors.As(err, &te)
		if !temporary && !(IsTimeout(err) && ctx.Err() == nil) {
			return err
		}
		if temporary {
			err = te.Err
		}
		if try >= p.Attempts || ctx.Err() != nil {
			return err
		}
		d := wait + rand.N(wait/4+1) // jitter so replicas do not retry in step
		if te != nil && te.After > 0 {
			d = te.After
		}
		if time.Until(deadline) < d+100*time.Millisecond {
			return err // the server asked for longer than we may wait; the gate retries later
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, p.MaxWait)
	}
}

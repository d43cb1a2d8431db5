package gate

import (
	"errors"
	"fmt"
)

// Error codes. They are mapped to HTTP statuses in one place (channel.Status,
// which the API and the channels' callbacks share) so the domain never
// speaks HTTP.
const (
	EINVALID      = "invalid"              // the caller sent something wrong
	ENOTFOUND     = "not_found"            // no such request
	ECONFLICT     = "already_decided"      // the request left pending before this verdict
	EEXPIRED      = "expired"              // the deadline passed before this verdict
	EFORBIDDEN    = "forbidden"            // the actor may not decide this request
	ESELF         = "self_approval"        // the person who asked may not approve (self_approval: forbid)
	EUNAUTHORIZED = "unauthorized"         // no or bad credentials
	EIDEMPOTENCY  = "idempotency_conflict" // an idempotency key reused for a different call
	EUNAVAILABLE  = "unavailable"          // shutting down or the database is unreachable
	EINTERNAL     = "internal"             // a bug or an unexpected failure
)

// Error is a domain error with a machine-readable code and a message fit for
// the caller. Wrapped errors keep their cause for the log.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap exposes the cause so errors.Is works through a domain error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a domain error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first domain error in err's chain, or
// EINTERNAL for anything else (a database error, a bug).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-facing message of err. Internal errors get a
// generic text so that database details never leak to agents.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

package store

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The writer talks to SQLite through the driver's own connection, below
// database/sql. database/sql starts a goroutine to watch every
// transaction's context, and the driver runs every statement under a
// cancellable context on a goroutine of its own, so a BEGIN through
// database/sql cost two goroutine hand-offs before any work: a fifth of a
// verdict's write, measured. Below it a statement runs on the caller's
// goroutine, start to end. What database/sql did for the writer on the way
// (argument conversion, scanning) is here, for the types the hot writes use.

// driverArgs converts arguments as database/sql would: pointers to their
// values or NULL, integers to int64.
func driverArgs(args []any) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		out[i] = v
	}
	return out, nil
}

// rawRows reads a driver's result rows with the Next/Scan/Err/Close of
// *sql.Rows, so one scanner serves both.
type rawRows struct {
	rows driver.Rows
	vals []driver.Value
	err  error
	done bool
}

func newRawRows(r driver.Rows) *rawRows {
	return &rawRows{rows: r, vals: make([]driver.Value, len(r.Columns()))}
}

func (r *rawRows) Next() bool {
	if r.done {
		return false
	}
	if err := r.rows.Next(r.vals); err != nil {
		r.done = true
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		return false
	}
	return true
}

func (r *rawRows) Scan(dest ...any) error {
	if len(dest) != len(r.vals) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("scan column %d (%s): %w", i+1, r.rows.Columns()[i], err)
		}
	}
	return nil
}

func (r *rawRows) Err() error { return r.err }

func (r *rawRows) Close() error {
	r.done = true
	return r.rows.Close()
}

// assign stores a driver value in one of the destination types the hot
// writes scan into.
func assign(dst any, v driver.Value) error {
	switch d := dst.(type) {
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
		case []byte:
			*d = string(x)
		default:
			return fmt.Errorf("%T is not text", v)
		}
	case **string:
		if v == nil {
			*d = nil
			return nil
		}
		var s string
		if err := assign(&s, v); err != nil {
			return err
		}
		*d = &s
	case *int64:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = x
	case *int:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = int(x)
	case *bool:
		switch x := v.(type) {
		case bool:
			*d = x
		case int64:
			*d = x != 0
		default:
			return fmt.Errorf("%T is not a boolean", v)
		}
	case *time.Time:
		switch x := v.(type) {
		case time.Time:
			*d = x
		case string:
			t, err := parseTime(x)
			if err != nil {
				return err
			}
			*d = t
		default:
			return fmt.Errorf("%T is not a time", v)
		}
	case **time.Time:
		if v == nil {
			*d = nil
			return nil
		}
		var t time.Time
		if err := assign(&t, v); err != nil {
			return err
		}
		*d = &t
	default:
		return fmt.Errorf("unsupported destination %T", dst)
	}
	return nil
}

// parseTime reads a timestamp the driver wrote as text, where SQLite gave
// no declared type for the driver to parse it by (an expression's result).
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSuffix(s, "Z")
	for _, f := range sqlite3.SQLiteTimestampFormats {
		if t, err := time.ParseInLocation(f, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp", s)
}

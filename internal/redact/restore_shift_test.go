package redact

import (
	"encoding/json"
	"testing"
)

// An approver who deletes the first of two redacted entries keeps the
// second: the value put back must be the second's, not the first's by
// position.
func TestRestoreListEditKeepsTheEntryShown(t *testing.T) {
	r := mustNew(t, []string{"token"}, nil)
	orig := json.RawMessage(`{"targets":[{"env":"prod","token":"PROD-SECRET"},{"env":"staging","token":"STAGING-SECRET"}]}`)
	// Shown: [{"env":"prod","token":"[redacted]"},{"env":"staging","token":"[redacted]"}].
	// The approver removes the prod entry and approves.
	edited := json.RawMessage(`{"targets":[{"env":"staging","token":"[redacted]"}]}`)
	got, err := r.Restore(edited, orig)
	if err != nil {
		return // refusing is safe
	}
	if want := `{"targets":[{"env":"staging","token":"STAGING-SECRET"}]}`; string(got) != want {
		t.Fatalf("approver kept the staging entry; the tool runs %s", got)
	}
	// Swapped order, unchanged entries.
	edited = json.RawMessage(`{"targets":[{"env":"staging","token":"[redacted]"},{"env":"prod","token":"[redacted]"}]}`)
	got, err = r.Restore(edited, orig)
	if err == nil {
		if want := `{"targets":[{"env":"staging","token":"STAGING-SECRET"},{"env":"prod","token":"PROD-SECRET"}]}`; string(got) != want {
			t.Fatalf("swapped: the tool runs %s", got)
		}
	}
	// Two entries shown alike, the list left as it was and another value
	// edited: each keeps its own value.
	orig = json.RawMessage(`{"note":"x","targets":[{"token":"A-SECRET"},{"token":"B-SECRET"}]}`)
	edited = json.RawMessage(`{"note":"y","targets":[{"token":"[redacted]"},{"token":"[redacted]"}]}`)
	got, err = r.Restore(edited, orig)
	if want := `{"note":"y","targets":[{"token":"A-SECRET"},{"token":"B-SECRET"}]}`; err != nil || string(got) != want {
		t.Fatalf("a list left as shown: %s, %v", got, err)
	}
	// One of two entries shown alike deleted: which one cannot be told.
	edited = json.RawMessage(`{"note":"x","targets":[{"token":"[redacted]"}]}`)
	if got, err = r.Restore(edited, orig); err == nil {
		t.Fatalf("one of two alike entries deleted: the tool runs %s", got)
	}
	// A copy of an entry is not that entry: its secret is not copied.
	orig = json.RawMessage(`{"targets":[{"env":"prod","token":"PROD-SECRET"},{"env":"staging","token":"STAGING-SECRET"}]}`)
	edited = json.RawMessage(`{"targets":[{"env":"prod","token":"[redacted]"},{"env":"prod","token":"[redacted]"},{"env":"staging","token":"[redacted]"}]}`)
	if got, err = r.Restore(edited, orig); err == nil {
		t.Fatalf("an entry copied: the tool runs %s", got)
	}
}

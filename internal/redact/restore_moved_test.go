package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// An entry both moved and changed is not the entry shown at its new place:
// with the entry that was shown there kept elsewhere (or deleted, its place
// taken by another), putting that place's hidden value back gives the
// moved entry another entry's secret. It must be refused.
func TestRestoreListEntryMovedAndChanged(t *testing.T) {
	keys := mustNew(t, []string{"token"}, nil)
	pats := mustNew(t, nil, []string{`S[0-9]+`})
	orig := `{"targets":[{"env":"prod","token":"S1"},{"env":"staging","token":"S2"}]}`
	for _, c := range []struct {
		name         string
		r            *Redactor
		orig, edited string
	}{
		// staging moved up and given a field; prod moved down unchanged.
		{"swapped, one changed", keys, orig,
			`{"targets":[{"env":"staging","token":"[redacted]","region":"eu"},{"env":"prod","token":"[redacted]"}]}`},
		// prod deleted, staging moved up and changed, a new entry added.
		{"deleted, changed, added", keys, orig,
			`{"targets":[{"env":"staging","token":"[redacted]","region":"eu"},{"env":"dev"}]}`},
		// prod moved down; the entry left first had its env key removed.
		{"key removed, other moved", keys, orig,
			`{"targets":[{"token":"[redacted]"},{"env":"prod","token":"[redacted]"}]}`},
		// Lists of lists.
		{"inner lists", pats, `[["prod","S1"],["staging","S2"]]`,
			`[["staging","[redacted]","--eu"],["prod","[redacted]"]]`},
	} {
		got, err := c.r.Restore(json.RawMessage(c.edited), json.RawMessage(c.orig))
		if err != nil {
			continue // refusing is safe
		}
		// Each entry holding S1 must be prod's, as shown.
		var v any
		_ = json.Unmarshal(got, &v)
		if m, ok := v.(map[string]any); ok {
			v = m["targets"]
		}
		for _, e := range v.([]any) {
			if b, _ := json.Marshal(e); strings.Contains(string(b), "S1") && !strings.Contains(string(b), "prod") || strings.Count(string(got), "S1") > 1 {
				t.Errorf("%s: the tool runs %s: prod's secret in an entry the approver did not leave it in", c.name, got)
				break
			}
		}
	}
	// One entry changed in place, the rest as shown: still put back.
	got, err := keys.Restore(json.RawMessage(`{"targets":[{"env":"prod","token":"[redacted]","region":"eu"},{"env":"staging","token":"[redacted]"}]}`), json.RawMessage(orig))
	if want := `{"targets":[{"env":"prod","region":"eu","token":"S1"},{"env":"staging","token":"S2"}]}`; err != nil || string(got) != want {
		t.Fatalf("one entry changed in place: %s, %v", got, err)
	}
}

package hook

import "testing"

// TestDenies: every client's deny, as Render writes it, reads as a deny
// for its event, and nothing else does.
func TestDenies(t *testing.T) {
	calls := []Call{{Client: ClaudeCode, Event: PreToolUse}, {Client: ClaudeCode, Event: PermissionRequest}, {Client: Codex, Event: PreToolUse},
		{Client: Cursor, Event: "beforeShellExecution"}, {Client: Gemini, Event: "BeforeTool"}, {Client: Copilot, Event: "preToolUse"},
		{Client: Copilot, Event: CopilotPermission}}
	for _, c := range calls {
		for _, v := range []Verdict{{Kind: Deny, Reason: "no"}, {Kind: Allow, Reason: "ok"}, {Kind: Defer}} {
			if got := Denies(c, Render(c, v).Stdout); got != (v.Kind == Deny) {
				t.Errorf("%s %s, %v: Denies %v", c.Client, c.Event, v.Kind, got)
			}
		}
	}
	other := Render(Call{Client: ClaudeCode, Event: PermissionRequest}, Verdict{Kind: Deny, Reason: "no"}).Stdout
	if Denies(Call{Client: ClaudeCode, Event: PreToolUse}, other) {
		t.Errorf("a PermissionRequest deny read as a PreToolUse one: %s", other)
	}
	// The clients read keys exactly; a deny under another case is none.
	for _, tc := range []struct {
		c      Call
		answer string
	}{
		{Call{Client: Cursor, Event: "beforeShellExecution"}, `{"permission":"allow","Permission":"deny"}`},
		{Call{Client: Gemini, Event: "BeforeTool"}, `{"decision":"allow","DECISION":"deny"}`},
		{Call{Client: ClaudeCode, Event: PreToolUse}, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","PermissionDecision":"deny"}}`},
	} {
		if Denies(tc.c, []byte(tc.answer)) {
			t.Errorf("%s: %s read as a deny", tc.c.Client, tc.answer)
		}
	}
}

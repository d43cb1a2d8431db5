package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse reads hostile hook input as each client's (claude-code, codex,
// cursor, gemini, copilot). Whatever it is:
//   - input that does not parse is answered with that client's deny (or,
//     for a report of what already ran, with nothing to do), never an allow;
//   - input that parses has compact JSON arguments and a stable key;
//   - a deny or a failure, rendered for whatever call was read, is valid
//     JSON and no allow;
//   - the quick look at a large input's head (LooksLikeReport) takes a
//     whole input for a report of what ran only when it is one: a question
//     that looked like a report would be waved through unasked.
func FuzzParse(f *testing.F) {
	for i, in := range []string{
		`{"session_id":"s","cwd":"/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","timeout":120000},"tool_use_id":"toolu_1"}`,
		`{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`,
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"x"},"tool_use_id":"t"}`,
		`{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{},"error":"boom","is_interrupt":true}`,
		`{"hook_event_name":"beforeShellExecution","conversation_id":"c","command":"ls","cwd":"/p"}`,
		`{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"q","tool_input":"{\"sql\": \"x\"}","url":"http://x"}`,
		`{"hook_event_name":"preToolUse","conversation_id":"c","tool_name":"Shell","tool_input":{"command":"ls"},"tool_use_id":"t"}`,
		`{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":"a"}}`,
		`{"timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`,
		`{"hook_event_name":"PreToolUse","tool_name":"mcp__x__y","tool_input":{"hook_event_name":"PostToolUse","data":"x"}}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"not json"}`,
		`{"hook_event_name":"Stop"}`, `{}`, `[]`, `null`, ``, `{"tool_name":"x","tool_input":{"a":1e999}}`, `{"tool_name":"x"}{"tool_name":"y"}`,
	} {
		f.Add(uint8(i), []byte(in))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		client := Clients[int(which)%len(Clients)]
		c, err := Parse(client, body)
		if err != nil {
			if !errors.Is(err, ErrInput) {
				t.Fatalf("an error that is not ErrInput: %v", err)
			}
			out := Invalid(c, err)
			if c.Report() {
				if string(out.Stdout) != "{}" {
					t.Fatalf("a report answered %s", out.Stdout)
				}
			} else if allows(t, out.Stdout) || (out.Exit != 2 && client != Cursor && client != Copilot) {
				t.Fatalf("unreadable %s input answered exit %d, %s", client, out.Exit, out.Stdout)
			}
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, c.ToolInput) != nil || !bytes.Equal(buf.Bytes(), c.ToolInput) {
				t.Fatalf("tool input %q is not compact JSON", c.ToolInput)
			}
			again, _ := Parse(client, body)
			if c.ToolName == "" || c.Key(0) != again.Key(0) || c.Key(0) == c.Key(1) || !json.Valid(c.Ask(0).ToolArgs) {
				t.Fatalf("call %+v: keys %s %s, args %s", c, c.Key(0), c.Key(1), c.Ask(0).ToolArgs)
			}
		}
		for _, v := range []Verdict{Failure("fuzz"), {Kind: Deny, Reason: "gatehouse: no"}, VerdictOf(Outcome{Status: Pending}, 0),
			VerdictOf(Outcome{Status: "rejected", ModifiedArgs: json.RawMessage(body)}, 0)} {
			if allows(t, Render(c, v).Stdout) {
				t.Fatalf("a deny rendered as an allow for %+v", c)
			}
		}
		var ev struct {
			Event   string `json:"hook_event_name"`
			EventCC string `json:"hookEventName"`
		}
		if LooksLikeReport(ClaudeCode, body) && json.Unmarshal(body, &ev) == nil {
			if ev.EventCC != "" {
				ev.Event = ev.EventCC
			}
			if ev.Event != PostToolUse && ev.Event != PostToolUseFailure {
				t.Fatalf("taken for a report of what ran, but its event is %q", ev.Event)
			}
		}
	})
}

// allows reports whether a hook's stdout is valid JSON that allows the
// call in any client's words.
func allows(t *testing.T, stdout []byte) bool {
	var out map[string]any
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("stdout is not a JSON object: %s", stdout)
	}
	var walk func(m map[string]any) bool
	walk = func(m map[string]any) bool {
		for k, v := range m {
			switch k {
			case "permissionDecision", "decision", "permission", "behavior":
				if v == "allow" {
					return true
				}
			}
			if sub, ok := v.(map[string]any); ok && walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(out)
}

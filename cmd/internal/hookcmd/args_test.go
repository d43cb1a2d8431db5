package hookcmd

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// cpIn is a Copilot CLI hook input, whose events it does not name.
const cpIn = `{"timestamp":1704614600000,"cwd":"/proj","toolName":"bash","toolArgs":"{\"command\":\"rm -rf build\"}"}`

// TestHookArgsMistakesDeny: a hook command line the hook cannot use is a
// failure like any other, and Copilot CLI (and Cursor without failClosed)
// runs the tool on an exit code and a stdout with no decision in it. The
// flags before the client's name, or the event given as a word rather than
// --event, must still end in the client's deny in fields it reads for
// either of its events.
func TestHookArgsMistakesDeny(t *testing.T) {
	// A server that rejects the call, answering in preToolUse's shape.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Gatehouse-Status", "rejected")
		_, _ = w.Write([]byte(`{"permissionDecision":"deny","permissionDecisionReason":"gatehouse: rejected"}`))
	}))
	defer srv.Close()
	t.Setenv("GATEHOUSE_URL", srv.URL)
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	// Copilot reads preToolUse's decision in permissionDecision and
	// permissionRequest's in behavior; exit codes decide nothing. Where the
	// hook cannot tell the event, the deny must be in both.
	both := []string{`"behavior":"deny"`, `"permissionDecision":"deny"`}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--wait", "590s", "copilot"}, both},
		{[]string{"copilot", "permissionRequest"}, both},
		{[]string{"Copilot", "--event", "permissionRequest"}, both[:1]},
	} {
		args := tc.args
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(args, strings.NewReader(cpIn), &out, &errb)
			missing := false
			for _, w := range tc.want {
				missing = missing || !strings.Contains(out.String(), w)
			}
			if code != 0 || missing {
				t.Errorf("exit %d, stdout %q, stderr %q: Copilot reads no deny and runs the tool", code, out.String(), errb.String())
			}
		})
	}
}

// TestHookFlagsFirstPicksThePositionalClient: with the flags before the
// client's name, the client is the first word that is no flag's value, as
// the flag package reads it. A flag's value that happens to be a client's
// name (an agent labelled after a client) must not choose the shape: a
// Cursor deny is no decision Copilot reads, and it runs the tool.
func TestHookFlagsFirstPicksThePositionalClient(t *testing.T) {
	t.Setenv("GATEHOUSE_URL", "http://127.0.0.1:1")
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	for _, args := range [][]string{
		{"--agent", "cursor", "copilot"},
		{"--agent", "gemini", "copilot", "--wait", "590s"},
		{"-agent", "codex", "Copilot"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(args, strings.NewReader(cpIn), &out, &errb)
			if code != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), `"behavior":"deny"`) {
				t.Errorf("exit %d, stdout %q: Copilot reads no deny and runs the tool", code, out.String())
			}
		})
	}
}

// TestHookUnknownClientDeniesOnStdout: a command line naming no client the
// hook knows (`gatehouse hook copilot-cli`, the product's own name, or no
// client at all) ended in exit 2 with nothing on stdout. Copilot CLI
// decides on stdout alone (on a failure it proceeds), so it ran the tool.
// Exit 2 still blocks for the clients that read it; stdout now carries a
// deny that Copilot (either event), Cursor and Gemini CLI read. A report's
// input under an unknown name is refused the same way, with a reason.
func TestHookUnknownClientDeniesOnStdout(t *testing.T) {
	t.Setenv("GATEHOUSE_URL", "http://127.0.0.1:1")
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	const report = `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
	for _, tc := range []struct {
		args  []string
		input string
	}{
		{[]string{"copilot-cli"}, cpIn},
		{[]string{"github-copilot", "--wait", "590s"}, cpIn},
		{nil, cpIn},
		{[]string{"--wait", "590s"}, cpIn},
		{[]string{"claude"}, report},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(tc.args, strings.NewReader(tc.input), &out, &errb)
			var top map[string]any
			_ = json.Unmarshal(out.Bytes(), &top)
			if code == 0 || top["permissionDecision"] != "deny" || top["behavior"] != "deny" || top["permission"] != "deny" || top["decision"] != "deny" {
				t.Errorf("exit %d, stdout %q: no deny a stdout-reading client reads, so it runs the tool", code, out.String())
			}
			if r, _ := top["reason"].(string); !strings.HasPrefix(r, "gatehouse") || len(r) < len("gatehouse: x") || strings.TrimSpace(errb.String()) == "" {
				t.Errorf("reason %q, stderr %q: the deny names no problem", r, errb.String())
			}
		})
	}
}

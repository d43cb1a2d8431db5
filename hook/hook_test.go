package hook

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseShapes(t *testing.T) {
	cases := []struct {
		name, client, input            string
		event, tool, args, id, session string
	}{
		{"claude PreToolUse", ClaudeCode, `{"session_id":"s","cwd":"/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","timeout":120000},"tool_use_id":"toolu_1"}`,
			PreToolUse, "Bash", `{"command":"ls","timeout":120000}`, "toolu_1", "s"},
		{"claude PermissionRequest", ClaudeCode, `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`,
			PermissionRequest, "Bash", `{"command":"ls"}`, "", "s"},
		{"cursor shell", Cursor, `{"hook_event_name":"beforeShellExecution","conversation_id":"c","command":"ls","cwd":"/p"}`,
			BeforeShellExecution, "Shell", `{"command":"ls"}`, "", "c"},
		{"cursor mcp, input as a string", Cursor, `{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"q","tool_input":"{\"sql\": \"x\"}"}`,
			BeforeMCPExecution, "q", `{"sql":"x"}`, "", "c"},
		{"gemini", Gemini, `{"session_id":"g","hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":"a"}}`,
			BeforeTool, "write_file", `{"file_path":"a"}`, "", "g"},
		{"copilot, no session", Copilot, `{"timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`,
			CursorPreToolUse, "bash", `{"command":"ls"}`, "", "cwd:/p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.client, []byte(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if c.Event != tc.event || c.ToolName != tc.tool || string(c.ToolInput) != tc.args || c.ToolUseID != tc.id || c.SessionID != tc.session {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// TestKey: both events of one call share a key whatever the key order and
// spacing of the input; another session, tool or input does not.
func TestKey(t *testing.T) {
	parse := func(client, s string) Call {
		c, err := Parse(client, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pre := parse(ClaudeCode, `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","n":1.50},"tool_use_id":"toolu_1"}`)
	perm := parse(ClaudeCode, `{"session_id":"s","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{ "n":1.50, "command":"ls" }}`)
	if pre.Key(0) != perm.Key(0) {
		t.Errorf("PreToolUse %s and PermissionRequest %s of one call differ", pre.Key(0), perm.Key(0))
	}
	if pre.Key(0) == pre.Key(1) {
		t.Error("Key(1) must differ from Key(0)")
	}
	for _, other := range []string{
		`{"session_id":"t","tool_name":"Bash","tool_input":{"command":"ls","n":1.50}}`,
		`{"session_id":"s","tool_name":"Write","tool_input":{"command":"ls","n":1.50}}`,
		`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","n":1.5}}`,
		`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","n":1.50},"cwd":"/home/u"}`,
	} {
		if parse(ClaudeCode, other).Key(0) == pre.Key(0) {
			t.Errorf("%s shares the key", other)
		}
	}
	if a := perm.Ask(0); a.IdempotencyKey != pre.Key(0) {
		t.Errorf("ask: %+v", a)
	}
}

func TestReusable(t *testing.T) {
	now := time.Now()
	old, recent := now.Add(-2*Fresh), now.Add(-time.Second)
	withID := Call{ToolUseID: "a"}
	noID := Call{}
	cases := []struct {
		name string
		call Call
		o    Outcome
		want bool
	}{
		{"pending, this call", withID, Outcome{Status: Pending, ToolCallID: "a"}, true},
		{"pending, made with no call id", withID, Outcome{Status: Pending}, true},
		{"pending, asked with no call id", noID, Outcome{Status: Pending, ToolCallID: "b"}, true},
		// The same transfer made twice in one turn: two calls, two cards.
		{"pending, another call id", withID, Outcome{Status: Pending, ToolCallID: "b"}, false},
		{"same call id", withID, Outcome{Status: "approved", ToolCallID: "a", DecidedAt: &old}, true},
		{"another call id", withID, Outcome{Status: "approved", ToolCallID: "b", DecidedAt: &recent}, false},
		{"no id, recent", noID, Outcome{Status: "approved", ToolCallID: "b", DecidedAt: &recent}, true},
		{"no id, old", noID, Outcome{Status: "rejected", DecidedAt: &old}, false},
	}
	for _, tc := range cases {
		if got := tc.call.Reusable(tc.o, now); got != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}

// TestRenderCodexPermissionEdits: Codex's PermissionRequest refuses
// updatedInput, so an approval with edits there is a deny.
func TestRenderCodexPermissionEdits(t *testing.T) {
	c := Call{Client: Codex, Event: PermissionRequest, ToolInput: json.RawMessage(`{"command":"ls"}`)}
	out := Render(c, Verdict{Kind: Allow, Reason: "gatehouse: approved", UpdatedInput: json.RawMessage(`{"command":"ls -a"}`)})
	want := `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"gatehouse: approved, with changed arguments that Codex cannot apply from a hook. Run the call again with exactly these arguments: {\"command\":\"ls -a\"}"},"hookEventName":"PermissionRequest"}}`
	if string(out.Stdout) != want || out.Exit != 0 {
		t.Errorf("%d %s", out.Exit, out.Stdout)
	}
}

// TestRenderEditsThatAreNoObject: updatedInput replaces the tool's input
// object, and no client applies anything else, so an approval whose edits
// are no object (the gate refuses them; an older server, or a proxy, may
// send them) is a deny that hands the agent the approved arguments.
func TestRenderEditsThatAreNoObject(t *testing.T) {
	for _, c := range []Call{{Client: ClaudeCode, Event: PreToolUse}, {Client: ClaudeCode, Event: PermissionRequest}, {Client: Codex, Event: PreToolUse}} {
		for _, edits := range []string{`"rm -rf build/tmp"`, `["rm","-rf","build/tmp"]`} {
			out := Render(c, Verdict{Kind: Allow, Reason: "gatehouse: approved", UpdatedInput: json.RawMessage(edits)})
			if strings.Contains(string(out.Stdout), `"allow"`) || !strings.Contains(string(out.Stdout), `"deny"`) {
				t.Errorf("%s %s, edits %s: %s", c.Client, c.Event, edits, out.Stdout)
			}
		}
	}
}

// An input that cannot be read and names no event is no report of what
// ran, whatever event the caller says it hooks (--event, ?event=): a
// report's answer ({}) lets a call through (a second reader).
func TestUnreadableInputIsNoReport(t *testing.T) {
	for _, ev := range []string{PostToolUse, PostToolUseFailure} {
		c, err := ParseAs(ClaudeCode, []byte(`{"tool_name":"Bash","tool_input":{"command":"rm -rf /"`), ev)
		if out := Invalid(c, err); err == nil || string(out.Stdout) == "{}" && out.Exit == 0 {
			t.Errorf("%s: %v answered %s, exit %d", ev, err, out.Stdout, out.Exit)
		}
	}
}

func TestParseReports(t *testing.T) {
	post := `{"session_id":"s","cwd":"/r","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},` +
		`"tool_response":{"stdout":"a"},"tool_use_id":"toolu_1"}`
	c, err := Parse(ClaudeCode, []byte(post))
	if err != nil || !c.Report() || c.Ran == nil || c.Ran.Failed || string(c.Ran.Output) != `{"stdout":"a"}` || c.ToolUseID != "toolu_1" {
		t.Fatalf("PostToolUse: %+v %+v, %v", c, c.Ran, err)
	}
	// Both events of one call land on the same key: the report finds the
	// request the question made.
	pre, _ := Parse(ClaudeCode, []byte(strings.Replace(post, "PostToolUse", "PreToolUse", 1)))
	if c.Key(0) != pre.Key(0) || c.Ask(0).SessionID != pre.Ask(0).SessionID {
		t.Error("a report and its question have different keys")
	}
	fail := `{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{},"tool_use_id":"t","error":"boom","is_interrupt":true}`
	c, err = Parse(Codex, []byte(fail))
	if err != nil || !c.Ran.Failed || c.Ran.Error != "boom" || !c.Ran.Interrupted {
		t.Fatalf("PostToolUseFailure: %+v, %v", c.Ran, err)
	}
	// A report Gatehouse cannot read is still no deny.
	c, err = Parse(ClaudeCode, []byte(`{"hook_event_name":"PostToolUse"}`))
	if err == nil || !c.Report() {
		t.Fatalf("a report without a tool: %v", err)
	}
	if out := Invalid(c, err); string(out.Stdout) != "{}" || out.Exit != 0 {
		t.Errorf("invalid report answered %s, exit %d", out.Stdout, out.Exit)
	}
	if out := Noted(); string(out.Stdout) != "{}" || out.Exit != 0 {
		t.Errorf("noted: %s", out.Stdout)
	}
}

func TestLargeReports(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	input := `{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"t","tool_response":"` + big + `"}`
	if !LooksLikeReport(ClaudeCode, []byte(input[:1<<20])) || LooksLikeReport(ClaudeCode, []byte(`{"hook_event_name":"PreToolUse"}`)) ||
		LooksLikeReport(Copilot, []byte(input[:1<<20])) {
		t.Error("LooksLikeReport")
	}
	c, err := Parse(ClaudeCode, []byte(input))
	if err != nil {
		t.Fatal(err)
	}
	small := SmallReport(c, []byte(input), 1<<20)
	back, err := Parse(ClaudeCode, small)
	if len(small) > 1<<20 || err != nil || back.ToolUseID != "t" || back.Key(0) != c.Key(0) || !strings.Contains(string(back.Ran.Output), "too large to record") {
		t.Errorf("small report %d bytes: %s, %v", len(small), small[:min(len(small), 200)], err)
	}
	if got := SmallReport(c, []byte("short"), 1<<20); string(got) != "short" {
		t.Error("a report that fits was changed")
	}
}

// The event a hook is registered on (--event, ?event=) fills in only what
// the input leaves out: an input that names PreToolUse is a question even
// on a hook registered as PostToolUse, never a report waved through.
func TestParseAsNeverOverridesTheInputsEvent(t *testing.T) {
	pre := `{"session_id":"s","cwd":"/r","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push"},"tool_use_id":"toolu_1"}`
	for _, ev := range []string{PostToolUse, PostToolUseFailure, "permissionRequest"} {
		c, err := ParseAs(ClaudeCode, []byte(pre), ev)
		if err != nil || c.Report() || c.Event != PreToolUse || c.Metadata["hook_event_name"] != PreToolUse {
			t.Errorf("registered as %s: event %q report %v, %v", ev, c.Event, c.Report(), err)
		}
	}
	// Copilot's input names no event: the registration says it.
	cp := `{"timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"ls\"}"}`
	c, err := ParseAs(Copilot, []byte(cp), CopilotPermission)
	if err != nil || c.Event != CopilotPermission {
		t.Errorf("copilot registered as %s: %q, %v", CopilotPermission, c.Event, err)
	}
	if c, err = ParseAs(Copilot, []byte(cp), ""); err != nil || c.Event != CursorPreToolUse {
		t.Errorf("copilot, no registration: %q, %v", c.Event, err)
	}
}

// Only Claude Code and Codex report what ran. A hook of another client
// registered on PostToolUse (--event, ?event=, which fill in the event its
// input leaves out) was still answered as a report, with nothing to do, so
// the calls it was asked about ran unasked; it must be denied.
func TestOnlyClaudeAndCodexReport(t *testing.T) {
	for client, input := range map[string]string{
		Copilot: `{"timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":"{\"command\":\"git push\"}"}`,
		Cursor:  `{"conversation_id":"c","tool_name":"Shell","tool_input":{"command":"git push"}}`,
		Gemini:  `{"session_id":"g","tool_name":"run_shell_command","tool_input":{"command":"git push"}}`,
	} {
		for _, ev := range []string{PostToolUse, PostToolUseFailure} {
			c, err := ParseAs(client, []byte(input), ev)
			if err == nil || c.Report() {
				t.Errorf("%s registered as %s: report %v, %v", client, ev, c.Report(), err)
			}
			out := Invalid(c, err)
			if string(out.Stdout) == "{}" || allows(t, out.Stdout) {
				t.Errorf("%s registered as %s: answered %s, exit %d", client, ev, out.Stdout, out.Exit)
			}
		}
	}
}

// TestCursorCwdIsItsWorkspaceRoot: Cursor's preToolUse names no cwd, so a
// relative path rule (Read(./.env)) had nowhere to stand and held every
// file call; its one workspace root is the cwd now (a second root leaves
// it unknown: which one is meant?).
func TestCursorCwdIsItsWorkspaceRoot(t *testing.T) {
	for roots, want := range map[string]string{`["/proj"]`: "/proj", `["/a","/b"]`: "", `[]`: ""} {
		c, err := Parse(Cursor, []byte(`{"hook_event_name":"preToolUse","conversation_id":"c","tool_name":"Read","tool_input":{"file_path":"/proj/a"},"workspace_roots":`+roots+`}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata["cwd"] != want {
			t.Errorf("roots %s: cwd %q, want %q", roots, c.Metadata["cwd"], want)
		}
	}
	c, _ := Parse(Cursor, []byte(`{"hook_event_name":"preToolUse","cwd":"/here","tool_name":"Read","tool_input":{},"workspace_roots":["/proj"]}`))
	if c.Metadata["cwd"] != "/here" {
		t.Errorf("a cwd Cursor names is kept: %v", c.Metadata)
	}
}

// TestCursorMCPServerInKey: Cursor's beforeMCPExecution names the MCP server
// only by its url or command, and the tool name is bare, so the same query
// sent to a dev server and then to a prod server shared one key, one
// request and one verdict. Found by a reader.
func TestCursorMCPServerInKey(t *testing.T) {
	parse := func(server string) Call {
		c, err := Parse(Cursor, []byte(`{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"database_query","tool_input":"{\"query\":\"DROP TABLE users\"}",`+server+`}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dev := parse(`"url":"http://dev-db.local:3000"`)
	for _, other := range []string{`"url":"https://prod-db.example.com"`, `"command":"npx prod-db-mcp"`, `"command":"http://dev-db.local:3000"`} {
		if parse(other).Key(0) == dev.Key(0) {
			t.Errorf("%s shares the key of the dev server's call", other)
		}
	}
	if again := parse(`"url":"http://dev-db.local:3000"`); again.Key(0) != dev.Key(0) {
		t.Errorf("the same call to the same server: keys %s and %s", again.Key(0), dev.Key(0))
	}
}

// TestMCPServersMarked: a call the client says is an MCP server's (Cursor's
// beforeMCPExecution, Gemini CLI's mcp_context) reaches the gate marked as
// the server's whatever its bare name, so no Bash(…), path or WebFetch(…)
// rule reads it as the client's own tool; the client's own tools are not.
// Before, nothing failed when Cursor's mark was dropped.
func TestMCPServersMarked(t *testing.T) {
	for _, tc := range []struct {
		client, input string
		server        bool
	}{
		{Cursor, `{"hook_event_name":"beforeMCPExecution","conversation_id":"c","tool_name":"Shell","tool_input":"{\"command\":\"ls\"}","url":"http://db.local"}`, true},
		{Cursor, `{"hook_event_name":"beforeShellExecution","conversation_id":"c","command":"ls"}`, false},
		{Gemini, `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"Bash","tool_input":{"command":"ls"},"mcp_context":{"server_name":"ops","url":"https://ops.internal/mcp"}}`, true},
		{Gemini, `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"},"mcp_context":null}`, false},
	} {
		c, err := Parse(tc.client, []byte(tc.input))
		if err != nil {
			t.Fatalf("%s: %v", tc.input, err)
		}
		if got := c.Ask(0).MCPServer; got != tc.server {
			t.Errorf("%s %s: MCPServer %v, want %v", tc.client, tc.input, got, tc.server)
		}
	}
}

// TestFailedCallAndFits: a deny for a call the gate failed before parsing
// it is shaped for the event its input names, even cut short; and an answer
// shaped for another event does not fit the call. Found by a reader.
func TestFailedCallAndFits(t *testing.T) {
	cut := `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"rm -rf build xxxx`
	for _, tc := range []struct {
		client, input, event, want string
	}{
		{ClaudeCode, cut, "", PermissionRequest},
		{ClaudeCode, `{"tool_input":{"hook_event_name":"PermissionRequest"`, "", ""},
		{Copilot, `{"toolName":"bash","toolArgs":"x`, CopilotPermission, CopilotPermission},
		{Copilot, `{"hookEventName":"preToolUse","toolName":"bash"}`, CopilotPermission, CursorPreToolUse},
	} {
		c := FailedCall(tc.client, []byte(tc.input), tc.event)
		if c.Event != tc.want {
			t.Errorf("%s %s (event %q): event %q, want %q", tc.client, tc.input, tc.event, c.Event, tc.want)
		}
		deny := Render(c, Failure("x")).Stdout
		if allows(t, deny) || (c.Event != "" && !Fits(c, deny)) {
			t.Errorf("%s %s: deny %s does not fit", tc.client, tc.input, deny)
		}
	}
	perm := Call{Client: ClaudeCode, Event: PermissionRequest}
	if pre := Render(Call{Client: ClaudeCode, Event: PreToolUse}, Failure("x")).Stdout; Fits(perm, pre) {
		t.Errorf("a PreToolUse deny fits a PermissionRequest: %s", pre)
	}
	cpPerm := Call{Client: Copilot, Event: CopilotPermission}
	if pre := Render(Call{Client: Copilot, Event: CursorPreToolUse}, Failure("x")).Stdout; Fits(cpPerm, pre) {
		t.Errorf("a preToolUse deny fits a permissionRequest: %s", pre)
	}
	if !Fits(cpPerm, Invalid(cpPerm, ErrInput).Stdout) || !Fits(perm, Noted().Stdout) {
		t.Error("Copilot's two-shape deny, or no opinion, does not fit")
	}
}

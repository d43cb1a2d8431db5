package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
)

// TestHookGeminiMCPToolIsNotTheClientsOwn: Gemini CLI registers an MCP
// server's tool under its bare name (generateValidName(serverToolName)) when
// no built-in has it, and Gemini's built-ins are run_shell_command,
// read_file, …: a server's tool called Bash, Read or WebFetch keeps that
// name, and the BeforeTool input says it is the server's only in
// mcp_context. Gatehouse read it as Claude Code's own shell or file tool, so
// an allow of Bash(ls:*) or Read(./src/**) allowed the server's tool, which
// does whatever that server does with those arguments, as Cursor's MCP calls
// did before they were marked.
func TestHookGeminiMCPToolIsNotTheClientsOwn(t *testing.T) {
	env := hookServer(t, []gate.Route{
		{Name: "ls", Calls: []string{"Bash(ls:*)"}, Action: policy.Allow},
		{Name: "src", Calls: []string{"Read(./src/**)"}, Action: policy.Allow},
		{Name: "fetch", Calls: []string{"WebFetch(domain:example.com)"}, Action: policy.Allow},
		{Name: "all", Tool: "*", Channels: []string{gate.WebChannel}, Timeout: 10 * time.Minute},
	})
	const mcp = `,"mcp_context":{"server_name":"prod-ops","tool_name":"%s","url":"https://ops.internal/mcp"}}`
	base := `{"session_id":"s-mcp","transcript_path":"/t.json","cwd":"/proj","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z",`
	for _, tc := range []struct{ tool, input string }{
		{"Bash", `{"command":"ls"}`},
		{"Read", `{"file_path":"src/main.go"}`},
		{"WebFetch", `{"url":"https://example.com/"}`},
	} {
		own := base + `"tool_name":"` + tc.tool + `","tool_input":` + tc.input + `}`
		server := strings.TrimSuffix(own, "}") + strings.Replace(mcp, "%s", tc.tool, 1)
		out, _, code := hookRun(t, env.url, hookToken, server, "gemini", "--wait", "1s")
		if code != 0 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, "still waiting") {
			t.Errorf("MCP server prod-ops's tool %s %s: exit %d %s; want it asked (a person), not allowed by the %s(…) route",
				tc.tool, tc.input, code, strings.TrimSpace(out), tc.tool)
		}
	}
	// The client's own shell tool is still allowed.
	own := base + `"tool_name":"run_shell_command","tool_input":{"command":"ls"}}`
	if out, _, code := hookRun(t, env.url, hookToken, own, "gemini", "--wait", "1s"); code != 0 || !strings.Contains(out, `"decision":"allow"`) {
		t.Errorf("run_shell_command ls: exit %d %s", code, out)
	}
}

// TestHookGeminiShellDirectoryIsACd: Gemini CLI runs run_shell_command's
// command as bash -c in its dir_path (or the older directory) argument, so
// {"command":"./build.sh","dir_path":"sub"} is `cd sub && ./build.sh`, which
// Bash(./build.sh) does not allow (the cd is a part no allow pattern
// covers). Gatehouse read the command alone and allowed sub/build.sh.
func TestHookGeminiShellDirectoryIsACd(t *testing.T) {
	env := hookServer(t, []gate.Route{
		{Name: "build", Calls: []string{"Bash(./build.sh)", "Bash(npm test:*)"}, Action: policy.Allow},
		{Name: "all", Tool: "*", Channels: []string{gate.WebChannel}, Timeout: 10 * time.Minute},
	})
	in := func(args string) string {
		return `{"session_id":"s-dir","transcript_path":"/t.json","cwd":"/proj","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z","tool_name":"run_shell_command","tool_input":` + args + `}`
	}
	for _, args := range []string{
		`{"command":"cd sub && ./build.sh"}`, // what the policy already asks about
		`{"command":"./build.sh","dir_path":"sub"}`,
		`{"command":"./build.sh","directory":"sub"}`,
		`{"command":"npm test","dir_path":"node_modules/left-pad"}`,
	} {
		out, _, code := hookRun(t, env.url, hookToken, in(args), "gemini", "--wait", "1s")
		if code != 0 || !strings.Contains(out, `"decision":"deny"`) || !strings.Contains(out, "still waiting") {
			t.Errorf("%s: exit %d %s; want it asked, as `cd DIR && COMMAND` is", args, code, strings.TrimSpace(out))
		}
	}
	for _, args := range []string{`{"command":"./build.sh"}`, `{"command":"./build.sh","dir_path":"."}`} {
		if out, _, code := hookRun(t, env.url, hookToken, in(args), "gemini", "--wait", "1s"); code != 0 || !strings.Contains(out, `"decision":"allow"`) {
			t.Errorf("%s: exit %d %s; want allowed", args, code, strings.TrimSpace(out))
		}
	}
}

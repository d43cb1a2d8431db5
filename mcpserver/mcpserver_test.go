package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/mcpserver"
)

// fakeGate answers every Ask with res and err, after calling progress
// `progress` times; it records what it was asked.
type fakeGate struct {
	mu       sync.Mutex
	asked    []mcpserver.Ask
	res      mcpserver.Result
	err      error
	progress int
}

func (g *fakeGate) Ask(_ context.Context, _ string, a mcpserver.Ask, progress func()) (mcpserver.Result, error) {
	g.mu.Lock()
	g.asked = append(g.asked, a)
	g.mu.Unlock()
	for range g.progress {
		progress()
	}
	return g.res, g.err
}

// connect runs the server over in-memory transports and returns a client
// session and the progress messages it hears.
func connect(t *testing.T, g mcpserver.Gate) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := mcpserver.New(g, mcpserver.Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	heard := make(chan string, 100)
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			heard <- r.Params.Message
		}})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, heard
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args any, progress bool) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progress {
		p.SetProgressToken("tok-1")
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(res.Content) == 0 {
		t.Fatalf("%s answered no content", tool)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s answered %q: %v", tool, text, err)
	}
	return res, out
}

func TestListTools(t *testing.T) {
	cs, _ := connect(t, &fakeGate{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
		schema, _ := json.Marshal(tool.InputSchema)
		if tool.Name == "approval_prompt" && (!strings.Contains(string(schema), `"tool_use_id"`) || !strings.Contains(string(schema), `"input"`)) {
			t.Errorf("approval_prompt's input schema lacks Claude Code's fields: %s", schema)
		}
	}
	if !names["request_approval"] || !names["approval_prompt"] {
		t.Fatalf("tools: %v", names)
	}
}

// TestApprovalPromptDecisions: only an approval allows, and it carries the
// input to run with; every other outcome is a deny with a message.
func TestApprovalPromptDecisions(t *testing.T) {
	input := map[string]any{"command": "rm -rf build"}
	for _, tc := range []struct {
		name     string
		res      mcpserver.Result
		err      error
		behavior string
		want     string // in the message, or the updatedInput's JSON
	}{
		{"approved", mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true}, nil, "allow", `{"command":"rm -rf build"}`},
		{"approved with edits", mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true, ModifiedArgs: json.RawMessage(`{"command":"rm -rf build/tmp"}`)}, nil,
			"allow", `{"command":"rm -rf build/tmp"}`},
		{"edits that are no object", mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true, ModifiedArgs: json.RawMessage(`"rm -rf /"`)}, nil,
			"deny", "not a JSON object"},
		{"rejected", mcpserver.Result{RequestID: "r1", Status: "rejected", Error: "Rejected by slack:T1/U2: no"}, nil, "deny", "Rejected by slack:T1/U2: no"},
		{"expired", mcpserver.Result{RequestID: "r1", Status: "expired", Error: "Expired: no verdict within 10m0s (on timeout: deny)"}, nil, "deny", "Expired"},
		{"still pending", mcpserver.Result{RequestID: "r1", Status: "pending"}, nil, "deny", "no verdict yet"},
		{"gate unreachable", mcpserver.Result{}, errors.New("dial tcp 127.0.0.1:8080: connection refused"), "deny", "connection refused"},
		{"an error that claims allow", mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true}, errors.New("unreadable answer"), "deny", "unreadable answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &fakeGate{res: tc.res, err: tc.err}
			cs, _ := connect(t, g)
			res, out := call(t, cs, "approval_prompt", map[string]any{"tool_name": "Bash", "input": input, "tool_use_id": "toolu_01"}, false)
			if res.IsError || out["behavior"] != tc.behavior {
				t.Fatalf("answered %v (isError %v), want %s", out, res.IsError, tc.behavior)
			}
			if tc.behavior == "allow" {
				got, _ := json.Marshal(out["updatedInput"])
				if string(got) != tc.want || out["message"] != nil {
					t.Fatalf("updatedInput %s, want %s (%v)", got, tc.want, out)
				}
			} else if msg, _ := out["message"].(string); !strings.Contains(msg, tc.want) || out["updatedInput"] != nil {
				t.Fatalf("deny %v, want a message with %q", out, tc.want)
			}
			if a := g.asked[0]; a.ToolName != "Bash" || !strings.HasPrefix(a.IdempotencyKey, "mcp-") || a.ToolCallID != "toolu_01" || string(a.ToolArgs) != `{"command":"rm -rf build"}` {
				t.Fatalf("asked %+v", a)
			}
		})
	}
}

// TestApprovalPromptKeysEachPrompt: the call's id is recorded, never the
// key: a later prompt under an earlier call's id (a model that numbers its
// calls afresh, call_0 again) is a request of its own, not a re-attach to
// the earlier one's verdict.
func TestApprovalPromptKeysEachPrompt(t *testing.T) {
	g := &fakeGate{res: mcpserver.Result{RequestID: "r1", Status: "rejected"}}
	cs, _ := connect(t, g)
	for range 2 {
		call(t, cs, "approval_prompt", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls"}, "tool_use_id": "call_0"}, false)
	}
	if k0, k1 := g.asked[0].IdempotencyKey, g.asked[1].IdempotencyKey; k0 == k1 || k0 == "call_0" || g.asked[1].ToolCallID != "call_0" {
		t.Fatalf("keys %q and %q for two prompts of call_0 (call id %q)", k0, k1, g.asked[1].ToolCallID)
	}
}

func TestApprovalPromptWithoutToolName(t *testing.T) {
	g := &fakeGate{res: mcpserver.Result{Status: "approved", Allow: true}}
	cs, _ := connect(t, g)
	_, out := call(t, cs, "approval_prompt", map[string]any{"tool_name": " ", "input": map[string]any{}}, false)
	if out["behavior"] != "deny" || len(g.asked) != 0 {
		t.Fatalf("answered %v after asking %d times", out, len(g.asked))
	}
}

// TestRequestApproval: the hook result comes back as structured content
// and as JSON text; failures are errors that deny; a pending answer says
// how to keep waiting; progress reaches a client that asked for it.
func TestRequestApproval(t *testing.T) {
	g := &fakeGate{res: mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true, ModifiedArgs: json.RawMessage(`{"env":"staging"}`),
		SideEffects: []string{"gatehouse: approved by web:alice via web after 3s"}}, progress: 2}
	cs, heard := connect(t, g)
	res, out := call(t, cs, "request_approval", map[string]any{"tool_name": "deploy", "tool_args": map[string]any{"env": "prod"}, "summary": "Deploy prod"}, true)
	if res.IsError || out["allow"] != true || out["status"] != "approved" || out["request_id"] != "r1" {
		t.Fatalf("answered %v", out)
	}
	if m, _ := out["modified_args"].(map[string]any); m["env"] != "staging" {
		t.Fatalf("modified_args %v", out["modified_args"])
	}
	if sc, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(sc), `"allow":true`) {
		t.Fatalf("structured content %s", sc)
	}
	a := g.asked[0]
	if a.ToolName != "deploy" || string(a.ToolArgs) != `{"env":"prod"}` || a.Summary != "Deploy prod" || !strings.HasPrefix(a.IdempotencyKey, "mcp-") {
		t.Fatalf("asked %+v", a)
	}
	for range 2 {
		select {
		case m := <-heard:
			if !strings.Contains(m, "request_approval deploy: waiting for a person's verdict") {
				t.Fatalf("progress heard: %q", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("fewer than 2 progress notifications")
		}
	}

	g.res, g.err = mcpserver.Result{RequestID: "r2", Status: "approved", Allow: true}, errors.New("server unreachable")
	const issued = "mcp-0123456789abcdef0123456789abcdef"
	res, out = call(t, cs, "request_approval", map[string]any{"tool_name": "deploy", "idempotency_key": issued}, false)
	if !res.IsError || out["allow"] != false || out["status"] != "error" || !strings.Contains(out["error"].(string), "server unreachable") {
		t.Fatalf("a failed gate answered %v (isError %v)", out, res.IsError)
	}
	if g.asked[1].IdempotencyKey != issued || out["idempotency_key"] != issued {
		t.Fatalf("the caller's key was not used: %+v / %v", g.asked[1], out)
	}
	// A key the model made up (the same name for the same payment in the
	// next conversation would re-attach to this one's approval) is not
	// used; nor is one that only looks issued.
	for _, made := range []string{"pay-acme-60000", "mcp-0123456789ABCDEF0123456789ABCDEF", "mcp-0123456789abcdef", "k-1"} {
		n := len(g.asked)
		_, out = call(t, cs, "request_approval", map[string]any{"tool_name": "deploy", "idempotency_key": made}, false)
		if k := g.asked[n].IdempotencyKey; k == made || !strings.HasPrefix(k, "mcp-") || out["idempotency_key"] != k {
			t.Fatalf("key %q: asked with %q, answered %v", made, k, out["idempotency_key"])
		}
	}

	g.res, g.err = mcpserver.Result{RequestID: "r3", Status: "pending"}, nil
	_, out = call(t, cs, "request_approval", map[string]any{"tool_name": "deploy"}, false)
	if out["allow"] != false || !strings.Contains(out["error"].(string), "same idempotency_key") || out["idempotency_key"] == "" {
		t.Fatalf("pending answered %v", out)
	}

	res, out = call(t, cs, "request_approval", map[string]any{"tool_name": ""}, false)
	if !res.IsError || out["allow"] != false || !strings.Contains(out["error"].(string), "tool_name is required") {
		t.Fatalf("no tool name answered %v", out)
	}
}

// TestApprovalPromptEditedToNoArguments: an approver who edits the
// arguments down to none ({}) approved {} and nothing else; the allow must
// carry that empty updatedInput, since an allow without one lets Claude
// Code run the tool with the agent's own input.
func TestApprovalPromptEditedToNoArguments(t *testing.T) {
	g := &fakeGate{res: mcpserver.Result{RequestID: "r1", Status: "approved", Allow: true, ModifiedArgs: json.RawMessage(`{}`)}}
	cs, _ := connect(t, g)
	res, out := call(t, cs, "approval_prompt", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf build"}, "tool_use_id": "toolu_01"}, false)
	if res.IsError || out["behavior"] != "allow" {
		t.Fatalf("answered %v", out)
	}
	got, ok := out["updatedInput"].(map[string]any)
	if !ok || len(got) != 0 {
		t.Fatalf("approved with edits {} but answered %v: updatedInput is missing, so the agent's {\"command\":\"rm -rf build\"} runs", out)
	}
}

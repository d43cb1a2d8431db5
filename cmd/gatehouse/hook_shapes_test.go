package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHookEndpointUnreadableInputDenyIsShapedForItsEvent: POST
// /hooks/{client} answered a PermissionRequest body it could not decode (cut
// short on the way, or a field of another type than this version expects)
// with a deny in PreToolUse's shape, which a PermissionRequest hook does not
// read: Claude Code and Codex run the tool.
func TestHookEndpointUnreadableInputDenyIsShapedForItsEvent(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	for _, tc := range []struct{ name, url, body string }{
		{"claude-code PermissionRequest cut short", "/hooks/claude-code", ccPerm[:len(ccPerm)-40]},
		{"claude-code PermissionRequest, cwd not a string", "/hooks/claude-code", strings.Replace(ccPerm, `"cwd":"/proj"`, `"cwd":{"path":"/proj"}`, 1)},
		{"codex PermissionRequest cut short", "/hooks/codex", cxPerm[:len(cxPerm)-20]},
		// A hook URL with a slip in the client's name: still a deny the
		// PermissionRequest hook reads.
		{"claude-code PermissionRequest, trailing slash", "/hooks/claude-code/", ccPerm},
		{"claude-code PermissionRequest, capitals", "/hooks/Claude-Code", ccPerm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, status := hookPostStatus(t, env.url+tc.url, hookToken, strings.NewReader(tc.body), int64(len(tc.body)))
			if status != http.StatusOK || !strings.Contains(out, `"hookEventName":"PermissionRequest"`) || !strings.Contains(out, `"behavior":"deny"`) {
				t.Errorf("%d %s\nwant a PermissionRequest deny (decision.behavior deny): the client reads no other", status, out)
			}
		})
	}
}

// TestHookEndpointClientInCapitalsDeniesInThatClientsShape: the command
// hook reads `gatehouse hook Copilot` as copilot, since Copilot CLI reads
// no Claude Code JSON; the endpoint answered /hooks/Copilot with Claude
// Code's shape, which a script relaying the answer to Copilot hands on as
// no decision, and Copilot runs the tool.
func TestHookEndpointClientInCapitalsDeniesInThatClientsShape(t *testing.T) {
	env := hookServer(t, hookTestRoutes)
	for _, tc := range []struct{ url, token, want string }{
		{"/hooks/Copilot?event=permissionRequest", hookToken, "behavior"},
		{"/hooks/Copilot", hookToken, "permissionDecision"},
		{"/hooks/Copilot?event=permissionRequest", "wrong", "behavior"},
		{"/hooks/Cursor", hookToken, "permission"},
	} {
		t.Run(tc.url+" "+tc.token, func(t *testing.T) {
			out, status := hookPostStatus(t, env.url+tc.url, tc.token, strings.NewReader(cpPre), int64(len(cpPre)))
			var top map[string]any
			_ = json.Unmarshal([]byte(out), &top)
			if status != http.StatusOK || top[tc.want] != "deny" {
				t.Errorf("%d %s\nwant %s deny at the top level: the client reads no other deny", status, out, tc.want)
			}
		})
	}
}

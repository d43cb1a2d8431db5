package hook

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Output is a hook's answer as a command hook gives it: what to print on
// stdout and stderr and the exit code. The HTTP endpoint sends Stdout as a
// 200 body (it is JSON on every path).
type Output struct {
	Stdout []byte
	Stderr string
	Exit   int
}

type obj = map[string]any

// Render puts a verdict in the call's client's words. Every client gets
// exit 0 with its decision JSON on stdout; Invalid covers input that never
// became a call.
//
// What each client can take:
//   - Claude Code: PreToolUse allow/deny with a reason and, with allow, the
//     approver's edits as updatedInput; PermissionRequest decision.behavior
//     allow (with updatedInput) or deny (with message).
//   - Codex: the same shapes, but PreToolUse allow is accepted only with
//     updatedInput, so an approval always carries the input it approved
//     (the edits, or the input as proposed: pinning what the person saw).
//     Its PermissionRequest refuses updatedInput, so an approval with edits
//     becomes a deny there that says how to proceed.
//   - Cursor: flat permission allow/deny with user_message and agent_message.
//   - Gemini CLI: flat decision allow/deny with reason.
//   - Copilot CLI: preToolUse permissionDecision; permissionRequest behavior.
//
// Cursor, Gemini and Copilot cannot take changed arguments from a hook, so
// an approval with edits is a deny that hands the agent the approved
// arguments to run instead.
func Render(c Call, v Verdict) Output {
	c = asKnown(c)
	if len(v.UpdatedInput) > 0 && v.Kind == Allow && (!acceptsEdits(c) || !jsonObject(v.UpdatedInput)) {
		v = Verdict{Kind: Deny, RequestID: v.RequestID, Reason: fmt.Sprintf(
			"%s, with changed arguments that %s cannot apply from a hook. Run the call again with exactly these arguments: %s",
			v.Reason, label(c.Client), v.UpdatedInput)}
	}
	var out any
	switch c.Client {
	case ClaudeCode, Codex:
		out = claude(c, v)
	case Cursor:
		out = cursor(v)
	case Gemini:
		out = gemini(v)
	case Copilot:
		out = copilot(c, v)
	default:
		out = claude(Call{Client: ClaudeCode, Event: c.Event}, v)
	}
	return Output{Stdout: marshal(out), Exit: 0}
}

// asKnown is c with its client named as the clients are (/hooks/Copilot is
// copilot's input): an answer in another client's shape is no decision the
// client reads, and it runs the tool. The call is still refused.
func asKnown(c Call) Call {
	if l := ClientNamed(c.Client); l != "" {
		c.Client = l
	}
	return c
}

// jsonObject reports whether raw is a JSON object: updatedInput replaces
// the tool's input object, and no client applies anything else.
func jsonObject(raw json.RawMessage) bool {
	var o map[string]json.RawMessage
	return json.Unmarshal(raw, &o) == nil && o != nil
}

func acceptsEdits(c Call) bool {
	switch c.Client {
	case ClaudeCode:
		return true
	case Codex:
		return c.Event != PermissionRequest
	}
	return false
}

func claude(c Call, v Verdict) any {
	if v.Kind == Defer {
		return obj{}
	}
	if c.Event == PermissionRequest {
		d := obj{"behavior": "deny", "message": v.Reason}
		if v.Kind == Allow {
			d = obj{"behavior": "allow"}
			if len(v.UpdatedInput) > 0 {
				d["updatedInput"] = v.UpdatedInput
			}
		}
		return obj{"hookSpecificOutput": obj{"hookEventName": PermissionRequest, "decision": d}}
	}
	h := obj{"hookEventName": PreToolUse, "permissionDecision": "deny", "permissionDecisionReason": v.Reason}
	if v.Kind == Allow {
		h["permissionDecision"] = "allow"
		in := v.UpdatedInput
		if len(in) == 0 && c.Client == Codex {
			in = c.ToolInput
		}
		if len(in) > 0 {
			h["updatedInput"] = in
		}
	}
	return obj{"hookSpecificOutput": h}
}

func cursor(v Verdict) any {
	switch v.Kind {
	case Defer:
		// Cursor needs a permission and has no "no opinion": "allow" would
		// skip Cursor's own prompt for a call no route and no person
		// allowed, so the call goes to Cursor's prompt.
		return obj{"permission": "ask"}
	case Allow:
		return obj{"permission": "allow", "user_message": v.Reason}
	}
	return obj{"permission": "deny", "user_message": v.Reason, "agent_message": v.Reason}
}

func gemini(v Verdict) any {
	switch v.Kind {
	case Defer:
		return obj{}
	case Allow:
		return obj{"decision": "allow", "reason": v.Reason}
	}
	return obj{"decision": "deny", "reason": v.Reason}
}

func copilot(c Call, v Verdict) any {
	if v.Kind == Defer {
		return obj{}
	}
	if c.Event == CopilotPermission {
		if v.Kind == Allow {
			return obj{"behavior": "allow"}
		}
		return obj{"behavior": "deny", "message": v.Reason}
	}
	if v.Kind == Allow {
		return obj{"permissionDecision": "allow", "permissionDecisionReason": v.Reason}
	}
	return obj{"permissionDecision": "deny", "permissionDecisionReason": v.Reason}
}

// Invalid is the answer to input that is not a call this package can read
// (garbage, an unknown client, an event it does not gate). Claude Code,
// Codex and Gemini CLI block on exit 2 with the reason on stderr whatever
// the event, so they get that; Cursor and Copilot get their deny JSON (for
// Copilot in both of its events' fields, since the event is not known).
// Stdout is a deny shaped for the event as far as the input showed it, for
// the HTTP endpoint, which cannot exit 2.
func Invalid(c Call, err error) Output {
	c = asKnown(c)
	if c.Report() {
		// The tool already ran: nothing to block, and nothing to trouble
		// the agent with.
		return Output{Stdout: []byte("{}"), Stderr: fmt.Sprintf("gatehouse: cannot read the %s hook input: %v", label(c.Client), err)}
	}
	v := Failure(fmt.Sprintf("cannot read the %s hook input: %v", label(c.Client), err))
	out := Render(c, v)
	out.Stderr = v.Reason
	switch c.Client {
	case Cursor:
	case Copilot:
		out.Stdout = marshal(obj{"permissionDecision": "deny", "permissionDecisionReason": v.Reason,
			"behavior": "deny", "message": v.Reason})
	default:
		out.Exit = 2
	}
	return out
}

// AnyDeny is the deny for a hook that cannot tell which client runs it (a
// command line naming none it knows): exit 2 with the reason on stderr, and
// on stdout the flat deny fields of Copilot CLI (both events), Cursor and
// Gemini CLI, for the clients that read stdout whatever the exit code.
func AnyDeny(reason string) Output {
	if !strings.HasPrefix(reason, "gatehouse") {
		reason = "gatehouse: " + reason
	}
	return Output{Stdout: marshal(obj{
		"permissionDecision": "deny", "permissionDecisionReason": reason, // Copilot preToolUse
		"behavior": "deny", "message": reason, // Copilot permissionRequest
		"permission": "deny", "user_message": reason, "agent_message": reason, // Cursor
		"decision": "deny", "reason": reason, // Gemini CLI
	}), Stderr: reason, Exit: 2}
}

// Fits reports whether answer, a hook answer the server sent, is in the
// shape of c's event. Claude Code and Codex read a decision only under
// their own event's hookEventName, and Copilot reads permissionRequest's
// answer in behavior and preToolUse's in permissionDecision: an answer
// shaped for another event says nothing they read, and they run the tool.
// No opinion ({}) fits every event, and Cursor and Gemini CLI answer alike
// for all of theirs.
func Fits(c Call, answer []byte) bool {
	a, ok := keysOf(answer)
	if !ok {
		return false
	}
	switch c.Client {
	case ClaudeCode, Codex:
		h, has := a["hookSpecificOutput"]
		return !has || string(h) == "null" || stringAt(object(h), "hookEventName") == c.Event
	case Copilot:
		// Invalid sends both fields, for either event.
		_, behavior := a["behavior"]
		_, decision := a["permissionDecision"]
		if c.Event == CopilotPermission {
			return behavior || !decision
		}
		return decision || !behavior
	}
	return true
}

// Denies reports whether answer, a hook answer the server sent, is c's
// event's explicit deny, in the field that client reads for that event.
func Denies(c Call, answer []byte) bool {
	a, ok := keysOf(answer)
	if !ok {
		return false
	}
	switch c.Client {
	case ClaudeCode, Codex:
		h := object(a["hookSpecificOutput"])
		switch {
		case stringAt(h, "hookEventName") != c.Event:
			return false
		case c.Event == PermissionRequest:
			return stringAt(object(h["decision"]), "behavior") == "deny"
		}
		return stringAt(h, "permissionDecision") == "deny"
	case Cursor:
		return stringAt(a, "permission") == "deny"
	case Gemini:
		return stringAt(a, "decision") == "deny"
	case Copilot:
		if c.Event == CopilotPermission {
			return stringAt(a, "behavior") == "deny"
		}
		return stringAt(a, "permissionDecision") == "deny"
	}
	return false
}

// keysOf is a hook answer's keys, read as the clients read them: exactly
// (Go's decoding into a struct would take "Permission" for "permission").
// ok is false when the answer is no JSON object (null reads as none).
func keysOf(answer []byte) (map[string]json.RawMessage, bool) {
	var a map[string]json.RawMessage
	return a, json.Unmarshal(answer, &a) == nil
}

// object is raw as an object's keys, nil when it is none.
func object(raw json.RawMessage) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	_ = json.Unmarshal(raw, &o)
	return o
}

// stringAt is the string at key k of m, "" when there is none.
func stringAt(m map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(m[k], &s)
	return s
}

// Noted is the answer to a report of what ran: nothing to do, whatever
// became of the report. The client goes on as if there were no hook.
func Noted() Output { return Output{Stdout: []byte("{}")} }

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a RawMessage that is not JSON can get here, and inputs were
		// compacted on the way in; deny rather than print nothing.
		return []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"gatehouse: internal error"}}`)
	}
	return b
}

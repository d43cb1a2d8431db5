// Package hook maps agent clients' hook protocols (Claude Code, Codex,
// Cursor, Gemini CLI, Copilot CLI) onto the gate and back: a client's hook
// input becomes an Ask of the gate, and a request's outcome becomes that
// client's decision JSON and exit code. It is pure: the HTTP endpoint
// (web/hooks.go) and the command hook (gatehouse hook CLIENT) share it, so
// each wire format lives here and nowhere else.
//
// Nearly every client runs the tool when a hook fails, times out or answers
// something it cannot read, so every path out of this package that is not an
// approval is an explicit deny in the client's own words.
package hook

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Client names, as `gatehouse hook CLIENT` and /hooks/CLIENT spell them.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Cursor     = "cursor"
	Gemini     = "gemini"
	Copilot    = "copilot"
)

// Clients lists the supported clients in the order the docs present them.
var Clients = []string{ClaudeCode, Codex, Cursor, Gemini, Copilot}

// Events each client may register the hook on.
const (
	PreToolUse           = "PreToolUse"        // Claude Code, Codex
	PermissionRequest    = "PermissionRequest" // Claude Code, Codex
	PostToolUse          = "PostToolUse"       // Claude Code, Codex: what ran (reported, not gated)
	PostToolUseFailure   = "PostToolUseFailure"
	BeforeShellExecution = "beforeShellExecution"
	BeforeMCPExecution   = "beforeMCPExecution"
	CursorPreToolUse     = "preToolUse" // Cursor and Copilot spell it alike
	BeforeTool           = "BeforeTool" // Gemini CLI
	CopilotPermission    = "permissionRequest"
)

// Known reports whether name is a supported client.
func Known(name string) bool {
	for _, c := range Clients {
		if c == name {
			return true
		}
	}
	return false
}

// ClientNamed is the client s names in any case (/hooks/Copilot is
// copilot's input), "" when it names none.
func ClientNamed(s string) string {
	if l := strings.ToLower(s); Known(l) {
		return l
	}
	return ""
}

// DefaultWait is how long a command hook waits for a verdict when neither
// --wait nor GATEHOUSE_HOOK_WAIT says: a little under the client's own
// default hook timeout, so the client hears an explicit deny rather than
// timing the hook out (which most clients treat as "proceed").
func DefaultWait(client string) time.Duration {
	switch client {
	case Gemini:
		return 55 * time.Second // Gemini CLI: 60000 ms
	case Copilot:
		return 25 * time.Second // Copilot CLI: timeoutSec 30
	}
	return 590 * time.Second // Claude Code, Codex: 600 s; Cursor: configure timeout ≥ 600
}

// Fresh is how long after its verdict a request still answers a repeat of
// the same call (the PermissionRequest that follows a PreToolUse, a hook the
// client ran twice). Later, an identical call is a new call and gets a new
// request, so one approval is never replayed for the rest of a session.
const Fresh = time.Minute

// MaxChain bounds the walk over a call's keys (see Call.Key).
const MaxChain = 64

// Call is one tool call a client asked about, read from its hook input.
type Call struct {
	Client    string
	Event     string          // the client's event name
	ToolName  string          // as the client names the tool: Bash, mcp__github__create_pr, Shell, run_shell_command
	ToolInput json.RawMessage // the tool's arguments, compact JSON
	ToolUseID string          // the client's call id, when the event carries one
	SessionID string          // session, conversation or, lacking both, the working directory
	Metadata  map[string]string
	// Ran is set on a report of a call that already ran (PostToolUse,
	// PostToolUseFailure): it is recorded on the call's request, never
	// gated, and answered with nothing to do.
	Ran *Ran
	// mcp: the client's input says the tool is an MCP server's (Cursor's
	// beforeMCPExecution, Gemini CLI's mcp_context), whatever its name.
	mcp bool
}

// Ran is what a client reported after running a tool.
type Ran struct {
	Failed      bool
	Output      json.RawMessage // tool_response, as the client sent it
	Error       string          // the failure, on PostToolUseFailure
	Interrupted bool            // the user interrupted the tool
}

// ErrInput marks input that is not a hook call this package can read; the
// message says what is wrong.
var ErrInput = errors.New("hook input")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInput}, args...)...)
}

// Parse reads a client's hook input. The call it returns carries the client
// and, as far as the input showed it, the event, even when it also returns
// an error, so that the deny can be shaped for that event. Unknown fields
// are ignored: clients add fields often, and refusing them would block every
// call after a client update.
func Parse(client string, body []byte) (Call, error) { return ParseAs(client, body, "") }

// ParseAs is Parse for a hook registered on a named event (`--event`,
// `?event=`), for clients whose input does not name it (Copilot). The
// event is assumed only when the input names none: an input that says it
// is a PreToolUse question stays one, so a misconfigured event cannot turn
// every question into a report of what ran, which is never gated.
func ParseAs(client string, body []byte, event string) (Call, error) {
	c := Call{Client: client, Metadata: map[string]string{"client": client}}
	if !Known(client) {
		// Answered in Claude Code's shape (Render), for the event the
		// input names: a PermissionRequest hook reads no other.
		c.Event = headEvent(asKnown(c).Client, body)
		return c, inputErr("unknown client %q (one of %s)", client, strings.Join(Clients, ", "))
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return c, inputErr("empty input: %s sends the tool call as JSON on stdin", client)
	}
	var in rawInput
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		// The deny must still be in the shape of the event the input
		// names, or the client reads no decision in it and runs the tool.
		c.Event = unreadEvent(client, body, event)
		return c, inputErr("not a JSON object: %v", err)
	}
	if in.HookEventName == "" && in.HookEventNameCC == "" {
		in.HookEventName = event
	}
	var err error
	switch client {
	case ClaudeCode, Codex:
		err = c.fromClaude(&in)
	case Cursor:
		err = c.fromCursor(&in)
	case Gemini:
		err = c.fromGemini(&in)
	case Copilot:
		err = c.fromCopilot(&in)
	}
	if err != nil {
		return c, err
	}
	if c.ToolName == "" {
		return c, inputErr("no tool name in the %s %s input", client, c.Event)
	}
	if c.ToolInput, err = normalizeInput(c.ToolInput); err != nil {
		return c, inputErr("tool input: %v", err)
	}
	return c, nil
}

// rawInput is the union of the fields the five clients send.
type rawInput struct {
	HookEventName    string          `json:"hook_event_name"`
	HookEventNameCC  string          `json:"hookEventName"`
	SessionID        string          `json:"session_id"`
	SessionIDCC      string          `json:"sessionId"`
	ConversationID   string          `json:"conversation_id"`
	GenerationID     string          `json:"generation_id"`
	TranscriptPath   string          `json:"transcript_path"`
	Cwd              string          `json:"cwd"`
	PermissionMode   string          `json:"permission_mode"`
	ToolName         string          `json:"tool_name"`
	ToolNameCC       string          `json:"toolName"`
	ToolInput        json.RawMessage `json:"tool_input"`
	ToolArgs         json.RawMessage `json:"toolArgs"`
	ToolUseID        string          `json:"tool_use_id"`
	Command          string          `json:"command"`
	URL              string          `json:"url"`
	WorkspaceRoots   []string        `json:"workspace_roots"`
	Timestamp        json.RawMessage `json:"timestamp"`
	PermissionSugges json.RawMessage `json:"permission_suggestions"`
	ToolResponse     json.RawMessage `json:"tool_response"`
	Error            json.RawMessage `json:"error"`
	IsInterrupt      bool            `json:"is_interrupt"`
	MCPContext       json.RawMessage `json:"mcp_context"` // Gemini CLI: present for an MCP server's tool only
}

func (c *Call) meta(key, value string) {
	if value != "" {
		c.Metadata[key] = value
	}
}

func (c *Call) fromClaude(in *rawInput) error {
	c.Event = in.HookEventName
	if c.Event == "" {
		c.Event = PreToolUse
	}
	c.ToolName, c.ToolInput, c.ToolUseID, c.SessionID = in.ToolName, in.ToolInput, in.ToolUseID, in.SessionID
	c.meta("hook_event_name", c.Event)
	c.meta("cwd", in.Cwd)
	c.meta("permission_mode", in.PermissionMode)
	c.meta("transcript_path", in.TranscriptPath)
	c.meta("tool_use_id", in.ToolUseID)
	if c.SessionID == "" {
		c.SessionID = "cwd:" + in.Cwd
	}
	switch c.Event {
	case PreToolUse, PermissionRequest:
	case PostToolUse, PostToolUseFailure:
		c.Ran = &Ran{Failed: c.Event == PostToolUseFailure, Output: in.ToolResponse, Error: rawText(in.Error), Interrupted: in.IsInterrupt}
	default:
		return inputErr("event %q is not gated: register gatehouse on PreToolUse or PermissionRequest (and PostToolUse, PostToolUseFailure to record what ran)", c.Event)
	}
	return nil
}

// rawText is a JSON string's text, or the JSON itself when it is not a string.
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		return string(t)
	}
	return ""
}

// Report reports whether the call is a report of what ran rather than a
// question for the gate (a PostToolUse, with or without a parsed input).
// Only Claude Code and Codex report: another client's call on that event
// (named by --event or ?event=, which fill in what its input leaves out)
// is a question its parser refuses, and is denied.
func (c Call) Report() bool {
	return reports(c.Client) && (c.Event == PostToolUse || c.Event == PostToolUseFailure)
}

// reports says the client reports what ran (Claude Code and Codex).
func reports(client string) bool { return client == ClaudeCode || client == Codex }

// LooksLikeReport reports whether the first part of an input (all that was
// read of one too large to read whole) is a report of what ran, which must
// be answered with nothing to do rather than a deny. Only the input's own
// event counts, read as Parse reads it (the last of the keys that match
// hook_event_name, or Copilot's hookEventName, without regard to case):
// the same words inside the tool's arguments, which the model writes, must
// not turn a question into a report that is waved through unasked. Only a
// client that reports (Report) sends one.
func LooksLikeReport(client string, head []byte) bool {
	event := headEvent(client, head)
	return reports(client) && (event == PostToolUse || event == PostToolUseFailure)
}

// unreadEvent is the event an input that cannot be read is answered for:
// the one its first part names, or else the caller's (--event, ?event=)
// unless that is a report's: an input that cannot be read is no report of
// what ran, whose answer ({}) would let a call through.
func unreadEvent(client string, head []byte, event string) string {
	if e := headEvent(client, head); e != "" || event == PostToolUse || event == PostToolUseFailure {
		return e
	}
	return event
}

// headEvent is the event the first part of an input names, as Parse reads
// it: hook_event_name, or for Copilot, whose parser reads it, hookEventName.
func headEvent(client string, head []byte) string {
	snake, cc := eventFields(head)
	if client == Copilot && cc != "" {
		return cc
	}
	return snake
}

// eventFields reads the event names at the top level of the first 64 KiB
// of an input, as Parse reads them: the last of the keys that match
// hook_event_name, and of those that match Copilot's hookEventName,
// without regard to case. Values inside the tool's arguments are skipped:
// the model writes those.
func eventFields(head []byte) (event, eventCC string) {
	if len(head) > 64<<10 {
		head = head[:64<<10]
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		v, err := dec.Token()
		if err != nil {
			break
		}
		if d, ok := v.(json.Delim); ok {
			if !skipValue(dec, d) {
				break
			}
			continue
		}
		s, _ := v.(string)
		switch {
		case strings.EqualFold(key, "hook_event_name"):
			event = s
		case strings.EqualFold(key, "hookEventName"):
			eventCC = s
		}
	}
	return event, eventCC
}

// FailedCall is the call, as far as its input shows it, whose hook the gate
// fails before it has parsed the input (a wrong token) or without reading
// the input whole (one over the size limit): its client and event, so that
// the deny is shaped for that event. Claude Code and Codex read a
// PermissionRequest's answer only under that hookEventName, and Copilot a
// permissionRequest's only in behavior: a deny in PreToolUse's shape is one
// they do not read, and they run the tool. event is the one the hook was
// registered on (?event=), for an input that names none.
func FailedCall(client string, input []byte, event string) Call {
	c, _ := ParseAs(client, input, event)
	if c.Event != "" {
		return c
	}
	// Not JSON as a whole (cut short at the limit): read the event from
	// the input's first part.
	c.Event = unreadEvent(client, input, event)
	return c
}

// skipValue reads the rest of an object or array that opened with d.
func skipValue(dec *json.Decoder, d json.Delim) bool {
	if d != '{' && d != '[' {
		return true
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return true
}

// SmallReport is the call's report as a client input of at most max bytes:
// the input itself when it fits, else the same report with the tool's
// output replaced by a note of its size (what ran keeps 2 KB of it anyway).
func SmallReport(c Call, input []byte, max int) []byte {
	if len(input) <= max || c.Ran == nil {
		return input
	}
	out, _ := jsonx.Marshal(map[string]any{
		"hook_event_name": c.Event, "session_id": c.SessionID, "cwd": c.Metadata["cwd"],
		"tool_name": c.ToolName, "tool_input": c.ToolInput, "tool_use_id": c.ToolUseID,
		"tool_response": fmt.Sprintf("(an output of %d bytes, too large to record)", len(c.Ran.Output)),
		"error":         text.EllipsisWords(c.Ran.Error, 8<<10), "is_interrupt": c.Ran.Interrupted,
	})
	return out
}

func (c *Call) fromCursor(in *rawInput) error {
	c.Event = in.HookEventName
	if c.Event == "" {
		if in.ToolName == "" && in.Command != "" {
			c.Event = BeforeShellExecution
		} else {
			c.Event = CursorPreToolUse
		}
	}
	c.SessionID = in.ConversationID
	c.meta("hook_event_name", c.Event)
	cwd := in.Cwd
	if cwd == "" && len(in.WorkspaceRoots) == 1 {
		// Cursor's preToolUse names no cwd; its one workspace root is
		// where relative paths and the policy's relative path rules
		// stand (without one, those rules hold every file call).
		cwd = in.WorkspaceRoots[0]
	}
	c.meta("cwd", cwd)
	c.meta("generation_id", in.GenerationID)
	if len(in.WorkspaceRoots) > 0 {
		c.meta("workspace_roots", strings.Join(in.WorkspaceRoots, ":"))
	}
	switch c.Event {
	case BeforeShellExecution:
		// Cursor's own name for its terminal tool, so one route covers both
		// this event and preToolUse.
		c.ToolName = "Shell"
		if in.Command == "" {
			return inputErr("no command in the beforeShellExecution input")
		}
		c.ToolInput, _ = json.Marshal(map[string]string{"command": in.Command})
	case BeforeMCPExecution:
		// The tool name is bare (database_query): only the url or command
		// says which server the call goes to, so both are part of the call
		// (Key, and the gate's idempotency and grant checks).
		c.ToolName, c.ToolInput, c.mcp = in.ToolName, in.ToolInput, true
		c.meta("mcp_url", in.URL)
		c.meta("mcp_command", in.Command)
	case CursorPreToolUse:
		c.ToolName, c.ToolInput, c.ToolUseID = in.ToolName, in.ToolInput, in.ToolUseID
		c.meta("tool_use_id", in.ToolUseID)
	default:
		return inputErr("event %q is not gated: register gatehouse on beforeShellExecution, beforeMCPExecution or preToolUse", c.Event)
	}
	if c.SessionID == "" {
		c.SessionID = "cwd:" + in.Cwd
	}
	return nil
}

func (c *Call) fromGemini(in *rawInput) error {
	c.Event = in.HookEventName
	if c.Event == "" {
		c.Event = BeforeTool
	}
	c.ToolName, c.ToolInput, c.SessionID = in.ToolName, in.ToolInput, in.SessionID
	c.meta("hook_event_name", c.Event)
	c.meta("cwd", in.Cwd)
	c.meta("transcript_path", in.TranscriptPath)
	if t := bytes.TrimSpace(in.MCPContext); len(t) > 0 && string(t) != "null" {
		// Gemini CLI names an MCP server's tool by its bare name when no
		// built-in has it (Bash, Read, WebFetch): only mcp_context says it
		// is the server's, and which server, as for Cursor's MCP calls.
		c.mcp = true
		var m struct {
			Server  string   `json:"server_name"`
			Command string   `json:"command"`
			Args    []string `json:"args"`
			URL     string   `json:"url"`
			TCP     string   `json:"tcp"`
		}
		_ = json.Unmarshal(t, &m)
		c.meta("mcp_server", m.Server)
		c.meta("mcp_url", cmp.Or(m.URL, m.TCP))
		c.meta("mcp_command", strings.TrimSpace(strings.Join(append([]string{m.Command}, m.Args...), " ")))
		if c.Metadata["mcp_url"] == "" && c.Metadata["mcp_command"] == "" {
			c.meta("mcp_command", "server:"+m.Server) // still a call of its own, apart from the client's tools
		}
	}
	if c.SessionID == "" {
		c.SessionID = "cwd:" + in.Cwd
	}
	if c.Event != BeforeTool {
		return inputErr("event %q is not gated: register gatehouse on BeforeTool", c.Event)
	}
	return nil
}

func (c *Call) fromCopilot(in *rawInput) error {
	c.Event = in.HookEventNameCC
	if c.Event == "" {
		c.Event = in.HookEventName
	}
	if c.Event == "" {
		c.Event = CursorPreToolUse
	}
	c.ToolName, c.ToolInput = in.ToolNameCC, in.ToolArgs
	if c.ToolName == "" {
		c.ToolName, c.ToolInput = in.ToolName, in.ToolInput
	}
	c.SessionID = in.SessionIDCC
	if c.SessionID == "" {
		c.SessionID = in.SessionID
	}
	c.meta("hook_event_name", c.Event)
	c.meta("cwd", in.Cwd)
	if c.SessionID == "" {
		// Copilot CLI sends no session: identical calls from one directory
		// share a key, and Fresh keeps that from replaying old verdicts.
		c.SessionID = "cwd:" + in.Cwd
	}
	if c.Event != CursorPreToolUse && c.Event != CopilotPermission {
		return inputErr("event %q is not gated: register gatehouse on preToolUse or permissionRequest", c.Event)
	}
	return nil
}

// normalizeInput returns the tool input as compact JSON. Some clients send
// it as a JSON-encoded string (Cursor's MCP calls, Copilot's toolArgs); when
// the string holds JSON, the value inside is the input.
func normalizeInput(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if t := strings.TrimSpace(s); t != "" && json.Valid([]byte(t)) {
			raw = json.RawMessage(t)
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Key is the idempotency key of the call's n-th request. Key(0) is a hash of
// the session, the tool, the canonical input, the working directory (the
// same command elsewhere is another call) and, for a Cursor MCP call, the
// server's url or command (its tool name is bare: database_query on a dev
// server and on a prod server are two calls), so that both events of one
// call (PreToolUse and PermissionRequest; only the first has a tool_use_id),
// a hook the client ran twice, and a command hook re-attaching after a
// server restart all land on one request: one card, one verdict. A later
// identical call finds that request settled and stale (see Reusable) and
// moves on to Key(1), and so on.
func (c Call) Key(n int) string { return chainKey(c.firstKey(), n) }

// PastKey is the key of a call made after MaxChain identical ones, which
// gets a request of its own rather than a walk further: Key(MaxChain) and
// a digest of its call id, where it has one, so that the hook asking again
// while it is pending (every 55 s) finds it, not another request and card;
// else the time now.
func (c Call) PastKey(now time.Time) string {
	if id := c.CallID(); id != "" {
		sum := sha256.Sum256([]byte(id))
		return c.Key(MaxChain) + "-" + hex.EncodeToString(sum[:16])
	}
	return c.Key(MaxChain) + "-" + strconv.FormatInt(now.UnixNano(), 36)
}

// Keys are the call's first m keys, Key(0) to Key(m-1), its input read once.
func (c Call) Keys(m int) []string {
	first := c.firstKey()
	keys := make([]string, m)
	for n := range keys {
		keys[n] = chainKey(first, n)
	}
	return keys
}

func chainKey(first string, n int) string {
	if n > 0 {
		return first + "-" + strconv.Itoa(n)
	}
	return first
}

// firstKey is Key(0).
func (c Call) firstKey() string {
	canon, err := jsonx.Canonical(c.ToolInput)
	if err != nil {
		canon = c.ToolInput
	}
	h := sha256.New()
	parts := [][]byte{[]byte(c.SessionID), []byte(c.ToolName), canon, []byte(c.Metadata["cwd"])}
	// Only a call that names its MCP server adds it (url and command apart,
	// so a url is never taken for a command), so every other call keeps the
	// key it had and a pending request is still found across an upgrade.
	if c.Metadata["mcp_url"] != "" || c.Metadata["mcp_command"] != "" {
		parts = append(parts, []byte(c.Metadata["mcp_url"]), []byte(c.Metadata["mcp_command"]))
	}
	for _, part := range parts {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return "hook-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// Ask is what a hook asks the gate: the request for the call's n-th key.
type Ask struct {
	ToolName       string
	ToolArgs       json.RawMessage
	Summary        string
	SessionID      string
	ToolCallID     string
	Metadata       json.RawMessage
	IdempotencyKey string
	// MCPServer: a Cursor MCP call, whose bare tool name is its server's
	// (the client's input says so, not metadata an agent writes).
	MCPServer bool `json:"-"`
}

// Ask is the gate request for the call's n-th key. It is sent with
// requires_confirmation false: the operator's routes decide which calls
// need a person, and a call no route claims (with no defaults.action) is
// left to the client's own permission flow (Defer).
func (c Call) Ask(n int) Ask {
	meta, _ := json.Marshal(c.Metadata)
	// The arguments go in canonical form, like the key: the gate refuses a
	// key reused with other argument bytes, and a retry whose client wrote
	// the same input in another key order is still the same call.
	args, err := jsonx.Canonical(c.ToolInput)
	if err != nil {
		args = c.ToolInput
	}
	return Ask{ToolName: c.ToolName, ToolArgs: args, Summary: c.Summary(), SessionID: text.EllipsisBytes(c.SessionID, 256),
		ToolCallID: c.CallID(), Metadata: meta, IdempotencyKey: c.Key(n),
		MCPServer: c.mcp}
}

// maxCallID is the longest call id a request keeps.
const maxCallID = 256

// CallID is the call id as its request keeps it: the client's, or for one
// too long to keep, its first part and a digest of the whole, so that it
// still names this call and no other (Reusable compares it).
func (c Call) CallID() string {
	if len(c.ToolUseID) <= maxCallID {
		return c.ToolUseID
	}
	sum := sha256.Sum256([]byte(c.ToolUseID))
	tail := "…" + hex.EncodeToString(sum[:16])
	cut, _ := text.CutBytes(c.ToolUseID, maxCallID-len(tail))
	return cut + tail
}

// Summary is the card's one line: the client, and the command or file when
// the input has one.
func (c Call) Summary() string {
	var in map[string]any
	_ = json.Unmarshal(c.ToolInput, &in)
	detail := ""
	for _, k := range []string{"command", "file_path", "path", "url"} {
		if s, ok := in[k].(string); ok && s != "" {
			detail = s
			break
		}
	}
	line := label(c.Client) + " wants to run " + c.ToolName
	if detail != "" {
		line += ": " + detail
	}
	return text.EllipsisWords(line, 300)
}

func label(client string) string {
	switch client {
	case ClaudeCode:
		return "Claude Code"
	case Codex:
		return "Codex"
	case Cursor:
		return "Cursor"
	case Gemini:
		return "Gemini CLI"
	case Copilot:
		return "Copilot CLI"
	}
	return client
}

// Pending is the status of a request still waiting for a verdict.
const Pending = "pending"

// Outcome is what a hook answer depends on, as the gate's answer (over
// HTTP, or from a request in the server) carries it.
type Outcome struct {
	RequestID string
	Status    string
	Allow     bool
	// AgentDecided says the call was allowed only because the hook said no
	// confirmation is needed and nothing in the config asked for one: the
	// gate has no objection, but it is not an operator's allow.
	AgentDecided bool
	Explain      string // "rejected by slack:T1/U2 via ops-slack after 42s: too risky"
	ModifiedArgs json.RawMessage
	DecidedAt    *time.Time
	ToolCallID   string
}

// Edits is raw when it holds edited arguments, nil when it is empty or null.
func Edits(raw json.RawMessage) json.RawMessage { return edits(raw) }

func edits(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

// Reusable reports whether the request found under one of the call's keys
// answers this call: it is this very call (same tool_use_id), or, where
// one side has no call id, it is still pending (one card, however often
// the client asks) or was settled less than Fresh ago and cannot be told
// apart. A request of another call id, pending or not, is another call
// (the model made the same transfer twice: two cards, two taps), and an
// old one a previous identical call: the caller moves on to the next key.
func (c Call) Reusable(o Outcome, now time.Time) bool {
	if c.ToolUseID != "" && o.ToolCallID != "" {
		return c.CallID() == o.ToolCallID
	}
	if o.Status == Pending {
		return true
	}
	return o.DecidedAt == nil || now.Sub(*o.DecidedAt) < Fresh
}

// Kind is the shape of a hook answer.
type Kind int

// The three answers a hook gives.
const (
	// Deny blocks the call.
	Deny Kind = iota
	// Allow runs the call without the client asking its user again: a
	// person approved it (or its route allows on timeout).
	Allow
	// Defer leaves the call to the client's own permission flow: nothing
	// in the config asked about it, so Gatehouse recorded it and has no
	// objection, but it does not wave through what the client would
	// otherwise ask about. (An operator's allow route is an Allow.)
	Defer
)

// Verdict is a hook's answer before it is put in a client's words.
type Verdict struct {
	Kind         Kind
	Reason       string          // shown to the user and the model; always says it comes from gatehouse
	UpdatedInput json.RawMessage // the approver's edited arguments, with Allow
	RequestID    string
}

// VerdictOf turns a request's outcome into the hook's answer. A request
// still pending when the hook's wait ran out is a deny that says so: the
// route asked for a person, and neither the client's own prompt nor silence
// is that person. The request stays open, so retrying the call while it is
// pending re-attaches to it and its card.
func VerdictOf(o Outcome, waited time.Duration) Verdict {
	v := Verdict{RequestID: o.RequestID, Reason: "gatehouse: " + o.Explain}
	switch {
	case o.Status == Pending:
		v.Kind = Deny
		v.Reason = fmt.Sprintf("gatehouse: still waiting for approval (request %s) after %s; denied for now. "+
			"Retrying the same call while the request is still pending waits on the same card; "+
			"set the route's timeout below the hook's wait so the verdict reaches this call.",
			o.RequestID, waited.Round(time.Second))
	case o.Allow && o.AgentDecided:
		v.Kind = Defer
	case o.Allow:
		v.Kind = Allow
		v.UpdatedInput = edits(o.ModifiedArgs)
	default:
		v.Kind = Deny
	}
	return v
}

// Failure is the deny for anything that kept the gate from answering.
func Failure(reason string) Verdict {
	if !strings.HasPrefix(reason, "gatehouse") {
		reason = "gatehouse: " + reason
	}
	return Verdict{Kind: Deny, Reason: reason + " (denied: the gate fails closed)"}
}

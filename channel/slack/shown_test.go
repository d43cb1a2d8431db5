package slack

import (
	"encoding/json"
	"strings"
	"testing"
)

// cardText renders r's open card and returns the header and the large-type
// section's text.
func cardHead(t *testing.T, c *Channel, args string) (header, big string) {
	t.Helper()
	r := testRequest("01JREQ", t0)
	r.Summary = ""
	r.ToolName = "shell_exec"
	r.ToolArgs = json.RawMessage(args)
	blocks, _ := c.openCard(r)
	b, _ := json.Marshal(blocks)
	var bs []map[string]any
	_ = json.Unmarshal(b, &bs)
	header = bs[0]["text"].(map[string]any)["text"].(string)
	if tx, ok := bs[1]["text"].(map[string]any); ok {
		big, _ = tx["text"].(string)
	}
	return header, big
}

// The first command key decides what is shown as the command: an argv
// list under "command" is what runs, not the "cmd" beside it.
func TestCardShowsTheCommandKeyThatIsNotAString(t *testing.T) {
	c := newTestChannel(t, newFakeSlack(t), newFakeDecider(fixed(t0)), fixed(t0))
	header, big := cardHead(t, c, `{"command":["bash","-c","rm -rf ~"],"cmd":"ls"}`)
	if !strings.Contains(header, "rm -rf ~") || !strings.Contains(big, "rm -rf ~") {
		t.Fatalf("card shows header %q, large type %q for a call that runs bash -c 'rm -rf ~'", header, big)
	}
}

// A line break ends a shell command: the headline must not read
// "echo hi rm -rf ~" (an echo) for "echo hi" then "rm -rf ~".
func TestCardHeadlineKeepsTheCommandsLineBreaks(t *testing.T) {
	c := newTestChannel(t, newFakeSlack(t), newFakeDecider(fixed(t0)), fixed(t0))
	header, _ := cardHead(t, c, `{"command":"echo hi\nrm -rf ~"}`)
	if strings.Contains(header, "echo hi rm -rf ~") {
		t.Fatalf("header %q reads as one echo", header)
	}
}

// "Approve & allow repeats" gives a grant to the request's token, whatever
// agent_id the agent sends: the dialog names the token, which the card's
// "Asked by" (the agent's own label) does not.
func TestRememberDialogNamesTheToken(t *testing.T) {
	c := newTestChannel(t, newFakeSlack(t), newFakeDecider(fixed(t0)), fixed(t0))
	r := testRequest("01JREQ", t0)
	r.Caller, r.AgentID, r.RememberSeconds = "shared-ci", "procurement-bot", 3600
	blocks, _ := c.openCard(r)
	b, _ := json.Marshal(blocks)
	s := string(b)
	i := strings.Index(s, `"approve_for:01JREQ"`)
	if i < 0 || !strings.Contains(s[i:], "shared-ci") {
		t.Fatalf("the grant dialog does not say the grant covers every call made with token shared-ci: %s", s[i:])
	}
}

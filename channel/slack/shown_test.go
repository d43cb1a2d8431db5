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

// An argv list under "command" is shown, not only the "cmd" beside it.
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

// A command's end stays on the card however it is padded: 480 zero-width
// spaces are drawn as 3,840 characters of marks, and 300 ampersands are
// escaped to 1,500, and the large type, cut at its end, lost "; rm -rf ~".
// Found by a second reader.
func TestCardKeepsTheEndOfAPaddedCommand(t *testing.T) {
	c := newTestChannel(t, newFakeSlack(t), newFakeDecider(fixed(t0)), fixed(t0))
	for _, pad := range []string{strings.Repeat("\u200b", 480), strings.Repeat("&", 300), strings.Repeat("<", 200) + strings.Repeat("\u202e", 100)} {
		args, _ := json.Marshal(map[string]string{"command": "echo " + pad + "; rm -rf ~"})
		if _, big := cardHead(t, c, string(args)); !strings.Contains(big, "rm -rf ~") {
			t.Errorf("padded with %.20q…: the large type %.80q… lost the command's end", pad, big)
		}
	}
}

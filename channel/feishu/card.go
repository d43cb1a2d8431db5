package feishu

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	textutil "github.com/gatehouse-dev/gatehouse/internal/text"
)

// Feishu refuses a card message whose request body exceeds 30 KB. The card
// travels JSON-encoded inside the body's "content" string, so what counts is
// its doubly encoded size; maxContent leaves room for the rest of the body.
const maxContent = 28 << 10

// Budgets, in doubly encoded bytes, for the untrusted fields other than the
// arguments, which get whatever room is left.
const (
	budgetSummary = 3000
	budgetName    = 400
	budgetReason  = 2000
)

// Names of the card's interactive elements. Feishu requires names to be
// unique within a card; the callback reports them back.
const (
	formName       = "gatehouse_form"
	reasonField    = "reason"
	approveButton  = "gatehouse_approve"
	rememberButton = "gatehouse_approve_for"
	rejectButton   = "gatehouse_reject"
)

// Choices carried in a button's callback value.
const (
	choiceApprove  = "approve"
	choiceRemember = "approve_for"
	choiceReject   = "reject"
)

// actionValue is the whole of a button's callback value: which request and
// which verdict, and, on a direct card, the identity it was sent to (whose
// tap alone it takes outside the approvals chat).
type actionValue struct {
	RequestID string `json:"request_id"`
	Choice    string `json:"choice"`
	To        string `json:"to,omitempty"`
}

type obj = map[string]any

// renderCard returns the card JSON for r: the pending card with its form and
// buttons, or the final card without them. It is always under maxContent
// once encoded into a message body, whatever the request holds.
func (c *Channel) renderCard(r *gate.Request) ([]byte, error) { return c.renderCardFor(r, "") }

// renderCardFor is renderCard for a direct card to the identity to ("" for
// the chat's card): its buttons carry to.
func (c *Channel) renderCardFor(r *gate.Request, to string) ([]byte, error) {
	v := c.present.View(r)
	args := jsonx.Pretty(v.ToolArgs)
	if args == "" {
		args = "{}"
	}
	base, err := jsonx.Marshal(c.card(v, to, "", ""))
	if err != nil {
		return nil, err
	}
	budget := maxContent - encodedSize(base) - 600 // room for the truncation note
	for {
		shown, cut := clipMiddle(args, budget)
		note := ""
		if cut {
			note = fmt.Sprintf("Arguments truncated: showing %d of %d characters.", utf8.RuneCountInString(shown), utf8.RuneCountInString(args))
			if c.publicURL != "" {
				note += " The full arguments are on the Gatehouse page."
			}
		}
		b, err := jsonx.Marshal(c.card(v, to, shown, note))
		if err != nil {
			return nil, err
		}
		if encodedSize(b) <= maxContent || budget <= 0 {
			return b, nil
		}
		budget = budget * 3 / 4
	}
}

// headerColor is the header's template: the severity's colour while the
// request waits, the outcome's once it is final.
func headerColor(v present.View) string {
	switch v.Status {
	case gate.StatusPending:
		switch v.Severity {
		case gate.Critical:
			return "red"
		case "high":
			return "orange"
		case "low":
			return "wathet"
		}
		return "blue"
	case gate.StatusApproved:
		return "green"
	case gate.StatusRejected:
		return "carmine"
	}
	return "grey"
}

// headerTags are the tags beside the title: the outcome or "Needs
// approval", and the severity.
func headerTags(v present.View) []any {
	tag := func(s, color string) obj {
		return obj{"tag": "text_tag", "text": obj{"tag": "plain_text", "content": s}, "color": color}
	}
	var out []any
	switch v.Status {
	case gate.StatusPending:
		out = append(out, tag("Needs approval", "orange"))
	case gate.StatusApproved:
		out = append(out, tag("Approved", "green"))
	case gate.StatusRejected:
		out = append(out, tag("Rejected", "red"))
	default:
		out = append(out, tag(textutil.UpperFirst(string(v.Status)), "neutral"))
	}
	switch v.Severity {
	case gate.Critical:
		out = append(out, tag("Critical", "red"))
	case "high":
		out = append(out, tag("High risk", "orange"))
	case "low":
		out = append(out, tag("Low risk", "neutral"))
	}
	return out
}

// card builds the card as a JSON tree, risk first: what will happen (the
// title), the amount or command in large type, the route, who asks and the
// time left, the decision, and only then the raw arguments, folded. Every
// untrusted value goes through text(), a plain_text element: Feishu renders
// no mentions, links or markdown in it.
func (c *Channel) card(v present.View, to, args, note string) obj {
	r := v.Request
	title, _ := clip(v.Sentence, budgetSummary)
	if r.Status.Final() {
		title = textutil.UpperFirst(string(r.Status)) + ": " + title
	}
	subtitle, _ := clip(v.RouteName()+" · "+v.Who(), budgetName)
	var els []any
	if r.Status.Final() {
		els = append(els, text(outcome(r), "normal", ""))
		if r.Reason != "" {
			reason, _ := clip(r.Reason, budgetReason)
			els = append(els, text("Reason: "+reason, "normal", ""))
		}
		if v.Edited {
			// What runs is not what the card below shows: say so, and show it.
			edited, _ := clip(textutil.Middle(jsonx.Pretty(r.ModifiedArgs), budgetReason), budgetReason)
			els = append(els, text("Approved with edited arguments: the agent runs these, not the ones below.\n"+edited, "normal", ""))
		}
	}
	if v.Big != "" {
		b, _ := clip(v.Big, budgetSummary)
		els = append(els, text(b, "heading", ""))
	}
	tool, _ := clip(r.ToolName, budgetName)
	route := v.RouteName()
	if v.Severity != "" {
		route += " · " + v.Severity
	}
	route, _ = clip(route, budgetName)
	who, _ := clip(v.Who(), budgetName)
	els = append(els, text("Tool: "+tool, "normal", ""), text("Route: "+route+"   Asked by: "+who, "normal", ""))
	if !r.Status.Final() {
		exp := fmt.Sprintf("Time left: %s (until %s; on timeout: %s)", v.Left(c.now()), stamp(r.ExpiresAt), cmp.Or(string(r.OnTimeout), "deny"))
		if r.Quorum > 1 {
			exp += fmt.Sprintf("   Needs %d approvals", r.Quorum)
		}
		els = append(els, text(exp, "normal", ""))
		els = append(els, form(v, to))
	}
	folded := []any{}
	if args != "" {
		folded = append(folded, text(args, "normal", ""))
	}
	if note != "" {
		folded = append(folded, text(note, "notation", "grey"))
	}
	els = append(els, obj{
		"tag": "collapsible_panel",
		// Open when no large-type value shows what runs: the arguments
		// are then the only word on it but the agent's own.
		"expanded": v.Big == "",
		"header":   obj{"title": obj{"tag": "plain_text", "content": "Arguments"}},
		"elements": folded,
	})
	if link := c.link(r.ID); link != "" {
		// The only markdown on the card: a fixed label and a URL built from
		// the configured public URL and the request id, never from input.
		els = append(els, obj{"tag": "markdown", "content": "[Open in Gatehouse](" + link + ")", "text_size": "notation"})
	}
	els = append(els, text("Request "+r.ID, "notation", "grey"))
	return obj{
		"schema": "2.0",
		"config": obj{"update_multi": true},
		"header": obj{
			"title":         obj{"tag": "plain_text", "content": title},
			"subtitle":      obj{"tag": "plain_text", "content": subtitle},
			"text_tag_list": headerTags(v),
			"template":      headerColor(v),
		},
		"body": obj{"elements": els},
	}
}

// form is the decision area: an optional reason and the buttons (Approve,
// the primary action, confirmed first on a critical route; Approve & allow
// repeats where the route remembers; Reject). Every button submits the
// form, so the callback carries the reason as form_value.reason alongside
// the button's value.
func form(v present.View, to string) obj {
	id := v.ID
	button := func(name, label, typ, choice string) obj {
		return obj{
			"tag":              "button",
			"name":             name,
			"text":             obj{"tag": "plain_text", "content": label},
			"type":             typ,
			"form_action_type": "submit",
			"behaviors":        []any{obj{"type": "callback", "value": actionValue{RequestID: id, Choice: choice, To: to}}},
		}
	}
	approve := button(approveButton, "Approve", "primary", choiceApprove)
	if v.Critical() {
		sentence, _ := clip(v.Sentence, budgetSummary)
		if big := v.BigUnsaid(sentence, 200); big != "" {
			sentence += "\n" + big
		}
		approve["confirm"] = obj{
			"title": obj{"tag": "plain_text", "content": "Approve a critical call?"},
			"text":  obj{"tag": "plain_text", "content": sentence + "\nTool: " + clipName(v.ToolName) + " · route " + clipName(v.RouteName())},
		}
	}
	columns := []any{obj{"tag": "column", "width": "auto", "elements": []any{approve}}}
	if v.RememberFor() > 0 {
		// A separate, plainly worded third choice, confirmed before it
		// counts: it approves more than this one call.
		b := button(rememberButton, v.RememberLabel(), "default", choiceRemember)
		scope, _ := clip(v.RememberScope(), budgetSummary)
		b["confirm"] = obj{
			"title": obj{"tag": "plain_text", "content": v.RememberLabel() + "?"},
			"text":  obj{"tag": "plain_text", "content": scope},
		}
		columns = append(columns, obj{"tag": "column", "width": "auto", "elements": []any{b}})
	}
	columns = append(columns, obj{"tag": "column", "width": "auto", "elements": []any{button(rejectButton, "Reject", "danger", choiceReject)}})
	return obj{
		"tag":  "form",
		"name": formName,
		"elements": []any{
			obj{
				"tag":         "input",
				"name":        reasonField,
				"placeholder": obj{"tag": "plain_text", "content": "Reason (optional, recorded with your verdict)"},
				"max_length":  500,
				"width":       "fill",
			},
			obj{"tag": "column_set", "columns": columns},
		},
	}
}

// clipName bounds a name shown in a button's confirmation.
func clipName(s string) string {
	c, _ := clip(s, budgetName)
	return c
}

// text is a plain_text element: the one place untrusted values may go.
func text(s, size, color string) obj {
	t := obj{"tag": "plain_text", "content": s, "text_size": size}
	if color != "" {
		t["text_color"] = color
	}
	return obj{"tag": "div", "text": t}
}

// outcome is the final card's line saying what happened, by whom and when.
func outcome(r *gate.Request) string {
	at := ""
	if r.DecidedAt != nil {
		at = " at " + stamp(*r.DecidedAt)
	}
	by, _ := clip(r.DecidedBy, budgetName)
	via, _ := clip(r.DecidedVia, budgetName)
	switch r.Status {
	case gate.StatusExpired:
		return fmt.Sprintf("Expired%s with no verdict; on timeout: %s", at, cmp.Or(string(r.OnTimeout), "deny"))
	case gate.StatusCancelled:
		return "Cancelled by the agent" + at
	}
	s := fmt.Sprintf("%s by %s", strings.ToUpper(string(r.Status[:1]))+string(r.Status[1:]), cmp.Or(by, "unknown"))
	if via != "" {
		s += " via " + via
	}
	return s + at
}

// link is the request's page on the Gatehouse web UI, or "" without a
// public URL or when the URL could break out of a markdown link.
func (c *Channel) link(id string) string {
	if c.publicURL == "" || id == "" {
		return ""
	}
	u := c.publicURL + "/approvals/" + url.PathEscape(id)
	if strings.ContainsAny(u, " ()[]<>\"'\\\n\r\t") {
		return ""
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") {
		return ""
	}
	return u
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// encodedSize is the size of b once encoded as a JSON string, as it travels
// in a message body's "content".
func encodedSize(b []byte) int {
	n := 2
	for _, r := range string(b) {
		n += jsonRuneLen(r)
	}
	return n
}

// clip cuts s so that its doubly JSON-encoded size stays within budget
// bytes, at a rune boundary, and says whether it cut.
func clip(s string, budget int) (string, bool) {
	n := 0
	for i, r := range s {
		n += jsonRuneLen(r) + extraSecondPass(r)
		if n > budget {
			return strings.ToValidUTF8(s[:i], "") + " …", true
		}
	}
	return s, false
}

// clipMiddle is clip that takes what does not fit out of the middle
// (textutil.Middle), so the arguments after a long one still show.
func clipMiddle(s string, budget int) (string, bool) {
	return textutil.MiddleFit(s, func(m string) bool {
		_, cut := clip(m, budget)
		return !cut
	})
}

// jsonRuneLen is how many bytes encoding/json (without HTML escaping)
// writes for r inside a string.
func jsonRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 6
	}
	return utf8.RuneLen(r)
}

// extraSecondPass is what encoding the already escaped form of r once more
// adds: every backslash and quote doubles.
func extraSecondPass(r rune) int {
	switch {
	case r == '"' || r == '\\':
		return 2
	case r == '\n' || r == '\r' || r == '\t' || r < 0x20 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 1
	}
	return 0
}

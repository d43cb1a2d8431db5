package feishu

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatehouse-dev/gatehouse/gate"
)

var (
	_ gate.Directer = (*Channel)(nil)
	_ gate.Replier  = (*Channel)(nil)
)

// receiver is who a Feishu identity names, as the message API takes it:
// feishu:<open_id>, feishu:union:<union_id> or feishu:user:<user_id>.
func receiver(identity string) (idType, id string, ok bool) {
	rest, ok := strings.CutPrefix(identity, "feishu:")
	if !ok || rest == "" || strings.ContainsAny(rest, "*?") {
		return "", "", false
	}
	if u, ok := strings.CutPrefix(rest, "union:"); ok {
		return "union_id", u, u != ""
	}
	if u, ok := strings.CutPrefix(rest, "user:"); ok {
		return "user_id", u, u != ""
	}
	return "open_id", rest, true
}

// Reaches reports whether identity is a Feishu user the app can send a
// direct card: by open_id, union_id or user_id.
func (c *Channel) Reaches(identity string) bool {
	_, _, ok := receiver(identity)
	return ok
}

// PostDirect sends the card to one person (the app's chat with them). Its
// buttons carry the identity, so that outside the approvals chat the card
// takes that person's taps only. The reference is the message id, which
// Update patches and Remind replies to like any card's.
func (c *Channel) PostDirect(ctx context.Context, r *gate.Request, identity string) (string, error) {
	idType, id, ok := receiver(identity)
	if !ok {
		return "", fmt.Errorf("feishu: direct card: %q is not a Feishu user (feishu:ou_…, feishu:union:…, feishu:user:…)", identity)
	}
	card, err := c.renderCardFor(r, identity)
	if err != nil {
		return "", fmt.Errorf("feishu: render card: %w", err)
	}
	msg, err := c.api.sendCard(ctx, idType, id, postUUID(c.name+"\x00"+identity, r.ID), card)
	if err != nil {
		return "", err
	}
	c.log.Info("direct card posted", "request_id", r.ID, "to", identity, "message_id", msg)
	return msg, nil
}

// Remind replies to the card (ref is its message id) that the request
// still waits (the step's reply is posted once, whatever the retries), mentioning the approvers Feishu can mention by id (open_id
// and user_id; a union_id cannot be). The text holds no untrusted input
// but the tool's name, shown as the card shows it (present.View: line
// breaks and hidden characters marked, so that it cannot draw a line of
// its own under the card) and with its angle brackets taken out so that
// it can never open an <at> of its own.
func (c *Channel) Remind(ctx context.Context, r *gate.Request, ref string, step int, mention []string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("feishu: reminder: no message id recorded for the card")
	}
	var who []string
	for _, identity := range mention {
		if idType, id, ok := receiver(identity); ok && idType != "union_id" {
			who = append(who, `<at user_id="`+id+`"></at>`)
		}
	}
	v := c.present.View(r)
	tool, _ := clip(angles.Replace(v.ToolName), budgetName)
	text := fmt.Sprintf("⏰ Still waiting for approval: %s on route %s, expires %s.", tool, v.Route, stamp(v.ExpiresAt))
	if len(who) > 0 {
		text = strings.Join(who, " ") + " " + text
	}
	if link := c.link(r.ID); link != "" {
		text += " " + link
	}
	msg, err := c.api.reply(ctx, ref, postUUID(fmt.Sprintf("%s\x00%s\x00%d", c.name, ref, step), r.ID), text)
	if err != nil {
		return "", err
	}
	c.log.Info("reminder posted", "request_id", r.ID, "card", ref, "message_id", msg)
	return msg, nil
}

// angles keeps a tool name from opening a tag in a Feishu text message.
var angles = strings.NewReplacer("<", "‹", ">", "›")

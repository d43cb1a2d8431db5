package feishu

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Post sends the card for a pending request to the configured chat and
// returns the message id, which Update gets back as ref.
func (c *Channel) Post(ctx context.Context, r *gate.Request) (string, error) {
	card, err := c.renderCard(r)
	if err != nil {
		return "", fmt.Errorf("feishu: render card: %w", err)
	}
	id, err := c.api.sendCard(ctx, "chat_id", c.cfg.ChatID, postUUID(c.name, r.ID), card)
	if err != nil {
		return "", err
	}
	c.log.Info("card posted", "request_id", r.ID, "message_id", id)
	return id, nil
}

// Update replaces the posted card (ref is its message id) with the
// request's current form: for a final state, who decided, when and why,
// with no buttons. It is how verdicts reached elsewhere (the web page,
// another channel, expiry, cancellation) reach the chat.
func (c *Channel) Update(ctx context.Context, r *gate.Request, ref string) error {
	if ref == "" {
		return errors.New("feishu: update card: no message id recorded for this card")
	}
	card, err := c.renderCard(r)
	if err != nil {
		return fmt.Errorf("feishu: render card: %w", err)
	}
	if err := c.api.patchCard(ctx, ref, card); err != nil {
		return err
	}
	c.log.Info("card updated", "request_id", r.ID, "message_id", ref, "status", r.Status)
	return nil
}

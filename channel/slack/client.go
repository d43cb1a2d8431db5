package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// retryPolicy bounds Post and Update: three tries within 25 seconds. The
// gate's card worker retries durably after that and audits each failure.
var retryPolicy = channel.RetryPolicy{Attempts: 3, Budget: 25 * time.Second}

// Post sends the card for a pending request to the configured channel and
// returns its reference, "CHANNEL:TS".
func (c *Channel) Post(ctx context.Context, r *gate.Request) (string, error) {
	return c.postTo(ctx, c.cfg.ChannelID, r)
}

// postTo posts the card of a pending request to a conversation: the
// configured channel, or a direct message. The card carries metadata
// naming its request, by which a repeated post finds it in the
// conversation's history (postOnce).
func (c *Channel) postTo(ctx context.Context, to string, r *gate.Request) (string, error) {
	blocks, text := c.openCard(r)
	// text is escaped already (fallback), within its length limit; the
	// SDK's escape flag would escape it again ("R&amp;amp;D").
	ref, err := c.postOnce(ctx, to, func() string { return c.earlierCard(ctx, to, r) },
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(c.cardMetadata(r)))
	if err != nil {
		return "", fmt.Errorf("slack: post card: %w", err)
	}
	return ref, nil
}

// postOnce posts a message to conversation to with opts (links and media
// not unfurled), retrying within retryPolicy, and returns its reference,
// "CHANNEL:TS". Slack has no idempotency key, so when an earlier post of
// it may have landed unseen (an earlier claim, gate.CardAttempt > 1, or a
// try of this call that failed without Slack's answer) it asks earlier
// first (a search by the message's metadata, recover.go) and adopts the
// ts found rather than posting twice.
func (c *Channel) postOnce(ctx context.Context, to string, earlier func() string, opts ...slack.MsgOption) (string, error) {
	opts = append(opts, slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	unsure := gate.CardAttempt(ctx) > 1
	var ch, ts string
	err := channel.Retry(ctx, retryPolicy, func(tctx context.Context) error {
		if unsure {
			// Searched under ctx, not the try's timeout, which is the
			// post's.
			if found := earlier(); found != "" {
				ch, ts = to, found
				return nil
			}
		}
		var err error
		ch, ts, err = c.api.PostMessageContext(tctx, to, opts...)
		if err != nil && uncertain(err) {
			unsure = true
		}
		return classify(err)
	})
	if err != nil {
		return "", err
	}
	if ch == "" {
		ch = to
	}
	return ch + ":" + ts, nil
}

// Update replaces the card behind ref with the request's final form: the
// verdict, who gave it, when, why, and no buttons.
func (c *Channel) Update(ctx context.Context, r *gate.Request, ref string) error {
	ch, ts, ok := strings.Cut(ref, ":")
	if !ok || ch == "" || ts == "" {
		return fmt.Errorf("slack: update card: bad reference %q", ref)
	}
	blocks, text := c.finalCard(r)
	err := channel.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		_, _, _, err := c.api.UpdateMessageContext(ctx, ch, ts,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)) // text escaped already, as in postTo
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("slack: update card: %w", err)
	}
	return nil
}

// classify marks the slack-go errors worth another try: HTTP 429 (with its
// Retry-After), 5xx, and Slack's own transient error codes. Timeouts are
// recognised by channel.Retry itself.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return channel.Temporary(err, rl.RetryAfter)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && (sc.Code == http.StatusTooManyRequests || sc.Code >= 500) {
		return channel.Temporary(err, 0)
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return channel.Temporary(err, 0)
		}
	}
	return err
}

// ephemeral tells one user, and only them, something about their tap.
// It is best effort: a failure is logged, since the card and the audit
// trail still tell the truth.
func (c *Channel) ephemeral(ctx context.Context, channelID, userID, text string) {
	if channelID == "" {
		channelID = c.cfg.ChannelID
	}
	_, err := c.api.PostEphemeralContext(ctx, channelID, userID, slack.MsgOptionText(text, false))
	if err != nil {
		c.log.Warn("ephemeral message failed", "user", userID, "err", err)
	}
}

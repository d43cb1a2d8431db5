package slack

import (
	"context"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Run receives interactions over Socket Mode until ctx ends, for channels
// with an app-level token (see SocketMode). Each envelope is acked with its
// envelope_id before the tap is handled, exactly as over HTTP: the
// connection is the proof of origin, so there is no signature to check,
// and identity and state checks are the same. When the connection fails for
// good (a revoked token) it logs, waits and connects again: the server owns
// the lifetime, not Slack.
func (c *Channel) Run(ctx context.Context) error {
	if !c.SocketMode() {
		<-ctx.Done()
		return nil
	}
	wait := time.Second
	for ctx.Err() == nil {
		err := c.runSocket(ctx)
		if ctx.Err() != nil {
			break
		}
		c.log.Error("slack socket mode stopped; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Minute)
	}
	c.Flush()
	return nil
}

// SocketRunners are the Socket Mode connections chs need: one per Slack
// app (app_token). Slack hands each event to one of an app's open
// connections, so channels that share an app share one connection, run by
// the first of them, which passes each interaction to the channel whose
// card it came from, as the HTTP handler does. Call it once, before any
// runs.
func SocketRunners(chs []*Channel) []gate.Runner {
	var out []gate.Runner
	first := map[string]*Channel{} // app token → the channel that connects
	for _, c := range chs {
		if !c.SocketMode() {
			continue
		}
		if f, ok := first[c.cfg.AppToken]; ok {
			f.peers = append(f.peers, c)
			continue
		}
		c.peers = []*Channel{c}
		first[c.cfg.AppToken] = c
		out = append(out, c)
	}
	return out
}

// runSocket runs one socketmode client until it gives up or ctx ends.
func (c *Channel) runSocket(ctx context.Context) error {
	api := c.newAPI(slack.OptionAppLevelToken(c.cfg.AppToken))
	sm := socketmode.New(api, socketmode.OptionLog(slogLogger(c.log)))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.events(ctx, sm)
	}()
	// RunContext returns only with an error (a failed reconnection, or
	// ctx's end).
	err := sm.RunContext(ctx)
	cancel()
	<-done
	return err
}

// events drains the socketmode client's events: interactions are acked and
// handled, everything else is acked (so Slack does not resend it) and
// logged.
func (c *Channel) events(ctx context.Context, sm *socketmode.Client) {
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-sm.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnected:
			c.log.Info("slack socket mode connected")
		case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorBadMessage:
			c.log.Warn("slack socket mode trouble", "type", evt.Type, "detail", evt.Data)
		case socketmode.EventTypeInvalidAuth:
			c.log.Error("slack socket mode: app_token refused")
		case socketmode.EventTypeInteractive:
			ic, ok := evt.Data.(slack.InteractionCallback)
			c.ack(ctx, sm, evt)
			if ok {
				target := c
				if len(c.peers) > 1 {
					target = pick(c.peers, ic) // the channel whose card it was, as over HTTP
				}
				target.interact(ctx, ic, c.peers)
			}
		default:
			c.ack(ctx, sm, evt)
		}
	}
}

func (c *Channel) ack(ctx context.Context, sm *socketmode.Client, evt socketmode.Event) {
	if evt.Request == nil || evt.Request.EnvelopeID == "" {
		return
	}
	if err := sm.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil {
		c.log.Warn("slack socket mode ack failed", "envelope_id", evt.Request.EnvelopeID, "err", err)
	}
}

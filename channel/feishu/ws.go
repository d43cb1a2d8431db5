package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Run holds Feishu's long connection (mode: websocket) until ctx ends: card
// callbacks then arrive over it and no public URL is needed. In webhook
// mode there is nothing to hold and Run just waits for ctx. It implements
// gate.Runner and always returns nil once ctx has ended.
//
// The SDK client runs in a goroutine of its own and Run owns its lifetime:
// on ctx's end it closes the client and returns without waiting more than a
// few seconds for it. When the client gives up (bad credentials, retries
// exhausted) Run starts a new one after a growing pause.
func (c *Channel) Run(ctx context.Context) error {
	if !c.LongConnection() {
		<-ctx.Done()
		return nil
	}
	pause := time.Second
	for {
		cli := larkws.NewClient(c.cfg.AppID, c.cfg.AppSecret,
			larkws.WithEventHandler(c.dispatcher()),
			larkws.WithDomain(c.cfg.BaseURL),
			larkws.WithHttpClient(c.api.hc),
			larkws.WithLogger(sdkLogger{c.log}),
			larkws.WithAutoReconnect(true),
			larkws.WithOnReady(func() { c.log.Info("feishu long connection ready") }),
		)
		done := make(chan error, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Errorf("feishu: long connection panicked: %v", p)
				}
			}()
			done <- cli.Start(ctx)
		}()
		select {
		case <-ctx.Done():
			cli.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				c.log.Warn("feishu long connection did not stop in time; leaving it behind")
			}
			return nil
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			c.log.Error("feishu long connection ended; starting again", "err", err, "after", pause)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			pause = min(pause*2, time.Minute)
		}
	}
}

// dispatcher routes card.action.trigger callbacks from the long connection
// to the same checks and decision path as HTTP callbacks. Long-connection
// frames are neither encrypted nor signed, so the dispatcher's own key and
// token are left empty: handleEvent does the checks.
func (c *Channel) dispatcher() *dispatcher.EventDispatcher {
	d := dispatcher.NewEventDispatcher("", "")
	d.InitConfig(larkevent.WithLogger(sdkLogger{c.log}))
	return d.OnP2CardActionTrigger(c.onCardAction)
}

// onCardAction handles one callback from the dispatcher. It reads the raw
// payload rather than the SDK's struct, which lacks the operator's union_id.
func (c *Channel) onCardAction(ctx context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
	if ev == nil || ev.EventReq == nil || len(ev.EventReq.Body) == 0 {
		return nil, errors.New("feishu: card action without a payload")
	}
	var env callbackEnvelope
	if err := json.Unmarshal(ev.EventReq.Body, &env); err != nil {
		return nil, fmt.Errorf("feishu: card action: %w", err)
	}
	resp, ref := c.handleEvent(ctx, &env, nil)
	if ref != nil {
		return nil, fmt.Errorf("feishu: callback refused: %s", ref.msg)
	}
	return resp, nil
}

// sdkLogger sends the SDK's log lines to the channel's logger.
type sdkLogger struct{ log *slog.Logger }

var _ larkcore.Logger = sdkLogger{}

func (l sdkLogger) Debug(ctx context.Context, args ...any) {
	l.log.DebugContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (l sdkLogger) Info(ctx context.Context, args ...any) {
	l.log.InfoContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (l sdkLogger) Warn(ctx context.Context, args ...any) {
	l.log.WarnContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (l sdkLogger) Error(ctx context.Context, args ...any) {
	l.log.ErrorContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}

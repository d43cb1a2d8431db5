package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/channel/feishu"
	"github.com/gatehouse-dev/gatehouse/channel/slack"
	"github.com/gatehouse-dev/gatehouse/channel/webhook"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

// builtChannels are the configured channels, ready to register, with the
// callback routes and the connections (sockets) they need.
type builtChannels struct {
	channels  []gate.Channel
	callbacks map[string]http.Handler
	runners   []gate.Runner
	// flushers finish work they acknowledged but have not done yet.
	flushers []interface{ Flush() }
}

// buildChannels is the one place that knows every channel type. Adding a
// platform means one package and one case here.
func buildChannels(cfg *config.Config, d gate.Decider, p *present.Presenter, log *slog.Logger) (builtChannels, error) {
	out := builtChannels{callbacks: map[string]http.Handler{}}
	var slacks []*slack.Channel
	var feishus []*feishu.Channel
	var errs []error
	for _, c := range cfg.Channels {
		clog := log.With("channel", c.Name)
		switch c.Type {
		case config.TypeSlack:
			ch, err := slack.New(slack.Options{Name: c.Name, Config: *c.Slack, PublicURL: cfg.PublicURL, Decider: d, Present: p, Logger: clog,
				Conns: cfg.Cards.Workers})
			if err != nil {
				errs = append(errs, fmt.Errorf("channel %s: %w", c.Name, err))
				continue
			}
			slacks = append(slacks, ch)
			out.channels = append(out.channels, ch)
			out.flushers = append(out.flushers, ch)
		case config.TypeFeishu:
			ch, err := feishu.New(feishu.Options{Name: c.Name, Config: *c.Feishu, PublicURL: cfg.PublicURL, Decider: d, Present: p, Logger: clog,
				Conns: cfg.Cards.Workers})
			if err != nil {
				errs = append(errs, fmt.Errorf("channel %s: %w", c.Name, err))
				continue
			}
			feishus = append(feishus, ch)
			out.channels = append(out.channels, ch)
			if ch.LongConnection() {
				out.runners = append(out.runners, ch)
			}
		case config.TypeWebhook:
			ch, err := webhook.New(webhook.Options{Name: c.Name, Config: *c.Webhook, PublicURL: cfg.PublicURL, Decider: d, Present: p, Logger: clog,
				Conns: cfg.Cards.Workers, UserAgent: "gatehouse/" + versionString()})
			if err != nil {
				errs = append(errs, fmt.Errorf("channel %s: %w", c.Name, err))
				continue
			}
			out.channels = append(out.channels, ch)
			out.callbacks[ch.CallbackPath()] = ch // POST /callbacks/webhook/{name}
		default:
			errs = append(errs, fmt.Errorf("channel %s: unknown type %q", c.Name, c.Type))
		}
	}
	if len(slacks) > 0 {
		out.callbacks["slack"] = slack.NewCallbackHandler(slacks)
		out.runners = append(out.runners, slack.SocketRunners(slacks)...)
	}
	if len(feishus) > 0 {
		out.callbacks["feishu"] = feishu.NewCallbackHandler(feishus)
	}
	return out, errors.Join(errs...)
}

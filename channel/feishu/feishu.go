// Package feishu is Gatehouse's Feishu (Lark) channel: it posts approval
// cards to a group chat, keeps them current through their life cycle, and
// turns verified card callbacks (over HTTP or Feishu's long connection) into
// decisions for the gate.
//
// Everything a callback carries is checked here, not by the SDK: the
// signature, the verification token, a timestamp window and event_id
// de-duplication. Untrusted text (tool arguments, summaries, reasons) is
// only ever placed in plain_text elements, so mentions and links in it stay
// inert.
package feishu

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

// Options configure a Channel. Name, Config (app_id, app_secret, chat_id)
// and Decider are required; the rest has defaults.
type Options struct {
	// Name is the channel's name in the config ("ops-feishu").
	Name string
	// Config holds the app credentials, the chat, the base URL (no trailing
	// '/') and the mode ("webhook" or "websocket").
	Config config.Feishu
	// PublicURL is the server's public URL; when set, cards link to
	// PublicURL+"/approvals/"+id.
	PublicURL string
	// Decider receives verified verdicts (*gate.Service).
	Decider gate.Decider
	// Present shows requests on cards: redacted, risk first, with their
	// route's looks. nil: no redaction, no looks.
	Present *present.Presenter
	// Logger receives the channel's log lines; discarded when nil.
	Logger *slog.Logger
	// HTTPClient talks to the Feishu API; nil means a client with sane timeouts
	// and Conns kept-alive connections.
	HTTPClient *http.Client
	// Conns is how many calls the gate's card workers may make at once
	// (cards.workers); 0 means channel.DefaultConns.
	Conns int
	// Now is the clock for token expiry and the callback timestamp window.
	Now func() time.Time
}

// Channel is one configured Feishu destination: an app posting to one chat.
// It is safe for concurrent use.
type Channel struct {
	name      string
	cfg       config.Feishu
	publicURL string
	decider   gate.Decider
	present   *present.Presenter
	log       *slog.Logger // with the channel's name
	baseLog   *slog.Logger // without it, for the shared callback handler
	now       func() time.Time
	api       *apiClient
	seen      *dedupe
}

var (
	_ gate.Channel = (*Channel)(nil)
	_ gate.Runner  = (*Channel)(nil)
)

// New checks the options and builds a channel. It does not touch the network.
func New(o Options) (*Channel, error) {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("feishu: name: required"))
	}
	if o.Config.AppID == "" {
		errs = append(errs, errors.New("feishu: app_id: required"))
	}
	if o.Config.AppSecret == "" {
		errs = append(errs, errors.New("feishu: app_secret: required"))
	}
	if o.Config.ChatID == "" {
		errs = append(errs, errors.New("feishu: chat_id: required"))
	}
	if o.Decider == nil {
		errs = append(errs, errors.New("feishu: a decider is required"))
	}
	switch o.Config.Mode {
	case "":
		o.Config.Mode = config.FeishuWebhook
	case config.FeishuWebhook, config.FeishuWebsocket:
	default:
		errs = append(errs, errors.New("feishu: mode: must be webhook or websocket"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	o.Config.BaseURL = strings.TrimRight(o.Config.BaseURL, "/")
	if o.Config.BaseURL == "" {
		o.Config.BaseURL = "https://open.feishu.cn"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = channel.HTTPClient(10*time.Second, o.Conns)
	}
	log := o.Logger.With("channel", o.Name)
	return &Channel{
		name:      o.Name,
		cfg:       o.Config,
		publicURL: strings.TrimRight(o.PublicURL, "/"),
		decider:   o.Decider,
		present:   o.Present,
		log:       log,
		baseLog:   o.Logger,
		now:       o.Now,
		api:       newAPIClient(o.Config.BaseURL, o.Config.AppID, o.Config.AppSecret, o.HTTPClient, o.Now, log),
		seen:      newDedupe(dedupeSize, dedupeTTL),
	}, nil
}

// Name is the channel's name in the config.
func (c *Channel) Name() string { return c.name }

// LongConnection reports whether callbacks arrive over Feishu's long
// connection (mode: websocket) rather than at POST /callbacks/feishu.
func (c *Channel) LongConnection() bool { return c.cfg.Mode == config.FeishuWebsocket }

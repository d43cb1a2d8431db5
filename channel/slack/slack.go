// Package slack is Gatehouse's Slack adapter: it posts approval cards as
// Block Kit messages, verifies and parses interactivity callbacks (over
// HTTP or Socket Mode), turns taps into gate decisions, and updates cards
// to their final form.
package slack

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

// Options configure a Channel. Name, Config and Decider are required.
type Options struct {
	Name      string       // the channel's name in the config
	Config    config.Slack // validated settings; APIURL ends with '/'
	PublicURL string       // the server's public URL; "" leaves cards without a link
	Decider   gate.Decider // where verified verdicts go (*gate.Service)
	// Present shows requests on cards: redacted, risk first, with their
	// route's looks. nil: no redaction, no looks.
	Present    *present.Presenter
	Logger     *slog.Logger
	HTTPClient *http.Client     // nil: a client with a 15s timeout and Conns kept-alive connections
	Conns      int              // calls the card workers may make at once (cards.workers); 0: channel.DefaultConns
	Now        func() time.Time // nil: time.Now; the signature window uses it
}

// Channel is one configured Slack destination. It is safe for concurrent use.
type Channel struct {
	name      string
	cfg       config.Slack
	publicURL string
	decider   gate.Decider
	present   *present.Presenter
	log       *slog.Logger
	http      *http.Client
	now       func() time.Time
	api       *slack.Client

	bg     sync.WaitGroup // work started after an ack; tests wait on it
	warned sync.Map       // warnings logged once (warnOnce)

	botMu sync.Mutex
	botID string // the bot_id of this app's messages, once auth.test told it (recover.go)

	// peers are the channels whose Socket Mode events this one's connection
	// receives, itself first (SocketRunners); set before Run.
	peers []*Channel
}

var (
	_ gate.Channel = (*Channel)(nil)
	_ gate.Runner  = (*Channel)(nil)
)

// New builds a Slack channel. It does not call Slack: a bad token shows up
// as failed posts in the audit trail, not as a failed boot.
func New(o Options) (*Channel, error) {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("slack: name is required"))
	}
	if o.Config.BotToken == "" {
		errs = append(errs, errors.New("slack: bot_token is required"))
	}
	if o.Config.ChannelID == "" {
		errs = append(errs, errors.New("slack: channel_id is required"))
	}
	if o.Config.SigningSecret == "" && o.Config.AppToken == "" {
		errs = append(errs, errors.New("slack: signing_secret or app_token is required"))
	}
	if o.Decider == nil {
		errs = append(errs, errors.New("slack: a decider is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("channel %s: %w", o.Name, err)
	}
	if o.Config.APIURL == "" {
		o.Config.APIURL = slack.APIURL
	} else if !strings.HasSuffix(o.Config.APIURL, "/") {
		o.Config.APIURL += "/"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = channel.HTTPClient(15*time.Second, o.Conns)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Channel{
		name:      o.Name,
		cfg:       o.Config,
		publicURL: strings.TrimRight(o.PublicURL, "/"),
		decider:   o.Decider,
		present:   o.Present,
		log:       o.Logger.With("channel", o.Name),
		http:      o.HTTPClient,
		now:       o.Now,
	}
	c.api = c.newAPI()
	return c, nil
}

// newAPI builds a slack-go client. Its own retries stay off (they are off
// by default in v0.34.0 and would retry 429s for up to a minute); Post and
// Update retry within a bounded budget instead (client.go).
func (c *Channel) newAPI(extra ...slack.Option) *slack.Client {
	opts := []slack.Option{
		slack.OptionAPIURL(c.cfg.APIURL),
		slack.OptionHTTPClient(c.http),
		slack.OptionLog(slogLogger(c.log)),
	}
	return slack.New(c.cfg.BotToken, append(opts, extra...)...)
}

// Name is the channel's name in the config.
func (c *Channel) Name() string { return c.name }

// SocketMode reports whether the channel receives interactions over Socket
// Mode (an app-level token is set) and so needs Run started.
func (c *Channel) SocketMode() bool { return c.cfg.AppToken != "" }

// Flush blocks until the work started after acks (verdicts, ephemeral
// replies, modals) has finished, so a server shutting down records every tap
// it acknowledged before closing the database.
func (c *Channel) Flush() { c.bg.Wait() }

// slogLogger adapts a slog.Logger to the SDK's Output-style logger, at
// debug level: the SDK only logs in debug mode.
func slogLogger(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelDebug)
}

// Package webhook is Gatehouse's generic webhook channel: a signed JSON POST
// to the operator's relay for every card and every final state, and signed
// verdicts back on POST /callbacks/webhook/{channel}. A relay of one's own
// reaches Teams, Discord, a pager or anything else that can show a message
// and send back a decision.
//
// Both directions carry X-Gatehouse-Timestamp (Unix seconds) and
// X-Gatehouse-Signature: v1=<hex HMAC-SHA256 of "v1:<timestamp>:<raw body>">
// keyed with the channel's secret. A verdict is
// {"request_id", "decision": "approve"|"reject", "actor", "reason"}; its
// actor is recorded as webhook:<channel>/<actor>. Verdicts older than five
// minutes, replayed, for a request that was not sent to the channel, or not
// signed with its secret change nothing.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/text"
)

// Options configure a Channel. Name, Config and Decider are required.
type Options struct {
	Name      string         // the channel's name in the config; a path segment of its callback URL
	Config    config.Webhook // validated settings
	PublicURL string         // the server's public URL; "" leaves messages without links
	Decider   gate.Decider   // where verified verdicts go (*gate.Service)
	// Present shows requests to the relay's people: redacted, with their
	// route's looks. nil: no redaction, no looks.
	Present *present.Presenter
	Logger  *slog.Logger
	// HTTPClient posts to the relay; nil: a client with a 15s timeout and
	// Conns kept-alive connections.
	HTTPClient *http.Client
	Conns      int              // calls the card workers may make at once (cards.workers)
	Now        func() time.Time // nil: time.Now; signatures and their window use it
	// UserAgent is sent with every POST ("gatehouse/<version>").
	UserAgent string
}

// Channel is one configured webhook relay. It is safe for concurrent use.
type Channel struct {
	name      string
	url       string
	secret    []byte
	publicURL string
	decider   gate.Decider
	present   *present.Presenter
	log       *slog.Logger
	http      *http.Client
	now       func() time.Time
	userAgent string
	replays   *channel.ReplayCache
}

var (
	_ gate.Channel = (*Channel)(nil)
	_ gate.Replier = (*Channel)(nil)
)

// New builds a webhook channel. It does not call the relay: an unreachable
// relay shows up as failed posts in the audit trail, not as a failed boot.
func New(o Options) (*Channel, error) {
	var errs []error
	if o.Name == "" {
		errs = append(errs, errors.New("webhook: name is required"))
	}
	if o.Config.URL == "" {
		errs = append(errs, errors.New("webhook: url is required"))
	}
	if len(o.Config.Secret) < config.MinWebhookSecret {
		errs = append(errs, fmt.Errorf("webhook: secret must be at least %d characters", config.MinWebhookSecret))
	}
	if o.Decider == nil {
		errs = append(errs, errors.New("webhook: a decider is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("channel %s: %w", o.Name, err)
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
	if o.UserAgent == "" {
		o.UserAgent = "gatehouse"
	}
	return &Channel{
		name:      o.Name,
		url:       o.Config.URL,
		secret:    []byte(o.Config.Secret),
		publicURL: strings.TrimRight(o.PublicURL, "/"),
		decider:   o.Decider,
		present:   o.Present,
		log:       o.Logger.With("channel", o.Name),
		http:      o.HTTPClient,
		now:       o.Now,
		userAgent: o.UserAgent,
		replays:   channel.NewReplayCache(Window, maxReplays),
	}, nil
}

// Name is the channel's name in the config.
func (c *Channel) Name() string { return c.name }

// CallbackPath is where the channel takes verdicts, under /callbacks/.
func (c *Channel) CallbackPath() string { return "webhook/" + c.name }

// Message types: the card of a pending request, a reminder that it still
// waits, and its final state.
const (
	TypeCard     = "card"
	TypeReminder = "reminder"
	TypeFinal    = "final"
)

// Message is the JSON body of every POST to the relay.
type Message struct {
	// Type is "card" for a request waiting for a verdict, "reminder" when
	// its route reminds its approvers that it still waits, "final" once it
	// has one (approved, rejected, expired or cancelled).
	Type    string `json:"type"`
	Channel string `json:"channel"`
	// Ref is, on a reminder or a final message, what the relay answered to
	// the card's POST as {"ref": "..."} (its message id, say), or the
	// request id.
	Ref string `json:"ref,omitempty"`
	// Step numbers a reminder among the request's reminders and
	// escalations: a retried POST of one reminder carries the same step.
	Step int `json:"step,omitempty"`
	// Mention names, on a reminder, the approvers of this relay (actors, in
	// its own terms) who have not approved yet.
	Mention []string `json:"mention,omitempty"`
	Request Request  `json:"request"`
	// Text is one line for people. It holds what the agent wrote: show it
	// as plain text, never as markup.
	Text string `json:"text"`
	// URL is the request's page on the web UI (when public_url is set).
	URL string `json:"url,omitempty"`
	// CallbackURL is where verdicts go (on cards, when public_url is set).
	CallbackURL string `json:"callback_url,omitempty"`
}

// Request is what a relay learns of a request: what it shows an approver
// and, once final, the verdict.
type Request struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ToolName     string          `json:"tool_name"`
	ToolArgs     json.RawMessage `json:"tool_args"`
	Summary      string          `json:"summary"`
	AgentID      string          `json:"agent_id"`
	UserID       string          `json:"user_id"`
	SessionID    string          `json:"session_id"`
	Metadata     json.RawMessage `json:"metadata"`
	Route        string          `json:"route"`
	Approvers    []string        `json:"approvers"`
	Quorum       int             `json:"quorum"`
	OnTimeout    string          `json:"on_timeout"`
	CreatedAt    time.Time       `json:"created_at"`
	ExpiresAt    time.Time       `json:"expires_at"`
	DecidedAt    *time.Time      `json:"decided_at"`
	DecidedBy    string          `json:"decided_by"`
	DecidedVia   string          `json:"decided_via"`
	Reason       string          `json:"reason"`
	ModifiedArgs json.RawMessage `json:"modified_args"`
	// Label and Severity are the route's looks (severity: low, high or
	// critical; a relay should have approvers confirm a critical approval).
	Label    string `json:"label,omitempty"`
	Severity string `json:"severity,omitempty"`
	// Big is what the cards and the page show in large type, worked out
	// from the arguments, not the agent's words: the amount, the command,
	// the path or the URL (BigKind says which), cut in the middle to 500
	// characters. Show it beside the summary, which it may belie.
	Big     string `json:"big,omitempty"`
	BigKind string `json:"big_kind,omitempty"`
}

// requestOf is what the relay is sent of a request: the view's redacted copy.
func requestOf(v present.View) Request {
	r := v.Request
	out := Request{Label: v.Label, Severity: v.Severity, ID: r.ID, Status: string(r.Status), ToolName: r.ToolName, ToolArgs: r.ToolArgs, Summary: r.Summary,
		AgentID: r.AgentID, UserID: r.UserID, SessionID: r.SessionID, Metadata: r.Metadata, Route: r.Route,
		Approvers: r.Approvers, Quorum: max(r.Quorum, 1), OnTimeout: string(r.OnTimeout), CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt, DecidedBy: r.DecidedBy, DecidedVia: r.DecidedVia,
		Reason: r.Reason, ModifiedArgs: r.ModifiedArgs, Big: v.Big, BigKind: v.Kind}
	if out.Approvers == nil {
		out.Approvers = []string{}
	}
	if len(out.ToolArgs) == 0 {
		out.ToolArgs = json.RawMessage("{}")
	}
	return out
}

// maxRef bounds the reference a relay may hand back.
const maxRef = 512

// retryPolicy bounds one delivery: three tries within 25 seconds. The gate's
// card worker retries durably after that and audits each failure.
var retryPolicy = channel.RetryPolicy{Attempts: 3, Budget: 25 * time.Second}

// Post sends the card of a pending request and returns the relay's
// reference to it: the "ref" of its JSON answer, or the request id.
func (c *Channel) Post(ctx context.Context, r *gate.Request) (string, error) {
	v := c.present.View(r)
	m := Message{Type: TypeCard, Channel: c.name, Request: requestOf(v), Text: cardText(v)}
	c.link(&m, r.ID, true)
	answer, err := c.deliver(ctx, m)
	if err != nil {
		return "", fmt.Errorf("webhook: post card: %w", err)
	}
	return refOf(answer, r.ID), nil
}

// Update sends the request's final state, with the card's reference.
func (c *Channel) Update(ctx context.Context, r *gate.Request, ref string) error {
	v := c.present.View(r)
	m := Message{Type: TypeFinal, Channel: c.name, Ref: ref, Request: requestOf(v), Text: text.UpperFirst(v.Explain(c.now()))}
	c.link(&m, r.ID, false)
	if _, err := c.deliver(ctx, m); err != nil {
		return fmt.Errorf("webhook: send final state: %w", err)
	}
	return nil
}

// Remind tells the relay that the request behind the card ref still
// waits, naming the approvers among mention who are this relay's actors
// (webhook:<channel>/<actor>), and returns the card's ref with the step
// (reminders are never updated, so nothing reads it back).
func (c *Channel) Remind(ctx context.Context, r *gate.Request, ref string, step int, mention []string) (string, error) {
	v := c.present.View(r)
	m := Message{Type: TypeReminder, Channel: c.name, Ref: ref, Step: step, Request: requestOf(v),
		Text: line("Still waiting for approval: ", v, ", expires "+r.ExpiresAt.UTC().Format(time.RFC3339))}
	for _, id := range mention {
		if actor, ok := strings.CutPrefix(id, "webhook:"+c.name+"/"); ok {
			m.Mention = append(m.Mention, actor)
		}
	}
	c.link(&m, r.ID, true)
	if _, err := c.deliver(ctx, m); err != nil {
		return "", fmt.Errorf("webhook: reminder: %w", err)
	}
	return fmt.Sprintf("%s#%d", ref, step), nil
}

// link sets m's links to the request's page and, when asked, to where
// verdicts go; none without a public URL.
func (c *Channel) link(m *Message, requestID string, callback bool) {
	if c.publicURL == "" {
		return
	}
	m.URL = c.publicURL + "/approvals/" + requestID
	if callback {
		m.CallbackURL = c.publicURL + "/callbacks/" + c.CallbackPath()
	}
}

// refOf is the "ref" of a relay's JSON answer, cleaned and cut, or def.
func refOf(answer []byte, def string) string {
	var a struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(answer, &a) == nil && a.Ref != "" {
		ref, _ := text.CutBytes(text.Clean(a.Ref), maxRef)
		return ref
	}
	return def
}

// cardText is the card's one line: what will happen, who asks, the tool.
func cardText(v present.View) string { return line("Approval needed: ", v, "") }

// line is a message's one line for people, at most 500 characters: lead,
// the sentence, what the cards show in large type when the sentence does
// not say it (a summary's words may belie the amount or the command), who
// asks and the tool, and tail. The sentence is cut to what the rest leaves:
// a long summary must not cut off the amount, the tool or the asker.
func line(lead string, v present.View, tail string) string {
	rest := " (" + text.Ellipsis(v.Who(), 100) + "; tool " + text.Ellipsis(v.ToolName, 200) + ")" + tail
	sentence := text.Ellipsis(v.Sentence, 500-utf8.RuneCountInString(lead+rest))
	if big := v.BigUnsaid(sentence, 150); big != "" {
		rest = " — " + big + rest
		sentence = text.Ellipsis(v.Sentence, 500-utf8.RuneCountInString(lead+rest))
	}
	return lead + sentence + rest
}

// maxAnswer bounds what is read of a relay's answer.
const maxAnswer = 64 << 10

// deliver POSTs m, signed afresh on every try, and returns the answer's body.
// 429 and 5xx answers and failed connections are retried within the policy;
// any other answer but a 2xx is a failure that says what the relay said.
func (c *Channel) deliver(ctx context.Context, m Message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var answer []byte
	err = channel.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		ts := strconv.FormatInt(c.now().Unix(), 10)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", c.userAgent)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign(c.secret, ts, body))
		resp, err := c.http.Do(req)
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			// Not the URL: a relay's secret is often in its path or query
			// (…/hooks/catch/TOKEN?key=…), and the error is shown on the
			// request page as the card's last error.
			err = fmt.Errorf("%s the relay: %w", ue.Op, ue.Err)
		}
		if err != nil {
			if channel.IsTimeout(err) {
				return err // Retry decides, as for any timeout
			}
			return channel.Temporary(err, 0) // refused or reset: it did not land
		}
		defer resp.Body.Close()
		answer, _ = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return nil
		}
		err = fmt.Errorf("relay answered %s: %s", resp.Status, text.Ellipsis(strings.TrimSpace(text.Clean(string(answer))), 200))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return channel.Temporary(err, retryAfter(resp.Header.Get("Retry-After")))
		}
		return err
	})
	return answer, err
}

// retryAfter reads a Retry-After header given in seconds.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

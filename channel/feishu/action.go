package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
	textutil "github.com/gatehouse-dev/gatehouse/internal/text"
)

// decideTimeout keeps the answer inside Feishu's 3 s callback deadline.
const decideTimeout = 2500 * time.Millisecond

// cardEvent is the "event" of a card.action.trigger callback, read from the
// raw body: the SDK's Operator has no union_id.
type cardEvent struct {
	Operator struct {
		OpenID    string `json:"open_id"`
		UnionID   string `json:"union_id"`
		UserID    string `json:"user_id"`
		TenantKey string `json:"tenant_key"`
	} `json:"operator"`
	Action struct {
		Tag       string          `json:"tag"`
		Name      string          `json:"name"`
		Value     json.RawMessage `json:"value"`
		FormValue map[string]any  `json:"form_value"`
	} `json:"action"`
	Context struct {
		OpenMessageID string `json:"open_message_id"`
		OpenChatID    string `json:"open_chat_id"`
	} `json:"context"`
}

// refusal is a callback turned away before any decision: its HTTP status
// and why.
type refusal struct {
	status int
	msg    string
}

// handleEvent checks a decrypted, signature-verified callback (or one from
// the long connection) and applies the tap. sentAt is the signed request
// time for HTTP callbacks, checked against the window; nil on the long
// connection, which has no such header. A refused callback decides nothing;
// once the body is known to be Feishu's, refusals are audited through the
// Decider against the request the tap named.
func (c *Channel) handleEvent(ctx context.Context, env *callbackEnvelope, sentAt *time.Time) (*callback.CardActionTriggerResponse, *refusal) {
	var ev cardEvent
	if err := json.Unmarshal(env.Event, &ev); err != nil || len(env.Event) == 0 {
		return nil, &refusal{http.StatusBadRequest, "no event in the callback"}
	}
	if ev.Operator.TenantKey == "" || ev.Operator.TenantKey != env.Header.TenantKey {
		// A user_id is the tenant's own: an operator of another tenant
		// (an external chat), or of a tenant the callback does not name,
		// may carry an approver's user_id.
		ev.Operator.UserID = ""
	}
	var v actionValue
	_ = json.Unmarshal(ev.Action.Value, &v)
	actor := ""
	if ev.Operator.OpenID != "" {
		actor = "feishu:" + ev.Operator.OpenID
	}
	log := c.log.With("request_id", v.RequestID, "actor", actor, "event_id", env.Header.EventID)
	refuse := func(status int, detail string) (*callback.CardActionTriggerResponse, *refusal) {
		log.Warn("feishu callback refused", "detail", detail)
		c.decider.Refuse(context.WithoutCancel(ctx), v.RequestID, c.name, actor, "feishu callback refused: "+detail)
		return nil, &refusal{status, detail}
	}

	// The long connection is authenticated by the app's credentials; there
	// a token is checked when one is configured. Over HTTP it always is.
	if sentAt != nil || c.cfg.VerificationToken != "" {
		if !sameSecret(env.Header.Token, c.cfg.VerificationToken) {
			return refuse(http.StatusUnauthorized, "wrong verification token")
		}
	}
	if env.Header.AppID != "" && env.Header.AppID != c.cfg.AppID {
		return refuse(http.StatusUnauthorized, "callback for another app")
	}
	if sentAt != nil {
		if sentAt.IsZero() {
			return refuse(http.StatusUnauthorized, "missing request timestamp")
		}
		if d := c.now().Sub(*sentAt); d > window || d < -window {
			return refuse(http.StatusUnauthorized, fmt.Sprintf("request timestamp %s is outside the %s window", sentAt.UTC().Format(time.RFC3339), window))
		}
	}
	if env.Header.EventType != "card.action.trigger" {
		return nil, &refusal{http.StatusBadRequest, "not a card action"}
	}
	if env.Header.EventID == "" {
		return refuse(http.StatusBadRequest, "no event_id")
	}
	if !c.seen.firstTime(env.Header.EventID, c.now()) {
		return refuse(http.StatusUnauthorized, "replayed event_id "+env.Header.EventID)
	}

	// The callback is genuine and fresh; what remains are taps the gate
	// answers with a toast.
	if actor == "" {
		c.decider.Refuse(context.WithoutCancel(ctx), v.RequestID, c.name, "", "feishu callback without an operator")
		return toast("error", "Gatehouse could not tell who you are."), nil
	}
	// A tap that names no chat is not known to come from the approvals
	// chat, so it is elsewhere too (as a Slack tap with no channel is).
	elsewhere := ev.Context.OpenChatID != c.cfg.ChatID
	if elsewhere && (v.To == "" || !slices.Contains(append([]string{actor}, identities(&ev)...), v.To)) {
		// Outside the approvals chat only a direct card counts, and only
		// for the person it was sent to (a forwarded one is inert).
		c.decider.Refuse(context.WithoutCancel(ctx), v.RequestID, c.name, actor, "card tapped outside the approvals chat "+ev.Context.OpenChatID)
		return toast("error", "This card can only be used in the approvals chat (or by the person it was sent to)."), nil
	}
	if v.RequestID == "" || (v.Choice != choiceApprove && v.Choice != choiceReject && v.Choice != choiceRemember) {
		c.decider.Refuse(context.WithoutCancel(ctx), v.RequestID, c.name, actor, "feishu callback with an unknown action")
		return toast("error", "Unknown action."), nil
	}
	return c.decide(ctx, log, &ev, v, actor, elsewhere), nil
}

// decide hands the verdict to the gate and turns its answer into a toast
// and, once the request is final, the final card.
func (c *Channel) decide(ctx context.Context, log *slog.Logger, ev *cardEvent, v actionValue, actor string, elsewhere bool) *callback.CardActionTriggerResponse {
	d := gate.Decision{
		RequestID:  v.RequestID,
		Approve:    v.Choice == choiceApprove || v.Choice == choiceRemember,
		Remember:   v.Choice == choiceRemember,
		Actor:      actor,
		Identities: identities(ev),
		Voter:      voter(ev, actor),
		Via:        c.name,
		Reason:     reason(ev.Action.FormValue),
		// The answer below carries the final card of the tapped message,
		// and of no other: that message (a direct card, or in a chat two
		// channels share the other channel's card) is the one that shows
		// the verdict, and every other card of the request is updated.
		CardUpdated: true,
		CardRef:     ev.Context.OpenMessageID,
		Elsewhere:   elsewhere,
	}
	dctx, cancel := context.WithTimeout(ctx, decideTimeout)
	defer cancel()
	r, err := c.decider.Decide(dctx, d)
	switch code := gate.ErrorCode(err); {
	case err == nil && r != nil && r.Status.Final():
		log.Info("verdict recorded", "status", r.Status)
		return c.withCard(toast("success", capitalize(string(r.Status))+"."), r)
	case err == nil:
		return toast("info", "Your approval is recorded; more approvals are needed.")
	case code == gate.EFORBIDDEN:
		return toast("error", "You are not an approver of this request.")
	case code == gate.ESELF:
		return toast("warning", "You asked for this; someone else must approve. (You may still reject it.)")
	case code == gate.ECONFLICT:
		return c.withCard(toast("info", capitalize(gate.ErrorMessage(err))+"."), r)
	case code == gate.EEXPIRED:
		return c.withCard(toast("info", "This request has expired."), r)
	case code == gate.ENOTFOUND:
		return toast("error", "Gatehouse does not know this request.")
	case code == gate.EINVALID:
		return toast("error", capitalize(gate.ErrorMessage(err))+".")
	default:
		log.Error("recording the verdict failed", "err", err)
		return toast("error", "Gatehouse could not record your verdict; please try again.")
	}
}

// withCard adds r's card to the answer when r is final, so a stale card
// with buttons is replaced right away.
func (c *Channel) withCard(resp *callback.CardActionTriggerResponse, r *gate.Request) *callback.CardActionTriggerResponse {
	if r == nil || !r.Status.Final() {
		return resp
	}
	card, err := c.renderCard(r)
	if err != nil {
		c.log.Error("render card failed", "request_id", r.ID, "err", err)
		return resp
	}
	resp.Card = &callback.Card{Type: "raw", Data: json.RawMessage(card)}
	return resp
}

// identities are the operator's other names an approvers list may use.
func identities(ev *cardEvent) []string {
	var ids []string
	if ev.Operator.UnionID != "" {
		ids = append(ids, "feishu:union:"+ev.Operator.UnionID)
	}
	if ev.Operator.UserID != "" {
		ids = append(ids, "feishu:user:"+ev.Operator.UserID)
	}
	return ids
}

// voter is who an approval toward a quorum counts for: the operator's
// union_id, the same in every app of one developer, where Feishu sends it.
// The open_id differs per app, so keyed by it one person could meet a
// quorum alone by tapping in two apps' chats.
func voter(ev *cardEvent, actor string) string {
	if ev.Operator.UnionID != "" {
		return "feishu:union:" + ev.Operator.UnionID
	}
	return actor
}

// reason is the form's reason input, trimmed and bounded.
func reason(form map[string]any) string {
	s, _ := form[reasonField].(string)
	s, _ = channel.Truncate(strings.TrimSpace(s), 1000)
	return s
}

func toast(typ, content string) *callback.CardActionTriggerResponse {
	return &callback.CardActionTriggerResponse{Toast: &callback.Toast{Type: typ, Content: content}}
}

// capitalize upper-cases the first letter of a gate message for a toast,
// unless the message starts with an identity ("feishu:ou_x already …").
func capitalize(s string) string {
	if first, _, _ := strings.Cut(s, " "); strings.Contains(first, ":") {
		return s
	}
	return textutil.UpperFirst(s)
}

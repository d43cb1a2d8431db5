package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
)

const (
	// signatureWindow is how far a request's timestamp may be from now.
	signatureWindow = 5 * time.Minute
	// maxCallbackBody bounds what is read before the signature is checked.
	// block_actions payloads carry the whole message, so leave room.
	maxCallbackBody = 2 << 20
	// maxReplays bounds the replay cache: far above any real tap rate
	// within one signature window.
	maxReplays = 10000
)

// scheme is Slack's v0 request signature:
// "v0=" + hex(HMAC-SHA256(secret, "v0:" + timestamp + ":" + body)), with the
// timestamp within five minutes of now. slack.NewSecretsVerifier does the
// same but reads the wall clock, which tests cannot move.
var scheme = channel.HMACScheme{Version: "v0", SignatureHeader: "X-Slack-Signature",
	TimestampHeader: "X-Slack-Request-Timestamp", Window: signatureWindow}

// callbackHandler serves POST /callbacks/slack for every Slack channel.
type callbackHandler struct {
	chs     []*Channel
	replays *channel.ReplayCache
}

// NewCallbackHandler returns the handler for Slack's interactivity request
// URL (POST /callbacks/slack). It verifies the signature before it reads
// anything from the body; with several Slack channels, a channel whose
// signing secret verifies the body handles it (preferring the one whose
// Slack channel the tap came from). Verified taps are acked at once and
// decided in the background.
func NewCallbackHandler(chs []*Channel) http.Handler {
	var signed []*Channel
	for _, c := range chs {
		if c != nil && c.cfg.SigningSecret != "" {
			signed = append(signed, c)
		}
	}
	return &callbackHandler{chs: signed, replays: channel.NewReplayCache(signatureWindow, maxReplays)}
}

func (h *callbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if len(h.chs) == 0 {
		http.Error(w, "no Slack channel takes HTTP callbacks", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCallbackBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	var verified []*Channel
	var why error
	var sig []byte // the signature's bytes, which the replay cache keys on
	var at time.Time
	for _, c := range h.chs {
		s, t, err := scheme.Verify([]byte(c.cfg.SigningSecret), r.Header, body, c.now())
		if err != nil {
			why = err
			continue
		}
		sig, at = s, t
		verified = append(verified, c)
	}
	if len(verified) == 0 {
		// Nothing in an unverified body is trusted, not even a request id
		// to audit against: log and refuse.
		h.chs[0].log.Warn("slack callback refused", "reason", why.Error(), "remote", r.RemoteAddr)
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	c := verified[0]
	// Keyed on the signature's bytes, not the header's text, so the same
	// signature written in upper-case hex (which verifies too) is the same
	// replay.
	replayed := h.replays.Seen(string(sig), at, c.now())
	ic, perr := parsePayload(body)
	if perr == nil {
		c = pick(verified, ic)
	}
	if replayed {
		// Signed by Slack, so its request id is worth auditing.
		actor, _ := identity(ic)
		c.decider.Refuse(r.Context(), requestIDOf(ic), c.name, actor, "replayed Slack callback refused")
		http.Error(w, "replayed request", http.StatusUnauthorized)
		return
	}
	if perr != nil {
		c.log.Warn("slack callback unreadable", "err", perr)
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	if done := c.interact(r.Context(), ic, verified); done != nil {
		// The verdict usually lands within a millisecond. Waiting for it
		// here hands this goroutine's CPU to it at once, instead of after
		// the ack has been written, and the ack goes out well inside
		// Slack's 3 seconds however long the verdict takes.
		t := time.NewTimer(ackWait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	w.WriteHeader(http.StatusOK)
}

// ackWait bounds how long an HTTP tap's ack waits for its verdict.
const ackWait = 1500 * time.Millisecond

// parsePayload reads the form field "payload" of an interactivity request.
// It decodes only what Gatehouse acts on (payload) into the SDK's type,
// which the Socket Mode path gets from the SDK: a block_actions payload
// carries the whole message, blocks and all, and the SDK's decoder builds
// all of it, which took a tenth of a verdict's time.
func parsePayload(body []byte) (slack.InteractionCallback, error) {
	var ic slack.InteractionCallback
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return ic, fmt.Errorf("form: %w", err)
	}
	p := form.Get("payload")
	if p == "" {
		return ic, errors.New("no payload field")
	}
	var in payload
	if err := json.Unmarshal([]byte(p), &in); err != nil {
		return ic, fmt.Errorf("payload: %w", err)
	}
	ic.Type = in.Type
	ic.TriggerID = in.TriggerID
	ic.Team.ID = in.Team.ID
	ic.User.ID, ic.User.TeamID = in.User.ID, in.User.TeamID
	ic.Channel.ID = in.Channel.ID
	ic.Container.ChannelID = in.Container.ChannelID
	for _, a := range in.Actions {
		if !a.block {
			continue // an attachment's action (the SDK's rule), never a card's
		}
		ic.ActionCallback.BlockActions = append(ic.ActionCallback.BlockActions, &slack.BlockAction{ActionID: a.ActionID, BlockID: a.BlockID, Value: a.Value})
	}
	ic.View.CallbackID, ic.View.PrivateMetadata = in.View.CallbackID, in.View.PrivateMetadata
	if in.View.State != nil {
		ic.View.State = &slack.ViewState{Values: map[string]map[string]slack.BlockAction{}}
		for b, actions := range in.View.State.Values {
			ic.View.State.Values[b] = map[string]slack.BlockAction{}
			for a, v := range actions {
				ic.View.State.Values[b][a] = slack.BlockAction{ActionID: a, BlockID: b, Value: v.Value}
			}
		}
	}
	return ic, nil
}

// payload is the part of an interaction payload that interact reads. Like
// any encoding/json decode it matches keys case-insensitively; Slack's are
// lower case, and the body was verified as Slack's before it is read.
type payload struct {
	Type      slack.InteractionType `json:"type"`
	TriggerID string                `json:"trigger_id"`
	Team      struct {
		ID string `json:"id"`
	} `json:"team"`
	User struct {
		ID     string `json:"id"`
		TeamID string `json:"team_id"`
	} `json:"user"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Container struct {
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Actions []action `json:"actions"`
	View    struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		State           *struct {
			Values map[string]map[string]struct {
				Value string `json:"value"`
			} `json:"values"`
		} `json:"state"`
	} `json:"view"`
}

// action is one of a payload's actions.
type action struct {
	ActionID string `json:"action_id"`
	BlockID  string `json:"block_id"`
	Value    string `json:"value"`
	block    bool   // a block's action; otherwise an attachment's, which no card has
}

// UnmarshalJSON reads an action by the SDK's rule (ActionCallbacks'
// UnmarshalJSON), so that a tap over HTTP is read as over Socket Mode: an
// action is a block's when its exact key "block_id" holds a string, and
// then its fields are matched as encoding/json matches them. A looser
// test (any key that matches block_id without regard to case, or a
// number) would act on taps the SDK ignores.
func (a *action) UnmarshalJSON(b []byte) error {
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	*a = action{}
	if _, ok := keys["block_id"].(string); !ok {
		return nil // an attachment's action: nothing in it is read
	}
	type plain action
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*a = action(p)
	a.block = true
	return nil
}

// pick prefers, among channels whose secret verified (one app may serve
// several channels), the one whose Slack channel the tap came from. A tap
// from no channel's Slack channel (a direct card's) is given to the first,
// which passes it on to the request's own channel once it has read the
// request, after the ack (via).
func pick(chs []*Channel, ic slack.InteractionCallback) *Channel {
	if ic.Type == slack.InteractionTypeViewSubmission {
		// The reason modal names the channel whose card was tapped.
		var meta reasonMeta
		if json.Unmarshal([]byte(ic.View.PrivateMetadata), &meta) == nil && meta.Via != "" {
			for _, c := range chs {
				if c.name == meta.Via {
					return c
				}
			}
		}
	}
	from := tapChannel(ic)
	for _, c := range chs {
		if from != "" && c.cfg.ChannelID == from {
			return c
		}
	}
	return chs[0]
}

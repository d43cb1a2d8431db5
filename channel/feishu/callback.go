package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// Callback headers Feishu signs with.
const (
	headerTimestamp = "X-Lark-Request-Timestamp"
	headerNonce     = "X-Lark-Request-Nonce"
	headerSignature = "X-Lark-Signature"
)

// window is how far a callback's signed timestamp may be from our clock.
const window = 5 * time.Minute

// maxBody bounds a callback body; real ones are a few KB.
const maxBody = 1 << 20

// callbackEnvelope is the decrypted callback: a URL challenge, or a schema
// 2.0 event with a header.
type callbackEnvelope struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	Token     string `json:"token"`
	Schema    string `json:"schema"`
	Header    struct {
		EventID    string `json:"event_id"`
		EventType  string `json:"event_type"`
		CreateTime string `json:"create_time"`
		Token      string `json:"token"`
		AppID      string `json:"app_id"`
		TenantKey  string `json:"tenant_key"`
	} `json:"header"`
	Event json.RawMessage `json:"event"`
}

// callbackHandler serves POST /callbacks/feishu for one or more channels.
type callbackHandler struct {
	chs []*Channel
	log *slog.Logger
}

// NewCallbackHandler returns the handler for POST /callbacks/feishu. It
// answers Feishu's URL challenge and turns card callbacks into decisions.
// Every callback must carry a valid X-Lark-Signature (so the channel needs
// an encrypt_key), the channel's verification token, a timestamp within 5
// minutes and an event_id not seen before; anything else is refused with
// 401 (400 for a body that is not a callback at all) and decides nothing.
// With several Feishu channels, the one whose encrypt key verifies the
// signature, whose app_id the header names and whose chat the card is in
// handles the callback.
func NewCallbackHandler(chs []*Channel) http.Handler {
	h := &callbackHandler{chs: chs, log: slog.New(slog.DiscardHandler)}
	if len(chs) > 0 {
		h.log = chs[0].baseLog.With("channel", "feishu")
	}
	return h
}

func (h *callbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuseHTTP(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		refuseHTTP(w, http.StatusBadRequest, "unreadable or oversized body")
		return
	}
	var outer struct {
		Encrypt string `json:"encrypt"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		refuseHTTP(w, http.StatusBadRequest, "not JSON")
		return
	}
	ts, nonce, sig := r.Header.Get(headerTimestamp), r.Header.Get(headerNonce), r.Header.Get(headerSignature)

	// Which channels' encrypt key signed this body.
	var signedBy []*Channel
	if sig != "" {
		for _, c := range h.chs {
			if c.cfg.EncryptKey != "" && validSignature(sig, ts, nonce, c.cfg.EncryptKey, body) {
				signedBy = append(signedBy, c)
			}
		}
		if len(signedBy) == 0 {
			h.log.Warn("feishu callback refused: bad signature")
			refuseHTTP(w, http.StatusUnauthorized, "bad signature")
			return
		}
	}

	plain, keyOwners, err := h.open(body, outer.Encrypt, signedBy)
	if err != nil {
		h.log.Warn("feishu callback refused", "err", err)
		refuseHTTP(w, http.StatusBadRequest, err.Error())
		return
	}
	var env callbackEnvelope
	if err := json.Unmarshal(plain, &env); err != nil {
		refuseHTTP(w, http.StatusBadRequest, "not a Feishu callback")
		return
	}

	if env.Type == "url_verification" {
		h.challenge(w, &env, keyOwners)
		return
	}
	if len(signedBy) == 0 {
		// Feishu signs callbacks only for apps with an encrypt key; without
		// a signature nothing proves the body came from Feishu.
		h.log.Warn("feishu callback refused: unsigned", "event_id", env.Header.EventID)
		refuseHTTP(w, http.StatusUnauthorized, "unsigned callback")
		return
	}
	c := pick(r.Context(), signedBy, &env)
	sec, err := strconv.ParseInt(ts, 10, 64)
	sent := time.Unix(sec, 0)
	if err != nil {
		sent = time.Time{}
	}
	resp, ref := c.handleEvent(r.Context(), &env, &sent)
	if ref != nil {
		refuseHTTP(w, ref.status, ref.msg)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// open returns the callback's plaintext and the channels whose key opened
// it. An encrypted body is opened with the key that signed it or, for an
// unsigned URL challenge, with the first key that yields JSON.
func (h *callbackHandler) open(body []byte, encrypted string, signedBy []*Channel) ([]byte, []*Channel, error) {
	if encrypted == "" {
		return body, nil, nil
	}
	cands := signedBy
	if len(cands) == 0 {
		for _, c := range h.chs {
			if c.cfg.EncryptKey != "" {
				cands = append(cands, c)
			}
		}
	}
	for _, c := range cands {
		plain, err := decrypt(encrypted, c.cfg.EncryptKey)
		if err == nil && json.Valid(plain) {
			var owners []*Channel
			for _, o := range cands {
				if o.cfg.EncryptKey == c.cfg.EncryptKey {
					owners = append(owners, o)
				}
			}
			return plain, owners, nil
		}
	}
	return nil, nil, errors.New("cannot decrypt the body with any configured encrypt key")
}

// challenge answers Feishu's URL verification for the channel whose
// verification token it carries.
func (h *callbackHandler) challenge(w http.ResponseWriter, env *callbackEnvelope, keyOwners []*Channel) {
	cands := keyOwners
	if len(cands) == 0 {
		cands = h.chs
	}
	for _, c := range cands {
		if sameSecret(env.Token, c.cfg.VerificationToken) {
			c.log.Info("answered Feishu URL verification")
			writeJSON(w, http.StatusOK, map[string]string{"challenge": env.Challenge})
			return
		}
	}
	h.log.Warn("feishu URL verification refused: wrong verification token")
	refuseHTTP(w, http.StatusUnauthorized, "wrong verification token")
}

// pick chooses among the channels sharing the signing key: the one whose
// app the header names, then whose token matches, then whose chat holds the
// card (of two in one chat, the one the request was sent by). A direct card is in the approver's own chat with the app, no
// channel's chat: its tap goes to the first of the request's own channels
// among those left (the one the gate sent the card through, as it sends by
// the first of them that reaches the person), so it is never decided
// through a channel the request was not sent to, nor one of another app.
// It falls back to the best so far so that the refusal is audited against
// a channel.
func pick(ctx context.Context, cands []*Channel, env *callbackEnvelope) *Channel {
	filter := func(cs []*Channel, ok func(*Channel) bool) []*Channel {
		var out []*Channel
		for _, c := range cs {
			if ok(c) {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return cs
		}
		return out
	}
	cands = filter(cands, func(c *Channel) bool { return c.cfg.AppID == env.Header.AppID })
	cands = filter(cands, func(c *Channel) bool { return sameSecret(env.Header.Token, c.cfg.VerificationToken) })
	var ev struct {
		Action struct {
			Value actionValue `json:"value"`
		} `json:"action"`
		Context struct {
			OpenChatID string `json:"open_chat_id"`
		} `json:"context"`
	}
	_ = json.Unmarshal(env.Event, &ev)
	// A tap in a channel's chat counts through it; when two channels post
	// to that chat, through the one the request was sent by.
	var inChat []*Channel
	for _, c := range cands {
		if c.cfg.ChatID == ev.Context.OpenChatID {
			inChat = append(inChat, c)
		}
	}
	switch {
	case len(inChat) == 1:
		return inChat[0]
	case len(inChat) > 1:
		cands = inChat
	}
	if len(cands) > 1 && ev.Action.Value.RequestID != "" {
		if r, err := cands[0].decider.Get(ctx, ev.Action.Value.RequestID); err == nil {
			for _, name := range r.Channels {
				for _, c := range cands {
					if c.name == name {
						return c
					}
				}
			}
		}
	}
	return cands[0]
}

// refuseHTTP answers a refused callback in Gatehouse's error shape.
func refuseHTTP(w http.ResponseWriter, status int, msg string) {
	code := "unauthorized"
	switch status {
	case http.StatusBadRequest:
		code = "invalid"
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	}
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := jsonx.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

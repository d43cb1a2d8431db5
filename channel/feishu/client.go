package feishu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/internal/jsonx"
)

// apiClient speaks the Feishu Open API calls Gatehouse needs: the
// tenant_access_token, message create, reply and patch.
//
// It is plain net/http rather than lark.NewClient on purpose: the SDK client
// hides the HTTP status and the rate-limit headers behind its own response
// types, keeps tokens in its own cache, and neither retries nor tells a
// transient failure from a permanent one. Here each call is retried within
// one Post or Update (channel.Retry: a few tries, well under 30 s) on
// network errors, HTTP 429 and 5xx, Feishu's rate-limit codes and a stale
// token, and any other failure goes back to the gate, which records it and
// retries on its own schedule.
type apiClient struct {
	base   string
	appID  string
	secret string
	hc     *http.Client
	now    func() time.Time
	log    *slog.Logger
	policy channel.RetryPolicy

	mu       sync.Mutex
	token    string
	tokenExp time.Time
}

func newAPIClient(base, appID, secret string, hc *http.Client, now func() time.Time, log *slog.Logger) *apiClient {
	return &apiClient{base: base, appID: appID, secret: secret, hc: hc, now: now, log: log,
		policy: channel.RetryPolicy{Attempts: 3, Base: 500 * time.Millisecond, MaxWait: 4 * time.Second, Budget: 25 * time.Second}}
}

// Feishu error codes that call for another try.
const (
	codeRateLimited      = 99991400 // the app's request frequency limit
	codeMessageRateLimit = 230020   // too many messages or updates for this chat or message
	codeTokenInvalid     = 99991663 // tenant_access_token invalid or expired
	codeTokenMissing     = 99991661
	codeTokenBad         = 99991668
	codeAccessTokenBad   = 99991671
)

// apiError is a Feishu answer that was not a success.
type apiError struct {
	Op     string
	Status int
	Code   int
	Msg    string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("feishu: %s: HTTP %d, code %d: %s", e.Op, e.Status, e.Code, e.Msg)
}

type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
	// Only the token endpoint answers these at the top level.
	TenantAccessToken string `json:"tenant_access_token"`
	Expire            int    `json:"expire"`
}

// sendCard posts a card to a receiver (a chat by chat_id, a person by
// open_id, union_id or user_id) and returns its message id. The uuid makes
// Feishu drop a repeat of the same post within an hour, so a retry after a
// lost answer does not show the card twice.
func (a *apiClient) sendCard(ctx context.Context, idType, receiveID, uuid string, card []byte) (string, error) {
	body := map[string]string{"receive_id": receiveID, "msg_type": "interactive", "content": string(card), "uuid": uuid}
	return a.send(ctx, "send card", "/open-apis/im/v1/messages?receive_id_type="+url.QueryEscape(idType), body)
}

// reply posts a text message in reply to a message (in its thread) and
// returns the reply's message id; uuid de-duplicates as for sendCard.
func (a *apiClient) reply(ctx context.Context, messageID, uuid, text string) (string, error) {
	content, err := jsonx.Marshal(map[string]string{"text": text})
	if err != nil {
		return "", fmt.Errorf("feishu: reply: %w", err)
	}
	body := map[string]string{"msg_type": "text", "content": string(content), "uuid": uuid}
	return a.send(ctx, "reply", "/open-apis/im/v1/messages/"+url.PathEscape(messageID)+"/reply", body)
}

// send creates a message and returns its id.
func (a *apiClient) send(ctx context.Context, op, path string, body map[string]string) (string, error) {
	var data struct {
		MessageID string `json:"message_id"`
	}
	if err := a.call(ctx, op, http.MethodPost, path, body, &data); err != nil {
		return "", err
	}
	if data.MessageID == "" {
		return "", errors.New("feishu: " + op + ": the answer has no message_id")
	}
	return data.MessageID, nil
}

// patchCard replaces the card of a message.
func (a *apiClient) patchCard(ctx context.Context, messageID string, card []byte) error {
	body := map[string]string{"content": string(card)}
	return a.call(ctx, "update card", http.MethodPatch, "/open-apis/im/v1/messages/"+url.PathEscape(messageID), body, nil)
}

// call runs one API call with a tenant token, retried within the policy.
func (a *apiClient) call(ctx context.Context, op, method, path string, body, out any) error {
	payload, err := jsonx.Marshal(body)
	if err != nil {
		return fmt.Errorf("feishu: %s: %w", op, err)
	}
	return channel.Retry(ctx, a.policy, func(ctx context.Context) error {
		tok, err := a.tenantToken(ctx)
		if err != nil {
			return err
		}
		env, err := a.do(ctx, op, method, path, tok, payload)
		var ae *apiError
		if errors.As(err, &ae) {
			switch ae.Code {
			case codeTokenInvalid, codeTokenMissing, codeTokenBad, codeAccessTokenBad:
				a.dropToken(tok)
				return channel.Temporary(err, 0)
			}
		}
		if err != nil {
			return err
		}
		if out != nil && len(env.Data) > 0 {
			if err := json.Unmarshal(env.Data, out); err != nil {
				return fmt.Errorf("feishu: %s: decoding the answer: %w", op, err)
			}
		}
		return nil
	})
}

// tenantToken returns a cached tenant_access_token, fetching a new one when
// none is cached or the cached one is near its expiry.
func (a *apiClient) tenantToken(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token != "" && a.now().Before(a.tokenExp) {
		return a.token, nil
	}
	payload, err := jsonx.Marshal(map[string]string{"app_id": a.appID, "app_secret": a.secret})
	if err != nil {
		return "", err
	}
	env, err := a.do(ctx, "get tenant token", http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", "", payload)
	if err != nil {
		return "", err
	}
	if env.TenantAccessToken == "" {
		return "", errors.New("feishu: get tenant token: the answer has no tenant_access_token")
	}
	life := time.Duration(env.Expire) * time.Second
	if life <= 0 {
		life = 30 * time.Minute
	}
	// Refresh well before the end; Feishu hands out a fresh token in the
	// last 30 minutes of the old one's life.
	a.token, a.tokenExp = env.TenantAccessToken, a.now().Add(life-min(5*time.Minute, life/2))
	return a.token, nil
}

// dropToken forgets tok when Feishu says it is no longer valid.
func (a *apiClient) dropToken(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.token == tok {
		a.token = ""
	}
}

// do sends one request and classifies its outcome: transient failures come
// back as channel.Temporary so that channel.Retry tries again.
func (a *apiClient) do(ctx context.Context, op, method, path, token string, payload []byte) (*envelope, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("feishu: %s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		err = fmt.Errorf("feishu: %s: %w", op, err)
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, channel.Temporary(err, 0)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, channel.Temporary(fmt.Errorf("feishu: %s: reading the answer: %w", op, err), 0)
	}
	var env envelope
	jsonErr := json.Unmarshal(raw, &env)
	if jsonErr == nil && env.Code == 0 && resp.StatusCode == http.StatusOK {
		return &env, nil
	}
	ae := &apiError{Op: op, Status: resp.StatusCode, Code: env.Code, Msg: env.Msg}
	if jsonErr != nil {
		ae.Msg = "unreadable answer: " + truncateForLog(raw)
	}
	a.log.Warn("feishu API call failed", "op", op, "status", resp.StatusCode, "code", env.Code, "msg", ae.Msg)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || env.Code == codeRateLimited || env.Code == codeMessageRateLimit:
		return nil, channel.Temporary(ae, retryAfter(resp.Header))
	case resp.StatusCode >= 500:
		return nil, channel.Temporary(ae, 0)
	}
	return nil, ae
}

// retryAfter reads how long Feishu asks us to wait: Retry-After, or its
// gateway's x-ogw-ratelimit-reset, both in seconds. Zero means back off as
// usual.
func retryAfter(h http.Header) time.Duration {
	for _, k := range []string{"Retry-After", "X-Ogw-Ratelimit-Reset"} {
		if n, err := strconv.Atoi(h.Get(k)); err == nil && n > 0 {
			return min(time.Duration(n)*time.Second, 20*time.Second)
		}
	}
	return 0
}

func truncateForLog(b []byte) string {
	s, cut := channel.Truncate(string(b), 200)
	if cut {
		s += "…"
	}
	return s
}

// postUUID is the de-duplication key of a card's post: the same for every
// retry of one channel's card for one request, at most 50 characters.
func postUUID(channelName, requestID string) string {
	sum := sha256.Sum256([]byte(channelName + "\x00" + requestID))
	return "gatehouse-" + hex.EncodeToString(sum[:16])
}

package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What a signature check refuses (errors.Is); the errors Verify returns
// name the headers.
var (
	ErrUnsigned     = errors.New("unsigned")
	ErrStale        = errors.New("stale")
	ErrBadSignature = errors.New("signature does not match")
)

// HMACScheme is the request signature Slack uses (version "v0") and the
// webhook channel copies (version "v1"): the header holds
// version + "=" + hex(HMAC-SHA256(secret, version + ":" + timestamp + ":" + body)),
// with the timestamp (Unix seconds) in a header of its own. One
// implementation serves both, so the two can never check differently.
type HMACScheme struct {
	Version         string // "v0"
	SignatureHeader string // "X-Slack-Signature"
	TimestampHeader string // "X-Slack-Request-Timestamp"
	Window          time.Duration
}

// mac is the raw HMAC of body sent at ts.
func (s HMACScheme) mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(s.Version + ":" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// Sign is the signature header's value for body sent at ts.
func (s HMACScheme) Sign(secret []byte, ts string, body []byte) string {
	return s.Version + "=" + hex.EncodeToString(s.mac(secret, ts, body))
}

// Verify checks h's signature over the raw body, and that its timestamp is
// within Window of now either way. It returns the signature's bytes (the
// key under which a replay is recognised, whatever the hex's case) and the
// timestamp.
func (s HMACScheme) Verify(secret []byte, h http.Header, body []byte, now time.Time) ([]byte, time.Time, error) {
	ts, sig := h.Get(s.TimestampHeader), h.Get(s.SignatureHeader)
	if ts == "" || sig == "" {
		return nil, time.Time{}, signError{ErrUnsigned, fmt.Sprintf("missing %s or %s", s.SignatureHeader, s.TimestampHeader)}
	}
	stale := signError{ErrStale, fmt.Sprintf("%s is not within %d minutes of now", s.TimestampHeader, int(s.Window/time.Minute))}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, time.Time{}, stale
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > s.Window || d < -s.Window {
		return nil, time.Time{}, stale
	}
	got, ok := strings.CutPrefix(sig, s.Version+"=")
	if !ok {
		return nil, time.Time{}, ErrBadSignature
	}
	raw, err := hex.DecodeString(got)
	if err != nil || !hmac.Equal(s.mac(secret, ts, body), raw) {
		return nil, time.Time{}, ErrBadSignature
	}
	return raw, at, nil
}

// signError names what was wrong and is its kind (errors.Is).
type signError struct {
	kind error
	msg  string
}

func (e signError) Error() string        { return e.msg }
func (e signError) Is(target error) bool { return target == e.kind }

package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers that sign both directions.
const (
	HeaderTimestamp = "X-Gatehouse-Timestamp"
	HeaderSignature = "X-Gatehouse-Signature"
)

const (
	// Window is how far a verdict's timestamp may be from now, either way.
	Window = 5 * time.Minute
	// maxReplays bounds the replay cache: far above any real verdict rate
	// within one window.
	maxReplays = 10000
)

var (
	errUnsigned = errors.New("missing " + HeaderSignature + " or " + HeaderTimestamp)
	errStale    = errors.New(HeaderTimestamp + " is not within 5 minutes of now")
	errBadSig   = errors.New("signature does not match")
)

// Sign returns the X-Gatehouse-Signature of body sent at ts (Unix seconds):
// "v1=" + hex(HMAC-SHA256(secret, "v1:" + ts + ":" + body)).
func Sign(secret []byte, ts string, body []byte) string {
	return "v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v1:" + ts + ":"))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a request's signature over its raw body, and that its
// timestamp is within Window of now. It returns the signature's bytes, the
// key under which a replay is recognised.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) (sig []byte, at time.Time, err error) {
	ts, s := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if ts == "" || s == "" {
		return nil, time.Time{}, errUnsigned
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, time.Time{}, errStale
	}
	at = time.Unix(sec, 0)
	if d := now.Sub(at); d > Window || d < -Window {
		return nil, time.Time{}, errStale
	}
	got, ok := strings.CutPrefix(s, "v1=")
	if !ok {
		return nil, time.Time{}, errBadSig
	}
	raw, err := hex.DecodeString(got)
	if err != nil || !hmac.Equal(mac(secret, ts, body), raw) {
		return nil, time.Time{}, errBadSig
	}
	return raw, at, nil
}

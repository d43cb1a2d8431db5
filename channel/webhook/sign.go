package webhook

import (
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel"
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

// scheme is the webhook's signature: Slack's scheme, version v1, with
// Gatehouse's headers.
var scheme = channel.HMACScheme{Version: "v1", SignatureHeader: HeaderSignature, TimestampHeader: HeaderTimestamp, Window: Window}

// Sign returns the X-Gatehouse-Signature of body sent at ts (Unix seconds):
// "v1=" + hex(HMAC-SHA256(secret, "v1:" + ts + ":" + body)).
func Sign(secret []byte, ts string, body []byte) string { return scheme.Sign(secret, ts, body) }

// Verify checks a request's signature over its raw body, and that its
// timestamp is within Window of now. It returns the signature's bytes, the
// key under which a replay is recognised.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) (sig []byte, at time.Time, err error) {
	return scheme.Verify(secret, h, body, now)
}

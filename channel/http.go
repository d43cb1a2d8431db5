package channel

import (
	"net/http"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// DefaultConns is how many kept-alive connections an adapter holds to its
// platform's API unless told otherwise: as many as the gate's card workers
// by default (cards.workers), which post and update that many cards at
// once. With net/http's default of 2 idle connections a host, every call
// beyond the second dialled, and against slack.com or open.feishu.cn that
// is a TCP and TLS handshake per card.
const DefaultConns = 64

// HTTPClient is the default client of the adapters: the default
// transport's proxy, dial and TLS settings, conns idle connections (the
// card workers that may call at once; DefaultConns when not positive),
// and a timeout on every call.
func HTTPClient(timeout time.Duration, conns int) *http.Client {
	if conns <= 0 {
		conns = DefaultConns
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2 * conns
	t.MaxIdleConnsPerHost = conns
	return &http.Client{Transport: t, Timeout: timeout}
}

// Status maps a gate error code to its HTTP status: the one map the API
// (web) and the channels' callbacks answer by, so the domain never speaks
// HTTP and the two never disagree.
func Status(code string) int {
	switch code {
	case gate.EINVALID:
		return http.StatusBadRequest
	case gate.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case gate.EFORBIDDEN, gate.ESELF:
		return http.StatusForbidden
	case gate.ENOTFOUND:
		return http.StatusNotFound
	case gate.ECONFLICT, gate.EIDEMPOTENCY:
		return http.StatusConflict
	case gate.EEXPIRED:
		return http.StatusGone
	case gate.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

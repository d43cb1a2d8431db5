package channel

import (
	"net/http"
	"time"
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

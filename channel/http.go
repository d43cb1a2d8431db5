package channel

import (
	"net/http"
	"time"
)

// IdleConnsPerHost is how many kept-alive connections an adapter holds to
// its platform's API. The gate posts and updates up to 64 cards at once by
// default (cards.workers); with net/http's default of 2 idle
// connections a host, every call beyond the second dialled, and against
// slack.com or open.feishu.cn that is a TCP and TLS handshake per card.
const IdleConnsPerHost = 64

// HTTPClient is the default client of the adapters: the default
// transport's proxy, dial and TLS settings, enough idle connections for
// the card workers, and a timeout on every call.
func HTTPClient(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2 * IdleConnsPerHost
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	return &http.Client{Transport: t, Timeout: timeout}
}

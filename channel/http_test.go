package channel

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Sixteen card workers calling the API at once, round after round, reuse
// their connections: the first round dials, the later ones do not.
func TestHTTPClientKeepsConnectionsForTheCardWorkers(t *testing.T) {
	var dials, inFlight atomic.Int64
	gate := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		<-gate // hold every call of a round until all are in flight
		inFlight.Add(-1)
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	// More workers than the default, as cards.workers allows.
	const workers, rounds = DefaultConns + 36, 4
	c := HTTPClient(5*time.Second, workers)
	for range rounds {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := c.Post(srv.URL, "application/json", nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); inFlight.Load() < workers; {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d calls in flight after 10s", inFlight.Load(), workers)
			}
			time.Sleep(time.Millisecond)
		}
		for range workers {
			gate <- struct{}{}
		}
		wg.Wait()
	}
	if n := dials.Load(); n > workers {
		t.Errorf("%d rounds of %d concurrent calls dialled %d connections, want at most %d", rounds, workers, n, workers)
	}
}

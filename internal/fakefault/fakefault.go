// Package fakefault is the fault mode the local fakes of Slack and Feishu
// share (channel/slack/slacktest, channel/feishu/feishutest): for a window
// of time or for a number of calls, answer 429 with Retry-After, answer a
// 5xx, or hang past the caller's timeout.
//
// A hung call is held until the caller gives up (its connection closes) and
// then dropped without an answer. Whether it took effect is the fault's
// Landed: a real platform that received the call may have done the work and
// lost only the answer, so a test must say which it models; the fakes
// count a landed post as a message people see.
package fakefault

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Fault is one way of failing calls.
type Fault struct {
	// Status is the HTTP status to answer (429, 500, 502, 503, …) when
	// Hang is false.
	Status int
	// RetryAfter, with Status 429, is sent as the Retry-After header, in
	// whole seconds (rounded up).
	RetryAfter time.Duration
	// Hang holds the call until the caller gives up, then drops it.
	Hang bool
	// Landed, with Hang, makes the held call take effect although its
	// answer never arrives.
	Landed bool
	// Methods are the calls the fault applies to, named as the fake names
	// them (Slack: "chat.postMessage"; Feishu: "POST /open-apis/im/v1/messages");
	// empty: every call.
	Methods []string
	// Calls ends the fault after this many calls; 0: no limit.
	Calls int
	// From starts the fault at that time; zero: at once.
	From time.Time
	// Until ends the fault at that time; zero: no limit. A fault with
	// neither Calls nor Until lasts until Clear.
	Until time.Time
}

// Name is how the fake records a call that met f: "429", "503", "hang",
// "hang-landed".
func (f *Fault) Name() string {
	switch {
	case f.Hang && f.Landed:
		return "hang-landed"
	case f.Hang:
		return "hang"
	}
	return strconv.Itoa(f.Status)
}

// maxHang bounds a hang whose caller never gives up, so a fake always
// closes: the call is then answered 504.
const maxHang = 2 * time.Minute

// Serve answers the call as f says. For a hang it returns once the caller
// gave up (or after maxHang). It reports whether the call took effect.
func (f *Fault) Serve(w http.ResponseWriter, r *http.Request) (took bool) {
	if !f.Hang {
		if f.Status == http.StatusTooManyRequests && f.RetryAfter > 0 {
			secs := (f.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(http.StatusText(f.Status)))
		return false
	}
	t := time.NewTimer(maxHang)
	defer t.Stop()
	select {
	case <-r.Context().Done():
	case <-t.C:
		w.WriteHeader(http.StatusGatewayTimeout)
	}
	return f.Landed
}

// Set is the faults in force on one fake. The zero Set has none.
type Set struct {
	mu   sync.Mutex
	list []*entry
}

type entry struct {
	f    Fault
	used int
}

// Add puts f in force.
func (s *Set) Add(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, &entry{f: f})
}

// Clear ends every fault.
func (s *Set) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = nil
}

// Take returns the fault a call of method meets at now, counting the call
// against it, or nil. The first fault in force that applies wins; spent
// faults are dropped.
func (s *Set) Take(method string, now time.Time) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.list[:0]
	var hit *Fault
	for _, e := range s.list {
		if (e.f.Calls > 0 && e.used >= e.f.Calls) || (!e.f.Until.IsZero() && !now.Before(e.f.Until)) {
			continue
		}
		live = append(live, e)
		if hit == nil && !now.Before(e.f.From) && (len(e.f.Methods) == 0 || slices.Contains(e.f.Methods, method)) {
			e.used++
			f := e.f
			hit = &f
		}
	}
	clear(s.list[len(live):])
	s.list = live
	return hit
}

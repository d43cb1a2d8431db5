package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	benchBotToken = "xoxb-bench-token"
	benchSecret   = "bench-signing-secret"
	benchSlackCh  = "CBENCH0001"
	benchTeam     = "TBENCH"
	benchUser     = "UBENCH"
)

// fakeSlack answers chat.postMessage and chat.update as Slack does and
// counts, per request id, how many cards were posted and updated. When a
// card is posted it tells whoever subscribed to that request.
type fakeSlack struct {
	srv      *httptest.Server
	mu       sync.Mutex
	posts    map[string]int    // request id → chat.postMessage calls
	updates  map[string]int    // request id → chat.update calls
	tsToID   map[string]string // message ts → request id
	onPost   func(id string)   // called (in its own goroutine) after each post
	seq      atomic.Int64
	badToken atomic.Int64
}

func newFakeSlack() *fakeSlack {
	f := &fakeSlack{posts: map[string]int{}, updates: map[string]int{}, tsToID: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *fakeSlack) url() string { return f.srv.URL + "/api/" }

func (f *fakeSlack) close() { f.srv.Close() }

// requestIDOfBlocks finds the request id in the card's Approve button
// value ("approve:ID").
func requestIDOfBlocks(blocks string) string {
	_, rest, ok := strings.Cut(blocks, `"approve:`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if form.Get("token") != benchBotToken && r.Header.Get("Authorization") != "Bearer "+benchBotToken {
		f.badToken.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "chat.postMessage":
		id := requestIDOfBlocks(form.Get("blocks"))
		ts := fmt.Sprintf("%d.%06d", time.Now().Unix(), f.seq.Add(1))
		f.mu.Lock()
		f.posts[id]++
		f.tsToID[ts] = id
		on := f.onPost
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"message":{"ts":%q}}`, benchSlackCh, ts, ts)
		if on != nil && id != "" {
			go on(id)
		}
	case "chat.update":
		ts := form.Get("ts")
		f.mu.Lock()
		f.updates[f.tsToID[ts]]++
		f.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, form.Get("channel"), ts)
	case "chat.postEphemeral":
		fmt.Fprint(w, `{"ok":true,"message_ts":"1.1"}`)
	default:
		fmt.Fprint(w, `{"ok":true}`)
	}
}

// setOnPost replaces the post hook.
func (f *fakeSlack) setOnPost(fn func(id string)) {
	f.mu.Lock()
	f.onPost = fn
	f.mu.Unlock()
}

// counts returns the posts and updates per request id for ids.
func (f *fakeSlack) counts(ids []string) (posts, updates map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	posts, updates = map[string]int{}, map[string]int{}
	for _, id := range ids {
		posts[id], updates[id] = f.posts[id], f.updates[id]
	}
	return posts, updates
}

// postedCount is how many distinct requests got a card.
func (f *fakeSlack) postedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

// posted says whether request id got a card.
func (f *fakeSlack) posted(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[id] > 0
}

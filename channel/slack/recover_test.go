package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/fakefault"
)

// fastRetries makes Post's tries short: a hung call is given up after
// 300ms.
func fastRetries(t *testing.T) {
	saved := retryPolicy
	retryPolicy.Base, retryPolicy.PerAttempt = 10*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { retryPolicy = saved })
}

// A card whose post landed but whose answer was lost is not posted again:
// the retry finds it by its metadata in the conversation's history and
// adopts its ts, and the card's update then reaches the card people see.
func TestLostAnswerIsNotPostedTwice(t *testing.T) {
	fastRetries(t)
	tests := []struct {
		name string
		// lose makes the first post of r land without Gatehouse hearing
		// the answer; post is the call under test.
		lose func(t *testing.T, f *slacktest.Server, c *Channel, r *gate.Request)
		post func(ctx context.Context, c *Channel, r *gate.Request) (string, error)
		conv string // the conversation the card is in
	}{
		{name: "the post hangs past the timeout, within one Post",
			lose: func(t *testing.T, f *slacktest.Server, _ *Channel, _ *gate.Request) {
				f.Inject(fakefault.Fault{Hang: true, Landed: true, Methods: []string{"chat.postMessage"}, Calls: 1})
			},
			post: func(ctx context.Context, c *Channel, r *gate.Request) (string, error) {
				return c.Post(gate.WithCardAttempt(ctx, 1), r)
			},
			conv: slackCh},
		{name: "an earlier claim posted it and died before recording it",
			lose: func(t *testing.T, _ *slacktest.Server, c *Channel, r *gate.Request) {
				if _, err := c.Post(gate.WithCardAttempt(context.Background(), 1), r); err != nil {
					t.Fatal(err)
				}
			},
			post: func(ctx context.Context, c *Channel, r *gate.Request) (string, error) {
				return c.Post(gate.WithCardAttempt(ctx, 2), r)
			},
			conv: slackCh},
		{name: "a direct card an earlier claim posted",
			lose: func(t *testing.T, _ *slacktest.Server, c *Channel, r *gate.Request) {
				if _, err := c.PostDirect(gate.WithCardAttempt(context.Background(), 1), r, "slack:T1/U0BOB"); err != nil {
					t.Fatal(err)
				}
			},
			post: func(ctx context.Context, c *Channel, r *gate.Request) (string, error) {
				return c.PostDirect(gate.WithCardAttempt(ctx, 2), r, "slack:T1/U0BOB")
			},
			conv: slacktest.DirectChannel("U0BOB")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlack(t)
			c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now)
			// Other cards in both conversations: only this request's is
			// adopted.
			other := testRequest("01JOTHER", time.Now())
			if _, err := c.Post(context.Background(), other); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PostDirect(context.Background(), other, "slack:T1/U0BOB"); err != nil {
				t.Fatal(err)
			}
			r := testRequest("01JREQ", time.Now())
			tt.lose(t, f, c, r)
			ref, err := tt.post(context.Background(), c, r)
			if err != nil {
				t.Fatal(err)
			}
			var mine []slacktest.Call
			for _, p := range f.Posts() {
				if strings.Contains(p.Form.Get("blocks"), `"approve:01JREQ"`) {
					mine = append(mine, p)
				}
			}
			if len(mine) != 1 {
				t.Fatalf("%d cards for the request people see, want 1", len(mine))
			}
			if want := tt.conv + ":" + mine[0].TS; ref != want {
				t.Fatalf("ref %q, want the landed card's %q", ref, want)
			}
			if len(f.CallsOf("conversations.history")) == 0 {
				t.Fatal("the conversation was never searched")
			}
			r.Status, r.DecidedBy = gate.StatusApproved, "slack:T1/U0BOB"
			if err := c.Update(context.Background(), r, ref); err != nil {
				t.Fatal(err)
			}
			up := f.CallsOf("chat.update")
			if len(up) != 1 || up[0].Form.Get("channel") != tt.conv || up[0].Form.Get("ts") != mine[0].TS {
				t.Fatalf("update: %+v", up)
			}
		})
	}
}

// Every card names its request in its message metadata, which is what the
// search reads.
func TestCardCarriesMetadata(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(fixed(t0)), fixed(t0))
	if _, err := c.Post(context.Background(), testRequest("01JREQ", t0)); err != nil {
		t.Fatal(err)
	}
	var m struct {
		EventType    string            `json:"event_type"`
		EventPayload map[string]string `json:"event_payload"`
	}
	raw := f.CallsOf("chat.postMessage")[0].Form.Get("metadata")
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m.EventType != "gatehouse_card" ||
		m.EventPayload["request_id"] != "01JREQ" || m.EventPayload["channel"] != "ops-slack" {
		t.Fatalf("metadata %q: %+v %v", raw, m, err)
	}
}

// A first post, or a post after an answer that says nothing was posted
// (429, 5xx, an error code), posts without searching.
func TestNoSearchWhenNothingLanded(t *testing.T) {
	fastRetries(t)
	f := newFakeSlack(t)
	f.FailNext("chat.postMessage", slacktest.Status(429, "Retry-After", "0"), slacktest.Status(503), slacktest.Error("internal_error"))
	c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now)
	saved := retryPolicy
	retryPolicy.Attempts = 4
	t.Cleanup(func() { retryPolicy = saved })
	if _, err := c.Post(gate.WithCardAttempt(context.Background(), 1), testRequest("01JREQ", time.Now())); err != nil {
		t.Fatal(err)
	}
	if n := len(f.CallsOf("conversations.history")); n != 0 {
		t.Fatalf("%d searches, want none", n)
	}
	if n := len(f.Posts()); n != 1 {
		t.Fatalf("%d cards, want 1", n)
	}
}

// A busy conversation: hundreds of messages came after the card. The
// search walks forward from the request's creation and still finds it.
func TestSearchFindsTheCardInABusyConversation(t *testing.T) {
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now)
	r := testRequest("01JREQ", time.Now())
	if _, err := c.Post(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for i := range 2*historyPage + 50 {
		if _, err := c.Post(context.Background(), testRequest(fmt.Sprintf("01JBUSY%03d", i), time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	before := len(f.Posts())
	ref, err := c.Post(gate.WithCardAttempt(context.Background(), 2), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Posts()) != before {
		t.Fatal("posted the card again")
	}
	if want := slackCh + ":" + f.Posts()[0].TS; ref != want {
		t.Fatalf("ref %q, want %q", ref, want)
	}
	if n := len(f.CallsOf("conversations.history")); n > historyCalls {
		t.Fatalf("%d searches, over the budget of %d", n, historyCalls)
	}
}

// When the search cannot read the conversation (a missing scope), the
// card is posted (a second card is better than none) and the operator is
// told once, not on every post.
func TestSearchFailureStillPosts(t *testing.T) {
	var logs bytes.Buffer
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	f.FailNext("conversations.history", slacktest.Error("missing_scope"), slacktest.Error("missing_scope"))
	for _, id := range []string{"01JREQ1", "01JREQ2"} {
		if _, err := c.Post(gate.WithCardAttempt(context.Background(), 2), testRequest(id, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.Posts()); n != 2 {
		t.Fatalf("%d cards, want 2", n)
	}
	if n := strings.Count(logs.String(), "channels:history"); n != 1 {
		t.Fatalf("the missing scope was named %d times, want once:\n%s", n, logs.String())
	}
}

// Any app in a conversation can write a message whose metadata names a
// request: the search adopts only this app's own messages, so a forged one
// never stands in for the card its approvers must tap.
func TestSearchIgnoresAnotherAppsMetadata(t *testing.T) {
	fastRetries(t)
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now)
	r := testRequest("01JREQ", time.Now())
	meta, err := json.Marshal(c.cardMetadata(r))
	if err != nil {
		t.Fatal(err)
	}
	f.PostAs(slackCh, "not the card", string(meta))
	ref, err := c.Post(gate.WithCardAttempt(context.Background(), 2), r)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.CallsOf("conversations.history")) == 0 {
		t.Fatal("the conversation was never searched")
	}
	posts := f.Posts()
	if len(posts) != 1 || ref != slackCh+":"+posts[0].TS {
		t.Fatalf("ref %q, posts %d: want this app's own card posted, not the other app's message adopted", ref, len(posts))
	}
}

// A reminder whose post landed but whose answer was lost is not posted
// again: the retry finds it in the card's thread by its metadata (request,
// channel, step). The reminder of another step in the same thread is not
// mistaken for it.
func TestLostReminderIsNotPostedTwice(t *testing.T) {
	fastRetries(t)
	tests := []struct {
		name string
		lose func(t *testing.T, f *slacktest.Server, c *Channel, r *gate.Request, card string)
		try  int // the claim under test
	}{
		{name: "the reply hangs past the timeout, within one Remind",
			lose: func(t *testing.T, f *slacktest.Server, _ *Channel, _ *gate.Request, _ string) {
				f.Inject(fakefault.Fault{Hang: true, Landed: true, Methods: []string{"chat.postMessage"}, Calls: 1})
			},
			try: 1},
		{name: "an earlier claim posted it and died before recording it",
			lose: func(t *testing.T, _ *slacktest.Server, c *Channel, r *gate.Request, card string) {
				if _, err := c.Remind(gate.WithCardAttempt(context.Background(), 1), r, card, 2, nil); err != nil {
					t.Fatal(err)
				}
			},
			try: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c, r, card := remindedCard(t) // step 1's reminder is in the thread already
			tt.lose(t, f, c, r, card)
			ref, err := c.Remind(gate.WithCardAttempt(context.Background(), tt.try), r, card, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			var step2 []slacktest.Call
			for _, p := range f.Posts() {
				if strings.Contains(p.Form.Get("metadata"), `"step":"2"`) {
					step2 = append(step2, p)
				}
			}
			if len(step2) != 1 {
				t.Fatalf("%d reminders of step 2 in the thread, want 1", len(step2))
			}
			if want := slackCh + ":" + step2[0].TS; ref != want {
				t.Fatalf("ref %q, want the landed reminder's %q", ref, want)
			}
			if len(f.CallsOf("conversations.replies")) == 0 {
				t.Fatal("the thread was never searched")
			}
		})
	}
	t.Run("the search finds only another step's reminder, so it posts", func(t *testing.T) {
		f, c, r, card := remindedCard(t)
		if _, err := c.Remind(gate.WithCardAttempt(context.Background(), 2), r, card, 2, nil); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Posts()); n != 3 || len(f.CallsOf("conversations.replies")) != 1 {
			t.Fatalf("%d messages, %d searches: want the card and two reminders after one search", n, len(f.CallsOf("conversations.replies")))
		}
	})
	t.Run("another app's reply with the same metadata is not taken for it", func(t *testing.T) {
		f, c, r, card := remindedCard(t)
		meta, err := json.Marshal(c.reminderMetadata(r, 2))
		if err != nil {
			t.Fatal(err)
		}
		f.ReplyAs(slackCh, strings.TrimPrefix(card, slackCh+":"), "not the reminder", string(meta))
		ref, err := c.Remind(gate.WithCardAttempt(context.Background(), 2), r, card, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		posts := f.Posts()
		if len(posts) != 3 || ref != slackCh+":"+posts[2].TS || len(f.CallsOf("conversations.replies")) != 1 {
			t.Fatalf("ref %q, %d messages: want this app's own reminder posted after one search", ref, len(posts))
		}
	})
	t.Run("a long thread is read page by page", func(t *testing.T) {
		f, c, r, card := remindedCard(t)
		parent := strings.TrimPrefix(card, slackCh+":")
		for i := range historyPage + 20 {
			f.ReplyAs(slackCh, parent, fmt.Sprintf("comment %d", i), "")
		}
		if _, err := c.Remind(gate.WithCardAttempt(context.Background(), 1), r, card, 2, nil); err != nil {
			t.Fatal(err)
		}
		before := len(f.Posts())
		ref, err := c.Remind(gate.WithCardAttempt(context.Background(), 2), r, card, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Posts()) != before || ref != slackCh+":"+f.Posts()[before-1].TS {
			t.Fatalf("ref %q: want the reminder past the first page adopted, not posted again", ref)
		}
		if n := len(f.CallsOf("conversations.replies")); n < 2 || n > historyCalls {
			t.Fatalf("%d pages read, want 2 to %d", n, historyCalls)
		}
	})
	t.Run("a thread the search cannot read is posted to", func(t *testing.T) {
		f, c, r, card := remindedCard(t)
		f.FailNext("conversations.replies", slacktest.Error("missing_scope"))
		if _, err := c.Remind(gate.WithCardAttempt(context.Background(), 2), r, card, 2, nil); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Posts()); n != 3 || len(f.CallsOf("conversations.replies")) != 1 {
			t.Fatalf("%d messages, want the card and both reminders", n)
		}
	})
}

// remindedCard posts a request's card and its reminder of step 1, and
// returns the card's reference.
func remindedCard(t *testing.T) (*slacktest.Server, *Channel, *gate.Request, string) {
	t.Helper()
	f := newFakeSlack(t)
	c := newTestChannel(t, f, newFakeDecider(time.Now), time.Now)
	r := testRequest("01JREQ", time.Now())
	card, err := c.Post(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remind(context.Background(), r, card, 1, nil); err != nil {
		t.Fatal(err)
	}
	return f, c, r, card
}

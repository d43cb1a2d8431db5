package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Slack has no idempotency key for chat.postMessage: a post whose answer
// is lost (a timeout, a dropped connection, a replica killed before it
// recorded the ts) may have landed, and posting again shows a second card,
// the first never updated. So every card carries message metadata naming
// its request, and before a post that may repeat an earlier one, the
// conversation's history is searched for that card; when it is there, its
// ts is adopted instead of posting.

// cardEvent is the event_type of a card's message metadata.
const cardEvent = "gatehouse_card"

// History search bounds: lookBack is the clock skew allowed between
// Gatehouse and Slack; a search reads pages of historyPage messages and
// makes at most historyCalls calls.
const (
	lookBack     = time.Minute
	historyPage  = 200
	historyCalls = 25
	firstWindow  = 10 * time.Second
)

// cardMetadata tags a card with its request and this channel's name (two
// Gatehouse channels may post to one Slack conversation).
func (c *Channel) cardMetadata(r *gate.Request) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: cardEvent, EventPayload: map[string]any{"request_id": r.ID, "channel": c.name}}
}

// isCard reports whether m is the card this channel posted for r. Any app
// in the conversation can write metadata, so the message must also be this
// app's own (bot): adopting another's message as the card would leave the
// request with no card its approvers can tap.
func (c *Channel) isCard(m slack.Message, r *gate.Request, bot string) bool {
	p := m.Metadata.EventPayload
	return m.BotID == bot && m.Metadata.EventType == cardEvent && p["request_id"] == r.ID && p["channel"] == c.name
}

// ownBotID is the bot_id of the messages this app posts, asked of auth.test
// once (an answer is kept; a failure is asked again next time). The lock
// is not held across the call: a slow auth.test holds up no other search.
func (c *Channel) ownBotID(ctx context.Context) (string, error) {
	c.botMu.Lock()
	known := c.botID
	c.botMu.Unlock()
	if known != "" {
		return known, nil
	}
	res, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return "", fmt.Errorf("auth.test: %w", err)
	}
	if res.BotID == "" {
		return "", errors.New("auth.test named no bot_id: is bot_token a bot token (xoxb-)?")
	}
	c.botMu.Lock()
	c.botID = res.BotID
	c.botMu.Unlock()
	return res.BotID, nil
}

// uncertain reports whether a failed post may still have landed: anything
// but an answer from Slack saying it did nothing (429, an error code, a
// 5xx other than a gateway's, which may have given up on a post that went
// through).
func uncertain(err error) bool {
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	if errors.As(err, &rl) || errors.As(err, &se) {
		return false
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code == http.StatusBadGateway || sc.Code == http.StatusGatewayTimeout
	}
	return true
}

// earlierCard looks in the conversation to for the card an earlier attempt
// posted for r and returns its ts, or "" when there is none or the search
// failed. A failed search is logged and answers "": the caller then posts,
// since a second card is better than none.
func (c *Channel) earlierCard(ctx context.Context, to string, r *gate.Request) string {
	ts, err := c.searchCard(ctx, to, r)
	return c.searched("card", to, r, ts, err)
}

// searched logs the outcome of a search for a message (what: "card",
// "reminder") an earlier post may have left in conversation to, and
// returns the ts found, or "" when the search failed.
func (c *Channel) searched(what, to string, r *gate.Request, ts string, err error) string {
	if err != nil {
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && (se.Err == "missing_scope" || se.Err == "not_in_channel" || se.Err == "not_allowed_token_type") {
			c.warnOnce(se.Err+":"+what+":"+kind(to), "cannot read the conversation to find a "+what+" whose post may have landed; "+
				"posting it again may show it twice (use a bot token, xoxb-, with the channels:history, groups:history and im:history scopes, and invite the bot)",
				"conversation", to, "err", err)
		} else {
			c.log.Warn("searching for a "+what+" whose post may have landed failed; posting it again",
				"request_id", r.ID, "conversation", to, "err", err)
		}
		return ""
	}
	if ts != "" {
		c.log.Info("found the "+what+" an earlier post left; not posting it again", "request_id", r.ID, "conversation", to, "ts", ts)
	}
	return ts
}

// reminderEvent is the event_type of a reminder's message metadata.
const reminderEvent = "gatehouse_reminder"

// reminderMetadata tags a reminder with its request, this channel's name
// and its step: a request's reminders share a thread, one per step.
func (c *Channel) reminderMetadata(r *gate.Request, step int) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: reminderEvent,
		EventPayload: map[string]any{"request_id": r.ID, "channel": c.name, "step": strconv.Itoa(step)}}
}

// isReminder reports whether m is the reminder of step this channel
// posted for r, by this app (see isCard).
func (c *Channel) isReminder(m slack.Message, r *gate.Request, step int, bot string) bool {
	p := m.Metadata.EventPayload
	return m.BotID == bot && m.Metadata.EventType == reminderEvent && p["request_id"] == r.ID && p["channel"] == c.name &&
		p["step"] == strconv.Itoa(step)
}

// earlierReminder looks in the thread of the card (conversation to, ts
// parent) for the reminder of step an earlier attempt posted for r and
// returns its ts, or "" when there is none or the search failed (then the
// caller posts: a reminder twice is better than none).
func (c *Channel) earlierReminder(ctx context.Context, to, parent string, r *gate.Request, step int) string {
	ts, err := c.searchReminder(ctx, to, parent, r, step)
	return c.searched("reminder", to, r, ts, err)
}

// searchReminder reads the card's thread, oldest first, a page at a time,
// at most historyCalls pages. A thread holds the card and its reminders,
// and whatever people wrote under it.
func (c *Channel) searchReminder(ctx context.Context, to, parent string, r *gate.Request, step int) (string, error) {
	bot, err := c.ownBotID(ctx)
	if err != nil {
		return "", err
	}
	p := &slack.GetConversationRepliesParameters{ChannelID: to, Timestamp: parent, Limit: historyPage, IncludeAllMetadata: true}
	for range historyCalls {
		msgs, more, next, err := c.api.GetConversationRepliesContext(ctx, p)
		if err != nil {
			return "", err
		}
		for _, m := range msgs {
			if c.isReminder(m, r, step, bot) {
				return m.Timestamp, nil
			}
		}
		if !more || next == "" {
			return "", nil
		}
		p.Cursor = next
	}
	return "", fmt.Errorf("not found in %d calls of %d messages", historyCalls, historyPage)
}

// searchCard reads the conversation's history since r was made. One call
// covers a quiet conversation. In a busy one (more than a page since), it
// walks forward from r's creation, where an earlier post most likely
// landed, in windows that double while they fit in a page, reading each
// newest first. It fails when the budget runs out before now.
func (c *Channel) searchCard(ctx context.Context, to string, r *gate.Request) (string, error) {
	bot, err := c.ownBotID(ctx)
	if err != nil {
		return "", err
	}
	from := r.CreatedAt.Add(-lookBack)
	calls := 0
	ts, whole, err := c.scanHistory(ctx, to, r, bot, from, time.Time{}, 1, &calls)
	if err != nil || ts != "" || whole {
		return ts, err
	}
	end := c.now().Add(lookBack)
	for step := firstWindow; from.Before(end); {
		if calls >= historyCalls {
			return "", fmt.Errorf("not found in %d calls of %d messages", calls, historyPage)
		}
		until := from.Add(step)
		before := calls
		ts, whole, err = c.scanHistory(ctx, to, r, bot, from, until, historyCalls, &calls)
		if err != nil || ts != "" {
			return ts, err
		}
		if whole && calls-before == 1 {
			step *= 2
		}
		from = until
	}
	return "", nil
}

// scanHistory reads up to pages pages of the conversation's messages
// between oldest and latest (zero: now), newest first, and returns the ts
// of r's card if among them, and whether it read them all.
func (c *Channel) scanHistory(ctx context.Context, to string, r *gate.Request, bot string, oldest, latest time.Time, pages int, calls *int) (string, bool, error) {
	p := &slack.GetConversationHistoryParameters{ChannelID: to, Oldest: slackTS(oldest), Limit: historyPage,
		IncludeAllMetadata: true, Inclusive: true}
	if !latest.IsZero() {
		p.Latest = slackTS(latest)
	}
	for range pages {
		if *calls >= historyCalls {
			return "", false, nil
		}
		*calls++
		h, err := c.api.GetConversationHistoryContext(ctx, p)
		if err != nil {
			return "", false, err
		}
		for _, m := range h.Messages {
			if c.isCard(m, r, bot) {
				return m.Timestamp, true, nil
			}
		}
		if !h.HasMore || h.ResponseMetaData.NextCursor == "" {
			return "", true, nil
		}
		p.Cursor = h.ResponseMetaData.NextCursor
	}
	return "", false, nil
}

// slackTS writes t as Slack writes times: Unix seconds with microseconds.
func slackTS(t time.Time) string {
	if t.Before(time.Unix(0, 0)) {
		return "0"
	}
	us := t.UnixMicro()
	return strconv.FormatInt(us/1e6, 10) + "." + fmt.Sprintf("%06d", us%1e6)
}

// kind is the kind of conversation an id names, by its first letter: C a
// channel, G a private one, D a direct message.
func kind(id string) string {
	if id == "" {
		return ""
	}
	return id[:1]
}

// warnOnce logs a warning the first time key is seen: a missing scope
// would otherwise be logged on every retry.
func (c *Channel) warnOnce(key, msg string, args ...any) {
	if _, seen := c.warned.LoadOrStore(key, true); !seen {
		c.log.Warn(msg, args...)
	}
}

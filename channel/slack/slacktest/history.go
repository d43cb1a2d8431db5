package slacktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BotID is the bot_id the fake gives the messages the bot posted.
const BotID = "B0FAKEBOT"

// validMetadata reports whether a chat.postMessage metadata field is what
// Slack accepts: a JSON object with an event_type and an event_payload
// object.
func validMetadata(raw string) bool {
	var m struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	return json.Unmarshal([]byte(raw), &m) == nil && m.EventType != "" && m.EventPayload != nil
}

// OtherBotID is the bot_id of messages another app posted (PostAs).
const OtherBotID = "B0OTHERAPP"

// PostAs adds a message another app (bot_id OtherBotID) posted to channel,
// with metadata (JSON, as chat.postMessage takes it), to the history.
func (s *Server) PostAs(channel, text, metadata string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.others = append(s.others, otherMessage{channel: channel,
		message: message{ts: fmt.Sprintf("1700000000.%06d", s.seq), text: text, at: time.Now(), bot: OtherBotID, metadata: rawJSON(metadata)}})
}

// ReplyAs adds a reply another app (bot_id OtherBotID) posted in the
// thread of the message parent in channel, with metadata.
func (s *Server) ReplyAs(channel, parent, text, metadata string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.others = append(s.others, otherMessage{channel: channel, thread: parent,
		message: message{ts: fmt.Sprintf("1700000000.%06d", s.seq), text: text, at: time.Now(), bot: OtherBotID, metadata: rawJSON(metadata)}})
}

type otherMessage struct {
	channel string
	thread  string // the parent's ts, for a reply
	message
}

// message is one message of a conversation's history as the fake knows it.
type message struct {
	bot      string // its author's bot_id
	ts, text string
	at       time.Time // when it was posted; the fake's ts are a counter
	blocks   json.RawMessage
	metadata json.RawMessage
}

// history answers conversations.history from the record: the messages
// posted to the channel (thread replies stay in their thread), as the last
// chat.update left them, newest first. oldest and latest (Unix times,
// "1712345678.000100") are exclusive unless inclusive is set; as the fake's
// ts are a counter, not times, they are compared with when each message
// was posted, which a real ts is. limit defaults to 100 and is at most
// 999; cursor continues where has_more and
// response_metadata.next_cursor left off. Metadata is returned only with
// include_all_metadata.
func (s *Server) history(f url.Values) map[string]any {
	channel := f.Get("channel")
	if channel == "" {
		return map[string]any{"ok": false, "error": "channel_not_found"}
	}
	limit, before, fail := paging(f, 100, 999) // before: only messages older than this ts
	if fail != nil {
		return fail
	}
	oldest, ok := unixTS(f.Get("oldest"), time.Time{})
	if !ok {
		return map[string]any{"ok": false, "error": "invalid_ts_oldest"}
	}
	latest, ok := unixTS(f.Get("latest"), time.Time{}) // zero: now, after every recorded message
	if !ok {
		return map[string]any{"ok": false, "error": "invalid_ts_latest"}
	}
	inclusive, meta := flag(f.Get("inclusive")), flag(f.Get("include_all_metadata"))

	var in []message
	for _, m := range s.messages(channel) {
		after := m.at.After(oldest) || (inclusive && m.at.Equal(oldest))
		until := latest.IsZero() || m.at.Before(latest) || (inclusive && m.at.Equal(latest))
		if after && until && (before == "" || m.ts < before) {
			in = append(in, m)
		}
	}
	slices.Reverse(in) // newest first
	more := len(in) > limit
	if more {
		in = in[:limit]
	}
	out := make([]map[string]any, 0, len(in))
	for _, m := range in {
		o := map[string]any{"type": "message", "user": "U" + m.bot, "bot_id": m.bot, "app_id": "A" + m.bot, "text": m.text, "ts": m.ts}
		if len(m.blocks) > 0 {
			o["blocks"] = m.blocks
		}
		if meta && len(m.metadata) > 0 {
			o["metadata"] = m.metadata
		}
		out = append(out, o)
	}
	next := ""
	if more {
		next = base64.StdEncoding.EncodeToString([]byte("next_ts:" + in[len(in)-1].ts))
	}
	return map[string]any{"ok": true, "messages": out, "has_more": more, "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": next}}
}

// messages are the messages posted to channel that people see, oldest
// first, each as its last chat.update left it.
func (s *Server) messages(channel string) []message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []message
	at := map[string]int{} // ts → index in out
	for _, c := range s.calls {
		if !c.Done || c.Form.Get("channel") != channel {
			continue
		}
		switch c.Method {
		case "chat.postMessage":
			if c.Form.Get("thread_ts") != "" && !flag(c.Form.Get("reply_broadcast")) {
				continue
			}
			at[c.TS] = len(out)
			out = append(out, message{bot: BotID, ts: c.TS, text: c.Form.Get("text"), at: c.At,
				blocks: rawJSON(c.Form.Get("blocks")), metadata: rawJSON(c.Form.Get("metadata"))})
		case "chat.update":
			i, ok := at[c.Form.Get("ts")]
			if !ok {
				continue
			}
			if c.Form.Has("text") {
				out[i].text = c.Form.Get("text")
			}
			if c.Form.Has("blocks") {
				out[i].blocks = rawJSON(c.Form.Get("blocks"))
			}
			if c.Form.Has("metadata") {
				// An empty object removes it; without the field it stays.
				out[i].metadata = nil
				if validMetadata(c.Form.Get("metadata")) {
					out[i].metadata = rawJSON(c.Form.Get("metadata"))
				}
			}
		}
	}
	for _, o := range s.others {
		if o.channel == channel && o.thread == "" {
			out = append(out, o.message)
		}
	}
	slices.SortStableFunc(out, func(a, b message) int { return a.at.Compare(b.at) })
	return out
}

// paging reads a page's limit (def when absent or 0, at most max) and the
// ts its cursor names ("" without one); fail is Slack's answer to a bad
// one.
func paging(f url.Values, def, max int) (limit int, cursor string, fail map[string]any) {
	limit = def
	if f.Has("limit") {
		n, err := strconv.Atoi(f.Get("limit"))
		if err != nil || n < 0 {
			return 0, "", map[string]any{"ok": false, "error": "invalid_limit"}
		}
		if n > 0 {
			limit = min(n, max)
		}
	}
	if cur := f.Get("cursor"); cur != "" {
		raw, err := base64.StdEncoding.DecodeString(cur)
		ts, ok := strings.CutPrefix(string(raw), "next_ts:")
		if err != nil || !ok {
			return 0, "", map[string]any{"ok": false, "error": "invalid_cursor"}
		}
		cursor = ts
	}
	return limit, cursor, nil
}

// unixTS parses a Slack time ("1712345678", "1712345678.000100"); "" is def.
func unixTS(s string, def time.Time) (time.Time, bool) {
	if s == "" {
		return def, true
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 6 {
		return time.Time{}, false
	}
	us := 0
	if frac != "" {
		if us, err = strconv.Atoi(frac + strings.Repeat("0", 6-len(frac))); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(n, int64(us)*1000), true
}

// flag reads a boolean argument as Slack does: "1" or "true".
func flag(s string) bool { return s == "1" || s == "true" }

// rawJSON is s as JSON, or nil when it is empty or not JSON.
func rawJSON(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

// replies answers conversations.replies from the record: the message ts
// names in channel, then the replies posted in its thread (by this app or
// another, ReplyAs), oldest first, each as its last chat.update left it (a
// message without replies comes alone, as Slack serves an unthreaded
// message); every later page starts with the parent again, as Slack's do. limit defaults to 10 and
// is at most 1000; cursor continues where has_more and
// response_metadata.next_cursor left off. Metadata is returned only with
// include_all_metadata. A ts that names no message in channel is
// thread_not_found.
func (s *Server) replies(f url.Values) map[string]any {
	channel, parent := f.Get("channel"), f.Get("ts")
	if channel == "" {
		return map[string]any{"ok": false, "error": "channel_not_found"}
	}
	if parent == "" {
		return map[string]any{"ok": false, "error": "thread_not_found"}
	}
	limit, from, fail := paging(f, 10, 1000) // from: messages from this ts on
	if fail != nil {
		return fail
	}
	thread, ok := s.thread(channel, parent)
	if !ok {
		return map[string]any{"ok": false, "error": "thread_not_found"}
	}
	var in []message
	for _, m := range thread {
		if m.ts >= from {
			in = append(in, m)
		}
	}
	next := ""
	if len(in) > limit {
		next = base64.StdEncoding.EncodeToString([]byte("next_ts:" + in[limit].ts))
		in = in[:limit]
	}
	if from != "" && len(thread) > 0 && thread[0].ts == parent {
		in = append([]message{thread[0]}, in...) // Slack repeats the parent atop every page
	}
	meta := flag(f.Get("include_all_metadata"))
	out := make([]map[string]any, 0, len(in))
	for _, m := range in {
		o := map[string]any{"type": "message", "user": "U" + m.bot, "bot_id": m.bot, "app_id": "A" + m.bot, "text": m.text, "ts": m.ts}
		if len(thread) > 1 {
			o["thread_ts"] = parent
		}
		if m.ts != parent {
			o["parent_user_id"] = "U" + BotID
		}
		if meta && len(m.metadata) > 0 {
			o["metadata"] = m.metadata
		}
		out = append(out, o)
	}
	return map[string]any{"ok": true, "messages": out, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}}
}

// thread is the message parent names in channel and the replies in its
// thread, oldest first, each as its last chat.update left it; false when
// no message of channel has that ts.
func (s *Server) thread(channel, parent string) ([]message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []message
	at := map[string]int{} // ts → index in out
	found := false
	for _, c := range s.calls {
		if !c.Done || c.Form.Get("channel") != channel {
			continue
		}
		switch c.Method {
		case "chat.postMessage":
			in := c.Form.Get("thread_ts")
			if c.TS != parent && in != parent {
				continue
			}
			found = found || c.TS == parent
			at[c.TS] = len(out)
			out = append(out, message{bot: BotID, ts: c.TS, text: c.Form.Get("text"), at: c.At,
				blocks: rawJSON(c.Form.Get("blocks")), metadata: rawJSON(c.Form.Get("metadata"))})
		case "chat.update":
			if i, ok := at[c.Form.Get("ts")]; ok && c.Form.Has("text") {
				out[i].text = c.Form.Get("text")
			}
		}
	}
	for _, o := range s.others {
		if o.channel == channel && o.thread == parent {
			out = append(out, o.message)
		}
	}
	slices.SortStableFunc(out, func(a, b message) int { return a.at.Compare(b.at) })
	return out, found
}

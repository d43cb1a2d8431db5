package slacktest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
)

// conversations.history serves what was posted as Slack does: newest
// first, thread replies left out, updates applied, metadata only on
// request, paged by cursor, bounded by oldest.
func TestHistory(t *testing.T) {
	f := slacktest.NewServer(t, "xoxb-t", "")
	api := slack.New("xoxb-t", slack.OptionAPIURL(f.APIURL()))
	ctx := context.Background()
	meta := slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "card", EventPayload: map[string]any{"id": "r1"}})
	_, first, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("one", false), meta)
	if err != nil {
		t.Fatal(err)
	}
	mid := time.Now()
	for i := range 3 {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("n"+strconv.Itoa(i), false)); err != nil {
			t.Fatal(err)
		}
	}
	api.PostMessageContext(ctx, "C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS(first))
	api.PostMessageContext(ctx, "C2", slack.MsgOptionText("elsewhere", false))
	api.UpdateMessageContext(ctx, "C1", first, slack.MsgOptionText("one, edited", false))

	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 3, IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 3 || h.Messages[0].Text != "n2" || !h.HasMore || h.ResponseMetaData.NextCursor == "" {
		t.Fatalf("first page: %+v", h)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 3,
		IncludeAllMetadata: true, Cursor: h.ResponseMetaData.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Messages) != 1 || h.HasMore || h.Messages[0].Timestamp != first || h.Messages[0].Text != "one, edited" ||
		h.Messages[0].Metadata.EventType != "card" || h.Messages[0].Metadata.EventPayload["id"] != "r1" {
		t.Fatalf("second page: %+v", h)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
	if err != nil || len(h.Messages) != 4 || h.Messages[3].Metadata.EventType != "" {
		t.Fatalf("without include_all_metadata: %+v %v", h, err)
	}
	oldest := strconv.FormatInt(mid.UnixMicro()/1e6, 10) + "." + strconv.FormatInt(1e6+mid.UnixMicro()%1e6, 10)[1:]
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: oldest})
	if err != nil || len(h.Messages) != 3 {
		t.Fatalf("since %s: %+v %v", oldest, h, err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventPayload: map[string]any{}})); err == nil || err.Error() != "invalid_metadata_format" {
		t.Fatalf("metadata without an event_type: %v", err)
	}
}

// conversations.replies serves a thread as Slack does: the parent, then
// its replies oldest first, updates applied, metadata only on request,
// paged by cursor with the parent atop each page; an unthreaded message
// alone; an unknown ts refused.
func TestReplies(t *testing.T) {
	f := slacktest.NewServer(t, "xoxb-t", "")
	api := slack.New("xoxb-t", slack.OptionAPIURL(f.APIURL()))
	ctx := context.Background()
	_, parent, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("card", false))
	if err != nil {
		t.Fatal(err)
	}
	_, lone, _ := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("another", false))
	meta := slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "reminder", EventPayload: map[string]any{"step": "1"}})
	var replies []string
	for i := range 3 {
		opts := []slack.MsgOption{slack.MsgOptionText("r"+strconv.Itoa(i), false), slack.MsgOptionTS(parent)}
		if i == 0 {
			opts = append(opts, meta)
		}
		_, ts, err := api.PostMessageContext(ctx, "C1", opts...)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, ts)
	}
	api.PostMessageContext(ctx, "C2", slack.MsgOptionText("elsewhere", false), slack.MsgOptionTS(parent))
	api.UpdateMessageContext(ctx, "C1", parent, slack.MsgOptionText("card, decided", false))

	msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent, Limit: 2, IncludeAllMetadata: true})
	if err != nil || len(msgs) != 2 || !more || next == "" || msgs[0].Timestamp != parent || msgs[0].Text != "card, decided" ||
		msgs[1].Timestamp != replies[0] || msgs[1].ThreadTimestamp != parent || msgs[1].Metadata.EventPayload["step"] != "1" {
		t.Fatalf("first page: %+v %v %q %v", msgs, more, next, err)
	}
	msgs, more, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent, Limit: 2, Cursor: next})
	if err != nil || len(msgs) != 3 || more || msgs[0].Timestamp != parent || msgs[1].Timestamp != replies[1] || msgs[2].Timestamp != replies[2] {
		t.Fatalf("second page (the parent, then the rest): %+v %v %v", msgs, more, err)
	}
	msgs, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: parent})
	if err != nil || len(msgs) != 4 || msgs[1].Metadata.EventType != "" {
		t.Fatalf("without include_all_metadata: %+v %v", msgs, err)
	}
	msgs, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: lone})
	if err != nil || len(msgs) != 1 || msgs[0].Text != "another" || msgs[0].ThreadTimestamp != "" {
		t.Fatalf("an unthreaded message: %+v %v", msgs, err)
	}
	if _, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C2", Timestamp: parent}); err == nil || err.Error() != "thread_not_found" {
		t.Fatalf("a ts of another conversation: %v", err)
	}
}

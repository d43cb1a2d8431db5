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

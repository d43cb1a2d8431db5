package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

var (
	_ gate.Directer = (*Channel)(nil)
	_ gate.Replier  = (*Channel)(nil)
)

// Reaches reports whether identity is a Slack user, slack:TEAM/USER, whom
// the bot can send a direct card.
func (c *Channel) Reaches(identity string) bool { return slackActor.MatchString(identity) }

// PostDirect sends the card to one user, in the bot's direct message with
// them: conversations.open with the user's id gives the DM's channel
// (D…), where the card is posted as in the channel. Its reference is
// "D…:TS", which Update and Remind take like any other.
func (c *Channel) PostDirect(ctx context.Context, r *gate.Request, identity string) (string, error) {
	m := slackActor.FindStringSubmatch(identity)
	if m == nil {
		return "", fmt.Errorf("slack: direct card: %q is not a Slack user (slack:TEAM/USER)", identity)
	}
	var dm string
	err := channel.Retry(ctx, retryPolicy, func(ctx context.Context) error {
		ch, _, _, err := c.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{m[1]}})
		if err == nil && (ch == nil || ch.ID == "") {
			return fmt.Errorf("conversations.open answered no channel")
		}
		if err == nil {
			dm = ch.ID
		}
		return classify(err)
	})
	if err != nil {
		return "", fmt.Errorf("slack: open the direct message with %s: %w", m[1], err)
	}
	return c.postTo(ctx, dm, r)
}

// Remind replies in the thread of the card behind ref that the request
// still waits, mentioning the Slack users among mention (a mention in a
// thread notifies them). Only trusted text is written unescaped: the tool's
// name is shown as the card shows it (present.View) and escaped, and the
// mentions are built from identities. Like a card, a reminder carries
// metadata naming its request and step, and a post that may repeat an
// earlier one looks for it in the thread first (recover.go).
func (c *Channel) Remind(ctx context.Context, r *gate.Request, ref string, step int, mention []string) (string, error) {
	ch, ts, ok := strings.Cut(ref, ":")
	if !ok || ch == "" || ts == "" {
		return "", fmt.Errorf("slack: reminder: bad card reference %q", ref)
	}
	reply, err := c.postOnce(ctx, ch, func() string { return c.earlierReminder(ctx, ch, ts, r, step) },
		slack.MsgOptionText(reminderText(c.present.View(r), mention, c.requestURL(r)), false), slack.MsgOptionTS(ts),
		slack.MsgOptionMetadata(c.reminderMetadata(r, step)))
	if err != nil {
		return "", fmt.Errorf("slack: reminder: %w", err)
	}
	return reply, nil
}

// reminderText is a reminder's mrkdwn: who is asked, what, until when. The
// tool's name comes from the view, with its line breaks and hidden
// characters marked, and its backquotes cannot close the code span around
// it: otherwise a name could draw a line of its own ("Approved by the
// security team") under the card.
func reminderText(v present.View, mention []string, link string) string {
	var who []string
	for _, id := range mention {
		if m := slackActor.FindStringSubmatch(id); m != nil {
			who = append(who, "<@"+m[1]+">")
		}
	}
	s := ":alarm_clock: *Still waiting for approval:* " + codeSpan(v.ToolName, 200) + " on route " + esc(v.Route) +
		", expires " + slackDate(v.ExpiresAt) + "."
	if len(who) > 0 {
		s = strings.Join(who, " ") + " " + s
	}
	if link != "" {
		s += " <" + esc(link) + "|Open it in Gatehouse>"
	}
	return s
}

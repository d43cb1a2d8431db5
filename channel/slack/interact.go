package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
)

// afterAckTimeout bounds the work done after a tap has been acked.
const afterAckTimeout = 30 * time.Second

// reasonMeta is the reason modal's private_metadata: which request, where
// to answer the submitter, and the Gatehouse channel whose card was
// tapped (a submission names no conversation, and several channels may
// share one Slack app).
type reasonMeta struct {
	ID      string `json:"id"`
	Channel string `json:"ch,omitempty"`
	Via     string `json:"via,omitempty"`
}

// interact handles one verified interaction, from HTTP or Socket Mode, and
// returns at once so the caller can ack within Slack's 3 seconds; the
// channel it returns, if not nil, closes when the work it started has
// what an ack may wait for: the verdict taken or refused, not the Slack
// calls that follow (the approver's private notes, the reason modal).
//
// Everything, Decide included, runs detached from the ack. Decide is
// usually a millisecond of SQL, but on a busy PostgreSQL or a replica that
// is catching up it has no upper bound, and a missed ack shows the approver
// an error although the verdict may land. The approver learns the outcome
// from the card (updated by the gate's card worker) or from an ephemeral
// message when the tap was refused.
//
// peers are the channels of the Slack app the interaction came from, c
// among them, any of which a tap may count through (via).
func (c *Channel) interact(ctx context.Context, ic slack.InteractionCallback, peers []*Channel) <-chan struct{} {
	var started []<-chan struct{}
	later := func(ctx context.Context, fn func(ctx context.Context, ready func())) {
		started = append(started, c.later(ctx, fn))
	}
	c.dispatch(ctx, ic, peers, later)
	switch len(started) {
	case 0:
		return nil
	case 1:
		return started[0]
	}
	all := make(chan struct{})
	go func() {
		for _, d := range started {
			<-d
		}
		close(all)
	}()
	return all
}

// dispatch starts the work of one interaction through later.
func (c *Channel) dispatch(ctx context.Context, ic slack.InteractionCallback, peers []*Channel, later func(context.Context, func(context.Context, func()))) {
	actor, ids := identity(ic)
	switch ic.Type {
	case slack.InteractionTypeBlockActions:
		for _, a := range ic.ActionCallback.BlockActions {
			if a == nil || !strings.HasPrefix(a.ActionID, "gatehouse_") {
				continue
			}
			choice, id, ok := strings.Cut(a.Value, ":")
			if !ok || id == "" || actor == "" {
				c.decider.Refuse(ctx, "", c.name, actor, fmt.Sprintf("malformed button value %q", a.Value))
				continue
			}
			later(ctx, func(ctx context.Context, ready func()) { c.tap(ctx, ready, ic, peers, actor, ids, choice, id) })
		}
	case slack.InteractionTypeViewSubmission:
		if ic.View.CallbackID != reasonCallback {
			return
		}
		var meta reasonMeta
		if err := json.Unmarshal([]byte(ic.View.PrivateMetadata), &meta); err != nil || meta.ID == "" || actor == "" {
			c.decider.Refuse(ctx, "", c.name, actor, "reason modal without a request id")
			return
		}
		reason := ""
		if ic.View.State != nil {
			reason = strings.TrimSpace(ic.View.State.Values[reasonBlock][reasonAction].Value)
		}
		later(ctx, func(ctx context.Context, ready func()) {
			c.decide(ctx, ready, meta.Channel, ic.User.ID, gate.Decision{RequestID: meta.ID, Approve: false,
				Actor: actor, Identities: ids, Via: c.name, Reason: reason})
		})
	default:
		c.log.Debug("slack interaction ignored", "type", ic.Type)
	}
}

// later runs fn on its own goroutine, detached from the request's context
// (which ends with the response) but bounded in time; the channel closes
// when fn calls ready or returns, whichever comes first.
func (c *Channel) later(ctx context.Context, fn func(ctx context.Context, ready func())) <-chan struct{} {
	done := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(done) }) }
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		defer ready()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), afterAckTimeout)
		defer cancel()
		fn(ctx, ready)
	}()
	return done
}

// tap acts on one button: approve and reject go to the gate; "reject with
// reason" opens the modal whose submission carries the reason (after the
// ack: its trigger lasts 3 seconds, the ack need not wait for it). Both
// count through the channel via names.
func (c *Channel) tap(ctx context.Context, ready func(), ic slack.InteractionCallback, peers []*Channel, actor string, ids []string, choice, id string) {
	from, user := tapChannel(ic), ic.User.ID
	switch choice {
	case choiceApprove, choiceReject, choiceRemember:
		via := c.via(ctx, peers, from, id)
		via.decide(ctx, ready, from, user, gate.Decision{RequestID: id, Approve: choice == choiceApprove || choice == choiceRemember, Remember: choice == choiceRemember,
			Actor: actor, Identities: ids, Via: via.name})
	case choiceReason:
		ready()
		c.via(ctx, peers, from, id).openReason(ctx, ic, actor, ids, id)
	default:
		c.decider.Refuse(ctx, id, c.name, actor, fmt.Sprintf("unknown button choice %q", choice))
	}
}

// via is the channel a tap on request id's card, in the Slack conversation
// from, counts through. A tap in one of peers' Slack channels went to that
// channel already (pick); when two of them post to that conversation, it
// counts through the one of them the request was sent by. A tap anywhere else (a direct card, in the
// approver's own D… conversation with the bot) matches no channel_id, so
// it counts through the first of the request's own channels among peers:
// the one the gate sent the direct card through, as it sends by the first
// of them that reaches the person. Never through a channel of another
// Slack app (peers are the app's), and never through one the request was
// not sent to, when it was sent to one of peers; otherwise (an unknown
// request) it stays c, and the gate judges the tap as before.
func (c *Channel) via(ctx context.Context, peers []*Channel, from, id string) *Channel {
	var here []*Channel
	for _, p := range peers {
		if p.cfg.ChannelID == from {
			here = append(here, p)
		}
	}
	switch {
	case len(here) > 1:
		peers = here
	case from == c.cfg.ChannelID || len(peers) < 2:
		return c
	}
	r, err := c.decider.Get(ctx, id)
	if err != nil {
		return c
	}
	for _, name := range r.Channels {
		for _, p := range peers {
			if p.name == name {
				return p
			}
		}
	}
	return c
}

// decide hands a verdict to the gate, says ready, and tells the approver,
// privately, when it was not taken or needs more approvals.
func (c *Channel) decide(ctx context.Context, ready func(), from, user string, d gate.Decision) {
	// A tap outside the channel (a forwarded or shared copy of the card,
	// a direct message) is not the channel's audience: on a route with no
	// approvers list the gate refuses it, as it refuses Feishu's.
	d.Elsewhere = from != c.cfg.ChannelID
	log := c.log.With("request_id", d.RequestID, "actor", d.Actor)
	r, err := c.decider.Decide(ctx, d)
	ready()
	if err == nil {
		if r != nil && r.Status == gate.StatusPending {
			c.ephemeral(ctx, from, user, fmt.Sprintf(":ballot_box_with_check: Your approval is recorded; this request needs %d approvals.", r.Quorum))
		}
		log.Info("slack decision taken", "approve", d.Approve)
		return
	}
	log.Info("slack decision not taken", "err", err)
	if msg := refusal(err); msg != "" {
		if gate.ErrorCode(err) == gate.ENOTFOUND {
			c.decider.Refuse(ctx, d.RequestID, c.name, d.Actor, "decision for an unknown request")
		}
		c.ephemeral(ctx, from, user, msg)
	}
}

// refusal is what an approver is told when the gate did not take a verdict.
func refusal(err error) string {
	msg := esc(gate.ErrorMessage(err))
	switch gate.ErrorCode(err) {
	case gate.EFORBIDDEN:
		return ":no_entry: You are not an approver of this request; your tap was not counted."
	case gate.ESELF:
		return ":raised_hand: You asked for this; someone else must approve. (You may still reject it.)"
	case gate.ECONFLICT:
		return ":information_source: Already decided: " + msg + "."
	case gate.EEXPIRED:
		return ":hourglass: This request has expired (" + msg + "); nothing was decided."
	case gate.ENOTFOUND:
		return ":grey_question: Gatehouse does not know this request."
	case gate.EINVALID:
		return ":warning: Not recorded: " + msg + "."
	}
	return ":warning: Gatehouse could not record your decision; please try again or use the web page."
}

// openReason opens the "reject with reason" modal, unless the request has
// already left pending or the tapper could not decide it anyway.
func (c *Channel) openReason(ctx context.Context, ic slack.InteractionCallback, actor string, ids []string, id string) {
	from, user := tapChannel(ic), ic.User.ID
	r, err := c.decider.Get(ctx, id)
	if err != nil {
		if gate.ErrorCode(err) == gate.ENOTFOUND {
			c.decider.Refuse(ctx, id, c.name, actor, "reject with reason: unknown request")
		}
		c.ephemeral(ctx, from, user, refusal(err))
		return
	}
	if r.Status.Final() {
		c.ephemeral(ctx, from, user, ":information_source: Already decided: this request is "+esc(string(r.Status))+".")
		return
	}
	if !gate.MightDecide(r.Approvers, append([]string{actor}, ids...)...) {
		c.decider.Refuse(ctx, id, c.name, actor, "reject with reason: not an approver")
		c.ephemeral(ctx, from, user, refusal(gate.Errorf(gate.EFORBIDDEN, "not an approver")))
		return
	}
	if _, err := c.api.OpenViewContext(ctx, ic.TriggerID, reasonModal(c.present.View(r), from, c.name)); err != nil {
		c.log.Warn("opening the reason modal failed", "request_id", id, "err", err)
		c.ephemeral(ctx, from, user, ":warning: The reason form did not open (Slack allows 3 seconds); tap *Reject with reason* again.")
	}
}

// reasonModal asks for the reason of a rejection.
func reasonModal(r present.View, from, via string) slack.ModalViewRequest {
	meta, _ := json.Marshal(reasonMeta{ID: r.ID, Channel: from, Via: via})
	input := slack.NewPlainTextInputBlockElement(plain("Why is this rejected?", 150), reasonAction)
	input.Multiline = true
	input.MaxLength = maxSection
	blocks := []slack.Block{
		slack.NewSectionBlock(plain("Reject: "+r.Sentence+"\n(tool "+r.ToolName+")", maxSection), nil, nil),
		slack.NewInputBlock(reasonBlock, plain("Reason", 2000), nil, input),
	}
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain("Reject request", 24),
		Submit:          plain("Reject", 24),
		Close:           plain("Cancel", 24),
		Blocks:          slack.Blocks{BlockSet: blocks},
		CallbackID:      reasonCallback,
		PrivateMetadata: string(meta),
	}
}

// identity is the tapper's canonical identity, slack:TEAM/USER with the
// user's home workspace (user.team_id). The workspace the tap came from
// (team.id) would make an outside member of a Slack Connect channel look
// like one of the host's people and match a glob such as slack:T_HOST/*.
// Only when Slack sends no home workspace does the tap's workspace stand in.
func identity(ic slack.InteractionCallback) (actor string, others []string) {
	if ic.User.ID == "" {
		return "", nil
	}
	team := ic.User.TeamID
	if team == "" {
		team = ic.Team.ID
	}
	return "slack:" + team + "/" + ic.User.ID, nil
}

// tapChannel is the Slack channel a block action came from.
func tapChannel(ic slack.InteractionCallback) string {
	if ic.Channel.ID != "" {
		return ic.Channel.ID
	}
	return ic.Container.ChannelID
}

// requestIDOf digs the request id out of a payload, for the audit trail.
func requestIDOf(ic slack.InteractionCallback) string {
	for _, a := range ic.ActionCallback.BlockActions {
		if a != nil && strings.HasPrefix(a.ActionID, "gatehouse_") {
			if _, id, ok := strings.Cut(a.Value, ":"); ok {
				return id
			}
		}
	}
	var meta reasonMeta
	if ic.View.CallbackID == reasonCallback && json.Unmarshal([]byte(ic.View.PrivateMetadata), &meta) == nil {
		return meta.ID
	}
	return ""
}

package main

// The rig of the channel-fault and load tests: the real binary (one
// server, or replicas on one PostgreSQL) with a Slack and a Feishu channel
// on the local fakes and the web page, approvers who read the cards from
// the fakes' records and tap them with signed callbacks, and the counts
// that judge a run: cards per request and channel, and each agent's
// verdict against the tap that decided it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/channel/slack/slacktest"
	"github.com/gatehouse-dev/gatehouse/client"
)

const (
	rigSlackBot    = "xoxb-load-bot"
	rigSlackSecret = "load-slack-signing-secret"
	rigSlackChan   = "C0LOAD"
	rigSlackTeam   = "T0LOAD"
	rigTool        = "deploy"
	// Names of the channels as the config and the requests' events say.
	rigSlack  = "ops-slack"
	rigFeishu = "ops-feishu"
	rigWeb    = "web"
	// The platform calls that make and update cards, as the fakes name them.
	slackPost   = "chat.postMessage"
	slackUpdate = "chat.update"
)

// rig is the servers and fakes of one run.
type rig struct {
	slack   *slacktest.Server
	feishu  *feishutest.Server
	servers []*server
	cfgs    []string
	hc      *http.Client // many connections: agents and approvers share it
}

// newRig starts the fakes and replicas servers with webUsers web approvers
// (ap0 … apN-1, the e2e password): on SQLite in dir when dsn is "", else
// on the PostgreSQL database dsn.
func newRig(t *testing.T, dir, dsn string, replicas, webUsers int) *rig {
	t.Helper()
	r := &rig{
		slack:  slacktest.NewServer(t, rigSlackBot, ""),
		feishu: feishutest.NewServer(t, feishuE2EAppID, feishuE2ESecret),
		hc: &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 2048,
			IdleConnTimeout: 90 * time.Second}},
	}
	t.Cleanup(r.hc.CloseIdleConnections)
	hash, err := bcrypt.GenerateFromPassword([]byte(e2ePassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var users strings.Builder
	for i := range webUsers {
		fmt.Fprintf(&users, "    - {name: ap%d, password_bcrypt: %q, role: approver}\n", i, hash)
	}
	db := fmt.Sprintf("  driver: sqlite\n  dsn: %s\n", filepath.Join(dir, "gatehouse.db"))
	if dsn != "" {
		db = fmt.Sprintf("  driver: postgres\n  dsn: %q\n", dsn)
	}
	for i := range replicas {
		cfg := fmt.Sprintf(`listen: 127.0.0.1:%d
public_url: %s
database:
%sauth:
  api_tokens:
    - name: load-agent
      token: %s
  users:
%slog:
  level: info
channels:
  - name: %s
    type: slack
    bot_token: %s
    signing_secret: %s
    channel_id: %s
    api_url: %s
%sroutes:
  - name: load
    match: {tool: %q}
    channels: [%s, %s, %s]
    on_timeout: deny
    timeout: 10m
`, freePort(t), feishuE2EPublic, db, e2eToken, users.String(), rigSlack, rigSlackBot, rigSlackSecret, rigSlackChan,
			r.slack.APIURL(), feishuChannel(r.feishu.URL), rigTool, rigSlack, rigFeishu, rigWeb)
		d := filepath.Join(dir, "replica"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, "gatehouse.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		r.cfgs = append(r.cfgs, path)
		r.servers = append(r.servers, startServer(t, path))
	}
	return r
}

// agent is a Go client of replica i, as an agent's loop would use it.
func (r *rig) agent(i int) *client.Client {
	return &client.Client{URL: r.servers[i%len(r.servers)].URL, Token: e2eToken, HTTP: r.hc, Wait: 20 * time.Second}
}

// A card is one message on a platform that carries a request's buttons.
type card struct {
	Channel   string // rigSlack or rigFeishu
	RequestID string
	Ref       string // the Slack ts or the Feishu message id
	Text      string // what the card says, raw
}

var (
	slackCardID  = regexp.MustCompile(`"approve:([0-9A-Za-z]+)"`)
	feishuCardID = regexp.MustCompile(`"request_id":"([0-9A-Za-z]+)"`)
)

// cards reads the cards people see on both platforms from the fakes'
// records: the posts that took effect, whether or not Gatehouse heard
// their answer.
func (r *rig) cards() []card {
	var out []card
	for _, c := range r.slack.Posts() {
		blocks := c.Form.Get("blocks")
		if m := slackCardID.FindStringSubmatch(blocks); m != nil {
			out = append(out, card{Channel: rigSlack, RequestID: m[1], Ref: c.TS, Text: blocks})
		}
	}
	for _, c := range r.feishu.Posts() {
		content, _ := c.JSON["content"].(string)
		if m := feishuCardID.FindStringSubmatch(content); m != nil {
			out = append(out, card{Channel: rigFeishu, RequestID: m[1], Ref: c.MessageID, Text: content})
		}
	}
	return out
}

// cardCounts counts the cards of each request on each channel.
func cardCounts(cards []card) map[string]map[string]int {
	n := map[string]map[string]int{}
	for _, c := range cards {
		if n[c.RequestID] == nil {
			n[c.RequestID] = map[string]int{}
		}
		n[c.RequestID][c.Channel]++
	}
	return n
}

// slackUpdated is the set of Slack card ts that a chat.update reached.
func (r *rig) slackUpdated() map[string]bool {
	out := map[string]bool{}
	for _, c := range r.slack.CallsOf(slackUpdate) {
		if c.Done {
			out[c.Form.Get("ts")] = true
		}
	}
	return out
}

// failedCalls counts the platform calls each fake answered with an
// injected fault.
func (r *rig) failedCalls() (slack, feishu int) {
	for _, c := range r.slack.Calls() {
		if c.Fault != "" {
			slack++
		}
	}
	for _, c := range r.feishu.Calls("") {
		if c.Fault != "" {
			feishu++
		}
	}
	return slack, feishu
}

// A tap is one approver's verdict on one request and what they were told.
type tap struct {
	RequestID string
	Identity  string // as the gate records it: slack:T/U, feishu:ou_…, web:name
	Via       string // the channel's name
	Approve   bool
	At        time.Time
	// Won is what the approver was told: their verdict decided the
	// request (Feishu's success toast, the web page's redirect). Slack
	// acks every signed tap and tells a refusal privately afterwards, so
	// a Slack tap is never told it won.
	Won bool
	// Answer is the raw answer, for the failure report.
	Answer string
	Err    error
}

func choice(approve bool) string {
	if approve {
		return "approve"
	}
	return "reject"
}

// tapSlack taps a Slack card as user, signed as Slack signs it.
func (r *rig) tapSlack(base string, c card, user string, approve bool) tap {
	ch := choice(approve)
	tp := tap{RequestID: c.RequestID, Identity: "slack:" + rigSlackTeam + "/" + user, Via: rigSlack, Approve: approve, At: time.Now()}
	body := slacktest.Form(slacktest.BlockActions(slacktest.Tap{Team: rigSlackTeam, User: user, Channel: rigSlackChan,
		MessageTS: c.Ref, ActionID: "gatehouse_" + ch, Value: ch + ":" + c.RequestID, TriggerID: "trig." + user + "." + c.RequestID,
		ActionTS: strconv.FormatInt(tp.At.UnixNano(), 10)}))
	req, _ := http.NewRequest(http.MethodPost, base+"/callbacks/slack", strings.NewReader(body))
	req.Header = slacktest.Sign(rigSlackSecret, tp.At, body)
	if code, _ := r.deliver(&tp, req); tp.Err == nil && code != http.StatusOK {
		tp.Err = fmt.Errorf("slack callback: %s", tp.Answer)
	}
	return tp
}

// tapFeishu taps a Feishu card as operator, encrypted and signed as Feishu
// sends it.
func (r *rig) tapFeishu(base string, c card, operator string, approve bool) tap {
	tp := tap{RequestID: c.RequestID, Identity: "feishu:" + operator, Via: rigFeishu, Approve: approve, At: time.Now()}
	d := feishuSigned(feishutest.CardAction(feishutest.Tap{
		EventID: fmt.Sprintf("ev-%s-%s", operator, c.RequestID), Token: feishuE2EVerify, AppID: feishuE2EAppID, TenantKey: "tk_load",
		At: tp.At, OpenID: operator, UserID: "u_" + operator, UnionID: "on_" + operator,
		RequestID: c.RequestID, Choice: choice(approve), MessageID: c.Ref, ChatID: feishuE2EChat,
	}))
	req, _ := http.NewRequest(http.MethodPost, base+"/callbacks/feishu", bytes.NewReader(d.Body))
	req.Header = d.Header
	code, raw := r.deliver(&tp, req)
	if tp.Err != nil {
		return tp
	}
	var a feishutest.Reply
	if code != http.StatusOK || json.Unmarshal(raw, &a) != nil || a.Toast == nil {
		tp.Err = fmt.Errorf("feishu callback: %s", tp.Answer)
		return tp
	}
	tp.Won = a.Toast.Type == "success"
	return tp
}

// deliver sends a tap's callback and keeps its answer in tp (tp.Err when
// none came), returning the status and raw body.
func (r *rig) deliver(tp *tap, req *http.Request) (int, []byte) {
	resp, err := r.hc.Do(req)
	if err != nil {
		tp.Err = err
		return 0, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	tp.Answer = fmt.Sprintf("%d %.200s", resp.StatusCode, raw)
	return resp.StatusCode, raw
}

// webApprover is a person signed in to the web page.
type webApprover struct {
	name string
	c    *http.Client
}

// loginWeb signs user in (no redirects followed, its own cookie jar, the
// rig's connections).
func (r *rig) loginWeb(t *testing.T, base, user string) *webApprover {
	t.Helper()
	return &webApprover{name: user, c: webLoginVia(t, base, user, r.hc.Transport)}
}

// tapWeb decides on the request's page, as a person would.
func (w *webApprover) tapWeb(base, id string, approve bool) tap {
	tp := tap{RequestID: id, Identity: "web:" + w.name, Via: rigWeb, Approve: approve, At: time.Now()}
	resp, err := w.c.Get(base + "/approvals/" + id)
	if err != nil {
		tp.Err = err
		return tp
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if m == nil {
		tp.Err = fmt.Errorf("web: no csrf field on %s (%d)", id, resp.StatusCode)
		return tp
	}
	tp.At = time.Now()
	resp, err = w.c.PostForm(base+"/approvals/"+id+"/decide", url.Values{"csrf": {string(m[1])}, "verdict": {choice(approve)}})
	if err != nil {
		tp.Err = err
		return tp
	}
	resp.Body.Close()
	tp.Answer = resp.Status
	switch resp.StatusCode {
	case http.StatusSeeOther:
		tp.Won = true
	case http.StatusConflict, http.StatusGone, http.StatusUnprocessableEntity:
	default:
		tp.Err = fmt.Errorf("web decide %s: %s", id, resp.Status)
	}
	return tp
}

// row is a request as the API returns it, with what the verdict's event says.
type row struct {
	ID, Status, DecidedBy, DecidedVia string
}

// readRow reads one request through the API, on base.
func (r *rig) readRow(base, id string) (row, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/approvals/"+url.PathEscape(id), nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := r.hc.Do(req)
	if err != nil {
		return row{}, err
	}
	defer resp.Body.Close()
	var a apiRequest
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != http.StatusOK {
		return row{}, fmt.Errorf("GET %s: %d %v", id, resp.StatusCode, err)
	}
	return row{ID: a.ID, Status: a.Status, DecidedBy: a.DecidedBy, DecidedVia: a.DecidedVia}, nil
}

// outcome is one agent's request: what it asked, what it was told, when.
type outcome struct {
	Key        string
	Expire     bool // left to expire: nobody taps it
	Start, End time.Time
	Res        client.Result
	Err        error
}

// verdicts judges every agent's outcome against the row and the taps.
type verdicts struct {
	Total, Approved, Rejected, Expired int
	Wrong, Lost                        int
	Problems                           []string // the first few, for the failure message
}

func (v *verdicts) problem(format string, args ...any) {
	if len(v.Problems) < 20 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// judge checks each outcome: the agent got a final verdict (else lost);
// it is the row's (else wrong, or lost when the agent got an error while
// the row was decided); allow only for an approved row; a decided row
// names an approver who tapped that verdict; and an approver told they
// won is the one the row names.
func judge(outs []outcome, rows map[string]row, taps []tap) verdicts {
	// A tap whose answer was lost (a replica killed under it) may still
	// have decided: every tap sent counts as who may have decided.
	byReq := map[string][]tap{}
	for _, tp := range taps {
		byReq[tp.RequestID] = append(byReq[tp.RequestID], tp)
	}
	var v verdicts
	for _, o := range outs {
		v.Total++
		id := o.Res.RequestID
		rw, ok := rows[id]
		switch {
		case o.Err != nil || o.Res.Status == "error" || o.Res.Status == "pending":
			v.Lost++
			v.problem("lost: agent %s (request %q) ended with %q: %v (row %+v)", o.Key, id, o.Res.Status, o.Err, rw)
			if o.Res.Allow {
				v.Wrong++
				v.problem("wrong: agent %s allowed on an error", o.Key)
			}
			continue
		case !ok:
			v.Wrong++
			v.problem("wrong: agent %s got %q for request %q, which the server does not have", o.Key, o.Res.Status, id)
			continue
		}
		switch o.Res.Status {
		case "approved":
			v.Approved++
		case "rejected":
			v.Rejected++
		case "expired":
			v.Expired++
		}
		if o.Res.Status != rw.Status || o.Res.Allow != (rw.Status == "approved") {
			v.Wrong++
			v.problem("wrong: agent %s got %q allow=%v, the row says %q", o.Key, o.Res.Status, o.Res.Allow, rw.Status)
			continue
		}
		if o.Expire && rw.Status != "expired" {
			v.Wrong++
			v.problem("wrong: request %s nobody tapped is %q", id, rw.Status)
			continue
		}
		if rw.Status == "approved" || rw.Status == "rejected" {
			i := slices.IndexFunc(byReq[id], func(tp tap) bool { return tp.Identity == rw.DecidedBy })
			if i < 0 || byReq[id][i].Approve != (rw.Status == "approved") || byReq[id][i].Via != rw.DecidedVia {
				v.Wrong++
				v.problem("wrong: request %s is %q by %s via %s; the taps were %+v", id, rw.Status, rw.DecidedBy, rw.DecidedVia, byReq[id])
				continue
			}
		}
		for _, tp := range byReq[id] {
			if tp.Won && (tp.Identity != rw.DecidedBy || tp.Approve != (rw.Status == "approved")) {
				v.Wrong++
				v.problem("wrong: %s was told their %s of %s won; the row says %q by %s", tp.Identity, choice(tp.Approve), id, rw.Status, rw.DecidedBy)
			}
		}
	}
	return v
}

// readRows reads the rows of the outcomes, a few at a time.
func (r *rig) readRows(t *testing.T, outs []outcome) map[string]row {
	t.Helper()
	var mu sync.Mutex
	rows := map[string]row{}
	ids := make(chan string)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				rw, err := r.readRow(r.servers[i%len(r.servers)].URL, id)
				if err != nil {
					t.Errorf("reading %s: %v", id, err)
					continue
				}
				mu.Lock()
				rows[id] = rw
				mu.Unlock()
			}
		}()
	}
	for _, o := range outs {
		if o.Res.RequestID != "" {
			ids <- o.Res.RequestID
		}
	}
	close(ids)
	wg.Wait()
	return rows
}

// figure prints one figure of a run in the form scripts/load and
// scripts/faults collect.
func figure(t *testing.T, name string, v any) {
	t.Helper()
	fmt.Printf("FIGURE %s=%v\n", name, v)
	t.Logf("FIGURE %s=%v", name, v)
}

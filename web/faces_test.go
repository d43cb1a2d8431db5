package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/present"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
	"github.com/gatehouse-dev/gatehouse/web"
)

const awsKey = "AKIAIOSFODNN7EXAMPLE"

// facesRoutes: payments is critical and labelled; deploys is plain.
var facesRoutes = []gate.Route{
	{Name: "payments", Tool: "oa__purchase_*", Channels: []string{gate.WebChannel}, Timeout: time.Hour,
		Looks: gate.Looks{Label: "Payments over ¥50,000", Severity: gate.Critical}},
	{Name: "reads", Tool: "read_*", Action: "allow"},
}

// newFacesEnv is a server that redacts passwords, tokens and AWS keys, with
// two agents' tokens and an operator's read_all token.
func newFacesEnv(t *testing.T) *env {
	t.Helper()
	rd, err := redact.New([]string{"password", "*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, facesRoutes, func(o *web.Options) {
		o.Present = &present.Presenter{Redact: rd, Looks: o.Service.RouteLooks}
		o.Tokens = []config.APIToken{
			{Name: "agent-a", Token: scopeTokens["agent-a"]},
			{Name: "reader", Token: scopeTokens["reader"], Scopes: []string{config.ScopeReadAll}},
		}
	})
}

// submitAs creates a request through the API with an agent's token.
func (e *env) submitAs(token, body string) *gate.Request {
	e.t.Helper()
	code, out := call(e.t, e.srv.URL, token, http.MethodPost, "/api/v1/approvals", body)
	if code != http.StatusCreated {
		e.t.Fatalf("submit: %d %s", code, out)
	}
	var r gate.Request
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		e.t.Fatal(err)
	}
	return &r
}

const secretCall = `{"tool_name":"deploy","requires_confirmation":true,"agent_id":"ops-bot","summary":"Deploy with ` + awsKey + `",
	"tool_args":{"env":"prod","db":{"Password":"hunter2"},"api_token":"tok-123","cmd":"deploy --key ` + awsKey + `"},
	"metadata":{"session_token":"meta-secret"}}`

var secrets = []string{awsKey, "hunter2", "tok-123", "meta-secret"}

func leaks(s string) []string {
	var out []string
	for _, x := range secrets {
		if strings.Contains(s, x) {
			out = append(out, x)
		}
	}
	return out
}

// Every page, fragment and export a person reads shows secrets as
// [redacted]; the stored row keeps them.
func TestSecretsNeverReachAPage(t *testing.T) {
	e := newFacesEnv(t)
	r := e.submitAs("agent-a", secretCall)
	alice := e.login("alice")
	if _, err := e.svc.Decide(context.Background(), gate.Decision{RequestID: e.submitAs("agent-a", secretCall[:len(secretCall)-1]+`,"idempotency_key":"k2"}`).ID,
		Actor: "web:alice", Via: gate.WebChannel, Reason: "do not paste " + awsKey}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/live/queue", "/history", "/history?q=deploy", "/approvals/" + r.ID, "/export.csv", "/export.json", "/charts"} {
		res, page := alice.get(path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, res.StatusCode)
		}
		if l := leaks(page); len(l) > 0 {
			t.Errorf("%s shows %v", path, l)
		}
		if path != "/charts" && !strings.Contains(page, "[redacted]") {
			t.Errorf("%s does not say what it hid", path)
		}
	}
	got, _ := e.svc.Get(context.Background(), r.ID)
	if !strings.Contains(string(got.ToolArgs), "hunter2") || !strings.Contains(got.Summary, awsKey) {
		t.Error("the stored request was redacted")
	}
	t.Run("the agent's own token reads its arguments whole", func(t *testing.T) {
		_, own := call(t, e.srv.URL, "agent-a", http.MethodGet, "/api/v1/approvals/"+r.ID, "")
		if len(leaks(own)) != len(secrets) {
			t.Errorf("the owner's read is redacted: %s", own)
		}
	})
	t.Run("an operator's read_all token reads them redacted", func(t *testing.T) {
		for _, path := range []string{"/api/v1/approvals/" + r.ID, "/api/v1/approvals/" + r.ID + "?wait=1s", "/api/v1/approvals", "/api/v1/approvals/" + r.ID + "/events"} {
			code, out := call(t, e.srv.URL, "reader", http.MethodGet, path, "")
			if code != http.StatusOK || len(leaks(out)) > 0 {
				t.Errorf("%s: %d %v", path, code, leaks(out))
			}
		}
	})
}

// An approver who edits redacted arguments on the page never sends
// "[redacted]" to the tool: values left as shown go back as the agent sent
// them, and a [redacted] anywhere else is refused.
func TestEditingRedactedArguments(t *testing.T) {
	e := newFacesEnv(t)
	alice := e.login("alice")
	args := `{"env":"prod","db":{"Password":"hunter2"},"cmd":"deploy --key ` + awsKey + `"}`
	submit := func() *gate.Request {
		return e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":`+args+`}`)
	}
	decide := func(r *gate.Request, edited string) (*http.Response, string, *gate.Request) {
		res, page := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}, "modified_args": {edited}})
		got, _ := e.svc.Get(context.Background(), r.ID)
		return res, page, got
	}
	shownArgs := func(r *gate.Request) string {
		_, page := alice.get("/approvals/" + r.ID)
		i := strings.Index(page, `name="modified_args"`)
		j := strings.Index(page[i:], ">")
		k := strings.Index(page[i:], "</textarea>")
		text := page[i+j+1 : i+k]
		for _, ent := range [][2]string{{"&#34;", `"`}, {"&quot;", `"`}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"}, {"&amp;", "&"}} {
			text = strings.ReplaceAll(text, ent[0], ent[1])
		}
		return text
	}

	t.Run("sent back as shown: no edit", func(t *testing.T) {
		r := submit()
		shown := shownArgs(r)
		if !strings.Contains(shown, `"Password": "[redacted]"`) || len(leaks(shown)) > 0 {
			t.Fatalf("the edit box shows %s", shown)
		}
		_, _, got := decide(r, shown)
		if got.Status != gate.StatusApproved || len(got.ModifiedArgs) != 0 {
			t.Fatalf("got %s with modified args %s", got.Status, got.ModifiedArgs)
		}
	})
	t.Run("one value changed, redacted ones left in place", func(t *testing.T) {
		r := submit()
		edited := strings.Replace(shownArgs(r), `"prod"`, `"staging"`, 1)
		_, _, got := decide(r, edited)
		var m map[string]any
		_ = json.Unmarshal(got.ModifiedArgs, &m)
		if got.Status != gate.StatusApproved || m["env"] != "staging" || m["db"].(map[string]any)["Password"] != "hunter2" ||
			m["cmd"] != "deploy --key "+awsKey || strings.Contains(string(got.ModifiedArgs), "[redacted]") {
			t.Fatalf("got %s with modified args %s", got.Status, got.ModifiedArgs)
		}
	})
	t.Run("a redacted value moved elsewhere is refused", func(t *testing.T) {
		r := submit()
		res, page, got := decide(r, `{"env":"[redacted]","db":{"Password":"[redacted]"}}`)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "hold [redacted]") || got.Status != gate.StatusPending {
			t.Fatalf("status %d, request %s:\n%s", res.StatusCode, got.Status, page)
		}
	})
}

// A critical route's approval is confirmed: without confirmed=1 the answer
// is a confirmation page and nothing is decided; a rejection needs none.
func TestCriticalApprovalIsConfirmed(t *testing.T) {
	e := newFacesEnv(t)
	alice := e.login("alice")
	r := e.submitAs("agent-a", `{"tool_name":"oa__purchase_pay","tool_args":{"vendor":"ACME","amount":60000,"currency":"CNY"}}`)
	_, queue := alice.get("/")
	for _, want := range []string{`data-critical="Pay ACME ¥60,000"`, `class="card risk sev-critical"`, "Payments over ¥50,000", `<p class="big amount">¥60,000</p>`} {
		if !strings.Contains(queue, want) {
			t.Errorf("queue lacks %s", want)
		}
	}
	// Beside the agent's words, which may belie it, the confirmation names
	// the amount (found by a reader).
	e.submitAs("agent-a", `{"tool_name":"oa__purchase_pay","tool_args":{"vendor":"ACME","amount":6e6,"currency":"CNY"},"summary":"Pay ACME ¥60 for a cable"}`)
	if _, queue := alice.get("/"); !strings.Contains(queue, `data-critical="The agent says: Pay ACME ¥60 for a cable — ¥6,000,000"`) {
		t.Errorf("the queue's confirmation does not name the amount beside the agent's words")
	}
	res, page := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}, "reason": {"fine"}, "from": {"queue"}})
	got, _ := e.svc.Get(context.Background(), r.ID)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "Approve a critical call?") || got.Status != gate.StatusPending {
		t.Fatalf("unconfirmed approval: %d, %s", res.StatusCode, got.Status)
	}
	for _, want := range []string{`name="confirmed" value="1"`, `name="reason" value="fine"`, `name="from" value="queue"`, `value="approve" class="approve"`} {
		if !strings.Contains(page, want) {
			t.Errorf("confirmation page lacks %s", want)
		}
	}
	res, _ = alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}, "reason": {"fine"}, "from": {"queue"}, "confirmed": {"1"}})
	got, _ = e.svc.Get(context.Background(), r.ID)
	if res.StatusCode != http.StatusSeeOther || got.Status != gate.StatusApproved {
		t.Fatalf("confirmed approval: %d, %s", res.StatusCode, got.Status)
	}
	r2 := e.submitAs("agent-a", `{"tool_name":"oa__purchase_pay","tool_args":{"amount":1},"idempotency_key":"r2"}`)
	alice.post("/approvals/"+r2.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"reject"}})
	if got, _ := e.svc.Get(context.Background(), r2.ID); got.Status != gate.StatusRejected {
		t.Errorf("a rejection waited for a confirmation: %s", got.Status)
	}
}

// A verdict given on the queue lands back on the queue, which says what was
// recorded; the detail page's verdict lands on the detail page.
func TestVerdictOnTheQueueStaysOnTheQueue(t *testing.T) {
	e := newEnv(t)
	alice := e.login("alice")
	r := e.submit(`{"tool_name":"deploy","requires_confirmation":true}`)
	res, _ := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}, "from": {"queue"}})
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/?decided="+r.ID {
		t.Fatalf("%d to %q", res.StatusCode, loc)
	}
	_, page := alice.get("/?decided=" + r.ID)
	if !strings.Contains(page, "Recorded: approved by web:alice via web") || !strings.Contains(page, `href="/approvals/`+r.ID+`">See it`) {
		t.Errorf("the queue does not say what was recorded")
	}
	// Words cannot be put on the page through the URL.
	if _, page := alice.get("/?decided=%3Cb%3Efake"); strings.Contains(page, "Recorded") || strings.Contains(page, "<b>fake") {
		t.Errorf("an unknown id put words on the page")
	}
	r2 := e.submit(`{"tool_name":"deploy","requires_confirmation":true,"idempotency_key":"two"}`)
	res, _ = alice.post("/approvals/"+r2.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"reject"}})
	if loc := res.Header.Get("Location"); loc != "/approvals/"+r2.ID+"?decided=1" {
		t.Errorf("from the detail page: to %q", loc)
	}
}

// Recently decided shows people's decisions; the verdicts routes gave alone
// show on demand, in the live fragment too.
func TestRecentHidesPolicyVerdicts(t *testing.T) {
	e := newFacesEnv(t)
	alice := e.login("alice")
	auto := e.submitAs("agent-a", `{"tool_name":"read_file","tool_args":{"path":"README.md"}}`)
	if auto.DecidedVia != gate.ViaPolicy {
		t.Fatalf("read_file was not allowed by its route: %+v", auto)
	}
	for path, want := range map[string]bool{"/": false, "/live/queue": false, "/?policy=include": true, "/live/queue?policy=include": true} {
		_, page := alice.get(path)
		if got := strings.Contains(page, "/approvals/"+auto.ID); got != want {
			t.Errorf("%s lists the route's verdict: %v, want %v", path, got, want)
		}
	}
	if _, page := alice.get("/?policy=include"); !strings.Contains(page, `data-live="/live/queue?policy=include"`) {
		t.Error("the live refresh drops the filter")
	}
}

// JSON strings show as written: no \u2014 for an em dash, no \u003c for a
// "<", and html/template still escapes them for the page.
func TestArgumentsShowUnescaped(t *testing.T) {
	e := newEnv(t)
	alice := e.login("alice")
	r := e.submit(`{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"note":"a \u2014 b \u003cb\u003ebold\u003c/b\u003e \u0026 c"}}`)
	_, page := alice.get("/approvals/" + r.ID)
	if strings.Contains(page, `\u2014`) || strings.Contains(page, `\u003c`) || strings.Contains(page, `\u0026`) {
		t.Errorf("escapes shown")
	}
	if !strings.Contains(page, "a — b &lt;b&gt;bold&lt;/b&gt; &amp; c") {
		t.Errorf("the note is not shown as written")
	}
}

func TestFavicon(t *testing.T) {
	e := newEnv(t)
	b := e.browser()
	res, body := b.get("/static/favicon.svg")
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), "image/svg+xml") || !strings.HasPrefix(body, "<svg") {
		t.Errorf("favicon: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if res, _ := b.get("/favicon.ico"); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/static/favicon.svg" {
		t.Errorf("/favicon.ico: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if _, page := b.get("/login"); !strings.Contains(page, `<link rel="icon" href="/static/favicon.svg"`) {
		t.Error("pages do not name their icon")
	}
}

func TestExportsAreRedacted(t *testing.T) {
	e := newFacesEnv(t)
	e.submitAs("agent-a", secretCall)
	alice := e.login("alice")
	_, body := alice.get("/export.csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v, %d rows", err, len(rows))
	}
	if l := leaks(body); len(l) > 0 {
		t.Errorf("the CSV export carries %v", l)
	}
}

// TestHookSummaryKeepsNoPartOfASecret: the hook cuts its summary ("Claude
// Code wants to run Bash: <command>") to 300 bytes before the server
// redacts it; a key that straddled the cut no longer matched its pattern,
// and its first characters showed on the request page, the export and
// every card's headline. The cut now drops the word it would split. Found
// by a reader.
func TestHookSummaryKeepsNoPartOfASecret(t *testing.T) {
	rd, _ := redact.New(nil, []string{`AKIA[0-9A-Z]{16}`})
	e := newEnvWith(t, []gate.Route{{Name: "shell", Tool: "Bash", Channels: []string{gate.WebChannel}, Timeout: time.Hour}}, func(o *web.Options) {
		o.Present = &present.Presenter{Redact: rd, Looks: o.Service.RouteLooks}
		o.Tokens = []config.APIToken{{Name: "agent-a", Token: scopeTokens["agent-a"]}}
	})
	prefix := "Claude Code wants to run Bash: "
	cmd := "aws s3 ls " + strings.Repeat("x", 297-len(prefix)-12-17) + " --key=" + awsKey // the key starts 12 bytes before the cut
	body := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash","tool_input":{"command":"` + cmd + `"},"tool_use_id":"t1","cwd":"/r"}`
	if code, out := call(t, e.srv.URL, "agent-a", http.MethodPost, "/hooks/claude-code?wait=0s", body); code != http.StatusOK {
		t.Fatalf("hook: %d %s", code, out)
	}
	rs, _, err := e.svc.List(context.Background(), gate.Filter{})
	if err != nil || len(rs) != 1 {
		t.Fatalf("%d requests, %v", len(rs), err)
	}
	if !strings.HasSuffix(rs[0].Summary, " …") || !strings.HasPrefix(rs[0].Summary, prefix+"aws s3 ls xxx") {
		t.Fatalf("summary %q: want it cut after a whole word", rs[0].Summary)
	}
	alice := e.login("alice")
	_, page := alice.get("/approvals/" + rs[0].ID)
	_, csv := alice.get("/export.csv")
	for what, s := range map[string]string{"request page": page, "export": csv} {
		if i := strings.Index(s, awsKey[:8]); i >= 0 {
			t.Errorf("the %s shows the key's first characters: …%s", what, s[i:i+12])
		}
	}
}

// TestSearchTellsNothingRedactionHides: the history's free-text search
// (q) runs over the stored arguments, unredacted, so whether a search
// found a request told a reader shown [redacted] the value a character at
// a time ("password":"h, "password":"hu, …) on the history page, the
// exports, the charts and the API. A request found only through what the
// reader is shown redacted is left out now; the agent's own token still
// finds its own requests by their values. Found by a reader.
func TestSearchTellsNothingRedactionHides(t *testing.T) {
	e := newFacesEnv(t)
	r := e.submitAs("agent-a", secretCall)
	audrey := e.login("audrey")
	for _, q := range []string{`"password":"h`, "hunter2", "akiaiosf", "tok-1"} {
		if _, page := audrey.get("/history?q=" + url.QueryEscape(q)); strings.Contains(page, r.ID) {
			t.Errorf("history, q=%s: the request is found through a value it shows redacted", q)
		}
		if _, csv := audrey.get("/export.csv?q=" + url.QueryEscape(q)); strings.Contains(csv, r.ID) {
			t.Errorf("export, q=%s: the request is found through a value it shows redacted", q)
		}
		if _, out := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals?q="+url.QueryEscape(q), ""); strings.Contains(out, r.ID) {
			t.Errorf("API (read_all), q=%s: the request is found through a value it shows redacted", q)
		}
		if _, out := call(t, e.srv.URL, "agent-a", http.MethodGet, "/api/v1/approvals?q="+url.QueryEscape(q), ""); !strings.Contains(out, r.ID) {
			t.Errorf("API (its own token), q=%s: the agent does not find its own request", q)
		}
	}
	// What is shown is still found.
	for _, q := range []string{"prod", "deploy --key", "ops-bot", r.ID} {
		if _, page := audrey.get("/history?q=" + url.QueryEscape(q)); !strings.Contains(page, r.ID) {
			t.Errorf("history, q=%s: the request is not found by what it shows", q)
		}
	}
}

// TestSearchPagesTellNothingRedactionHides: a page of a search held the
// store's page filtered, and its cursor was the store's: with limit=1 a
// right guess of a redacted value gave an empty page whose next_cursor
// was the hidden request's id, a wrong one a page of one and no cursor.
// A page is now the requests found by what the reader is shown, and its
// cursor goes on only to one more of them. Found by a reader.
func TestSearchPagesTellNothingRedactionHides(t *testing.T) {
	e := newFacesEnv(t)
	// Older: shown, and found by both guesses through its summary.
	shown := e.submitAs("reader", `{"tool_name":"note","requires_confirmation":true,"summary":"x \"password\":\"h y \"password\":\"q"}`)
	hidden := e.submitAs("agent-a", secretCall) // Password hunter2, shown [redacted]
	if hidden.ID <= shown.ID {
		t.Fatalf("ids out of order: %s, then %s", shown.ID, hidden.ID)
	}
	answer := func(q string) string {
		_, out := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals?limit=1&q="+url.QueryEscape(q), "")
		var l struct {
			Approvals []gate.Request `json:"approvals"`
			Next      string         `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		ids := []string{}
		for _, r := range l.Approvals {
			ids = append(ids, r.ID)
		}
		return fmt.Sprintf("%v next %q", ids, l.Next)
	}
	right, wrong := answer(`"password":"h`), answer(`"password":"q`)
	if right != wrong || right != fmt.Sprintf("[%s] next %q", shown.ID, "") {
		t.Errorf("a right guess of the redacted value gives %s, a wrong one %s; want both [%s] and no cursor", right, wrong, shown.ID)
	}
	audrey := e.login("audrey")
	for _, q := range []string{`"password":"h`, `"password":"q`} {
		if _, page := audrey.get("/history?limit=1&q=" + url.QueryEscape(q)); strings.Contains(page, hidden.ID) || !strings.Contains(page, shown.ID) {
			t.Errorf("history, q=%s, limit=1: the page names the hidden request or misses the shown one", q)
		}
	}
	// Pages still go on to every request the reader finds.
	third := e.submitAs("reader", `{"tool_name":"note","requires_confirmation":true,"summary":"\"password\":\"h again"}`)
	if got := answer(`"password":"h`); got != fmt.Sprintf("[%s] next %q", third.ID, third.ID) {
		t.Errorf("limit=1 with two shown matches: %s; want [%s] and a cursor", got, third.ID)
	}
	_, out := call(t, e.srv.URL, "reader", http.MethodGet, "/api/v1/approvals?limit=1&cursor="+third.ID+"&q="+url.QueryEscape(`"password":"h`), "")
	if !strings.Contains(out, shown.ID) || strings.Contains(out, hidden.ID) || !strings.Contains(out, `"next_cursor":""`) {
		t.Errorf("the second page: %s; want %s alone and no cursor", out, shown.ID)
	}
}

// TestEditOfAHiddenValueIsShown: an approver who edits only a value
// redaction hides (another key in place of the agent's) makes the agent
// run other arguments; the request page compared the redacted forms, saw
// no change, and showed only the proposed arguments. The page and the
// export's edited column now judge the edit before redaction. Found by a
// reader.
func TestEditOfAHiddenValueIsShown(t *testing.T) {
	e := newFacesEnv(t)
	alice := e.login("alice")
	r := e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"env":"prod","cmd":"deploy --key `+awsKey+`"}}`)
	edited := `{"env":"prod","cmd":"deploy --key AKIAZZZZZZZZZZZZZZZZ"}`
	if res, body := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}, "modified_args": {edited}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve with edits: %d %s", res.StatusCode, body)
	}
	_, page := alice.get("/approvals/" + r.ID)
	if !strings.Contains(page, "Arguments: proposed and approved") || !strings.Contains(page, "hidden by redaction") {
		t.Errorf("the agent runs edited arguments, but the request page shows only the proposed ones:\n%s", page)
	}
	_, out := alice.get("/export.csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][19] != "edited" || rows[1][19] != "true" {
		t.Errorf("export: %v %q; want the column edited true", err, rows)
	}
	// Unedited: the plain arguments, and edited false.
	plain := e.submitAs("agent-a", `{"tool_name":"deploy","requires_confirmation":true,"tool_args":{"env":"staging"}}`)
	alice.post("/approvals/"+plain.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"}})
	if _, page := alice.get("/approvals/" + plain.ID); strings.Contains(page, "Arguments: proposed and approved") {
		t.Errorf("an approval without edits shows edited arguments")
	}
}

// TestOpenServerSearchFindsWhatItShows: on a server with no API tokens the
// API shows an agent's requests whole, and its search must find them by
// what it shows; it filtered them as the pages do (a second reader).
func TestOpenServerSearchFindsWhatItShows(t *testing.T) {
	rd, _ := redact.New([]string{"password", "*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	e := newEnvWith(t, facesRoutes, func(o *web.Options) { o.Present = &present.Presenter{Redact: rd, Looks: o.Service.RouteLooks} })
	if code, out := call(t, e.srv.URL, "", http.MethodPost, "/api/v1/approvals", secretCall); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, out)
	}
	if _, out := call(t, e.srv.URL, "", http.MethodGet, "/api/v1/approvals?q=hunter2", ""); !strings.Contains(out, "hunter2") {
		t.Fatalf("the open API shows the request whole, but its search does not find it by hunter2: %s", out)
	}
	audrey := e.login("audrey")
	if _, page := audrey.get("/history?q=hunter2"); strings.Contains(page, "deploy") && strings.Contains(page, "ops-bot") {
		t.Fatalf("the history page, which shows the request redacted, finds it by hunter2")
	}
}

// TestPagesSayWhatRunsBesideTheAgentsWords: the queue and the request page
// headed a call with the agent's summary, unmarked, and folded away the
// tool and its arguments ("Count rows in users" over DROP TABLE users).
// The summary is said to be the agent's, and the tool shows beside it.
// Found by a tenth reader.
func TestPagesSayWhatRunsBesideTheAgentsWords(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"db_exec","tool_args":{"query":"DROP TABLE users"},"summary":"Count rows in users"}`)
	b := e.login("alice")
	for _, path := range []string{"/", "/approvals/" + r.ID} {
		_, page := b.get(path)
		head, _, _ := strings.Cut(page, "<details")
		if !strings.Contains(head, "The agent says: Count rows in users") || !strings.Contains(head, `<span class="tool" title="tool"><code>db_exec</code></span>`) {
			t.Errorf("%s, above the folds:\n%s", path, head)
		}
	}
}

package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
)

func TestAuditorCannotDecide(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000}}`)
	b := e.login("audrey")

	_, page := b.get("/approvals/" + r.ID)
	if strings.Contains(page, `value="approve"`) {
		t.Error("the detail page offers an auditor the Approve button")
	}
	if !strings.Contains(page, "may read requests but not decide") {
		t.Error("the detail page does not tell the auditor why there is no button")
	}
	for _, verdict := range []string{"approve", "reject"} {
		res, page := b.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {b.csrf}, "verdict": {verdict}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s as auditor: status %d, want 403", verdict, res.StatusCode)
		}
		if !strings.Contains(page, "Your role (auditor) may read requests but not approve or reject them") {
			t.Errorf("%s as auditor: the page does not say why:\n%s", verdict, page)
		}
	}
	got, err := e.svc.Get(context.Background(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != gate.StatusPending || got.DecidedBy != "" {
		t.Errorf("after an auditor's attempts the request is %s by %q, want pending", got.Status, got.DecidedBy)
	}
}

func TestFormsRefuseMissingOrWrongCSRF(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":1}}`)
	alice := e.login("alice")
	other := e.login("alice") // a second session has its own token
	for _, tc := range []struct {
		name string
		csrf []string
	}{
		{"missing", nil},
		{"empty", []string{""}},
		{"wrong", []string{"not-the-token"}},
		{"another session's", []string{other.csrf}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"verdict": {"approve"}}
			if tc.csrf != nil {
				form["csrf"] = tc.csrf
			}
			res, page := alice.post("/approvals/"+r.ID+"/decide", form)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "CSRF") {
				t.Errorf("decide: status %d, want 403 naming CSRF:\n%s", res.StatusCode, page)
			}
			res, _ = alice.post("/logout", form)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("logout: status %d, want 403", res.StatusCode)
			}
		})
	}
	if got, _ := e.svc.Get(context.Background(), r.ID); got.Status != gate.StatusPending {
		t.Errorf("request is %s after refused forms, want pending", got.Status)
	}
	if res, _ := alice.get("/"); res.StatusCode != http.StatusOK {
		t.Errorf("a refused logout ended the session anyway: GET / is %d", res.StatusCode)
	}

	t.Run("login without the form's cookie", func(t *testing.T) {
		b := e.browser()
		res, _ := b.post("/login", url.Values{"csrf": {"x"}, "username": {"alice"}, "password": {testPassword}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", res.StatusCode)
		}
	})
}

func TestApproverDecidesOnTheWeb(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"vendor":"ACME","amount":60000}}`)
	alice := e.login("alice")
	res, _ := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"},
		"reason": {"within budget"}, "modified_args": {`{"vendor":"ACME","amount":50000}`}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d, want 303", res.StatusCode)
	}
	got, _ := e.svc.Get(context.Background(), r.ID)
	if got.Status != gate.StatusApproved || got.DecidedBy != "web:alice" || got.DecidedVia != "web" || got.Reason != "within budget" {
		t.Fatalf("got %s by %q via %q (%q)", got.Status, got.DecidedBy, got.DecidedVia, got.Reason)
	}
	_, page := alice.get("/approvals/" + r.ID)
	for _, want := range []string{"Proposed by the agent", "Edited by web:alice", "50000", "60000", "within budget", "decided"} {
		if !strings.Contains(page, want) {
			t.Errorf("the detail page lacks %q", want)
		}
	}

	t.Run("unchanged arguments are no edit", func(t *testing.T) {
		r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":1}}`)
		alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"},
			"modified_args": {"{\n  \"amount\": 1\n}"}})
		got, _ := e.svc.Get(context.Background(), r.ID)
		if got.Status != gate.StatusApproved || len(got.ModifiedArgs) != 0 {
			t.Errorf("got %s with modified args %s", got.Status, got.ModifiedArgs)
		}
	})
	t.Run("a second verdict is refused", func(t *testing.T) {
		res, page := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"reject"}})
		if res.StatusCode != http.StatusConflict || !strings.Contains(page, "already") {
			t.Errorf("status %d:\n%s", res.StatusCode, page)
		}
	})
}

func TestHostileArgumentsRenderAsText(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay","summary":"<script>alert('s')</script>",
		"agent_id":"\"><img src=x onerror=alert('a')>",
		"tool_args":{"note":"<script>alert(1)</script>","q":"\"><img src=x onerror=alert(2)>"},
		"metadata":{"m":"</pre><script>alert(3)</script>"}}`)
	b := e.login("alice")
	for _, path := range []string{"/", "/live/queue", "/history", "/history?q=script", "/approvals/" + r.ID, "/charts"} {
		t.Run(path, func(t *testing.T) {
			res, page := b.get(path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			for _, bad := range []string{"<script>alert", "<img src=x", "</pre><script>"} {
				if strings.Contains(page, bad) {
					t.Errorf("%s carries %q unescaped", path, bad)
				}
			}
			if path != "/charts" && !strings.Contains(page, "&lt;img src=x onerror=alert(") {
				t.Errorf("%s does not show the hostile text as text", path)
			}
		})
	}
	res, _ := b.get("/approvals/" + r.ID)
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
}

// A command with a right-to-left override runs as `rm -rf ~` but is drawn
// as `rm -rf # ~`, a comment. Pages show each hidden character as a mark
// (escaped in the raw arguments), so what an approver reads is what runs;
// the Slack, Feishu and webhook cards read the same view.
func TestHiddenCharactersAreShown(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"Bash","summary":"tidy up\u202e","tool_args":{"command":"rm -rf \u202e ~ #"}}`)
	b := e.login("alice")
	const mark = "⟨U&#43;202E⟩" // ⟨U+202E⟩, as the page's HTML writes it
	for _, path := range []string{"/", "/live/queue", "/history?status=pending", "/approvals/" + r.ID} {
		_, page := b.get(path)
		if strings.ContainsRune(page, '\u202e') {
			t.Errorf("%s carries the raw U+202E", path)
		}
		if !strings.Contains(page, "tidy up"+mark) {
			t.Errorf("%s does not show the summary with its hidden character marked", path)
		}
	}
	_, page := b.get("/approvals/" + r.ID)
	if !strings.Contains(page, "rm -rf "+mark+" ~ #") || !strings.Contains(page, `rm -rf \u202e ~ #`) {
		t.Errorf("the request's page does not show the command marked, and its raw arguments escaped")
	}
	got, err := e.svc.Get(context.Background(), r.ID)
	var args struct{ Command string }
	if err != nil || json.Unmarshal(got.ToolArgs, &args) != nil || args.Command != "rm -rf \u202e ~ #" {
		t.Errorf("the stored arguments changed: %s %v", got.ToolArgs, err)
	}
}

func TestHistoryFiltersInTheURL(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pay := e.submit(`{"tool_name":"oa__purchase_pay","agent_id":"buyer","summary":"Pay ACME","tool_args":{"vendor":"ACME"}}`)
	e.submit(`{"tool_name":"oa__purchase_refund","agent_id":"buyer","tool_args":{"vendor":"Initech"}}`)
	e.submit(`{"tool_name":"shell_exec","agent_id":"ops","requires_confirmation":true,"tool_args":{"cmd":"ls"}}`)
	e.submit(`{"tool_name":"read_file","agent_id":"ops","requires_confirmation":false}`)
	if _, err := e.svc.Decide(ctx, gate.Decision{RequestID: pay.ID, Approve: true, Actor: "web:alice", Via: "web"}); err != nil {
		t.Fatal(err)
	}
	b := e.login("audrey")
	for _, tc := range []struct {
		query     string
		want, not []string
	}{
		// People's decisions by default; the policy's verdicts on demand.
		{"", []string{"oa__purchase_pay", "oa__purchase_refund", "shell_exec"}, []string{"read_file"}},
		{"policy=include", []string{"oa__purchase_pay", "oa__purchase_refund", "shell_exec", "read_file"}, nil},
		{"policy=only", []string{"read_file"}, []string{"oa__purchase_pay", "shell_exec"}},
		{"status=approved&policy=include", []string{"oa__purchase_pay", "read_file"}, []string{"shell_exec", "oa__purchase_refund"}},
		{"status=pending&agent=ops", []string{"shell_exec"}, []string{"oa__purchase", "read_file"}},
		{"tool=oa__purchase_*", []string{"oa__purchase_pay", "oa__purchase_refund"}, []string{"shell_exec", "read_file"}},
		{"decided_by=web:alice", []string{"oa__purchase_pay"}, []string{"refund", "shell_exec", "read_file"}},
		{"route=payments", []string{"oa__purchase_pay", "oa__purchase_refund"}, []string{"shell_exec"}},
		{"q=initech", []string{"oa__purchase_refund"}, []string{"oa__purchase_pay", "shell_exec"}},
		{"since=2000-01-01&until=2000-01-31", []string{"No request matches"}, []string{"shell_exec"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			res, page := b.get("/history?" + tc.query)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			rows := page[strings.Index(page, "</form>"):]
			for _, w := range tc.want {
				if !strings.Contains(rows, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(rows, ">"+n) {
					t.Errorf("shows %q", n)
				}
			}
		})
	}
	t.Run("the form shows the filters back", func(t *testing.T) {
		_, page := b.get("/history?agent=ops&status=pending")
		if !strings.Contains(page, `name="agent" value="ops"`) || !strings.Contains(page, `value="pending" selected`) {
			t.Error("the filter form does not hold the URL's filters")
		}
	})
	t.Run("bad filter", func(t *testing.T) {
		res, page := b.get("/history?since=yesterday")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "since") {
			t.Errorf("status %d", res.StatusCode)
		}
	})
	t.Run("pages keep the filters", func(t *testing.T) {
		_, page := b.get("/history?agent=buyer&limit=1")
		m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no next link")
		}
		next := strings.ReplaceAll(m[1], "&amp;", "&")
		if !strings.Contains(next, "agent=buyer") || !strings.Contains(next, "cursor=") {
			t.Fatalf("next link %q", next)
		}
		_, page2 := b.get(next)
		if strings.Contains(page2, `rel="next"`) || !strings.Contains(page2, "Newest") {
			t.Error("the second of two pages offers another or no way back")
		}
		if strings.Count(page+page2, `class="tool" href=`) != 2 || !strings.Contains(page+page2, "refund") || !strings.Contains(page+page2, "oa__purchase_pay") {
			t.Error("the two pages do not hold the two requests")
		}
	})
}

func TestLogoutEndsTheSessionServerSide(t *testing.T) {
	e := newEnv(t)
	b := e.login("alice")
	u, _ := url.Parse(e.srv.URL)
	var session *http.Cookie
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "gatehouse_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	res, _ := b.post("/logout", url.Values{"csrf": {b.csrf}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// Replaying the old cookie must not work: the row is gone.
	replay := e.browser()
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: session.Name, Value: session.Value}})
	res, _ = replay.get("/history")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
		t.Errorf("the old session cookie still works: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := replay.get("/live/queue"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("live queue with an ended session: %d, want 401", res.StatusCode)
	}
}

func TestLiveQueueFragment(t *testing.T) {
	e := newEnv(t)
	b := e.login("alice")
	r := e.submit(`{"tool_name":"deploy","requires_confirmation":true}`)
	res, page := b.get("/live/queue")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if !strings.Contains(page, `data-id="`+r.ID+`"`) || !strings.Contains(page, `value="approve"`) || strings.Contains(page, "<html") {
		t.Errorf("fragment:\n%s", page)
	}
}

func TestSessionCookieFlags(t *testing.T) {
	for _, tc := range []struct {
		publicURL  string
		wantSecure bool
	}{
		{"", false},
		{"http://127.0.0.1:8080", false},
		{"https://gate.example.com", true},
	} {
		t.Run(tc.publicURL, func(t *testing.T) {
			e := newEnvAt(t, tc.publicURL)
			b := e.browser()
			_, page := b.get("/login")
			m := csrfField.FindStringSubmatch(page)
			res, _ := b.post("/login", url.Values{"csrf": {m[1]}, "username": {"alice"}, "password": {testPassword}})
			var session *http.Cookie
			for _, c := range res.Cookies() {
				if c.Name == "gatehouse_session" {
					session = c
				}
			}
			if session == nil {
				t.Fatal("no session cookie set at login")
			}
			if !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Secure != tc.wantSecure || session.Path != "/" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Lax, Secure=%v", session, tc.wantSecure)
			}
		})
	}
}

// An approver's edit is the call that runs: the history's row and the
// detail's headline show it, not the amount proposed (which the detail
// shows beside the edit). Before, an auditor read "Pay ACME 60,000,
// approved by web:alice" for a call run with 600. Found by a reader.
func TestEditedCallHeadsTheHistoryAndTheDetail(t *testing.T) {
	e := newEnv(t)
	r := e.submit(`{"tool_name":"oa__purchase_pay","tool_args":{"vendor":"ACME","amount":60000}}`)
	alice := e.login("alice")
	res, _ := alice.post("/approvals/"+r.ID+"/decide", url.Values{"csrf": {alice.csrf}, "verdict": {"approve"},
		"modified_args": {`{"vendor":"ACME","amount":600}`}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve with an edit: %d", res.StatusCode)
	}
	_, hist := alice.get("/history")
	row := regexp.MustCompile(`(?s)<tr>\s*<td data-label="Created".*?</tr>`).FindString(hist)
	if !strings.Contains(row, r.ID) || !strings.Contains(row, "600") || strings.Contains(row, "60,000") || strings.Contains(row, "60000") {
		t.Errorf("the history's row of a call approved and run with 600: %s", row)
	}
	_, page := alice.get("/approvals/" + r.ID)
	start, end := strings.Index(page, `<h1 class="sentence">`), strings.Index(page, `<p class="facts-line">`)
	if start < 0 || end < start {
		t.Fatalf("no headline on the detail page: %s", page)
	}
	if head := page[start:end]; !strings.Contains(head, "600") || strings.Contains(head, "60,000") || strings.Contains(head, "60000") {
		t.Errorf("the detail's headline of a call run with 600: %s", head)
	}
	if !strings.Contains(page, "60000") {
		t.Error("the detail no longer shows the amount proposed")
	}
}

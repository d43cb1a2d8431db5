package present

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/internal/redact"
)

func req(tool, args, summary string) *gate.Request {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	return &gate.Request{ID: "01J", Status: gate.StatusPending, ToolName: tool, ToolArgs: json.RawMessage(args), Summary: summary,
		Metadata: json.RawMessage(`{"cwd":"/repo"}`), AgentID: "procurement-bot", UserID: "u_42", Route: "payments",
		CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute)}
}

func TestSentenceAndBig(t *testing.T) {
	for _, tt := range []struct {
		name, tool, args, summary string
		sentence, big, kind       string
	}{
		// The agent's summary heads every face, marked as its words: they
		// may not be what the arguments do. Found by a tenth reader.
		{"the agent's words, said to be its", "db_exec", `{"query":"DROP TABLE users"}`, "Count rows in users",
			"The agent says: Count rows in users", "", ""},
		{"the agent's summary wins", "oa__purchase_pay", `{"vendor":"ACME","amount":60000,"currency":"CNY"}`, "Pay ACME ¥60,000 for GPUs",
			"The agent says: Pay ACME ¥60,000 for GPUs", "¥60,000", KindAmount},
		{"a payment built from its arguments", "oa__purchase_pay", `{"vendor":"ACME","amount":60000,"currency":"CNY"}`, "",
			"Pay ACME ¥60,000", "¥60,000", KindAmount},
		{"an amount in a string, with cents", "billing_refund", `{"amount":"1234567.5","currency":"usd","payee":"Initech"}`, "",
			"Refund Initech $1,234,567.5", "$1,234,567.5", KindAmount},
		{"an amount of a tool that does not say", "budget_set", `{"total":-300,"currency":"CHF"}`, "",
			"budget_set: -300 CHF", "-300 CHF", KindAmount},
		{"an amount with an exponent, written out", "oa__purchase_pay", `{"vendor":"ACME","amount":6e6,"price":10,"currency":"CNY"}`, "",
			"Pay ACME ¥6,000,000", "¥6,000,000", KindAmount},
		{"a small amount with a negative exponent", "billing_refund", `{"amount":"1.5E-2","currency":"EUR","payee":"Initech"}`, "",
			"Refund Initech €0.015", "€0.015", KindAmount},
		{"an amount that does not read hides the others", "oa__purchase_pay", `{"vendor":"ACME","amount":"6 million","price":10,"currency":"CNY"}`, "",
			"Call oa__purchase_pay (amount: 6 million, currency: CNY)", "", ""},
		{"an amount of another type hides the others", "oa__purchase_pay", `{"vendor":"ACME","amount":{"v":6000000},"price":10}`, "",
			"Call oa__purchase_pay (price: 10, vendor: ACME)", "", ""},
		{"a command, in the session's directory", "Bash", `{"command":"git push origin main","description":"push"}`, "",
			"Run `git push origin main` in /repo", "git push origin main", KindCommand},
		{"a command with its own directory", "shell_exec", `{"cmd":"rm -rf build","cwd":"/srv/app"}`, "",
			"Run `rm -rf build` in /srv/app", "rm -rf build", KindCommand},
		{"a file", "Write", `{"file_path":"/etc/hosts","content":"x"}`, "", "Write /etc/hosts", "/etc/hosts", KindPath},
		{"a URL", "WebFetch", `{"url":"https://example.com","prompt":"read"}`, "", "WebFetch https://example.com", "https://example.com", KindURL},
		{"nothing that stands out", "deploy", `{"env":"prod","force":true,"list":[1]}`, "", "Call deploy (env: prod, force: true)", "", ""},
		{"no arguments", "ping", `{}`, "", "Call ping", "", ""},
		{"arguments that are not an object", "ping", `[1,2]`, "", "Call ping", "", ""},
		{"a summary on many lines is one line", "x", `{}`, "line one\n\tline two", "The agent says: line one line two", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := (*Presenter)(nil).View(req(tt.tool, tt.args, tt.summary))
			if v.Sentence != tt.sentence || v.Big != tt.big || v.Kind != tt.kind {
				t.Errorf("got %q / %q / %q, want %q / %q / %q", v.Sentence, v.Big, v.Kind, tt.sentence, tt.big, tt.kind)
			}
		})
	}
}

func TestViewIsRedactedAndLooked(t *testing.T) {
	rd, err := redact.New([]string{"*token*"}, []string{`AKIA[0-9A-Z]{16}`})
	if err != nil {
		t.Fatal(err)
	}
	p := &Presenter{Redact: rd, Looks: func(route string) gate.Looks {
		if route == "payments" {
			return gate.Looks{Label: "Payments over ¥50,000", Severity: gate.Critical}
		}
		return gate.Looks{}
	}}
	r := req("shell_exec", `{"cmd":"aws s3 ls --key AKIAIOSFODNN7EXAMPLE","api_token":"t0k3n"}`, "")
	r.Reason = "key AKIAIOSFODNN7EXAMPLE seen"
	v := p.View(r)
	all := v.Sentence + v.Big + string(v.ToolArgs) + v.Reason
	if strings.Contains(all, "AKIA") || strings.Contains(all, "t0k3n") {
		t.Errorf("a secret shows: %s", all)
	}
	if v.Big != "aws s3 ls --key [redacted]" || !strings.Contains(string(v.ToolArgs), `"api_token":"[redacted]"`) {
		t.Errorf("big %q args %s", v.Big, v.ToolArgs)
	}
	if !strings.Contains(string(r.ToolArgs), "t0k3n") {
		t.Error("the request itself was changed")
	}
	if !v.Critical() || v.RouteName() != "payments (Payments over ¥50,000)" || v.Who() != "procurement-bot for u_42" {
		t.Errorf("looks: %v %q %q", v.Critical(), v.RouteName(), v.Who())
	}
	if got := v.Left(r.CreatedAt.Add(5 * time.Minute)); got != "25m left" {
		t.Errorf("left %q", got)
	}
	if got := v.Left(r.ExpiresAt.Add(time.Second)); got != "no time left" {
		t.Errorf("left %q", got)
	}
}

func TestLongValuesAreCutOnCharacters(t *testing.T) {
	v := (*Presenter)(nil).View(req("Bash", `{"command":"`+strings.Repeat("é", 2000)+`"}`, strings.Repeat("ü", 2000)))
	if n := len([]rune(v.Sentence)); n != maxSentence || !strings.HasSuffix(v.Sentence, "…") {
		t.Errorf("sentence %d characters", n)
	}
	if n := len([]rune(v.Big)); n != maxBig || strings.ContainsRune(v.Big, '\uFFFD') {
		t.Errorf("big %d characters", n)
	}
}

// A View marks hidden characters in everything it shows (the cards of every
// channel read it) and escapes them in the arguments, on a copy: the
// request itself keeps what the agent sent.
func TestViewRevealsHiddenCharacters(t *testing.T) {
	r := req("Bash", `{"command":"rm -rf `+"\u202e"+` ~ #"}`, "")
	r.AgentID = "bot\u2066"
	v := (*Presenter)(nil).View(r)
	if v.Big != "rm -rf ⟨U+202E⟩ ~ #" || v.Sentence != "Run `rm -rf ⟨U+202E⟩ ~ #` in /repo" || v.AgentID != "bot⟨U+2066⟩" ||
		string(v.ToolArgs) != `{"command":"rm -rf \u202e ~ #"}` {
		t.Fatalf("view: big %q sentence %q agent %q args %s", v.Big, v.Sentence, v.AgentID, v.ToolArgs)
	}
	if r.AgentID != "bot\u2066" || !strings.ContainsRune(string(r.ToolArgs), '\u202e') {
		t.Fatalf("the request was changed: %q %s", r.AgentID, r.ToolArgs)
	}
	r = req("deploy\tprod", `{}`, "")
	r.AgentID = "bot\nAmount: ¥10"
	if v := (*Presenter)(nil).View(r); v.AgentID != "bot⟨U+000A⟩Amount: ¥10" || v.ToolName != "deploy⟨U+0009⟩prod" {
		t.Fatalf("one-line fields: agent %q tool %q", v.AgentID, v.ToolName)
	}
	if e := (*Presenter)(nil).Event(gate.Event{Detail: "why\u202e"}); e.Detail != "why⟨U+202E⟩" {
		t.Fatalf("event detail %q", e.Detail)
	}
}

// TestSentenceIsOneLine: with no summary the sentence is built from the
// tool's name and the arguments' values, and it heads every card, its
// notification and the confirm dialog: a line break in any of them drew a
// line of its own there ("Call deploy\n\n✅ Approved by security"). The
// sentence marks line breaks as the one-line fields do. Found by a reader.
func TestSentenceIsOneLine(t *testing.T) {
	inCwd := req("Bash", `{"command":"ls"}`, "")
	inCwd.Metadata = json.RawMessage(`{"cwd":"/repo\n✅ Approved"}`)
	for _, r := range []*gate.Request{
		req("deploy\n\n✅ Approved by security", `{}`, ""),
		req("read_file", `{"path":"/srv/x\n\n✅ Approved"}`, ""),
		inCwd,
		req("pay", `{"amount":5,"vendor":"ACME\r\n✅ Approved"}`, ""),
		req("deploy\u2028\u2028✅ Approved by security", `{}`, ""), // line and paragraph separators
		req("read_file", `{"path":"/srv/x\u2029✅ Approved"}`, ""),
	} {
		v := (*Presenter)(nil).View(r)
		if strings.ContainsAny(v.Sentence+v.ToolName, "\n\r\u2028\u2029") || !strings.Contains(v.Sentence, "⟨U+") {
			t.Errorf("tool %q, args %s: sentence %q draws lines of its own", r.ToolName, r.ToolArgs, v.Sentence)
		}
	}
}

// The amount and the command are found under a key in another case, as
// Go's encoding/json (and Jackson, ASP.NET) read a struct's fields: with
// {"Amount":6000000,"price":10} every face showed ¥10 for a tool that
// pays 6,000,000, and {"Command":"rm -rf /","cmd":"ls"} showed ls. (The
// gate refuses two spellings of one key, so the lookup is unambiguous.)
// Found by a reader.
func TestKeysInAnotherCaseAreShown(t *testing.T) {
	if v := (*Presenter)(nil).View(req("oa__purchase_pay", `{"vendor":"ACME","Amount":6000000,"price":10,"currency":"CNY"}`, "")); v.Big != "¥6,000,000" {
		t.Errorf("Amount: shown %q / %q, want ¥6,000,000", v.Sentence, v.Big)
	}
	if v := (*Presenter)(nil).View(req("shell_exec", `{"Command":"rm -rf /","cmd":"ls"}`, "")); !strings.Contains(v.Big, "rm -rf /") {
		t.Errorf("Command: shown %q / %q, want rm -rf /", v.Sentence, v.Big)
	}
}

// 60,000 yuan and 60,000 yen, some 20 times apart, read differently.
// Found by a reader.
func TestYuanAndYenReadDifferently(t *testing.T) {
	cny := (*Presenter)(nil).View(req("oa__purchase_pay", `{"vendor":"ACME","amount":60000,"currency":"CNY"}`, ""))
	jpy := (*Presenter)(nil).View(req("oa__purchase_pay", `{"vendor":"ACME","amount":60000,"currency":"JPY"}`, ""))
	if cny.Big != "¥60,000" || jpy.Big != "JP¥60,000" {
		t.Errorf("CNY shown %q, JPY %q; want ¥60,000 and JP¥60,000", cny.Big, jpy.Big)
	}
}

package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fuzzPolicy holds the conditions an operator writes, over arguments an
// agent controls: conversions, sizes, string functions, nested maps.
func fuzzPolicy(t testing.TB) *Policy {
	p, err := Compile([]Route{
		{Name: "big", When: `double(args.amount) > 50000.0`, Action: Ask},
		{Name: "prod", When: `args.env == "prod" || args.target.env == "prod"`, Action: Deny},
		{Name: "many", When: `size(args.recipients) > 10 && args.recipients.all(r, r.endsWith("@example.com"))`, Action: Ask},
		{Name: "etc", When: `string(args.path).startsWith("/etc/") || args.path.matches("^/root")`, Action: Deny},
		{Name: "cheap", When: `int(args.amount) < 100 && has(args.vendor)`, Action: Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzConditions evaluates the operator's conditions over hostile
// arguments (any JSON, deep, huge, of every type). It must never panic,
// explaining must not change the verdict, and a condition that fails to
// evaluate must never let an allow route match: not its own, and not one
// behind a failed ask or deny route.
func FuzzConditions(f *testing.F) {
	for _, seed := range []string{
		`{"amount":60000}`, `{"amount":"60000"}`, `{"amount":1e308}`, `{"amount":-1e400}`, `{"amount":null}`,
		`{"amount":50,"vendor":"ACME"}`, `{"amount":99.99,"vendor":null}`, `{"env":"prod"}`, `{"target":{"env":"prod"}}`,
		`{"target":"prod"}`, `{"recipients":["a@example.com","b@example.com","c@example.com","d@example.com","e@example.com","f@example.com","g@example.com","h@example.com","i@example.com","j@example.com","k@example.com"]}`,
		`{"recipients":"not a list"}`, `{"path":"/etc/passwd"}`, `{"path":["/etc"]}`, `{"path":"/root/.ssh"}`,
		`[1,2,3]`, `"a string"`, `{}`, `{"amount":{"nested":[[[[[[[[1]]]]]]]]}}`, `{"\u0000":"\ud800"}`,
	} {
		f.Add(seed)
	}
	p := fuzzPolicy(f)
	first, err := Compile([]Route{
		{Name: "cheap-first", When: `int(args.amount) < 100 && args.vendor.startsWith("A")`, Action: Allow},
		{Name: "rest", Action: Deny},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		c := call("oa__purchase_pay", args)
		res := p.Evaluate(c, false)
		if ex := p.Evaluate(call("oa__purchase_pay", args), true); ex.Route != res.Route || ex.Action != res.Action {
			t.Fatalf("explaining changed the verdict: %d/%s, then %d/%s", res.Route, res.Action, ex.Route, ex.Action)
		}
		// An allow that comes first, with only a deny behind it: where
		// its condition fails, the call is denied.
		if first := first.Evaluate(c, false); first.Action == Allow && len(first.Errors) > 0 {
			t.Fatalf("an allow matched although its condition failed: %v (args %s)", first.Errors, args)
		} else if len(first.Errors) > 0 && first.Action != Deny {
			t.Fatalf("a failed condition ended in %q, not the deny behind it (args %s)", first.Action, args)
		}
		if res.Action != Allow {
			return
		}
		// The allow route matched: its condition held, so it evaluated
		// without an error (an error never allows), and no route before
		// it failed either (a failed ask or deny route matches).
		if len(res.Errors) > 0 {
			t.Fatalf("an allow matched although a condition failed: %v (args %s)", res.Errors, args)
		}
		var m map[string]any
		if json.Unmarshal([]byte(args), &m) != nil {
			t.Fatalf("arguments that are not an object were allowed: %s", args)
		}
	})
}

// FuzzShellAllow tries an allow pattern on hostile shell commands: it must
// never panic, and an allowed command must not carry another one through:
// the same command after a complete other command (on its own, in a
// list, a pipe or a substitution) is never allowed, whatever it holds.
// (The other command goes first: what follows a command can turn text
// after it into a comment, a continued line or a here-document, so
// appending proves nothing.)
func FuzzShellAllow(f *testing.F) {
	for _, seed := range []string{
		"ls", "ls -la", "ls && ls", "ls; rm -rf x", "ls | sh", "ls $(rm -rf x)", "ls `rm -rf x`", "ls > /etc/passwd",
		"FOO=1 ls", "bash -c 'ls'", "ls <<EOF\nrm -rf x\nEOF", "ls\nrm -rf x", "ls # ; rm -rf x", "ls '; rm -rf x'",
		"ls \"$(rm -rf x)\"", "ls \\; rm", "(ls)", "{ ls; }", "ls &", "ls || rm -rf x", "ls $((1+1))", "l\\s", "'ls'",
		"ls ${X:-$(rm -rf x)}", "ls <(rm -rf x)", "function f { rm -rf x; }; ls", "ls \x00", "ls\r\nrm",
	} {
		f.Add(seed)
	}
	p, err := Compile([]Route{{Name: "ls", Calls: []string{"Bash(ls:*)"}, Action: Allow}})
	if err != nil {
		f.Fatal(err)
	}
	allowed := func(cmd string) bool {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		return p.Evaluate(call("Bash", string(args)), false).Action == Allow
	}
	// "Deny rm, allow the rest" allows only what it could read whole.
	held, err := Compile([]Route{{Name: "no-rm", Calls: []string{"Bash(rm:*)"}, Action: Deny}, {Name: "rest", Action: Allow}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		args, _ := json.Marshal(map[string]string{"command": cmd})
		if held.Evaluate(call("Bash", string(args)), false).Action == Allow {
			var sent struct{ Command string } // as the call holds it: invalid UTF-8 is U+FFFD
			json.Unmarshal(args, &sent)
			sh := readShell(sent.Command)
			if sh.unreadable || slices.ContainsFunc(sh.parts, func(q part) bool { return q.unreadable }) {
				t.Fatalf("deny rm, allow the rest: %q, which cannot be read, was allowed", cmd)
			}
		}
		if !allowed(cmd) {
			return
		}
		for _, worse := range []string{"rm -rf /tmp/x\n" + cmd, "rm -rf /tmp/x; " + cmd, "rm -rf /tmp/x && " + cmd,
			"rm -rf /tmp/x | " + cmd, "ls $(rm -rf /tmp/x) " + cmd, "ls `rm -rf /tmp/x`; " + cmd} {
			if allowed(worse) {
				t.Fatalf("allow of Bash(ls:*) covers %q", worse)
			}
		}
	})
}

// FuzzPathRulesErrTowardCovering: an ask or deny path rule is read more
// broadly than an allow rule (gitignore's reading, folded case and Unicode
// forms), never more narrowly: whatever a rule covers as an allow rule,
// it covers as a deny rule, for Read and for a search of the path.
func FuzzPathRulesErrTowardCovering(f *testing.F) {
	for _, seed := range [][2]string{
		{"/etc/**", "/etc/passwd"}, {"./secrets/**", "secrets/k"}, {"*.pem", "a.pem"}, {".env", "/repo/.env"},
		{"src/**/*.ts", "src/a/b.ts"}, {"/", "/x"}, {"[a-c]/x", "/repo/b/x"}, {"É/*", "/repo/É/x"}, {"keys/", "keys"},
		{"**", "x/y"}, {"./", "/repo"}, {"a\\*b", "a*b"}, {"/repo/../etc/*", "/etc/x"}, {"Ａ/x", "/repo/Ａ/x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, rule, file string) {
		if strings.ContainsAny(rule, "()") {
			return
		}
		pat, err := parsePattern("Read(" + rule + ")")
		if err != nil || pat.bare {
			return
		}
		const cwd = `{"cwd":"/repo"}`
		for _, tool := range []string{"Read", "Grep"} {
			key := "file_path"
			if tool == "Grep" {
				key = "path"
			}
			args, _ := json.Marshal(map[string]string{key: file})
			c := NewCall(tool, args, json.RawMessage(cwd))
			if pat.match(c, Allow) == covers && pat.match(c, Deny) != covers {
				t.Fatalf("Read(%s) covers %s %q as an allow rule but not as a deny rule", rule, tool, file)
			}
		}
	})
}

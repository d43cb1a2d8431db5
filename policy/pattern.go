package policy

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// pattern is one Claude Code permission rule: `Bash(git push:*)`,
// `Read(/etc/**)`, `WebFetch(domain:example.com)`, `mcp__github__*`.
type pattern struct {
	src  string
	tool string // the tool the rule names; a glob for bare names
	bare bool   // no parentheses: the rule names tools only
	arg  string // inside the parentheses
	// Bash: the command's words, and whether the rule is a prefix (:*)
	// or holds wildcards.
	words []string
	line  string // words joined by single spaces
	// dashed is the first two words as git names a command's program
	// (git-push), "" for a rule of one word.
	dashed string
	prefix bool
	glob   bool
	// byPath says the rule's command is a path (/opt/x/run.sh): it is
	// looked for as written, not as the base name of a word.
	byPath bool
	// broad is a path rule as an ask or deny rule reads it (broadPath),
	// folded and as written.
	broad, broadRaw string
}

// shellTool says a tool is Bash or another agent client's name for its
// shell tool (Cursor, Copilot CLI, Gemini CLI), whose calls carry the
// command in "command" as Bash's do: a Bash(...) pattern covers them too,
// so one rule holds whichever client runs the command. (A switch, not a
// map: it is asked for every Bash pattern on every call.)
func shellTool(tool string) bool {
	switch tool {
	case "Bash", "Shell", "bash", "run_shell_command":
		return true
	}
	return unreadShell(tool)
}

// shellTools are the names shellTool takes (TestShellToolsListed), for
// NeverBoth.
var shellTools = []string{"Bash", "Shell", "bash", "run_shell_command", "powershell", "write_bash", "write_powershell"}

// clientTool says a tool name is one of the agent clients' own tools that
// rules read the arguments of: a shell, a file tool or WebFetch.
func clientTool(tool string) bool {
	_, file := fileTools[tool]
	return file || shellTool(tool) || tool == "WebFetch"
}

// unreadShell says a shell tool's commands are not read as Bash: Copilot
// CLI's PowerShell (its own syntax, and Invoke-Expression), and the input
// it types into a running shell (write_bash, write_powershell). A Bash(…)
// pattern never allows them, and an ask or deny one holds them.
func unreadShell(tool string) bool {
	switch tool {
	case "powershell", "write_bash", "write_powershell":
		return true
	}
	return false
}

// movesDir says a shell call runs its command in another directory than the
// one the client reported: Gemini CLI's run_shell_command takes it in
// dir_path (directory in older versions). A relative command or file, or a
// program that reads its directory (npm test, make, git), is then another
// one than the allow names, as after a cd. "", "." and the reported cwd
// stay where they are.
func (c *Call) movesDir() bool {
	for _, k := range []string{"dir_path", "directory"} {
		if v, ok := c.Args[k]; ok {
			s, ok := v.(string)
			if !ok {
				return true
			}
			// Not trimmed: Gemini CLI runs in " " as given, a directory of that name.
			if s != "" && path.Clean(s) != "." && (c.cwd() == "" || path.Clean(s) != path.Clean(c.cwd())) {
				return true
			}
		}
	}
	return false
}

// fileTool is a tool that reads, edits or searches files, and where its
// call names the file or directory.
type fileTool struct {
	edits  bool // writes the file
	search bool // reads every file under a directory (the cwd when the call names none)
	many   bool // reads files its call lists by globs (not read here)
	// keys hold the paths; every one present is read, and a present one
	// that is not a string is a path that cannot be read.
	keys []string
}

// fileTools are Claude Code's file tools and the other agent clients'
// ones. As in Claude Code, an Edit(…) rule covers every tool that edits
// files and a Read(…) rule every tool that reads them (so a deny of
// Edit(/etc/**) is not dodged by Write, nor a deny of Read(./secrets/**)
// by Grep or by Gemini CLI's read_file); a Write, MultiEdit or
// NotebookEdit rule is an Edit rule. (A switch would do as well; the
// table also says where each path is.)
var fileTools = map[string]fileTool{
	// Claude Code.
	"Read":         {keys: []string{"file_path"}},
	"Write":        {edits: true, keys: []string{"file_path"}},
	"Edit":         {edits: true, keys: []string{"file_path"}},
	"MultiEdit":    {edits: true, keys: []string{"file_path"}},
	"NotebookEdit": {edits: true, keys: []string{"notebook_path", "file_path"}},
	"Grep":         {search: true, keys: []string{"path"}},
	"Glob":         {search: true, keys: []string{"path"}},
	"LS":           {search: true, keys: []string{"path"}},
	// Gemini CLI (the older names of its arguments too).
	"read_file":           {keys: []string{"file_path", "absolute_path", "path"}},
	"write_file":          {edits: true, keys: []string{"file_path", "path"}},
	"replace":             {edits: true, keys: []string{"file_path", "path"}},
	"list_directory":      {search: true, keys: []string{"dir_path", "path"}},
	"glob":                {search: true, keys: []string{"dir_path", "path"}},
	"search_file_content": {search: true, keys: []string{"dir_path", "path"}},
	"grep_search":         {search: true, keys: []string{"dir_path", "path"}},
	"read_many_files":     {many: true},
	// Copilot CLI.
	"view":   {keys: []string{"path"}},
	"create": {edits: true, keys: []string{"path"}},
	"edit":   {edits: true, keys: []string{"path"}},
	"grep":   {search: true, keys: []string{"path"}},
	// Codex: a patch, whose files are named in its text (*** Update File:
	// …), not read here: an Edit rule never allows it, and an ask or deny
	// one holds it.
	"apply_patch": {edits: true, many: true},
	// Cursor.
	"Delete":     {edits: true, keys: []string{"path", "file_path", "target_file"}},
	"StrReplace": {edits: true, keys: []string{"path", "file_path", "target_file"}},
}

// coversFileTool says a path rule on ruleTool applies to a call of tool.
func coversFileTool(ruleTool, tool string) bool {
	ft, ok := fileTools[tool]
	return ok && ft.coveredBy(ruleTool, tool)
}

// coveredBy says a path rule on ruleTool applies to a call of tool: a
// Read rule to the tools that read, an Edit rule (or a Write, MultiEdit
// or NotebookEdit one, which Claude Code reads as Edit) to those that edit.
func (t fileTool) coveredBy(ruleTool, tool string) bool {
	switch ruleTool {
	case "Read":
		return !t.edits
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return t.edits
	}
	return false
}

// paths are the files or directories the call names, one for each of the
// tool's keys present (a client may send an old name and a new one);
// unread when one is not a string.
func (t fileTool) paths(c *Call) (ps []string, unread bool) {
	for _, k := range t.keys {
		if v, present := c.Args[k]; present {
			s, ok := v.(string)
			if !ok {
				return nil, true
			}
			ps = append(ps, s)
		}
	}
	return ps, false
}

func parsePattern(s string) (pattern, error) {
	p := pattern{src: s}
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if s == "" || strings.ContainsAny(s, ") ") {
			return p, fmt.Errorf("%q is not a tool name or Tool(argument)", s)
		}
		p.tool, p.bare = s, true
		return p, nil
	}
	if !strings.HasSuffix(s, ")") || open == 0 {
		return p, fmt.Errorf("%q: expected Tool(argument)", s)
	}
	p.tool, p.arg = s[:open], s[open+1:len(s)-1]
	if strings.ContainsAny(p.tool, "*? ") {
		return p, fmt.Errorf("%q: a tool with an argument pattern must be named exactly", s)
	}
	if strings.TrimSpace(p.arg) == "" {
		return p, fmt.Errorf("%q: empty argument pattern (write %s alone for every call)", s, p.tool)
	}
	switch p.tool {
	case "Bash":
		arg := p.arg
		if rest, ok := strings.CutSuffix(arg, ":*"); ok {
			p.prefix, arg = true, rest
		} else if rest, ok := strings.CutSuffix(arg, " *"); ok && strings.TrimSpace(rest) != "" && !strings.ContainsAny(rest, "*?") {
			// As in Claude Code, `git push *` is `git push:*`: the command
			// and anything after it, so ask and deny rules read it as they
			// read :* rules (options after the arguments, words made at run
			// time), not as text.
			p.prefix, arg = true, rest
		}
		p.glob = strings.ContainsAny(arg, "*")
		p.words = strings.Fields(arg)
		if len(p.words) == 0 {
			return p, fmt.Errorf("%q: no command", s)
		}
		p.line = strings.Join(p.words, " ")
		if len(p.words) > 1 {
			p.dashed = p.words[0] + "-" + p.words[1]
		}
		p.byPath = strings.IndexByte(p.words[0], '/') >= 0
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		if strings.HasPrefix(strings.TrimSpace(p.arg), "~") {
			// Claude Code reads ~ as the home directory of the machine the
			// agent runs on, which the gate does not know.
			return p, fmt.Errorf("%q: ~ is the agent's home directory, which the gate cannot see; write the path in full (/home/dev/.ssh/**) or with a wildcard (/home/*/.ssh/**)", s)
		}
		p.broad, p.broadRaw = broadPath(fold(strings.TrimSpace(p.arg))), broadPath(strings.TrimSpace(p.arg))
	case "WebFetch":
		d, ok := strings.CutPrefix(p.arg, "domain:")
		if !ok || d == "" || strings.ContainsAny(d, "/:@ ") {
			return p, fmt.Errorf("%q: expected WebFetch(domain:example.com)", s)
		}
		p.arg = strings.ToLower(d)
	}
	return p, nil
}

// tools are the tool names the pattern applies to, as match reads them,
// and false when it names them by a glob (a bare mcp__docs__*).
func (p *pattern) tools() ([]string, bool) {
	if p.bare && strings.ContainsAny(p.tool, "*?") {
		return nil, false
	}
	names := []string{p.tool}
	if p.tool == "Bash" {
		names = append(names, shellTools...)
	}
	if !p.bare && p.broad != "" {
		for t, ft := range fileTools {
			if ft.coveredBy(p.tool, t) {
				names = append(names, t)
			}
		}
	}
	return names, true
}

// NeverBoth says no call can match both a route's tool glob and one of its
// call patterns: each pattern names its tools exactly, and the glob matches
// none of them (tool: deploy with call: Bash(git push:*)), so the route
// matches nothing. Patterns that do not parse are left to CheckCall.
func NeverBoth(toolGlob string, calls []string) bool {
	if toolGlob == "" || len(calls) == 0 {
		return false
	}
	for _, c := range calls {
		p, err := parsePattern(c)
		if err != nil {
			return false
		}
		names, exact := p.tools()
		if !exact || slices.ContainsFunc(names, func(n string) bool { return globMatch(toolGlob, n) }) {
			return false
		}
	}
	return true
}

// fit is how a pattern stands to a call.
type fit int

const (
	misses fit = iota
	covers
	// unread: what the pattern tests cannot be read from the call (a
	// command that does not parse, a part whose code is made at run time,
	// a relative path with no working directory, a host that does not
	// read), so it may or may not be what the pattern names.
	unread
)

// match reports how the pattern, on a route with this action, stands to
// the call. An allow pattern must cover every part of a shell command,
// read literally, and never covers what cannot be read; an ask or deny
// pattern covers the call if it covers any part, read generously (see
// broadMatch), and is unread if it covers none and some part cannot be
// read.
func (p *pattern) match(c *Call, action Action) fit {
	strict := action.mayAllow()
	// unknown is what an unread call gives: nothing, to an allow pattern.
	unknown := unread
	if strict {
		unknown = misses
	}
	if p.bare {
		if c.MCPServer && strict && clientTool(p.tool) {
			// An MCP server's tool that bears a client tool's name (a
			// shell tool called Bash) is none of the client's: no
			// Bash(…), Read(…) or WebFetch(…) rule reads it, so the rule
			// that names the client's tool alone allows it no more. An
			// ask or deny of the name still holds it.
			return misses
		}
		return fitIf(globMatch(p.tool, c.Tool) || p.tool == "Bash" && shellTool(c.Tool) && !c.MCPServer)
	}
	if c.MCPServer && (p.tool == "Bash" || p.tool == "WebFetch" || p.broad != "") {
		// A Cursor MCP call's bare name (Shell, Delete, Read) is a tool of
		// its server's, not the client's own shell or file tool.
		return misses
	}
	// (p.broad is set on path rules only: other rules skip the table.)
	if c.Tool != p.tool && !(p.tool == "Bash" && shellTool(c.Tool)) && !(p.broad != "" && coversFileTool(p.tool, c.Tool)) {
		return misses
	}
	switch p.tool {
	case "Bash":
		if unreadShell(c.Tool) {
			return unknown
		}
		sh := c.shell()
		if sh == nil || sh.unreadable {
			return unknown // no command, or one that does not parse
		}
		if len(sh.parts) == 0 {
			return misses
		}
		if strict {
			if c.movesDir() {
				// Gemini CLI runs the command in dir_path (or directory):
				// `cd DIR && COMMAND`, whose cd no allow pattern covers.
				return misses
			}
			for i := range sh.parts {
				if !p.strictMatch(&sh.parts[i]) {
					return misses
				}
			}
			return covers
		}
		f := misses
		for i := range sh.parts {
			q := &sh.parts[i]
			// What a part plainly names counts first (BASH_ENV=x rm -rf ~
			// is an rm, however unreadable the rest).
			switch m := p.broadMatch(q); {
			case m == covers:
				return covers
			case m == unread || q.unreadable || q.runsMade:
				f = unread
			}
		}
		return f
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		return p.fileFit(c, strict, unknown)
	case "WebFetch":
		u, ok := c.stringArg("url")
		if !ok {
			return misses
		}
		parsed, err := url.Parse(strings.TrimSpace(u))
		if err != nil || parsed.Host == "" {
			return unknown // a URL we cannot read
		}
		// The host as a URL parser (WHATWG, as the clients' fetch uses)
		// reads it: EVIL.com, fullwidth letters and ideographic full
		// stops (evil。com) are evil.com.
		host := strings.TrimSuffix(parsed.Hostname(), ".")
		if ip := net.ParseIP(host); ip == nil {
			// An address ([2001:db8::1]) is no name: a domain rule never
			// covers it, and it reads.
			if host, err = idna.Lookup.ToASCII(host); err != nil {
				return unknown
			}
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		return fitIf(host == p.arg || strings.HasSuffix(host, "."+p.arg))
	}
	if !strict {
		// Any string of the call's may be what the rule names: a second
		// argument must not hide the first ({"sql":"DROP …","limit":10}).
		return fitIf(c.anyString(func(s string) bool { return globMatch(p.arg, s) }))
	}
	v, ok := c.singleString()
	return fitIf(ok && globMatch(p.arg, v))
}

// fileFit is a path rule's test of a file tool's call. An allow rule must
// cover every path the call names; an ask or deny rule covers the call
// if it covers any (read broadly: broadPath), and is unread if one cannot
// be placed. A tool that searches a directory is covered by an allow rule
// only when the rule covers everything under it (Read(/repo/**) and a
// search of /repo/src); to an ask or deny rule it is covered when the
// directory is within what the rule names, and unread when the rule may
// name something under it (Read(./.env) and a search of the repository,
// which may read .env).
func (p *pattern) fileFit(c *Call, strict bool, unknown fit) fit {
	ft := fileTools[c.Tool] // the rule covers the call's tool: it is in the table
	ps, bad := ft.paths(c)
	if bad || ft.many {
		return unknown
	}
	if len(ps) == 0 {
		if !ft.search {
			return unknown // no path
		}
		ps = []string{"."} // the tools search the working directory by default
	}
	if c.Tool == "Glob" || c.Tool == "glob" {
		// A glob's pattern may leave its directory: ../.., /etc/*, and
		// inside braces or escapes ({../x,y}, {,/etc/}x, \.\./x).
		g, _ := c.stringArg("pattern")
		if path.IsAbs(g) || strings.HasPrefix(g, "~") || strings.Contains(g, "..") || strings.ContainsAny(g, `\`) ||
			strings.Contains(g, "{/") || strings.Contains(g, ",/") {
			return unknown
		}
		// Nor through /proc/self/root and the like (path /proc/self,
		// pattern root/etc/*).
		for _, fp := range ps {
			if !placed(path.Join(fp, g), c.cwd()) {
				return unknown
			}
		}
	}
	cwd, fcwd, anchored := c.cwd(), fold(c.cwd()), p.anchored(c)
	f := misses
	for _, fp := range ps {
		if fp == "" && ft.search {
			fp = "."
		}
		switch {
		case !placed(fp, cwd) || !anchored:
			if strict {
				return misses
			}
			f = unread
		case strict && ft.search:
			if !strings.HasSuffix(p.arg, "/**") || !pathMatch(p.arg, fp, cwd) {
				return misses
			}
		case strict:
			if !pathMatch(p.arg, fp, cwd) {
				return misses
			}
		case pathMatch(p.broad, fold(fp), fcwd) || pathMatch(p.broadRaw, fp, cwd):
			return covers
		case ft.search && (mayHold(p.broad, fold(fp), fcwd) || mayHold(p.broadRaw, fp, cwd)):
			f = unread
		}
	}
	if strict {
		return covers
	}
	return f
}

// placed says a path the call names can be read as one place: not under
// ~ (the home directory of a machine the gate does not see), not relative
// without an absolute working directory to be relative to, and not
// through the links the system makes to other places (/proc/self/root is
// /, /proc/self/cwd the working directory, /dev/fd/3 an open file).
func placed(p, cwd string) bool {
	if strings.HasPrefix(p, "~") || !path.IsAbs(p) && !path.IsAbs(cwd) {
		return false
	}
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	p = path.Clean(p)
	if strings.HasPrefix(p, "/dev/fd/") {
		return false
	}
	if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
		for _, seg := range strings.Split(rest, "/")[1:] {
			switch {
			case seg == "root", seg == "cwd", seg == "fd", seg == "exe", seg == "map_files":
				return false // /proc/self/root, /proc/1/task/1/cwd, …
			case strings.ContainsAny(seg, "*?[{"):
				return false // a Glob pattern's r*t
			}
		}
	}
	return true
}

// anchored says a path rule has a place to stand for this call: it is
// absolute, or the call has an absolute working directory it is relative to.
func (p *pattern) anchored(c *Call) bool {
	return path.IsAbs(p.arg) || path.IsAbs(c.cwd())
}

func fitIf(ok bool) fit {
	if ok {
		return covers
	}
	return misses
}

// strictMatch is an allow pattern's test of one part: the command as it
// is written, with nothing before it (no FOO=1, no sudo) and no output
// into files.
func (p *pattern) strictMatch(q *part) bool {
	if q.unreadable || q.env || q.writes || len(q.words) == 0 {
		return false
	}
	// The line joins the words with spaces, so a word that holds one
	// would pass for two: "ls /../../usr/bin/rm" (one word, run from a
	// directory named "ls ") or "git status" (a program of that name on
	// PATH) would read as the rule's ls and git status. The rule's words
	// hold no space; the command's name must hold none (whatever a * in
	// the rule spans), nor the words the rule's own words stand for, up
	// to its first wildcard.
	for i, w := range p.words {
		if i >= len(q.words) || i > 0 && strings.ContainsAny(w, "*") {
			break
		}
		if strings.ContainsFunc(q.words[i], unicode.IsSpace) {
			return false
		}
		if strings.ContainsAny(w, "*") {
			break
		}
	}
	return p.lineMatch(q.line)
}

func (p *pattern) lineMatch(line string) bool {
	switch {
	case p.glob && p.prefix:
		return globMatch(p.line+"*", line)
	case p.glob:
		return globMatch(p.line, line)
	case p.prefix:
		return line == p.line || len(line) > len(p.line) && line[len(p.line)] == ' ' && line[:len(p.line)] == p.line
	}
	return line == p.line
}

// broadMatch is an ask or deny pattern's test of one part, which errs
// toward matching: the rule's command is looked for at any word of the
// part (so sudo, env, xargs, timeout and the like before it do not hide
// it), and options between the rule's words are skipped (so `git -C app
// push` and `git --no-pager push` are pushes).
func (p *pattern) broadMatch(q *part) fit {
	if p.glob {
		return p.globAnywhere(q)
	}
	var f *follower
	found := misses
	for i := range q.words {
		next := 1
		if n := p.named(q, i); n != p.words[0] {
			// git-push (git's exec-path, exec -a git-push git) is git push.
			if n != p.dashed || p.dashed == "" {
				continue
			}
			next = 2
		}
		if f == nil {
			f = &follower{p: p, words: q.words, memo: map[[3]int]fit{}}
		}
		switch f.follows(i+1, next, false) {
		case covers:
			return covers
		case unread:
			found = unread
		}
	}
	return found
}

// globAnywhere is a glob rule's broadMatch: the rule tried from every word,
// as written (Bash(*prod*) and /opt/prod/run.sh) and as the command it
// names (/usr/bin/git is git). A rule that starts with * matches from some
// word only if it matches the whole line (the * takes what comes before),
// so it is tried once; others are tried within a budget of bytes, beyond
// which the part is unread rather than read for minutes (a line of many
// thousand words that each begin the rule).
func (p *pattern) globAnywhere(q *part) fit {
	if strings.HasPrefix(p.line, "*") {
		return fitIf(p.lineMatch(q.line))
	}
	budget := 64<<10 + 4*len(q.line)
	for i, w := range q.words {
		firsts := []string{w}
		if n := p.named(q, i); n != w {
			firsts = append(firsts, n)
		}
		for _, first := range firsts {
			if !globMatch(p.words[0], first) {
				continue
			}
			if budget -= len(q.line); budget < 0 {
				return unread
			}
			if p.lineMatch(strings.Join(append([]string{first}, q.words[i+1:]...), " ")) {
				return covers
			}
		}
	}
	return misses
}

// named is the part's word i as an ask or deny rule's command name reads
// it: a command run by its path (/usr/bin/git) is the command (git),
// unless the rule names a path itself.
func (p *pattern) named(q *part, i int) string {
	if p.byPath {
		return q.words[i]
	}
	return q.names[i]
}

// follower decides whether the rule's words p.words[j:] come next in
// words[i:], in order, with only options between them, where an option
// without "=" may take the next word as its value (git -C dir push), and
// any words before an option the rule names (git push origin --force);
// after them an exact rule allows only options, a prefix rule anything.
// It is memoised: a hostile line of options cannot make it exponential.
type follower struct {
	p     *pattern
	words []string
	memo  map[[3]int]fit
}

func (f *follower) follows(i, j int, mayBeValue bool) fit {
	key := [3]int{i, j, 0}
	if mayBeValue {
		key[2] = 1
	}
	if v, ok := f.memo[key]; ok {
		return v
	}
	v := f.step(i, j, mayBeValue)
	f.memo[key] = v
	return v
}

// step is one word of follows: covers if one way of reading the words
// covers the rule, unread if none does but a word made at run time ($X,
// {a,b}) may stand where the rule's words are, misses otherwise.
func (f *follower) step(i, j int, mayBeValue bool) fit {
	if j == len(f.p.words) && f.p.prefix {
		return covers
	}
	if i == len(f.words) {
		return fitIf(j == len(f.p.words))
	}
	w := f.words[i]
	best := misses
	if j < len(f.p.words) && w == f.p.words[j] {
		if v := f.follows(i+1, j+1, false); v == covers {
			return covers
		} else if v == unread {
			best = unread
		}
	}
	if madeAtRunTime(w) {
		// git push $F, git push {--force,}, git $(echo push) --force: the
		// word may be the rule's next words, or nothing.
		best = unread
	}
	var next fit
	switch {
	case strings.HasPrefix(w, "-") && w != "-":
		next = f.follows(i+1, j, !strings.Contains(w, "="))
	case j < len(f.p.words) && strings.HasPrefix(f.p.words[j], "-"):
		// An option the rule names may come after arguments, as most
		// commands take it there: git push origin main --force.
		next = f.follows(i+1, j, false)
	case mayBeValue:
		next = f.follows(i+1, j, false)
	default:
		return best
	}
	if next == covers {
		return covers
	}
	if next == unread {
		best = unread
	}
	return best
}

// madeAtRunTime says a word's value is made when the command runs: a
// substitution or a variable (madeWord in a part's words) or a brace
// expansion ({--force,}, {a..c}).
func madeAtRunTime(w string) bool {
	if w == madeWord {
		return true
	}
	open := strings.IndexByte(w, '{')
	return open >= 0 && strings.IndexByte(w[open:], '}') >= 0 && (strings.Contains(w[open:], ",") || strings.Contains(w[open:], ".."))
}

// broadPath is a path rule as an ask or deny rule reads it, which errs
// toward covering, as gitignore (which Claude Code's path rules follow)
// and case-insensitive file systems (macOS, Windows) do: a rule covers
// what is under what it names (keys/ and keys cover keys/id), a rule with
// no slash covers its name at any depth under the cwd (*.pem covers
// a/b/x.pem), and letter case and Unicode forms do not count (fold). An
// allow rule matches the path as written.
func broadPath(pat string) string {
	if name := strings.TrimSuffix(pat, "/"); !strings.Contains(name, "/") && name != "" && name != "." && name != ".." {
		pat = "**/" + pat // a name: at any depth
	}
	if pat = strings.TrimRight(pat, "/"); !strings.HasSuffix(pat, "/**") {
		pat += "/**"
	}
	return pat
}

// fold is a path with letter case and Unicode form (NFC or NFD) folded.
func fold(s string) string {
	return strings.ToLower(norm.NFC.String(s))
}

// pathMatch matches a path against a glob where ** spans directories. A
// relative pattern is relative to the call's working directory; paths are
// cleaned first, so /etc/../etc/passwd is /etc/passwd.
func pathMatch(pat, p, cwd string) bool {
	ps, ss, ok := segments(pat, p, cwd)
	return ok && segmentsMatch(ps, ss)
}

// mayHold says a path rule may cover dir or something under it: the
// rule's leading segments match all of dir's (a ** matches the rest).
func mayHold(pat, dir, cwd string) bool {
	ps, ds, ok := segments(pat, dir, cwd)
	if !ok {
		return false
	}
	if len(ds) == 1 && ds[0] == "" {
		return true // the root holds everything
	}
	for i, d := range ds {
		if i == len(ps) {
			return false // the rule names a place above dir, not in it
		}
		if ps[i] == "**" {
			return true
		}
		if ok, _ := path.Match(ps[i], d); !ok {
			return false
		}
	}
	return true
}

// segments are a rule's and a path's segments, both absolute: the path
// joined to the cwd and cleaned, the rule placed by placePattern; ok is
// false when either has no place.
func segments(pat, p, cwd string) (ps, ss []string, ok bool) {
	if p == "" {
		return nil, nil, false
	}
	if !path.IsAbs(p) {
		if cwd == "" {
			return nil, nil, false
		}
		p = path.Join(cwd, p)
	}
	if pat, ok = placePattern(pat, cwd); !ok {
		return nil, nil, false
	}
	return strings.Split(strings.Trim(pat, "/"), "/"), strings.Split(strings.Trim(path.Clean(p), "/"), "/"), true
}

// placePattern is a path rule made absolute and cleaned as paths are
// (/etc//shadow is /etc/shadow): a relative rule is joined to the call's
// cwd, or has no place when there is none.
func placePattern(pat, cwd string) (string, bool) {
	if path.IsAbs(pat) {
		return path.Clean(pat), true
	}
	for strings.HasPrefix(pat, "./") {
		pat = strings.TrimLeft(pat[2:], "/") // .//x is ./x, not /x
	}
	if cwd == "" {
		return "", false
	}
	// The caller's cwd is a place, not a pattern: its *, ? and [ must not
	// widen the rule.
	return path.Join(globEscaper.Replace(cwd), pat), true
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)

func segmentsMatch(pat, segs []string) bool {
	// next[j] says whether pat[i+1:] matches segs[j:], cur[j] pat[i:]:
	// one pass per segment of the rule, so a path of many segments costs
	// rule × path steps, not a step for every way the rule's ** could
	// split it (exponential in the number of **).
	next, cur := make([]bool, len(segs)+1), make([]bool, len(segs)+1)
	next[len(segs)] = true
	for i := len(pat) - 1; i >= 0; i-- {
		for j := len(segs); j >= 0; j-- {
			switch {
			case pat[i] == "**":
				cur[j] = next[j] || j < len(segs) && cur[j+1]
			case j == len(segs):
				cur[j] = false
			default:
				ok, _ := path.Match(pat[i], segs[j])
				cur[j] = ok && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// globMatch matches s against a pattern where * is any run of characters
// and ? one character (no special meaning for /). It walks both strings
// by rune without allocating, with one backtrack point: linear in
// practice, never exponential, whatever a config holds.
func globMatch(pattern, s string) bool {
	if strings.IndexByte(pattern, '*') < 0 && strings.IndexByte(pattern, '?') < 0 {
		return pattern == s
	}
	// The pattern's ASCII text before its first wildcard must begin s:
	// compared as bytes (an ASCII rune is its one byte in both strings),
	// which turns most tools away before the walk, and the walk starts
	// after it.
	lit := 0
	for lit < len(pattern) && pattern[lit] != '*' && pattern[lit] != '?' && pattern[lit] < utf8.RuneSelf {
		lit++
	}
	if len(s) < lit || s[:lit] != pattern[:lit] {
		return false
	}
	pi, si, star, mark := lit, lit, -1, 0
	for si < len(s) {
		if pi < len(pattern) {
			pr, pw := utf8.DecodeRuneInString(pattern[pi:])
			sr, sw := utf8.DecodeRuneInString(s[si:])
			switch {
			case pr == '*':
				star, mark = pi, si
				pi += pw
				continue
			case pr == '?' || pr == sr:
				pi += pw
				si += sw
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Let the last * take one more rune and retry from after it.
		_, mw := utf8.DecodeRuneInString(s[mark:])
		mark += mw
		pi, si = star+1, mark
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

package policy

import (
	"path"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A shell command, read the way Bash would run it: every simple command
// in it (after &&, ||, ;, |, newlines, inside $(…), backticks, subshells,
// functions, here-documents fed to a shell, and `bash -c "…"`) is a part.
// Patterns are matched against the parts, never against the raw string,
// so `ls; rm -rf x` is two commands and quoting cannot hide one.
type shellCmd struct {
	parts []part
	// unreadable says the command could not be parsed; it then has no parts.
	unreadable bool
}

// part is one simple command.
type part struct {
	words []string // literal words, quotes removed; the first is the command
	line  string   // the words joined by single spaces
	// env says environment assignments precede the command (FOO=1 cmd),
	// or the part is itself an assignment or a declaration (export X=y).
	env bool
	// writes says the part redirects its output into a file.
	writes bool
	// unreadable says what the part runs cannot be read from the command:
	// a command name built at run time ($CMD, $(which x)), or a shell fed
	// code that is not in the command (`sh -c "$X"`, `curl … | sh`,
	// `eval "$X"`).
	unreadable bool
}

// maxShellDepth bounds the nesting of shells in shells (bash -c "bash -c …").
const maxShellDepth = 8

// readShell parses a command string into its parts.
func readShell(cmd string) *shellCmd {
	s := &shellCmd{}
	if !s.read(cmd, 0) {
		s.parts, s.unreadable = nil, true
	}
	for i := range s.parts {
		s.parts[i].line = strings.Join(s.parts[i].words, " ")
	}
	return s
}

// parsers keeps Bash parsers for reuse (mvdan's Parser may be reused once
// a Parse has returned). A Parser is about 2.3 KB; making one per call was
// a third of the bytes a Bash call's evaluation allocated, and the garbage
// collections they cost set the evaluation's p99 (docs/benchmark.md).
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// read adds the parts of a piece of shell code; false means it cannot be parsed.
func (s *shellCmd) read(code string, depth int) bool {
	if depth > maxShellDepth {
		return false
	}
	parser := parsers.Get().(*syntax.Parser)
	f, err := parser.Parse(strings.NewReader(code), "")
	parsers.Put(parser) // done with: the tree it made holds nothing of it
	if err != nil {
		return false
	}
	ok := true
	// Statements whose standard input is code: a shell at the end of a
	// pipe, also inside a group or subshell there (made at the first
	// pipe; most commands have none).
	var piped map[*syntax.Stmt]bool
	syntax.Walk(f, func(n syntax.Node) bool {
		if !ok {
			return false
		}
		switch x := n.(type) {
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				if piped == nil {
					piped = map[*syntax.Stmt]bool{}
				}
				syntax.Walk(x.Y, func(n syntax.Node) bool {
					if st, isStmt := n.(*syntax.Stmt); isStmt {
						piped[st] = true
					}
					return true
				})
			}
		case *syntax.Stmt:
			if c, isCall := x.Cmd.(*syntax.CallExpr); isCall {
				ok = s.call(c, x, piped[x], depth)
			} else if writesFile(x.Redirs) {
				// { …; } > f, ( … ) > f, a loop's output, a bare > f: a
				// write no allow pattern lets through.
				s.parts = append(s.parts, part{words: []string{}, writes: true})
			}
		case *syntax.DeclClause:
			// export / declare / local / readonly change the environment of
			// what follows: a part no allow pattern lets through.
			p := part{words: []string{x.Variant.Value}, env: true, unreadable: hidesCode(x)}
			for _, a := range x.Args {
				if a.Name != nil {
					p.words = append(p.words, a.Name.Value)
				}
			}
			s.parts = append(s.parts, p)
		case *syntax.ForClause:
			// for NAME in …: an assignment to NAME (for PATH in /tmp/x).
			if it, isIter := x.Loop.(*syntax.WordIter); isIter && it.Name != nil {
				s.parts = append(s.parts, part{words: []string{it.Name.Value}, env: true})
			}
		case *syntax.ParamExp:
			// ${X:=v} and ${X=v} assign X.
			if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && x.Param != nil {
				s.parts = append(s.parts, part{words: []string{x.Param.Value}, env: true})
			}
		case *syntax.BinaryArithm:
			switch x.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
				syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn, syntax.AndBoolAssgn,
				syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				s.parts = append(s.parts, part{words: []string{"(( = ))"}, env: true}) // an arithmetic assignment
			}
		case *syntax.UnaryArithm:
			if x.Op == syntax.Inc || x.Op == syntax.Dec {
				s.parts = append(s.parts, part{words: []string{"(( ++ ))"}, env: true})
			}
		case *syntax.LetClause, *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.TestClause:
			// Arithmetic (let, ((…)), $((…)), and the operands of [[ … ]])
			// expands the subscripts of quoted names as it evaluates them:
			// let 'x[$(cmd)]=1' runs cmd, which the parse shows as text.
			if hidesCode(n) {
				s.parts = append(s.parts, part{words: []string{"(( ))"}, unreadable: true})
			}
		}
		return true
	})
	return ok
}

// hidesCode says a node holds text with command or parameter expansion
// syntax ($(…), `…`, ${…}) that the shell may yet expand: in a name's
// subscript, which arithmetic and the builtins that take names evaluate.
func hidesCode(n syntax.Node) bool {
	hides := false
	syntax.Walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Lit:
			hides = hides || codeSyntax(x.Value)
		case *syntax.SglQuoted:
			hides = hides || codeSyntax(x.Value)
		}
		return !hides
	})
	return hides
}

func codeSyntax(s string) bool {
	return strings.Contains(s, "$(") || strings.Contains(s, "`") || strings.Contains(s, "${")
}

// writesFile says redirections write a file: anything but /dev/null and
// the moving or closing of a descriptor.
func writesFile(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			if t, ok := literal(r.Word); !ok || t != "/dev/null" {
				return true
			}
		case syntax.DplOut:
			// >&2 and >&- move or close a descriptor; >& FILE (bash's
			// older &> FILE) writes the file.
			if t, ok := literal(r.Word); !ok || !isDescriptor(t) {
				return true
			}
		}
	}
	return false
}

// interpreters run shell code given as an argument (-c), on standard input,
// or as a here-document.
var interpreters = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true}

// wrappers run the command that follows their options (sudo bash, nohup
// sh, env eval …): a shell or eval after one runs as if it came first.
var wrappers = map[string]bool{"sudo": true, "doas": true, "nohup": true, "env": true, "exec": true, "command": true,
	"builtin": true, "nice": true, "ionice": true, "timeout": true, "stdbuf": true, "time": true, "setsid": true,
	"xargs": true, "chrt": true, "taskset": true, "unbuffer": true}

// call adds one simple command (and the shell code it runs, if any).
func (s *shellCmd) call(c *syntax.CallExpr, st *syntax.Stmt, stdinPiped bool, depth int) bool {
	p := part{env: len(c.Assigns) > 0}
	if len(c.Args) == 0 {
		if p.env {
			p.words = []string{}
			s.parts = append(s.parts, p) // FOO=1 alone: changes what follows
		}
		return true
	}
	dynamic := false
	p.words = make([]string, 0, len(c.Args))
	for i, w := range c.Args {
		lit, ok := literal(w)
		switch {
		case !ok:
			if i == 0 {
				p.unreadable = true // the command's name is made at run time
			}
			dynamic = true
			lit = "\x00" // matches no pattern word
		case strings.Contains(lit, "[") && codeSyntax(lit):
			// printf -v 'a[$(cmd)]', unset 'a[$(cmd)]', test -v …: a
			// name whose subscript the builtin expands.
			p.unreadable = true
		}
		p.words = append(p.words, lit)
	}
	var stdin *syntax.Word // a here-document or here-string fed to the command
	stdinFile := false
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			stdin = r.Hdoc
		case syntax.WordHdoc:
			stdin = r.Word
		case syntax.RdrIn:
			stdinFile = true
		}
	}
	p.writes = writesFile(st.Redirs)
	// The words that run: the first, and after a wrapper (sudo, nohup,
	// env …) the next that is not an option or a setting.
	runs := func(i int) bool {
		if i == 0 {
			return true
		}
		return wrappers[path.Base(p.words[0])]
	}
	for i, w := range p.words {
		name := path.Base(w)
		switch {
		case interpreters[name]:
			// A shell anywhere in the words (sudo bash -c …, xargs sh -c
			// …) runs code: read it as commands of their own, or mark the
			// part unreadable.
			if !s.shell(&p, i, c.Args, runs(i), stdin, stdinPiped || stdinFile, depth) {
				p.unreadable = true
			}
		case (name == "source" || name == ".") && runs(i):
			// source FILE runs a file; from standard input or a
			// substitution, code that is not in the command.
			if i+1 >= len(p.words) || fedCode(p.words[i+1], c.Args[i+1]) {
				p.unreadable = true
			}
		case name == "eval" && runs(i):
			if dynamic || !s.read(strings.Join(p.words[i+1:], " "), depth+1) {
				p.unreadable = true
			}
		case name == "trap" && i == 0:
			// trap 'code' SIGNAL runs code later in this shell.
			args := p.words[1:]
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) > 1 && !strings.HasPrefix(args[0], "-") && (dynamic || !s.read(args[0], depth+1)) {
				p.unreadable = true
			}
		case name == "env" && runs(i):
			// env -S 'cmd args' splits a string into a command.
			for j := i + 1; j < len(p.words); j++ {
				v, split := p.words[j], ""
				switch {
				case v == "-S" || v == "--split-string":
					if j+1 < len(p.words) {
						split = p.words[j+1]
					} else {
						p.unreadable = true
					}
				case strings.HasPrefix(v, "-S"):
					split = v[2:]
				case strings.HasPrefix(v, "--split-string="):
					split = strings.TrimPrefix(v, "--split-string=")
				}
				if split != "" && (dynamic || !s.read(split, depth+1)) {
					p.unreadable = true
				}
			}
		}
	}
	s.parts = append(s.parts, p)
	return true
}

// shell reads what the shell named at words[i] runs: the code after -c,
// a here-document or standard input when it runs one (runs: it is the
// command, or follows a wrapper), or a script file. false means it runs
// code that cannot be read from the command.
func (s *shellCmd) shell(p *part, i int, args []*syntax.Word, runs bool, stdin *syntax.Word, stdinCode bool, depth int) bool {
	words := p.words[i+1:]
	inline, fromStdin, operand := shellArgs(words)
	switch {
	case inline:
		if operand < 0 {
			return false // sh -c with no code, or code after options we cannot follow
		}
		code, known := literal(args[i+1+operand])
		return known && s.read(code, depth+1)
	case !runs:
		return true // a shell's name as an argument (grep bash)
	case operand >= 0 && !fromStdin:
		// bash script.sh runs a file, an ordinary command; but not a
		// file that is standard input or a substitution (bash <(curl …)).
		return !fedCode(words[operand], args[i+1+operand])
	case stdin != nil:
		doc, ok := document(stdin)
		return ok && s.read(doc, depth+1)
	case stdinCode:
		return false // curl … | sh, sh < file
	}
	return true
}

// shellArgs reads a shell's arguments as bash does: options (-e, +x, -ec,
// -o NAME, --norc, --rcfile FILE), then the first operand. inline says -c
// came (the operand is the code), fromStdin that -s did (the operands are
// arguments, the code is standard input); operand is the index of the
// first operand, -1 for none.
func shellArgs(words []string) (inline, fromStdin bool, operand int) {
	for j := 0; j < len(words); j++ {
		w := words[j]
		switch {
		case w == "--" || w == "-":
			if j+1 < len(words) {
				return inline, fromStdin, j + 1
			}
			return inline, fromStdin, -1
		case w == "--rcfile" || w == "--init-file":
			j++ // takes a file
		case strings.HasPrefix(w, "--"):
			// --norc, --login, --posix, …
		case len(w) > 1 && (w[0] == '-' || w[0] == '+'):
			for _, f := range w[1:] {
				switch f {
				case 'c':
					inline = inline || w[0] == '-'
				case 's':
					fromStdin = fromStdin || w[0] == '-'
				case 'o', 'O':
					j++ // takes an option's name
				}
			}
		default:
			return inline, fromStdin, j
		}
	}
	return inline, fromStdin, -1
}

// fedCode says a file a shell or source reads is code not in the command:
// standard input, a descriptor, or a name made at run time (<(curl …)).
func fedCode(word string, arg *syntax.Word) bool {
	if _, ok := literal(arg); !ok {
		return true
	}
	return word == "/dev/stdin" || strings.HasPrefix(word, "/dev/fd/") || strings.HasPrefix(word, "/proc/self/fd/") ||
		strings.HasPrefix(word, "/proc/") && strings.Contains(word, "/fd/")
}

// literal is a word's value when it is fixed in the command: quotes and
// escapes removed, no expansion of variables, commands or arithmetic.
func literal(w *syntax.Word) (string, bool) {
	if w == nil || !static(w.Parts, false) {
		return "", false
	}
	if len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok {
			return unescape(lit.Value), true // most words: no copy
		}
	}
	var b strings.Builder
	for _, wp := range w.Parts {
		if lit, ok := wp.(*syntax.Lit); ok {
			b.WriteString(unescape(lit.Value))
			continue
		}
		s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{wp}})
		if err != nil {
			return "", false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

// unescape removes the backslashes of unquoted text as the shell does: \x
// is x, and a backslash before a newline joins the lines.
func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// document is a here-document's body when it is fixed.
func document(w *syntax.Word) (string, bool) {
	if !static(w.Parts, true) { // a here-document's text is not globbed
		return "", false
	}
	s, err := expand.Document(nil, w)
	return s, err == nil
}

func static(parts []syntax.WordPart, quoted bool) bool {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if !quoted && expands(x.Value) {
				return false
			}
		case *syntax.SglQuoted:
			// $'…' with escapes: bash decodes some (\x{67}, \cX) that the
			// parser's decoding leaves as they are.
			if x.Dollar && strings.Contains(x.Value, "\\") {
				return false
			}
		case *syntax.DblQuoted:
			if !static(x.Parts, true) {
				return false
			}
		default: // $x, $(…), $((…)), <(…), extended globs are decided at run time
			return false
		}
	}
	return true
}

// expands says unquoted text changes before it runs: a glob (*, ?, […])
// or a brace expansion ({a,b}, {1..3}). Escaped characters (\*) stay.
func expands(v string) bool {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.IndexByte(v[i+1:], ']') >= 0 {
				return true
			}
		case '{':
			if end := strings.IndexByte(v[i+1:], '}'); end >= 0 {
				inner := v[i+1 : i+1+end]
				if strings.Contains(inner, ",") || strings.Contains(inner, "..") {
					return true
				}
			}
		}
	}
	return false
}

// isDescriptor says a redirection's word names a file descriptor (2) or
// closes one (-), not a file.
func isDescriptor(w string) bool {
	if w == "-" {
		return true
	}
	_, err := strconv.Atoi(strings.TrimSuffix(w, "-"))
	return err == nil
}

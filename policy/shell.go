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
	// pipe (made at the first pipe; most commands have none).
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
				piped[x.Y] = true
			}
		case *syntax.Stmt:
			if c, isCall := x.Cmd.(*syntax.CallExpr); isCall {
				ok = s.call(c, x, piped[x], depth)
			}
		case *syntax.DeclClause:
			// export / declare / local / readonly change the environment of
			// what follows: a part no allow pattern lets through.
			p := part{words: []string{x.Variant.Value}, env: true}
			for _, a := range x.Args {
				if a.Name != nil {
					p.words = append(p.words, a.Name.Value)
				}
			}
			s.parts = append(s.parts, p)
		}
		return true
	})
	return ok
}

// interpreters run shell code given as an argument (-c), on standard input,
// or as a here-document.
var interpreters = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true}

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
		if !ok {
			if i == 0 {
				p.unreadable = true // the command's name is made at run time
			}
			dynamic = true
			lit = "\x00" // matches no pattern word
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
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			if t, ok := literal(r.Word); !ok || t != "/dev/null" {
				p.writes = true
			}
		case syntax.DplOut:
			// >&2 and >&- move or close a descriptor; >& FILE (bash's
			// older &> FILE) writes the file.
			if t, ok := literal(r.Word); !ok || !isDescriptor(t) {
				p.writes = true
			}
		}
	}
	// A shell anywhere in the words (sudo bash -c …, xargs sh -c …) runs
	// code: read it as commands of their own, or mark the part unreadable.
	for i, w := range p.words {
		if !interpreters[path.Base(w)] {
			continue
		}
		code, inline, known := shellCode(p.words[i+1:], c.Args[i+1:])
		switch {
		case inline && known:
			if !s.read(code, depth+1) {
				p.unreadable = true
			}
		case inline:
			p.unreadable = true // sh -c "$X"
		case i == 0 && hasOperand(p.words[1:]):
			// bash script.sh: an ordinary command that runs a file
		case i == 0 && stdin != nil:
			if doc, ok := document(stdin); ok {
				if !s.read(doc, depth+1) {
					p.unreadable = true
				}
			} else {
				p.unreadable = true
			}
		case i == 0 && (stdinPiped || stdinFile):
			p.unreadable = true // curl … | sh, sh < file
		}
	}
	if p.words[0] == "eval" || p.words[0] == "builtin" && len(p.words) > 1 && p.words[1] == "eval" {
		args := p.words[1:]
		if p.words[0] == "builtin" {
			args = p.words[2:]
		}
		if dynamic || !s.read(strings.Join(args, " "), depth+1) {
			p.unreadable = true
		}
	}
	s.parts = append(s.parts, p)
	return true
}

// shellCode finds the code a shell runs from its arguments: after -c (or
// a combined flag such as -ec), the next argument. inline says there is
// such an argument; known that it is a literal.
func shellCode(words []string, args []*syntax.Word) (code string, inline, known bool) {
	for i, w := range words {
		if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
			return "", false, false
		}
		if !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
			if i+1 >= len(words) {
				return "", true, false
			}
			c, ok := literal(args[i+1])
			return c, true, ok
		}
	}
	return "", false, false
}

// hasOperand says a shell's arguments name a script to run.
func hasOperand(words []string) bool {
	for _, w := range words {
		if !strings.HasPrefix(w, "-") {
			return true
		}
	}
	return false
}

// literal is a word's value when it is fixed in the command: quotes and
// escapes removed, no expansion of variables, commands or arithmetic.
func literal(w *syntax.Word) (string, bool) {
	if w == nil || !static(w.Parts) {
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
	if !static(w.Parts) {
		return "", false
	}
	s, err := expand.Document(nil, w)
	return s, err == nil
}

func static(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !static(x.Parts) {
				return false
			}
		default: // $x, $(…), $((…)), <(…), globs and braces are decided at run time
			return false
		}
	}
	return true
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

package policy

import (
	"errors"
	"io"
	"math"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

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
	// quotedBodies are the text of quoted here-documents, which bash
	// expands nothing in.
	quotedBodies map[*syntax.Lit]bool
	// unreadable says the command could not be parsed; it then has no parts.
	unreadable bool
	// budget is how many more bytes of code reading may parse, the
	// command's own and what it runs (bash -c, eval, …): code that makes
	// the reader re-read itself (command eval command eval …) runs out
	// and is unreadable instead of taking seconds.
	budget int
	// steps is how many more nodes the reader may visit, in the walk of
	// each piece of code and in the checks that walk a node's subtree
	// (arithmetic, subscripts): $(( $(( … )) )) or ${a[${a[…]}]} nested n
	// deep has each level's checks walk every level below it, n² steps,
	// 78 KB 20 s of a core. Past them the command is unreadable.
	steps int
	// walkDepth is the depth of the walk the reader is in (walk).
	walkDepth int
	// feeds says the command feeds input to something: a pipe, a
	// coprocess, a here-document, or an input redirection of any
	// descriptor. A shell reading its code from standard input then reads
	// what the command may have given it ({ bash; } <<< '…'); with none,
	// its standard input is the agent's, not the command's.
	feeds bool
	// made are the variables the command sets from values made at run
	// time (x=$(…), for x in $(…), read x): arithmetic over one of them
	// runs the $(…) its value may hold in a subscript (a[$(cmd)]).
	made map[string]bool
	// refs are what a variable's value names when it is written in the
	// command (n=y, n='a[y]', for n in y): arithmetic over n evaluates y.
	refs map[string][]string
	// level is the depth of the node the walk of read is in, and substs
	// the substitutions it is in, innermost last: the level of each and
	// what closes it (")" for $(…) and <(…), "`" for `…`), for here-
	// documents that bash ends early (endsEarly).
	level  int
	substs []subst
	// arrays are the variables the command makes arrays (x=(…), x[i]=…,
	// declare -a x, mapfile x, read -a x): declare x=$v on one expands a
	// value that reads (…) again, as code.
	arrays map[string]bool
	// written are the files the command's redirections write (madeWord
	// for a name made at run time): a script it runs that may be one of
	// them runs code the reader saw only as text (echo 'cmd' > x; bash x).
	written []string
	// writtenNames are the base names of written (foldKey), and
	// writtenMade says one is named at run time: made once the command
	// is read, for writes and writesNamed, which each part asks (a scan
	// of written for every part, x>a; x>a; … 64,000 times in 256 KB, took
	// 27 s).
	writtenNames map[string]bool
	writtenMade  bool
	// gitConfig says a redirection writes a file named at run time that
	// may be git's config file ("$HOME/.gitconfig", "$f", .git/c*g), or
	// the command sets a GIT_CONFIG_* variable in a way the parts do not
	// show as an export (set -a; GIT_CONFIG_PARAMETERS=…, command export
	// GIT_CONFIG_…=…, declare -x 'GIT_CONFIG_…=…').
	gitConfig bool
	// keys are the arrays whose keys a variable's value lists (x=${!m[@]}),
	// and assoc the associative arrays the command declares (declare -A
	// m): a list of an associative array's keys is made at run time.
	keys  map[string][]string
	assoc map[string]bool
}

// subst is a substitution the walk is in: its node's level, and what
// closes it.
type subst struct {
	level  int
	closer string
}

// part is one simple command.
type part struct {
	words []string // literal words, quotes removed; the first is the command
	line  string   // the words joined by single spaces
	// names are the words as command names: the last element of a path
	// (/usr/bin/git is git). Ask and deny rules look for their command
	// at any word, so each rule would otherwise take every word's base.
	names []string
	// env says environment assignments precede the command (FOO=1 cmd),
	// or the part is itself an assignment or a declaration (export X=y).
	env bool
	// writes says the part redirects its output into a file.
	writes bool
	// runsMade says a wrapper (sudo, env, xargs, find -exec …) is given a
	// word made at run time, which may be the command it runs: ask and
	// deny patterns read the part as unreadable; an allow of the wrapper
	// (Bash(sudo:*)) still covers it.
	runsMade bool
	// unreadable says what the part runs cannot be read from the command:
	// a command name built at run time ($CMD, $(which x)), or a shell fed
	// code that is not in the command (`sh -c "$X"`, `curl … | sh`,
	// `eval "$X"`).
	unreadable bool
	// Decided once the whole command is read (readShell), since what
	// feeds input or sets a variable may come after the part, or in code
	// read later (f() { bash; }; eval "exec <<< '…'"; f):
	// onStdin says the part runs code from its standard input (a shell,
	// ssh, at or sudo -s given none), unreadable when the command feeds
	// input anywhere; reads are the variables its arithmetic evaluates,
	// unreadable when the command sets one from a value made at run time.
	onStdin bool
	reads   []string
	// declares are the names the part declares with a value made at run
	// time: readShell makes it unreadable when the command makes one of
	// them an array (arrays).
	declares []string
	// check says the part stands only for arithmetic to judge (reads):
	// readShell drops it when nothing it reads is made, so echo $((n+1))
	// is the one part echo.
	check bool
	// scripts are the files the part runs as code (bash FILE, source
	// FILE): unreadable when the command writes one of them.
	scripts []string
	// called says the part is a simple command, whose words run files
	// (runsWritten): unreadable when the command writes one of them.
	called bool
}

// madeWord stands in a part's words for a word whose value is made when
// the command runs ($X, $(cmd)): no pattern word is equal to it.
const madeWord = "\x00"

// carriageReturn stands for \r in a command read (readShell): a character
// of a private-use area, which the parser reads as part of a word.
const carriageReturn = "\uE00D"

// maxShellDepth bounds the nesting of shells in shells (bash -c "bash -c …").
const maxShellDepth = 8

// readShell parses a command string into its parts.
func readShell(cmd string) *shellCmd {
	// The parser takes a carriage return for a blank (and \r\n for a
	// newline, \\\r\n for a continued line); bash takes it for a character
	// of the word it is in: ls \r#;cmd and ls \\\r\ncmd ran cmd in bash
	// 5.2, where the parser read a comment and one line. A character the
	// parser reads as bash reads \r stands in for it.
	if strings.IndexByte(cmd, '\r') >= 0 {
		cmd = strings.ReplaceAll(cmd, "\r", carriageReturn)
	}
	s := &shellCmd{budget: 4*len(cmd) + 1024, steps: stepsPerByte*len(cmd) + 4096}
	if !s.read(cmd, 0) {
		s.parts, s.unreadable = nil, true
	}
	for v, arrays := range s.keys {
		if slices.ContainsFunc(arrays, func(a string) bool { return s.assoc[a] }) {
			s.mark(v)
		}
	}
	// A variable whose written value names a made one is made too: each
	// made name is followed back, once, to the variables that name it (a
	// pass over every reference until none changed took one pass a link
	// of a chain va=vb; vb=vc; …, 18 s for 256 KB).
	//
	// A variable the command does not set holds a value it does not show,
	// which may name variables: bash's OSTYPE is linux-gnu (linux minus
	// gnu), MACHTYPE x86_64-pc-linux-gnu, the environment's USER root.
	// Arithmetic over one evaluates them, and the command may have set
	// one from code (for linux in 'a[$(cmd)]'; do ls $(( $OSTYPE )); done
	// ran cmd in bash 5.2), directly or through a name that names it (for
	// x in OSTYPE; … $(( x ))). The command sets plain lower-case names
	// only (others are parts no allow pattern covers): any other name
	// counts as made once the command makes any variable.
	anyMade := len(s.made) > 0
	var made []string // most commands name none: no map to make
	for _, names := range s.refs {
		for _, n := range names {
			if s.isMade(n) {
				made = append(made, n)
				anyMade = true
			}
		}
	}
	unknown := func(v string) bool { return anyMade && mayBeExported(v) && !numericByBash[v] }
	if anyMade {
		for _, names := range s.refs {
			for _, n := range names {
				if unknown(n) && !s.isMade(n) {
					made = append(made, n)
				}
			}
		}
	}
	if len(made) > 0 {
		namedBy := map[string][]string{}
		for v, names := range s.refs {
			for _, n := range names {
				namedBy[n] = append(namedBy[n], v)
			}
		}
		// Each name once: a name written k times (for y in A A A …) is
		// k times in made and named k times by y, k² steps, 256 KB 3 min.
		followed := map[string]bool{}
		for len(made) > 0 {
			n := made[len(made)-1]
			made = made[:len(made)-1]
			if followed[n] {
				continue
			}
			followed[n] = true
			for _, v := range namedBy[n] {
				if !s.isMade(v) {
					s.mark(v)
					made = append(made, v)
				}
			}
		}
	}
	// export GIT_CONFIG_COUNT=1 …; git p, git config alias.p push; git p:
	// a git part after them may run any command.
	if slices.ContainsFunc(s.parts, definesGitAliases) || slices.ContainsFunc(s.written, gitConfigFile) || s.gitConfig {
		for i, q := range s.parts {
			if wordRuns(q.words, "git") >= 0 {
				s.parts[i].runsMade = true
			}
		}
	}
	if len(s.written) > 0 {
		s.writtenNames = make(map[string]bool, len(s.written))
		for _, t := range s.written {
			if t == madeWord {
				s.writtenMade = true
			} else {
				s.writtenNames[foldKey(path.Base(path.Clean(t)))] = true
			}
		}
	}
	kept := s.parts[:0]
	for _, q := range s.parts {
		if q.onStdin && s.feeds || slices.ContainsFunc(q.reads, s.isMade) || slices.ContainsFunc(q.reads, unknown) || slices.ContainsFunc(q.declares, func(v string) bool { return s.arrays[v] }) ||
			slices.ContainsFunc(q.scripts, s.writes) || q.called && len(s.written) > 0 && s.runsWritten(q.words) {
			q.unreadable = true
		}
		if q.check && !q.unreadable {
			continue
		}
		kept = append(kept, q)
	}
	s.parts = kept
	for i := range s.parts {
		q := &s.parts[i]
		if q.line == "" {
			q.line = strings.Join(q.words, " ")
		}
		q.names = make([]string, len(q.words))
		for j, w := range q.words {
			q.names[j] = path.Base(w)
		}
	}
	return s
}

// parsers keeps Bash parsers for reuse (mvdan's Parser may be reused once
// a Parse has returned). A Parser is about 2.3 KB; making one per call was
// a third of the bytes a Bash call's evaluation allocated, and the garbage
// collections they cost set the evaluation's p99 (docs/benchmark.md).
// It keeps comments, for the check of their ends (read).
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true)) }}

// read adds the parts of a piece of shell code; false means it cannot be parsed.
func (s *shellCmd) read(code string, depth int) bool {
	if depth > maxShellDepth || len(code) > s.budget {
		return false
	}
	s.budget -= len(code)
	parser := parsers.Get().(*syntax.Parser)
	f, err := parser.Parse(&shallowReader{code: code}, "")
	parsers.Put(parser) // done with: the tree it made holds nothing of it
	if err != nil {
		return false
	}
	// The walk of this code keeps its own level and substitutions; code it
	// reads on the way (eval, bash -c) walks with its own.
	outerLevel, outerSubsts := s.level, s.substs
	s.level, s.substs = 0, nil
	s.walk(f, func(n syntax.Node) bool {
		if n == nil { // the walk leaves the node it last entered
			if k := len(s.substs) - 1; k >= 0 && s.substs[k].level == s.level {
				s.substs = s.substs[:k]
			}
			s.level--
			return true
		}
		s.level++
		switch x := n.(type) {
		case *syntax.CmdSubst:
			closer := ")"
			if x.Backquotes {
				closer = "`"
			}
			s.substs = append(s.substs, subst{s.level, closer})
		case *syntax.ProcSubst:
			s.substs = append(s.substs, subst{s.level, ")"})
		}
		s.survey(n)
		switch x := n.(type) {
		case *syntax.Comment:
			// Bash ends a comment at the end of its line, a backslash
			// before it or not; the parser takes a backslash and newline
			// in a comment for a line continuation, and reads the next
			// line's commands as words of the statement before the
			// comment: echo # x \⏎rm -rf ~ reads as the one part echo rm
			// -rf ~, where bash runs rm.
			if strings.Contains(x.Text, "\\\n") {
				s.unreadablePart("#")
			}
		case *syntax.Stmt:
			s.noteWritten(x.Redirs)
			if c, isCall := x.Cmd.(*syntax.CallExpr); isCall {
				s.call(c, x, depth)
			} else if writesFile(x.Redirs) {
				// { …; } > f, ( … ) > f, a loop's output, a bare > f: a
				// write no allow pattern lets through.
				s.parts = append(s.parts, part{words: []string{}, writes: true})
			}
			if x.Cmd == nil && len(x.Redirs) > 0 {
				// zsh runs a bare redirection as $NULLCMD (cat) or, for a
				// lone input, $READNULLCMD (pager): zsh 5.9 ran cat for
				// echo hi | >&2 and pager for echo hi; < /dev/null, which
				// bash runs as nothing. The variables are the user's.
				s.unreadablePart("$NULLCMD")
			}
		case *syntax.DeclClause:
			// export / declare / local / readonly change the environment of
			// what follows: a part no allow pattern lets through.
			p := part{words: []string{x.Variant.Value}, env: true, unreadable: s.hidesCode(x)}
			arrays, assoc := false, false // declare -a, local -A, export -a …
			for _, a := range x.Args {
				if lit, ok := literal(a.Value); ok && a.Naked && strings.HasPrefix(lit, "-") && strings.ContainsAny(lit, "aA") {
					arrays = true
					assoc = assoc || strings.Contains(lit, "A")
				}
			}
			for _, a := range x.Args {
				switch lit, ok := literal(a.Value); {
				case a.Name != nil:
					name := a.Name.Value
					p.words = append(p.words, name)
					p.unreadable = p.unreadable || codeVar(name) // declare -A BASH_CMDS=(…)
					if a.Value != nil && !ok {
						// A value made at run time is read again as (…), code
						// and all, when the name is an array: declare -a x=$v,
						// DIRSTACK and bash's other arrays (bashArrays), or one
						// the command makes (declares). An integer variable
						// evaluates it (RANDOM).
						p.unreadable = p.unreadable || arrays || bashArrays[name] || intVar(name)
						p.declares = append(p.declares, name)
					}
					if arrays {
						s.markArray(name)
					}
					if assoc {
						s.markAssoc(name) // an associative array's keys are any text: ${!m[@]}
					}
				case a.Naked && ok && strings.Contains(lit, "="):
					// declare -x "BASH_ENV=…": the name, quoted.
					name, value, _ := strings.Cut(lit, "=")
					name, _, _ = strings.Cut(name, "[")
					p.unreadable = p.unreadable || codeVar(name) || intVar(name) && codeSyntax(value)
					// declare 'x=a[$' sets x as x='a[$' does.
					s.assignText(strings.TrimSuffix(name, "+"), value)
				case a.Naked && a.Value != nil && !ok:
					p.unreadable = true // declare "$n=…": a name made at run time
				case a.Naked && strings.HasPrefix(lit, "-") && strings.ContainsAny(lit, "ni"):
					// declare -n r=BASH_CMDS: r names another variable,
					// which every later use of r sets; declare -i x makes
					// every assignment to x arithmetic.
					p.unreadable = true
				}
				if a.Index != nil {
					reads, subst := s.arithReads(a.Index)
					p.unreadable = p.unreadable || subst
					p.reads = append(p.reads, reads...)
				}
			}
			s.parts = append(s.parts, p)
		case *syntax.Redirect:
			// zsh reads <->, <1-9>, <5-> as a glob of numbers, part of
			// the word it is written in, where the parser reads an input
			// redirection and the > after it as another: ls<->/dev/null
			// is ls reading - with its output thrown away, where zsh 5.9
			// ran ./ls1/dev/null (the glob's match, a file the agent may
			// have written) as the command.
			if x.Op == syntax.RdrIn && zshNumericGlob(code, x.OpPos) {
				s.unreadablePart("<->")
			}
			// Bash reads a - right after <& or >& (spaces between or not)
			// as the operator's own, closing the descriptor, and what
			// follows it as the next word: <&-rm ls -rf x runs rm ls -rf x
			// in bash 5.2, where the parser reads a redirection from a
			// file named -rm and the command ls.
			if (x.Op == syntax.DplIn || x.Op == syntax.DplOut) && closesThenWords(x.Word) {
				s.unreadablePart("<&-")
			}
			// Bash takes the digits before a redirection for its
			// descriptor only when they fit an int; more are a word of
			// the command: 2147483648>/dev/null ls runs 2147483648 ls.
			if x.N != nil && bigDescriptor(x.N.Value) {
				s.unreadablePart("N>")
			}
			// {NAME}>file puts the descriptor's number in NAME
			// ({PATH}>/dev/null; ls runs ./10/ls).
			if x.N != nil && strings.HasPrefix(x.N.Value, "{") && strings.HasSuffix(x.N.Value, "}") {
				name := strings.Trim(x.N.Value, "{}")
				if mayBeExported(name) {
					s.parts = append(s.parts, part{words: []string{name}, env: true, unreadable: codeVar(name)})
				}
			}
			// Inside $(…) or <(…), bash ends a here-document at a line that
			// begins with its delimiter (E)), where the parser reads on to
			// a line that is the delimiter alone: the lines between run in
			// bash as commands the parse shows as text.
			if k := len(s.substs) - 1; x.Hdoc != nil && x.Word != nil && k >= 0 && endsEarly(x, s.substs[k].closer) {
				s.unreadablePart("<<")
			}
			// An unquoted here-document's body is read as if double
			// quoted (see DblQuoted below): ${x:-'$(cmd)'} in it runs cmd.
			if x.Hdoc != nil && s.quotedSingles(x.Hdoc) {
				s.unreadablePart("<<")
			}
			// Bash ends a here-document at the first line that is its
			// delimiter, lines split by a backslash joined (E\ and OF is
			// EOF) and the $(…), ${…} or `…` in it unread; the parser
			// reads those across that line (${x:- / EOF / cmd / }), and
			// takes the commands bash runs after it for text.
			// Bash decodes a $'…' delimiter (E\x4fF is EOF, E\'F is E'F)
			// and ends the document at the decoded line; the parser
			// looks for the text as written, and reads on past it.
			if x.Hdoc != nil && x.Word != nil && (bashEndsBefore(code, x) || escaped(x.Word)) {
				s.unreadablePart("<<")
			}
			if x.Hdoc != nil && x.Word != nil && quotedDelimiter(x.Word) {
				for _, p := range x.Hdoc.Parts {
					if l, ok := p.(*syntax.Lit); ok {
						if s.quotedBodies == nil {
							s.quotedBodies = map[*syntax.Lit]bool{}
						}
						s.quotedBodies[l] = true
					}
				}
			}
		case *syntax.Assign:
			// a['$(cmd)']=1: an indexed array's subscript is expanded again
			// as the value is assigned.
			if x.Index != nil && s.subscriptHidesCode(x.Index) {
				s.unreadablePart("[ ]=")
			}
		case *syntax.ArrayElem:
			if x.Index != nil && s.arithHides(x.Index) { // holds subscriptHidesCode
				s.unreadablePart("([ ]=)") // a=(['$(cmd)']=1)
			} else if x.Index != nil {
				// a=([x]=1) evaluates x as a[x]=1 does.
				s.arithPart(x.Index, "([ ]=)")
			}
		case *syntax.Word:
			// zsh reads a } that ends a word and closes no { of it as
			// the end of the group, a sole } or not: { ls } always
			// { cmd; } and { ls a.txt} always { cmd; } run cmd in zsh
			// 5.9, where bash reads } always { cmd as ls's arguments.
			if closesGroup(x) {
				s.unreadablePart("}")
			}
			// zsh globs the word of an unquoted ${x:-…}, ${x-…},
			// ${x:+…} or ${x+…} (a part of the word, not of a "…" in
			// it), and reads a trailing ( … ) as qualifiers, which run
			// code: zsh 5.9 ran cmd for ls ${x:-*(e:cmd:)}, and
			// ./63/ls for ls ${x:-*([PATH=63])}. The parser keeps the
			// word as text. (The range of operators takes ${x?…} and
			// ${x:?…} too.)
			for _, wp := range x.Parts {
				if pe, ok := wp.(*syntax.ParamExp); ok && pe.Exp != nil && pe.Exp.Word != nil &&
					pe.Exp.Op >= syntax.AlternateUnset && pe.Exp.Op <= syntax.ErrorUnsetOrNull && parenText(pe.Exp.Word) {
					s.unreadablePart("${:-*( )}")
				}
			}
			if zshSubscript(x.Parts) {
				s.unreadablePart("$x[ ]")
			}
			if zshRepeatModifier(x.Parts) {
				s.unreadablePart("$x:F")
			}
			if zshGlobSubst(x.Parts) {
				s.unreadablePart("$~x")
			}
		case *syntax.Lit:
			// Bash takes out a backslash and newline before it reads a $
			// in double quotes or an unquoted here-document, and expands
			// what follows: "$\⏎(cmd)" runs cmd in bash 5.2. The parser
			// reads the $ there as text, the (cmd) after it too. A quoted
			// here-document's body is text to bash as well.
			if strings.Contains(x.Value, "$") && !s.quotedBodies[x] && dollarContinues(code, x) {
				s.unreadablePart("$\\")
			}
		case *syntax.DblQuoted:
			if zshSubscript(x.Parts) {
				s.unreadablePart("$x[ ]")
			}
			if zshRepeatModifier(x.Parts) {
				s.unreadablePart("$x:F")
			}
			// Inside double quotes bash takes the single quotes in the
			// word of ${x:-…}, ${x+…}, ${x=…} or ${x?…} for text, and
			// expands what is between them: echo "${x:-'$(cmd)'}" runs
			// cmd, where the parser reads a single-quoted string.
			if s.quotedSingles(x) {
				s.unreadablePart("\"${ }\"")
			}
		case *syntax.ExtGlob:
			// zsh, which Claude Code's Bash tool runs where it is the
			// user's shell (macOS), reads a glob's trailing ( … ) as
			// qualifiers, some of which run code for each file:
			// *(e:'cmd':), *(+cmd), *(oe:…:). The parser reads bash's
			// extglob.
			// Bash expands the pattern of [[ x == @(…) ]] as a word,
			// process substitutions too (@(a|<(cmd))), which the parser
			// keeps as the pattern's text.
			// A qualifier's [beg,end] is arithmetic: zsh 5.9 ran ./63/ls
			// for ls *([PATH=63]) and ls *(om[1,PATH=63]).
			// So is the expr of a :F:expr: modifier: zsh 5.9 ran ./63/ls
			// for ls -d *(:F:PATH=63:h).
			if x.Pattern != nil && (strings.ContainsAny(x.Pattern.Value, "e+$`<>") || namesInBrackets(x.Pattern.Value) ||
				repeatModifier(x.Pattern.Value, false)) {
				s.unreadablePart("*( )")
			}
		case *syntax.BinaryCmd:
			// Bash reads time as its keyword only where a pipeline starts
			// (time_command_acceptable); after | or |& it is a word, and
			// the command runs the program time (/usr/bin/time) with the
			// words after it: ls | time ls ran /usr/bin/time ls in bash
			// 5.2, where the parser reads the keyword and the command ls.
			if (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) && x.Y != nil && !x.Y.Negated {
				if _, isTime := x.Y.Cmd.(*syntax.TimeClause); isTime {
					s.unreadablePart("time")
				}
			}
		case *syntax.CoprocClause:
			// Bash takes the word after coproc for a NAME only before a
			// compound command ({ …; }, ( … ), if, while, for, case, ((…)),
			// [[…]]); before anything else (time, let, a pipeline) the word
			// is the command: coproc rm ls -rf x | ls runs rm ls -rf x,
			// where the parse shows a coprocess named rm running ls.
			if x.Name != nil && !coprocBody(x.Stmt) {
				s.unreadablePart("coproc", x.Name.Lit())
			}
			// coproc NAME { …; } sets the array NAME=(rfd wfd).
			if x.Name != nil {
				s.markArray(x.Name.Lit())
			}
			if x.Name != nil && mayBeExported(x.Name.Lit()) {
				s.parts = append(s.parts, part{words: []string{x.Name.Lit()}, env: true, unreadable: codeVar(x.Name.Lit())})
			}
		case *syntax.ForClause:
			// for NAME in …: an assignment to NAME (for PATH in /tmp/x).
			if it, isIter := x.Loop.(*syntax.WordIter); isIter && it.Name != nil && mayBeExported(it.Name.Value) {
				s.parts = append(s.parts, part{words: []string{it.Name.Value}, env: true, unreadable: codeVar(it.Name.Value) || intVar(it.Name.Value)})
			}
		case *syntax.BinaryTest:
			// [[ x =~ (a|<(cmd)) ]]: bash runs a process substitution in
			// a parenthesised group of the regex, which the parser keeps
			// as text.
			if w, isWord := x.Y.(*syntax.Word); isWord && x.Op == syntax.TsReMatch && procSubstText(w) {
				s.unreadablePart("=~")
			}
		case *syntax.ParamExp:
			// ${x:-<(cmd)}, ${x+>(cmd)}: bash runs a process substitution
			// in the word of an unquoted ${x:-…}, ${x+…}, ${x=…} or
			// ${x?…}, which the parser keeps as text.
			if x.Exp != nil && x.Exp.Word != nil && procSubstText(x.Exp.Word) {
				s.unreadablePart("${ }")
			}
			// So does it in the pattern and the replacement of ${x/…/…}
			// (${x//?/<(cmd)}, "${x/#/>(cmd)}" too): bash 5.2 ran cmd for
			// ls ${PWD/#/<(cmd)}, which the parser keeps as text.
			if x.Repl != nil && (x.Repl.Orig != nil && procSubstText(x.Repl.Orig) || x.Repl.With != nil && procSubstText(x.Repl.With)) {
				s.unreadablePart("${/ / }")
			}
			// zsh runs =(cmd) at the start of the replacement as a process
			// substitution (cmd's output in a temporary file), which bash
			// and the parser keep as text: zsh 5.9 ran cmd for
			// ls ${x/a/=(cmd)}, ls ${HOME/#/=(cmd)} and ls <<< ${x/a/=(cmd)}.
			if x.Repl != nil && x.Repl.With != nil && equalsSubstText(x.Repl.With) {
				s.unreadablePart("${/ /=( )}")
			}
			// ${X:=v} and ${X=v} assign X; ${x[0]:=v} makes x an array.
			if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && x.Param != nil && x.Index != nil {
				s.markArray(x.Param.Value)
			}
			if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && x.Param != nil {
				s.parts = append(s.parts, part{words: []string{x.Param.Value}, env: true, unreadable: codeVar(x.Param.Value)})
			}
			// ${x@P} expands x's value as a prompt, which runs the $(…) in
			// it: code that is in a value, not in the command (echo
			// '$(cmd)'; echo "${_@P}").
			if x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && x.Exp.Word != nil && x.Exp.Word.Lit() == "P" {
				s.unreadablePart("${@P}")
			}
			// ${a[i]} and ${x:off:len} evaluate arithmetic.
			if x.Index != nil && s.arithHides(x.Index) || x.Slice != nil && (x.Slice.Offset != nil && s.arithHides(x.Slice.Offset) ||
				x.Slice.Length != nil && s.arithHides(x.Slice.Length)) {
				s.unreadablePart("${ }")
			}
			if x.Index != nil {
				s.arithPart(x.Index, "${ }")
			}
			if x.Excl && x.Param != nil && x.Index == nil && x.Exp == nil {
				// ${!n} reads the variable n names, subscript and all: a
				// made n may name 'a[$(cmd)]'.
				s.parts = append(s.parts, part{words: []string{"${!}"}, reads: []string{x.Param.Value}, check: true})
			}
			if x.Slice != nil && x.Slice.Offset != nil {
				s.arithPart(x.Slice.Offset, "${ }")
			}
			if x.Slice != nil && x.Slice.Length != nil {
				s.arithPart(x.Slice.Length, "${ }")
			}
		case *syntax.BinaryArithm:
			switch x.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
				syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn, syntax.AndBoolAssgn,
				syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				if name := arithName(x.X); mayBeExported(name) {
					s.parts = append(s.parts, part{words: []string{name}, env: true, unreadable: codeVar(name)}) // an arithmetic assignment
				}
			}
		case *syntax.UnaryArithm:
			if name := arithName(x.X); (x.Op == syntax.Inc || x.Op == syntax.Dec) && mayBeExported(name) {
				s.parts = append(s.parts, part{words: []string{name}, env: true, unreadable: codeVar(name)})
			}
		case *syntax.LetClause, *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.TestClause, *syntax.CStyleLoop:
			// Arithmetic (let, ((…)), $((…)), for ((…)), and the operands
			// of [[ … ]]) expands the subscripts of quoted names as it
			// evaluates them: let 'x[$(cmd)]=1' runs cmd, which the parse
			// shows as text. So does $_ (the last argument) read there.
			if s.hidesCode(n) || s.arithHides(n) || s.readsLastArg(n) {
				s.unreadablePart("(( ))")
			} else {
				s.arithPart(n, "(( ))")
				if t, isTest := n.(*syntax.TestClause); isTest {
					s.testOperands(t, depth)
				}
			}
		}
		return true
	})
	s.level, s.substs = outerLevel, outerSubsts
	return s.steps >= 0
}

// coprocBody says a coprocess's statement starts with a compound command
// of bash's grammar (the first of a pipeline), after which bash reads the
// word before it as the coprocess's NAME.
func coprocBody(st *syntax.Stmt) bool {
	for st != nil && !st.Negated {
		switch x := st.Cmd.(type) {
		case *syntax.BinaryCmd:
			if x.Op != syntax.Pipe && x.Op != syntax.PipeAll {
				return false
			}
			st = x.X
		case *syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
			*syntax.CaseClause, *syntax.ArithmCmd, *syntax.TestClause:
			return true
		default:
			return false
		}
	}
	return false
}

// stepsPerByte is the nodes the reader may visit for each byte of a
// command, past 4,096. The commands of the policy tests take 4.6 a byte at
// most (i=$((i+1))), and under 1 once over 1 KB; a 250 KB script of
// arithmetic and subscripts 3.8. $(( … )) nested 48 deep runs out.
const stepsPerByte = 16

// walk walks n as syntax.Walk does, counting each node against the
// command's steps and going no deeper than maxWalkDepth (syntax.Walk
// recurses: a|a|…, a && a && … and 1+1+… make trees as deep as they are
// long, which the parser builds without recursing); past either it stops,
// and read ends unreadable.
func (s *shellCmd) walk(n syntax.Node, fn func(syntax.Node) bool) {
	outer := s.walkDepth // of the walk whose fn calls this one
	s.walkDepth = 0
	syntax.Walk(n, func(m syntax.Node) bool {
		if m == nil { // the walk leaves a node it entered
			s.walkDepth--
			return fn(nil)
		}
		if s.steps--; s.steps < 0 || s.walkDepth >= maxWalkDepth {
			s.steps = -1
			return false
		}
		if !fn(m) {
			return false
		}
		s.walkDepth++
		return true
	})
	s.walkDepth = outer
}

// maxWalkDepth bounds the depth of a walk: about 1,000 levels of if,
// ( … ) or { … }, a pipeline of 1,000 commands, 2,000 terms of arithmetic
// in a row.
const maxWalkDepth = 2000

// shallowReader gives the parser its code a piece at a time and ends the
// parse with errTooDeep once the calls nest deeper than maxParseFrames.
// mvdan's parser recurses for each level of nesting in the code, 3–10 KB
// of stack a level: 250 KB of $(( ((( … ))) )), $($( … )) or if if …
// took 0.2–0.9 GB of stack, and a little more ended the process (Go's
// stack limit is fatal, not a panic).
type shallowReader struct {
	code string
	off  int
}

// readPiece is the most a read gives the parser: between two checks it
// can nest only as deep as a piece lets it.
const readPiece = 1024

// maxParseFrames bounds the parser's calls: it stops about 640 levels of
// ( … ) in arithmetic or 500 of $( … ) deep, far past any command's, with
// a few MB of stack. A check walks the frames, ~16 ns each.
const maxParseFrames = 8000

var errTooDeep = errors.New("nested too deep")

func (r *shallowReader) Read(b []byte) (int, error) {
	if r.off >= len(r.code) {
		return 0, io.EOF
	}
	// The first piece is read before any nesting; a frame found past
	// maxParseFrames means the stack is that deep.
	var pc [1]uintptr
	if r.off > 0 && runtime.Callers(maxParseFrames, pc[:]) > 0 {
		return 0, errTooDeep
	}
	n := copy(b[:min(len(b), readPiece)], r.code[r.off:])
	r.off += n
	return n, nil
}

// survey notes, of each node read, whether it feeds input to anything
// (feeds) and which variables it sets from values made at run time
// (made); readShell applies both once the whole command is read.
func (s *shellCmd) survey(n syntax.Node) {
	switch x := n.(type) {
	case *syntax.BinaryCmd:
		s.feeds = s.feeds || x.Op == syntax.Pipe || x.Op == syntax.PipeAll
	case *syntax.CoprocClause:
		s.feeds = true
	case *syntax.Redirect:
		switch x.Op {
		case syntax.RdrIn, syntax.DplIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			s.feeds = true
		}
		// 0> and 0>&3 replace standard input too, and /dev/tcp is a
		// socket whichever way it is opened.
		target := ""
		if x.Word != nil {
			target = wordText(x.Word)
		}
		if fd, err := strconv.Atoi(redirFD(x)); err == nil && fd == 0 || strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/") {
			s.feeds = true
		}
	case *syntax.Assign:
		if x.Name != nil && (x.Array != nil || x.Index != nil) {
			s.markArray(x.Name.Value) // x=(…), x[i]=…
		}
		if x.Name != nil && gitConfigVar(x.Name.Value) {
			s.gitConfig = true // set -a exports it
		}
		switch {
		case x.Name == nil:
		case x.Array != nil || x.Value != nil && madeValue(x.Value):
			s.mark(x.Name.Value) // x=$(…), x=(…)
		case x.Value != nil:
			s.refer(x.Name.Value, x.Value) // x=y, x='a[y]': arithmetic over x evaluates y
		}
	case *syntax.ForClause:
		if it, ok := x.Loop.(*syntax.WordIter); ok && it.Name != nil {
			s.gitConfig = s.gitConfig || gitConfigVar(it.Name.Value)
			made := !it.InPos.IsValid() || x.Select // for x; do: the arguments; select: what is typed
			for _, w := range it.Items {
				made = made || madeValue(w)
				s.refer(it.Name.Value, w)
			}
			if made {
				s.mark(it.Name.Value)
			}
			if x.Select {
				s.mark("REPLY")
			}
		}
	case *syntax.BinaryTest:
		if x.Op == syntax.TsReMatch {
			s.mark("BASH_REMATCH") // [[ $v =~ (.*) ]] copies what it matched
		}
	case *syntax.ParamExp:
		if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) && x.Param != nil {
			s.mark(x.Param.Value)
			s.gitConfig = s.gitConfig || gitConfigVar(x.Param.Value)
		}
	}
}

// noteWritten notes the files redirections write (not /dev/null, nor a
// descriptor moved or closed).
func (s *shellCmd) noteWritten(redirs []*syntax.Redirect) {
	for _, r := range redirs {
		if !writesFile([]*syntax.Redirect{r}) || r.Word == nil {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.AppClob,
			syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut, syntax.DplOut:
			t, ok := literal(r.Word)
			if !ok {
				t = madeWord
				s.gitConfig = s.gitConfig || mayNameGitConfig(r.Word)
			}
			s.written = append(s.written, t)
		}
	}
}

// writes says the command may write the file script, which a part runs:
// a file its redirections name by the same name (in any directory: a cd
// between them may make ./x and ../x one file), or one named at run time.
func (s *shellCmd) writes(script string) bool {
	// EqualFold (foldKey): macOS's and Windows' file systems take X.SH
	// and x.sh for one file.
	return len(s.written) > 0 && (s.writtenMade || script == madeWord || s.writtenNames[foldKey(path.Base(path.Clean(script)))])
}

// writesNamed says the command's redirections write a file named name, in
// some directory (a name made at run time is not taken for every name:
// npm test > "$LOG" runs npm).
func (s *shellCmd) writesNamed(name string) bool {
	return s.writtenNames[foldKey(name)]
}

// foldKey is the same for two strings exactly when strings.EqualFold
// takes them for equal: each rune (an invalid byte is utf8.RuneError, as
// EqualFold decodes it) as the least of its case-folding orbit.
func foldKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// runsWritten says a simple command's words run a file the command's
// redirections may write: a path (./run.sh, sudo ./run.sh), or a bare
// name found in a directory on PATH (PATH=.:$PATH x, a file written to
// ~/.local/bin), and git-p for git p (on PATH or in --exec-path). Asked
// only of a command that writes a file.
func (s *shellCmd) runsWritten(words []string) bool {
	wrapped := len(words) > 0 && (wrappers[path.Base(words[0])] || codeRunners[path.Base(words[0])])
	git := wordRuns(words, "git")
	for i, w := range words {
		if w == madeWord {
			continue
		}
		if i == 0 || wrapped {
			if strings.Contains(w, "/") && s.writes(w) || !strings.Contains(w, "/") && s.writesNamed(w) {
				return true
			}
		}
		if git >= 0 && i > git && s.writesNamed("git-"+w) {
			return true
		}
	}
	return false
}

// startupFiles are the files a shell runs before its own code, as it
// starts (bash -i reads .bashrc, bash -l .profile, zsh .zshenv always):
// a command that writes one and starts a shell runs what it wrote.
var startupFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout", "profile", "bash.bashrc",
	".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout", "zshenv", "zprofile", "zshrc", "zlogin", "zlogout",
	".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".login", ".logout", "config.fish"}

// markArray notes that the command makes name an array.
func (s *shellCmd) markArray(name string) {
	if s.arrays == nil {
		s.arrays = map[string]bool{}
	}
	s.arrays[name] = true
}

// mark notes that the command sets name from a value made at run time.
func (s *shellCmd) mark(name string) {
	if s.made == nil {
		s.made = map[string]bool{}
	}
	s.made[name] = true
}

// refer notes the variables a value written in the command names (x=y,
// x='a[y]'), which arithmetic over name evaluates in turn, and the arrays
// whose keys a value made at run time lists (referKeys).
func (s *shellCmd) refer(name string, w *syntax.Word) {
	lit, ok := literal(w)
	if !ok {
		s.referKeys(name, w) // a written value lists no keys
		// {y,z}, "y"{,}: the words a brace expansion makes are names
		// its text holds.
		lit = wordText(w)
	}
	s.referText(name, lit)
}

// referText notes the variables text given to name names. Text that
// assigns when arithmetic evaluates it (PATH=0, HOME++) makes name made:
// arithmetic over it changes the environment (for x in PATH=0; do ls
// ${z[x]}; done runs ./0/ls).
func (s *shellCmd) referText(name, text string) {
	if assignsText(text) {
		s.mark(name)
		return
	}
	if names := identifiers(text); len(names) > 0 {
		if s.refs == nil {
			s.refs = map[string][]string{}
		}
		s.refs[name] = append(s.refs[name], names...)
	}
}

// referKeys notes the arrays whose keys a value lists (x=${!m[@]}, for x
// in "${!m[@]}"): numbers for an indexed array, any text for an
// associative one, which readShell marks made.
func (s *shellCmd) referKeys(name string, w *syntax.Word) {
	s.walk(w, func(n syntax.Node) bool {
		if x, ok := n.(*syntax.ParamExp); ok && listsKeys(x) {
			if s.keys == nil {
				s.keys = map[string][]string{}
			}
			s.keys[name] = append(s.keys[name], x.Param.Value)
		}
		return true
	})
}

// markAssoc notes that the command makes name an associative array, whose
// keys are any text: made, as is what lists them (keys).
func (s *shellCmd) markAssoc(name string) {
	if s.assoc == nil {
		s.assoc = map[string]bool{}
	}
	s.assoc[name] = true
	s.mark(name)
}

// plainSetting says word w of the declaration builtin taker sets a name
// written whole, with no subscript (command export PATH="$PATH:/x"): the
// builtin evaluates nothing in it, and what it sets is noted as for x=….
func plainSetting(taker string, w *syntax.Word) bool {
	if !declBuiltin(taker) || len(w.Parts) == 0 {
		return false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	name, _, found := strings.Cut(lit.Value, "=")
	name = strings.TrimSuffix(name, "+")
	return found && syntax.ValidName(name)
}

// declBuiltin says a command is a declaration builtin, whose words set
// variables as assignments do.
func declBuiltin(name string) bool {
	switch name {
	case "declare", "typeset", "local", "export", "readonly":
		return true
	}
	return false
}

// assignText notes an assignment of text written in the command that the
// parse does not show as one (declare 'x=…', command declare x=…), as
// survey notes x=…: made when the text holds a piece of code, a reference
// when it names variables.
func (s *shellCmd) assignText(name, value string) {
	s.gitConfig = s.gitConfig || gitConfigVar(name)
	if strings.ContainsAny(value, "$`\\~") { // holds codeSyntax
		s.mark(name)
		return
	}
	s.referText(name, value)
}

// numbersOnly says a statement's standard input is a here-string or
// here-document written in the command that holds numbers and spaces
// alone: what read takes from it names nothing and runs nothing.
func numbersOnly(redirs []*syntax.Redirect) bool {
	fed := false
	for _, r := range redirs {
		if fd, err := strconv.Atoi(redirFD(r)); err != nil || fd != 0 {
			continue
		}
		var w *syntax.Word
		switch r.Op {
		case syntax.WordHdoc:
			w = r.Word
		case syntax.Hdoc, syntax.DashHdoc:
			w = r.Hdoc
		default:
			return false
		}
		text, ok := literal(w)
		if w != nil && !ok {
			text, ok = document(w)
		}
		if !ok || strings.TrimLeft(text, "0123456789 \t\n.-+") != "" {
			return false
		}
		fed = true
	}
	return fed
}

// isMade says the command sets v from a value made at run time, or v is
// one bash sets from words the command may have written code in: $_ (the
// last word of the command before) and $1, $@ … (a function's arguments:
// test '$(cmd)'; test -v "a[$_]", or f() { test -v "a[$1]"; }; f '$(cmd)').
func (s *shellCmd) isMade(v string) bool {
	return s.made[v] || setByBash[v] || v != "" && strings.Trim(v, "0123456789") == ""
}

// setByBash are variables bash sets from text the command wrote, some of
// it text the parse drops (bash -c 'echo $(( ${BASH_EXECUTION_STRING##*:}
// )) #:a[$(cmd)]' takes the comment), or from the directory it is in.
var setByBash = map[string]bool{"_": true, "@": true, "*": true, "BASH_EXECUTION_STRING": true, "BASH_COMMAND": true,
	"BASH_ARGV": true, "BASH_ARGV0": true, "BASH_SOURCE": true, "FUNCNAME": true, "PWD": true, "OLDPWD": true,
	"READLINE_LINE": true, "COMP_LINE": true, "COMP_WORDS": true, "DIRSTACK": true,
	// The shell's tables of commands and aliases: their keys are names the
	// command ran or defined (a file named 'a[$(cmd)]' on the PATH).
	"BASH_CMDS": true, "BASH_ALIASES": true,
	// zsh's (Claude Code's Bash tool runs the user's shell, zsh on macOS):
	// what [[ … =~ … ]] matched (MATCH, match, not BASH_REMATCH), the
	// bodies and names of the functions the command defines, the text
	// of its jobs, of the command a TRAPDEBUG runs before, of zsh -c's
	// code; zsh 5.9 ran ./63/ls for [[ PATH=63 =~ .* ]]; ls ${HOME[MATCH]},
	// f() { ls , PATH=63; }; ls $(( functions[f] )), ls , PATH=63 | ls
	// $(( jobtexts[1] )) and TRAPDEBUG() { ls $(( ZSH_DEBUG_CMD )); }; ls
	// , PATH=63. And zsh's other tables of names and text (aliases,
	// commands, history, …), its argv ($@) and reply.
	"MATCH": true, "match": true, "MBEGIN": true, "MEND": true, "mbegin": true, "mend": true,
	"functions": true, "dis_functions": true, "functions_source": true, "dis_functions_source": true,
	"funcstack": true, "functrace": true, "funcfiletrace": true, "funcsourcetrace": true,
	"jobtexts": true, "jobdirs": true, "jobstates": true, "ZSH_DEBUG_CMD": true, "ZSH_EXECUTION_STRING": true,
	"ZSH_SCRIPT": true, "ZSH_ARGZERO": true, "argv": true, "REPLY": true, "reply": true,
	"aliases": true, "dis_aliases": true, "galiases": true, "dis_galiases": true, "saliases": true, "dis_saliases": true,
	"commands": true, "history": true, "historywords": true, "dirstack": true, "nameddirs": true, "userdirs": true,
	"parameters": true, "mapfile": true}

// numericByBash are variables bash keeps a number in, and the special
// parameters that are numbers: arithmetic over them evaluates no name.
var numericByBash = map[string]bool{"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true,
	"SECONDS": true, "LINENO": true, "PPID": true, "UID": true, "EUID": true, "BASHPID": true, "EPOCHSECONDS": true,
	"HISTCMD": true, "OPTIND": true, "SHLVL": true,
	// Arrays and counters bash resets itself: PIPESTATUS after each
	// pipeline (for f in *; do make | tee log; (( PIPESTATUS[0] )) …).
	"PIPESTATUS": true, "BASH_SUBSHELL": true, "BASH_LINENO": true, "BASH_ARGC": true}

// madeValue says arithmetic over a variable given the value w may run
// code: a value made at run time (other than a number or an array's
// indices: $((…)), $#, ${#x}, ${!a[@]}), or one written in the command
// that holds code (for x in 'a[$(cmd)]', or '$(cmd)' that a word puts in
// a subscript: test -v "a[$x]"). A written
// value that names variables (x=y, x='a[y]') is a reference (refs).
func madeValue(w *syntax.Word) bool {
	if lit, ok := literal(w); ok {
		// '$(cmd)', which a word may put in a subscript ("a[$y]"), and
		// any part of such code: 'a[$' joined to '(cmd)]' ($x$y), or
		// made by an expansion (${x/X/\$}, ${x@E} of '\x24').
		return strings.ContainsAny(lit, "$`\\") || tilde(w)
	}
	return tilde(w) || strings.ContainsAny(wordText(w), "$`\\") || madeParts(w.Parts, false) // {'a[$',b}
}

// tilde says a word starts with a tilde expansion (~+ is $PWD, ~- is
// $OLDPWD, ~user a home directory): a value made at run time, which may
// name a directory the command made ('a[$(cmd)]').
func tilde(w *syntax.Word) bool {
	// Bash expands a tilde after the = or a : of an assignment (x=:~+,
	// export x=a:~+) and after the = of a word (for x in q=~+), too: any
	// unquoted tilde counts.
	for _, wp := range w.Parts {
		if lit, ok := wp.(*syntax.Lit); ok && strings.Contains(lit.Value, "~") {
			return true
		}
	}
	return false
}

// letterRange says unquoted text holds a brace expansion over letters
// ({Z..a}), whose words include [ \ ] ^ _ and a backquote.
func letterRange(v string) bool {
	for i := strings.IndexByte(v, '{'); i >= 0; {
		end := strings.IndexByte(v[i:], '}')
		if end < 0 {
			return false
		}
		if lo, hi, ok := strings.Cut(v[i+1:i+end], ".."); ok {
			hi, _, _ = strings.Cut(hi, "..")
			if _, err := strconv.Atoi(lo); err != nil {
				return true
			}
			if _, err := strconv.Atoi(hi); err != nil {
				return true
			}
		}
		next := strings.IndexByte(v[i+1:], '{')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// madeParts says a word's parts (inside double quotes when quoted, where
// nothing globs) make a value at run time.
func madeParts(parts []syntax.WordPart, quoted bool) bool {
	for _, wp := range parts {
		switch x := wp.(type) {
		case *syntax.Lit:
			// A glob's words are file names, which the command may have
			// made (touch 'a[$(cmd)]'; for x in a*): made at run time.
			if !quoted && (globs(x.Value) || letterRange(x.Value)) {
				return true
			}
		case *syntax.ArithmExp:
		case *syntax.SglQuoted:
			if x.Dollar && strings.Contains(x.Value, "\\") {
				return true // $'a[\x24(cmd)]'
			}
		case *syntax.DblQuoted:
			if madeParts(x.Parts, true) {
				return true
			}
		case *syntax.ParamExp:
			if madeParam(x) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// globs says unquoted text is a glob (*, ?, […]), whose words are names
// of files.
func globs(v string) bool { return expandsAs(v, false) }

// madeParam says a parameter expansion's value is made at run time: all
// but a length, an array's indices and $#, $?, $$, $!.
func madeParam(x *syntax.ParamExp) bool {
	switch {
	case x.Length && x.Exp == nil:
		// ${#x}: a length
	case listsKeys(x) && x.Exp == nil && !setByBash[x.Param.Value]:
		// ${!arr[@]}: an array's indices (an associative array's
		// keys are written in the command, or set through a
		// subscript that is read as arithmetic itself)
	case x.Param == nil || x.Exp != nil || x.Index != nil || x.Slice != nil || x.Excl || len(x.Param.Value) != 1 || !strings.Contains("#?$!", x.Param.Value):
		return true
	}
	return false
}

// listsKeys says a parameter expansion lists an array's keys (${!a[@]},
// ${!a[*]}).
func listsKeys(x *syntax.ParamExp) bool {
	if !x.Excl || x.Param == nil || x.Index == nil {
		return false
	}
	i := arithName(x.Index)
	return i == "@" || i == "*"
}

// arithPart adds a part for arithmetic n (labelled as what): unreadable
// when a substitution in it gives text to evaluate, and otherwise reading
// the variables it names, which readShell judges once every variable the
// command sets is known.
func (s *shellCmd) arithPart(n syntax.Node, what string) {
	if reads, subst := s.arithReads(n); subst {
		s.unreadablePart(what)
	} else if len(reads) > 0 {
		s.parts = append(s.parts, part{words: []string{what}, reads: reads, check: true})
	}
	if s.assignsInText(n) {
		s.parts = append(s.parts, part{words: []string{what}, env: true})
	}
}

// assignsInText says arithmetic n holds text that assigns once bash
// evaluates it, text the parse shows as a word's and not as an
// assignment: quoted ((( "PATH=63" )), ${a[PATH"=63"]}), or the value an
// expansion gives ($(( ${x:-PATH=63} ))). Bash evaluates the text the
// quotes and expansions leave: ls $(( "PATH=63" )); ls runs ./63/ls.
// Outside quotes and expansions the arithmetic's operators are nodes,
// not text; of [[ … ]] only the arithmetic operands count.
func (s *shellCmd) assignsInText(n syntax.Node) bool {
	return s.arithText(n, func(text string, _ bool) bool {
		return assignsText(text)
	})
}

// assignsText says text holds an operator that assigns once arithmetic
// evaluates it (=, ++, --; == and != too, which errs toward a change).
func assignsText(text string) bool {
	return strings.Contains(text, "=") || strings.Contains(text, "++") || strings.Contains(text, "--")
}

// arithReads is the variables arithmetic in n may evaluate: every name in
// it, quoted or not, in a subscript too (let "a[y]"), and those that $x
// and ${x} name; subst says it holds a command or process substitution,
// whose output it would evaluate. Of [[ … ]] only the arithmetic
// comparisons (-eq, -lt, …) and -v count.
func (s *shellCmd) arithReads(n syntax.Node) (names []string, subst bool) {
	if t, ok := n.(*syntax.TestClause); ok {
		s.arithOperands(t, func(e syntax.TestExpr) {
			r, sub := s.arithReads(e)
			names, subst = append(names, r...), subst || sub
		})
		return names, subst
	}
	var param *syntax.Lit // the name of the parameter expansion just read, which the walk visits next
	s.walk(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			subst = true
			return false
		case *syntax.Word:
			if buildsName(x.Parts) {
				subst = true
				return false
			}
		case *syntax.ParamExp:
			if x.Names != 0 || reshapes(x) { // ${!prefix*}: every variable named so, made ones too
				subst = true
				return false
			}
			if x.Param != nil && !x.Length { // ${#x} is a length, not x's value
				names = append(names, x.Param.Value)
			}
			param = x.Param
			// ${a[*]}, ${!a[*]} and $* join their words with IFS's first
			// character: IFS='$' joins 'a[' and '(cmd)]' into a[$(cmd)].
			if !x.Length && (x.Param != nil && x.Param.Value == "*" || x.Index != nil && arithName(x.Index) == "*") {
				names = append(names, "IFS")
			}
		case *syntax.Lit:
			if x == param {
				return true
			}
			names = append(names, identifiers(x.Value)...)
		case *syntax.SglQuoted:
			names = append(names, identifiers(x.Value)...)
		}
		return true
	})
	return names, subst
}

// reshapes says a parameter expansion makes new text of a value (${z,,},
// ${z@L}, ${z:1}, ${z#Q}, ${z/Q}, ${PATH@a}): in arithmetic, a name no
// variable the reader follows holds ('Y' lowered is y), whose value it
// evaluates.
func reshapes(x *syntax.ParamExp) bool {
	if x.Slice != nil || x.Repl != nil || x.Width {
		return true
	}
	if x.Exp == nil {
		return false
	}
	switch x.Exp.Op {
	case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix,
		syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll, syntax.OtherParamOps:
		return true
	}
	return false
}

// buildsName says an arithmetic word joins an expansion to a name's
// characters or to another expansion (${z}b, a$z, $z$w): a name made at
// run time, whose value arithmetic evaluates. $a+$b and a base (10#$n)
// join no name.
func buildsName(parts []syntax.WordPart) bool {
	var flat []syntax.WordPart
	eachOpened(parts, func(wp syntax.WordPart) { flat = append(flat, wp) })
	text := func(wp syntax.WordPart) (string, bool) {
		switch x := wp.(type) {
		case *syntax.Lit:
			return x.Value, true
		case *syntax.SglQuoted:
			return x.Value, true
		}
		return "", false
	}
	for i, wp := range flat {
		if _, ok := wp.(*syntax.ParamExp); !ok {
			continue
		}
		if i > 0 {
			if t, ok := text(flat[i-1]); !ok || t != "" && nameByte(t[len(t)-1]) {
				return true
			}
		}
		if i+1 < len(flat) {
			if t, ok := text(flat[i+1]); !ok || t != "" && nameByte(t[0]) {
				return true
			}
		}
	}
	return false
}

// nameByte says c may be in a variable's name (not first, if a digit).
func nameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// identifiers are the names in text that may be variables.
func identifiers(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if c := text[i]; nameByte(c) && (c < '0' || c > '9') {
			j := i + 1
			for j < len(text) && nameByte(text[j]) {
				j++
			}
			out = append(out, text[i:j])
			i = j
			continue
		}
		i++
	}
	return out
}

// takesNames are the builtins that take variables' names as arguments,
// and evaluate a subscript in one.
var takesNames = map[string]bool{"unset": true, "test": true, "[": true, "printf": true, "read": true, "mapfile": true,
	"readarray": true, "getopts": true, "declare": true, "typeset": true, "local": true, "export": true, "readonly": true,
	"let": true, "wait": true}

// nameTaker is the builtin of takesNames a command is, also after a
// wrapper (command unset 'a[y]': any word of a wrapped command counts), ""
// for none; "?" when a made word after a wrapper may be one.
func nameTaker(args []*syntax.Word) string {
	wrapped := false
	for _, a := range args {
		lit, ok := literal(a)
		b := path.Base(lit)
		switch {
		case !ok && wrapped:
			return "?" // command $CMD 'a[y]'
		case !ok:
			return ""
		case takesNames[b]:
			return b
		case wrappers[b]:
			wrapped = true
		case wrapped && (strings.HasPrefix(lit, "-") || strings.Contains(lit, "=") || isNumber(lit)):
			// a wrapper's option, setting or number: timeout 5, env X=1
		default:
			return "" // the command: grep, not the read in xargs grep -l read
		}
	}
	return ""
}

// takesName says word (text) of a command that nameTaker says is taker,
// after the words before, is a variable's name: test's, printf's and
// wait's only after the option that takes one (test -v NAME, test -R NAME,
// printf -v NAME, wait -p NAME) or after a made word that may be that
// option (test ! $o NAME; printf's options come first), the others' any.
func takesName(taker string, before []string, word string) bool {
	prev := ""
	if len(before) > 0 {
		prev = before[len(before)-1]
	}
	switch taker {
	case "":
		return false
	case "test", "[":
		return prev == "-v" || prev == "-R" || prev == madeWord || strings.HasPrefix(word, "-v")
	case "wait":
		return prev == "-p" || prev == madeWord || strings.HasPrefix(word, "-p")
	case "printf":
		first := len(before) >= 2 && path.Base(before[len(before)-2]) == "printf"
		return prev == "-v" || prev == madeWord && first || strings.HasPrefix(word, "-v")
	}
	return true
}

// procSubstText says a word's unquoted text holds <( or >(: a process
// substitution bash runs where the parser read text (${x:-<(cmd)}).
func procSubstText(w *syntax.Word) bool {
	for _, wp := range w.Parts {
		if lit, ok := wp.(*syntax.Lit); ok && (strings.Contains(lit.Value, "<(") || strings.Contains(lit.Value, ">(")) {
			return true
		}
	}
	return false
}

// equalsSubstText says a word starts with unquoted =(, which zsh reads
// as a process substitution (=(cmd)) at the start of the replacement of
// ${x/…/…}, and only there: zsh 5.9 (and with magic_equal_subst) ran
// nothing for ${x/a/b=(cmd)}, ${x/a/ =(cmd)}, =(cmd) after quotes,
// ${x/a/\\=(cmd)} or ${x/a/"=(cmd)"}.
func equalsSubstText(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	return ok && strings.HasPrefix(lit.Value, "=(")
}

// closesGroup says w ends in a } (unquoted, not escaped) that closes no
// { of w's own text, which zsh reads as the end of a { … } group.
func closesGroup(w *syntax.Word) bool {
	// Most words end in no }: only one whose last part is text ending
	// in } needs the scan (a \} or one that closes a { does not count).
	if len(w.Parts) == 0 {
		return false
	}
	if last, ok := w.Parts[len(w.Parts)-1].(*syntax.Lit); !ok || !strings.HasSuffix(last.Value, "}") {
		return false
	}
	open, closes := 0, false // closes: the last character read is a } that closes no {
	for _, wp := range w.Parts {
		lit, ok := wp.(*syntax.Lit)
		if !ok {
			closes = false
			continue
		}
		for i := 0; i < len(lit.Value); i++ {
			closes = false
			switch lit.Value[i] {
			case '\\':
				i++
			case '{':
				open++
			case '}':
				if open == 0 {
					closes = true
				} else {
					open--
				}
			}
		}
	}
	return closes
}

// parenText says a word's unquoted text holds a (, which the parser
// keeps as text in the word of ${x:-…} and zsh may read as the start of
// glob qualifiers.
func parenText(w *syntax.Word) bool {
	for _, wp := range w.Parts {
		if lit, ok := wp.(*syntax.Lit); ok && strings.Contains(lit.Value, "(") {
			return true
		}
	}
	return false
}

// dollarContinues says the text of literal x in code has a $ followed by
// a backslash and newline (which the parser leaves out of the value).
func dollarContinues(code string, x *syntax.Lit) bool {
	start, end := x.ValuePos.Offset(), x.ValueEnd.Offset()
	if !x.ValuePos.IsValid() || !x.ValueEnd.IsValid() || start > end || end > uint(len(code)) {
		return false
	}
	return strings.Contains(code[start:end], "$\\\n")
}

// escaped says a word holds $'…' with a backslash escape, whose value the
// word's text does not show.
func escaped(w *syntax.Word) bool {
	for _, wp := range w.Parts {
		if q, ok := wp.(*syntax.SglQuoted); ok && q.Dollar && strings.Contains(q.Value, "\\") {
			return true
		}
	}
	return false
}

// walkOwn walks n but not the commands substituted in it ($(…), <(…)):
// the reading walks those as commands of their own, and arithmetic counts
// their output (arithReads). Walked into, [[ $( [[ $( … ) -eq 0 ]] ) -eq
// 0 ]] nested n deep took n² steps: 51 KB, seconds.
func (s *shellCmd) walkOwn(n syntax.Node, fn func(syntax.Node) bool) {
	s.walk(n, func(m syntax.Node) bool {
		switch m.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			if m != n {
				return false
			}
		}
		return fn(m)
	})
}

// hidesCode says a node holds text with command or parameter expansion
// syntax ($(…), `…`, ${…}) that the shell may yet expand: in a name's
// subscript, which arithmetic and the builtins that take names evaluate.
func (s *shellCmd) hidesCode(n syntax.Node) bool {
	hides := false
	s.walkOwn(n, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Lit:
			hides = hides || codeSyntax(x.Value)
		case *syntax.SglQuoted:
			// $'\x24(…)' is $(…) once decoded.
			hides = hides || codeSyntax(x.Value) || x.Dollar && strings.Contains(x.Value, "\\")
		}
		return !hides
	})
	return hides
}

// quotedSingles says double-quoted text n (or a here-document's body)
// holds a single-quoted string with expansion syntax ($, a backquote, or
// a $'…' escape that may decode to one): only in the word of a parameter
// expansion does the parser read one there, where bash reads the quotes
// as text and expands what is between them. Substitutions in n are
// their own quoting contexts, read on their own.
func (s *shellCmd) quotedSingles(n syntax.Node) bool {
	found := false
	s.walkOwn(n, func(m syntax.Node) bool {
		if q, ok := m.(*syntax.SglQuoted); ok && (strings.ContainsAny(q.Value, "$`") || q.Dollar && strings.Contains(q.Value, "\\")) {
			found = true
		}
		return !found
	})
	return found
}

// arithHides says arithmetic n holds text that is a piece of code once
// joined to what comes before or after it: a $ or a backquote that is
// not an expansion (\$, "$", '`'), which bash's evaluation of the joined
// text (a[$x\$"(cmd)]" with x='a[') expands in a subscript. Of [[ … ]]
// only the arithmetic operands count.
func (s *shellCmd) arithHides(n syntax.Node) bool {
	return s.arithText(n, func(text string, escapes bool) bool { return escapes || strings.ContainsAny(text, "$`") })
}

// arithText says found holds for a piece of arithmetic n's own text: a
// literal's or a single-quoted string's (escapes: a $'…' with a backslash
// escape), not a substitution's; of [[ … ]] only the arithmetic operands.
func (s *shellCmd) arithText(n syntax.Node, found func(text string, escapes bool) bool) bool {
	holds := false
	check := func(m syntax.Node) {
		s.walkOwn(m, func(m syntax.Node) bool {
			switch x := m.(type) {
			case *syntax.Lit:
				holds = holds || found(x.Value, false)
			case *syntax.SglQuoted:
				holds = holds || found(x.Value, x.Dollar && strings.Contains(x.Value, "\\"))
			}
			return !holds
		})
	}
	if t, isTest := n.(*syntax.TestClause); isTest {
		s.arithOperands(t, func(e syntax.TestExpr) { check(e) })
	} else {
		check(n)
	}
	return holds
}

// arithOperands calls fn on each operand of [[ … ]] that bash or zsh
// evaluates as arithmetic: those of -eq, -lt, …, the name -v tests and
// (zsh) the descriptor of -t.
func (s *shellCmd) arithOperands(t *syntax.TestClause, fn func(syntax.TestExpr)) {
	s.walkOwn(t, func(n syntax.Node) bool {
		switch b := n.(type) {
		case *syntax.BinaryTest:
			switch b.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				fn(b.X)
				fn(b.Y)
				return false
			}
		case *syntax.UnaryTest:
			// zsh evaluates -t's descriptor as arithmetic too: zsh 5.9
			// ran ./63/ls for [[ -t PATH=63 ]]; ls (bash reads a number).
			if b.Op == syntax.TsVarSet || b.Op == syntax.TsFdTerm {
				fn(b.X)
				return false
			}
		}
		return true
	})
}

// readsLastArg says arithmetic reads $_ (written _), the last argument of
// the command before, whose text it evaluates.
func (s *shellCmd) readsLastArg(n syntax.Node) bool {
	reads := false
	s.walkOwn(n, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok && w.Lit() == "_" {
			reads = true
		}
		if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil && p.Param.Value == "_" {
			reads = true
		}
		return !reads
	})
	return reads
}

// mayBeExported says an assignment to name may change what commands
// run: any name but a plain lower-case one (f, i, file), which the
// environment does not hold (PATH, IFS, BASH_ENV, http_proxy,
// npm_config_registry do).
func mayBeExported(name string) bool {
	if name == "" || zshTied[name] || codeVar(name) {
		return true
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return true
		}
	}
	return false
}

// zshTied are zsh's lower-case arrays tied to variables of the
// environment (path is PATH, cdpath CDPATH, fpath FPATH, …), and prompt,
// which is PS1: in zsh, for path in ./bin; do ls; done runs ./bin/ls.
var zshTied = map[string]bool{"path": true, "cdpath": true, "fpath": true, "manpath": true, "mailpath": true,
	"fignore": true, "psvar": true, "prompt": true}

// arithName is an arithmetic expression's text when it is a plain word:
// the variable an arithmetic assignment sets, an index such as @ ("" for
// anything else).
func arithName(x syntax.ArithmExpr) string {
	if w, ok := x.(*syntax.Word); ok {
		return w.Lit()
	}
	return ""
}

// wordText is a word's text with its quotes and escapes taken off and its
// expansions left out: what a builtin that takes a name would see of it.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	eachOpened(w.Parts, func(p syntax.WordPart) {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(x.Value))
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		}
	})
	return b.String()
}

// eachOpened calls fn on a word's parts in order, those inside double
// quotes in their place ("a$x"b is a, $x, b).
func eachOpened(parts []syntax.WordPart, fn func(syntax.WordPart)) {
	for _, p := range parts {
		if q, ok := p.(*syntax.DblQuoted); ok {
			eachOpened(q.Parts, fn)
		} else {
			fn(p)
		}
	}
}

// bashArrays are the arrays bash makes itself (DIRSTACK, GROUPS,
// PIPESTATUS, …): declare NAME=$v reads a value made at run time again as
// (…), code and all, as for an array the command makes.
var bashArrays = map[string]bool{"DIRSTACK": true, "GROUPS": true, "PIPESTATUS": true, "BASH_ARGC": true, "BASH_ARGV": true,
	"BASH_LINENO": true, "BASH_SOURCE": true, "BASH_VERSINFO": true, "BASH_REMATCH": true, "FUNCNAME": true, "COMP_WORDS": true,
	"COPROC": true, "MAPFILE": true}

// intVar says bash gives name the integer attribute itself (declare -pi):
// every assignment to it is arithmetic, which runs the $(…) in a value's
// subscript (RANDOM=$v with v holding a[$(cmd)]), as after declare -i.
func intVar(name string) bool {
	switch name {
	case "RANDOM", "SRANDOM", "OPTIND", "HISTCMD", "MAILCHECK":
		return true
	}
	return false
}

// codeVars are variables whose value a shell runs as code or loads
// (BASH_ENV, ENV, exported functions BASH_FUNC_name%%, PS4 under set -x,
// PROMPT_COMMAND): setting one is unreadable. So is setting zsh's
// histchars (HISTCHARS), whose third character is the comment character
// of the code zsh parses later, the text of a $(…) as it runs: zsh 5.9
// ran cmd for for histchars in '!^x'; do ls $(ls # ; cmd⏎); done and for
// (( histchars = 123 )); ls $(ls # ; cmd⏎), where bash reads a comment.
func codeVar(name string) bool {
	switch name {
	case "BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3",
		"BASH_CMDS", "BASH_ALIASES", // the shell's tables of commands and aliases
		"histchars", "HISTCHARS":
		return true
	}
	return strings.HasPrefix(name, "BASH_FUNC_")
}

func codeSyntax(s string) bool {
	return strings.Contains(s, "$(") || strings.Contains(s, "`") || strings.Contains(s, "${")
}

// writesFile says redirections write a file: anything but /dev/null and
// the moving or closing of a descriptor.
func writesFile(redirs []*syntax.Redirect) bool {
	for _, r := range redirs {
		// /dev/tcp/HOST/PORT is a socket whichever way it is opened:
		// < /dev/tcp/h/1 >&0 sends the output to h. So may be an input
		// file named at run time (for f in /dev/tcp/h/1; … < $f >&0).
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		default:
			if r.Word != nil && isSocket(wordText(r.Word)) {
				return true
			}
			if _, ok := literal(r.Word); r.Op == syntax.RdrIn && !ok {
				return true
			}
		}
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

// isSocket says a redirection's file is one bash opens as a socket.
func isSocket(target string) bool {
	for _, t := range []string{target, path.Clean(target)} {
		if strings.HasPrefix(t, "/dev/tcp/") || strings.HasPrefix(t, "/dev/udp/") {
			return true
		}
	}
	return false
}

// quotedDelimiter says part of a here-document's delimiter is quoted
// ('EOF', E"OF", E\OF), so that bash expands nothing in its body (it
// expands the body of <<E$x).
func quotedDelimiter(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.ContainsRune(p.Value, '\\') {
				return true
			}
		}
	}
	return false
}

// bashEndsBefore says bash ends here-document r before the parser does:
// a line of the body the parser read (the last is the one it ended at)
// is the delimiter as bash compares it, after joining the lines a
// backslash splits when the delimiter is unquoted and, for <<-, taking
// off leading tabs. code is the text the parser read.
func bashEndsBefore(code string, r *syntax.Redirect) bool {
	start, end := r.Hdoc.Pos(), r.Hdoc.End()
	if !start.IsValid() || !end.IsValid() || end.Offset() > uint(len(code)) || start.Offset() > end.Offset() {
		return false
	}
	delim := wordText(r.Word)
	quoted := len(r.Word.Parts) != 1 || strings.ContainsRune(r.Word.Lit(), '\\') || r.Word.Lit() == ""
	lines := strings.Split(code[start.Offset():end.Offset()], "\n")
	// isDelim compares a joined line as bash does: <<- takes the tabs off
	// the joined line only.
	isDelim := func(joined string) bool {
		if r.Op == syntax.DashHdoc {
			joined = strings.TrimLeft(joined, "\t")
		}
		return joined == delim
	}
	var line strings.Builder // (a Builder: thousands of joined lines stay linear)
	joining := false
	last := len(lines) - 1
	for _, l := range lines[:last] {
		if n := len(l) - len(strings.TrimRight(l, "\\")); !quoted && n%2 == 1 {
			line.WriteString(l[:len(l)-1])
			joining = true
			continue
		}
		joining = false
		line.WriteString(l)
		if isDelim(line.String()) {
			return true
		}
		line.Reset()
	}
	// The last line is the one the parser ended at; with <<- it ends at
	// a tab-indented delimiter after a line split by a backslash, which
	// bash joins to it ("\tx\\" and "\tEOF" is "x\tEOF") and reads on.
	return joining && !isDelim(line.String()+lines[last])
}

// interpreters run shell code given as an argument (-c), on standard input,
// or as a here-document.
var interpreters = map[string]bool{"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true,
	"csh": true, "tcsh": true, "fish": true, "yash": true, "posh": true, "ksh93": true, "lksh": true, "pdksh": true, "oksh": true}

// wrappers run the command that follows their options (sudo bash, nohup
// sh, env eval …): a shell or eval after one runs as if it came first.
var wrappers = map[string]bool{"sudo": true, "doas": true, "pkexec": true, "nohup": true, "env": true, "exec": true, "command": true,
	"strace": true, "ltrace": true, "valgrind": true, "fakeroot": true, "busybox": true, "setpriv": true, "proxychains": true,
	"proxychains4": true, "torsocks": true,
	"builtin": true, "nice": true, "ionice": true, "timeout": true, "stdbuf": true, "time": true, "setsid": true,
	"xargs": true, "chrt": true, "taskset": true, "unbuffer": true, "chroot": true, "sg": true, "flock": true,
	"firejail": true, "nsenter": true, "unshare": true, "systemd-run": true, "faketime": true, "caffeinate": true,
	"numactl": true, "setarch": true, "linux32": true, "linux64": true, "prlimit": true, "cgexec": true}

// codeRunners run a string of shell code they are given: after -c (su,
// runuser, sg, flock, script), as their operands (watch), or on another
// machine (ssh, whose remote command still pushes to the same remote);
// given none, most read it from standard input (su, ssh, at).
var codeRunners = map[string]bool{"su": true, "runuser": true, "sg": true, "flock": true, "script": true, "watch": true, "ssh": true,
	"at": true, "batch": true, "newgrp": true}

// sshValued are ssh's options that take a value.
const sshValued = "BbcDEeFIiJLlmOoPpQRSWw"

// runnerCode finds the code a code runner is given; found false when it is
// given none (su alone opens a shell on the terminal).
func runnerCode(name string, args []string) (code string, found bool) {
	switch name {
	case "watch":
		for j := 0; j < len(args); j++ {
			a := args[j]
			switch {
			case a == "--":
				return strings.Join(args[j+1:], " "), j+1 < len(args)
			case a == "-n" || a == "--interval":
				j++
			case strings.HasPrefix(a, "-"):
			default:
				return strings.Join(args[j:], " "), true
			}
		}
		return "", false
	case "ssh":
		host := -1
		for j := 0; j < len(args) && host < 0; j++ {
			a := args[j]
			switch {
			case len(a) == 2 && a[0] == '-' && strings.IndexByte(sshValued, a[1]) >= 0:
				j++
			case strings.HasPrefix(a, "-"):
			default:
				host = j
			}
		}
		if host < 0 || host+1 >= len(args) {
			return "", false
		}
		return strings.Join(args[host+1:], " "), true
	}
	for j, a := range args {
		switch {
		case a == "-c" || a == "--command":
			if j+1 < len(args) {
				return args[j+1], true
			}
			return "", true // -c with nothing: unreadable
		case strings.HasPrefix(a, "--command="):
			return strings.TrimPrefix(a, "--command="), true
		}
	}
	return "", false
}

// envSplit reads the command env -S (--split-string, or an abbreviation
// of it) gives as one string; false when it cannot be read. Backslash
// escapes in it (\_ is a space) are beyond this reading: unreadable.
func (s *shellCmd) envSplit(args []string, dynamic bool, depth int) bool {
	for j := 0; j < len(args); j++ {
		a, split, has := args[j], "", false
		switch {
		case a == "--":
			return true
		case strings.HasPrefix(a, "--"):
			name, val, eq := strings.Cut(a[2:], "=")
			if len(name) >= 2 && strings.HasPrefix("split-string", name) {
				split, has = val, true
				if !eq {
					if j+1 >= len(args) {
						return false
					}
					j++
					split = args[j]
				}
			} else if !eq && (name == "unset" || name == "chdir") {
				j++
			}
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				if a[k] == 'u' || a[k] == 'C' {
					if k == len(a)-1 {
						j++ // its value is the next word
					}
					break
				}
				if a[k] == 'S' {
					split, has = a[k+1:], true
					if split == "" {
						if j+1 >= len(args) {
							return false
						}
						j++
						split = args[j]
					}
					break
				}
			}
		case strings.Contains(a, "="):
			// NAME=value settings
		default:
			return true // the command env runs, read as a word of this part
		}
		if has && (dynamic || strings.Contains(split, "\\") || !s.read(split, depth+1)) {
			return false
		}
	}
	return true
}

// call adds one simple command (and the shell code it runs, if any).
func (s *shellCmd) call(c *syntax.CallExpr, st *syntax.Stmt, depth int) {
	p := part{env: len(c.Assigns) > 0, called: true}
	for _, a := range c.Assigns {
		if a.Name != nil && codeVar(a.Name.Value) || a.Value != nil && s.hidesCode(a.Value) {
			p.unreadable = true // BASH_ENV=<(…) bash, x='a[$(cmd)]'
		}
		if a.Name != nil && intVar(a.Name.Value) {
			if lit, ok := literal(a.Value); a.Value != nil && !ok || codeSyntax(lit) {
				p.unreadable = true // RANDOM=$v evaluates $v's a[$(cmd)]
			}
		}
		if a.Index != nil { // a[y]=1 evaluates y
			reads, subst := s.arithReads(a.Index)
			p.unreadable = p.unreadable || subst
			p.reads = append(p.reads, reads...)
		}
	}
	if len(c.Args) == 0 {
		if p.env {
			p.words = []string{}
			s.parts = append(s.parts, p) // FOO=1 alone: changes what follows
		}
		return
	}
	dynamic := false
	taker := nameTaker(c.Args)
	p.words = make([]string, 0, len(c.Args))
	for i, w := range c.Args {
		lit, ok := literal(w)
		text := lit // a literal word's text is its value; another's, what its quoted and plain parts say
		if !ok && taker != "" {
			text = wordText(w)
		}
		if i > 0 && takesName(taker, p.words, text) {
			// printf -v 'a[$(cmd)]', unset 'a[y]', test -v "$n", builtin
			// let "a[$_]": a name, whose subscript the builtin evaluates
			// ($'a[\x79]' is a[y]), made at run time or not. Other commands
			// take [ as text (grep '[-_]').
			if _, sub, has := strings.Cut(text, "["); has {
				p.unreadable = p.unreadable || codeSyntax(sub) || escaped(w)
				p.reads = append(p.reads, identifiers(sub)...)
				// printf -v 'a[PATH=0]' evaluates the subscript, which
				// assigns: a change of the environment the name hides.
				p.env = p.env || assignsText(sub)
			}
			if !ok && !plainSetting(taker, w) {
				reads, subst := s.arithReads(w)
				// "$x"'$(cmd)]' with x='a[': a $ or backquote the name's
				// own text holds, joined to a value, is code in its
				// subscript (as arithHides in arithmetic).
				p.unreadable = p.unreadable || subst || s.arithHides(w)
				p.reads = append(p.reads, reads...)
			}
		}
		if !ok {
			if i == 0 {
				p.unreadable = true // the command's name is made at run time
			}
			dynamic = true
			lit = madeWord
		}
		p.words = append(p.words, lit)
	}
	// zsh's printf (Claude Code's Bash tool runs the user's shell, zsh
	// on macOS) evaluates the argument of a numeric conversion (%d, %x,
	// %f, a * width …) as arithmetic, which assigns and runs the $(…) of
	// a subscript; bash's takes a number. zsh 5.9 ran cmd for printf %d
	// 'HOME[$(cmd)]', and ./63/ls for printf %d PATH=63; ls. So does
	// its test (and [) the descriptor of -t, as [[ -t … ]] does: zsh 5.9
	// ran cmd for test -t 'HOME[$(cmd)]'. zsh's print -f formats as its
	// printf does: print -f '%d' 'HOME[$(cmd)]' ran cmd.
	zt := taker
	if zt == "" && runsPrint(p.words) {
		zt = "print" // not a taker of names: print -v is assigned's
	}
	if zt == "printf" || zt == "test" || zt == "[" || zt == "print" {
		for _, j := range zshArith(zt, p.words) {
			w := c.Args[j]
			if lit, ok := literal(w); ok {
				p.unreadable = p.unreadable || strings.ContainsAny(lit, "$`")
				p.env = p.env || assignsText(lit)
				p.reads = append(p.reads, identifiers(lit)...)
			} else {
				reads, subst := s.arithReads(w)
				p.unreadable = p.unreadable || subst || s.arithHides(w) || strings.ContainsAny(wordText(w), "$`")
				p.env = p.env || assignsText(wordText(w))
				p.reads = append(p.reads, reads...)
			}
		}
	}
	// command declare x=…, builtin export 'x=…', \declare -n r=x: a
	// declaration the parse shows as words, which sets x as x=… does.
	if declBuiltin(taker) {
		assoc := false
		for j := wordRuns(p.words, taker) + 1; j < len(p.words); j++ {
			w := p.words[j]
			name, value, isSetting := strings.Cut(w, "=")
			if w == madeWord {
				name, _, isSetting = strings.Cut(wordText(c.Args[j]), "=")
			}
			name, _, _ = strings.Cut(name, "[")
			name = strings.TrimSuffix(name, "+")
			s.gitConfig = s.gitConfig || gitConfigVar(name) // command export GIT_CONFIG_COUNT=1
			switch {
			case w != madeWord && strings.HasPrefix(w, "-"):
				p.unreadable = p.unreadable || strings.ContainsAny(w, "ni") // -n r=x, -i x
				assoc = assoc || strings.Contains(w, "A")
			case !isSetting && w == madeWord, !syntax.ValidName(name):
				p.unreadable = true // a name or option made at run time
			case codeVar(name) || intVar(name):
				p.unreadable = true
			case w == madeWord:
				s.mark(name)
			case isSetting:
				s.assignText(name, value)
			}
			if assoc {
				s.markAssoc(name)
			}
		}
	}
	// What the command's standard input is, as its own redirections set
	// it (the last one of descriptor 0 counts): a here-document or
	// here-string in the command, or something else (a file, another
	// descriptor: <&3, <>).
	var stdin *syntax.Word
	for _, r := range st.Redirs {
		if fd, err := strconv.Atoi(redirFD(r)); err != nil || fd != 0 {
			continue // 3<<< 'text' feeds descriptor 3 (00< is 0)
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			stdin = r.Hdoc
		case syntax.WordHdoc:
			stdin = r.Word
		case syntax.RdrIn, syntax.DplIn, syntax.RdrInOut:
			stdin = nil
		}
	}
	p.writes = writesFile(st.Redirs)
	// An allow rule reads the words as written (Bash(find src -exec gofmt
	// -l {} +)); ask and deny rules read those made at run time as such.
	written := p.words
	p.words = runTimeWords(p.words)
	p.runsMade = runsMadeCommand(p.words, c.Args)
	// The words that run: the first, and after a wrapper (sudo, nohup,
	// env …) the next that is not an option or a setting.
	runs := func(i int) bool {
		if i == 0 {
			return true
		}
		first := path.Base(p.words[0])
		return wrappers[first] || codeRunners[first] // runuser -u me -- bash, ssh host bash
	}
	for i, w := range p.words {
		name := path.Base(w)
		switch {
		case interpreters[name]:
			// A shell anywhere in the words (sudo bash -c …, xargs sh -c
			// …) runs code: read it as commands of their own, or mark the
			// part unreadable.
			if !s.shell(&p, i, c.Args, runs(i), stdin, depth) {
				p.unreadable = true
			}
		case (name == "source" || name == ".") && runs(i):
			// source FILE runs a file; from standard input or a
			// substitution, code that is not in the command.
			file := i + 1
			if file < len(p.words) && p.words[file] == "--" {
				file++ // source -- FILE
			}
			if file >= len(p.words) || fedCode(p.words[file], c.Args[file], false) {
				p.unreadable = true
			} else if fedCode(p.words[file], c.Args[file], true) {
				p.onStdin = true // source stderr in /dev: what the command feeds
			} else {
				p.scripts = append(p.scripts, p.words[file])
			}
		case name == "eval" && runs(i):
			if dynamic || !s.read(strings.Join(p.words[i+1:], " "), depth+1) {
				p.unreadable = true
			}
		case name == "trap" && runs(i):
			// trap 'code' SIGNAL runs code later in this shell; trap - SIG
			// and trap -p/-l do not.
			args := p.words[i+1:]
			if len(args) > 0 && (args[0] == "-p" || args[0] == "-l" || args[0] == "-P") {
				break
			}
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) > 1 && args[0] != "-" && (dynamic || !s.read(args[0], depth+1)) {
				p.unreadable = true
			}
		case name == "env" && runs(i):
			if !s.envSplit(p.words[i+1:], dynamic, depth) {
				p.unreadable = true
			}
		case (name == "sudo" || name == "doas") && runs(i) && opensShell(p.words[i+1:]):
			// sudo -s and sudo -i run a shell, which reads what the
			// command feeds it when sudo is given no command.
			p.onStdin = true
		case assigns[name] && runs(i):
			// printf -v NAME, read NAME, mapfile NAME set a variable as an
			// assignment does (read 'BASH_CMDS[ls]' <<< /usr/bin/git),
			// from text that arithmetic may later run as code (read x
			// <<< 'a[$(cmd)]'; (( x ))).
			names, code := assigned(name, p.words[i+1:])
			p.unreadable = p.unreadable || code
			if !numbersOnly(st.Redirs) {
				for _, v := range names {
					v, _, _ = strings.Cut(v, "[")
					s.mark(v)
				}
				switch {
				case name == "read" && len(names) == 0:
					s.mark("REPLY")
				case name == "getopts":
					s.mark("OPTARG")
				}
			}
			for _, v := range names {
				v, sub, _ := strings.Cut(v, "[")
				if sub != "" {
					s.markArray(v) // printf -v 'x[0]', read 'x[0]'
				}
				p.unreadable = p.unreadable || v == madeWord // read $'BASH_CMD\x53': a name made at run time
				s.gitConfig = s.gitConfig || gitConfigVar(v)
				p.unreadable = p.unreadable || codeVar(v) || intVar(v)
				p.env = p.env || mayBeExported(v)
				if name == "mapfile" || name == "readarray" || name == "read" && slices.ContainsFunc(p.words[i+1:], func(w string) bool {
					return len(w) > 1 && w[0] == '-' && strings.Contains(w, "a")
				}) {
					s.markArray(v)
				}
			}
			if stdin != nil && strings.Contains(wordText(stdin), "[") && codeSyntax(wordText(stdin)) {
				p.unreadable = true
			}
		case (name == "set" || name == "shopt") && runs(i) && slices.ContainsFunc(p.words[i+1:], func(w string) bool {
			return w == "keyword" || w == "histexpand" || len(w) > 1 && w[0] == '-' && w[1] != '-' && strings.ContainsAny(w, "kH")
		}):
			// set -k: NAME=value anywhere in a command's words sets its
			// environment; set -H (shopt -so histexpand): !! and ^x^y in
			// later lines run history entries, which the command writes
			// (history -s 'git push').
			p.unreadable = true
		case name == "fc" && runs(i) && !fcLists(p.words[i+1:]):
			p.unreadable = true // fc -s and fc -e run a history entry, which history -s writes; fc -l lists
		case (name == "compgen" || name == "complete") && runs(i) && slices.ContainsFunc(p.words[i+1:], func(w string) bool {
			return w == madeWord || len(w) > 1 && w[0] == '-' && strings.ContainsAny(w, "CW")
		}):
			p.unreadable = true // compgen -C 'cmd' runs cmd; -W expands the $(…) in its list
		case (name == "parallel" || name == "sem") && runs(i):
			// GNU parallel runs its arguments, and the lines it reads, as
			// shell code, with words it puts in at run time.
			p.runsMade = true
		case name == "alias" && runs(i):
			p.unreadable = true // what an alias runs is read where it is used, later
		case name == "hash" && runs(i) && slices.ContainsFunc(p.words[i+1:], func(w string) bool { return w == madeWord || strings.HasPrefix(w, "-") && strings.Contains(w, "p") }):
			p.unreadable = true // hash -p /usr/bin/git ls: ls runs git from now on
		case codeRunners[name] && runs(i):
			// su -c 'code', flock f -c 'code', watch 'code', ssh host 'code'.
			code, found := runnerCode(name, p.words[i+1:])
			switch {
			case found && (dynamic || !s.read(code, depth+1)):
				p.unreadable = true
			case found:
			case name == "ssh" && slices.ContainsFunc(p.words[i+1:], func(w string) bool { return strings.Contains(strings.ToLower(w), "remotecommand") }):
				p.unreadable = true // ssh -o RemoteCommand='…' host
			case name == "ssh" || name == "at" || name == "batch":
				// Given no command, ssh runs a shell, and at a job, whose
				// code is standard input: what the command feeds them
				// (echo 'git push' | ssh host).
				p.onStdin = true
			case name != "watch" && name != "flock":
				// su, runuser, sg, script and newgrp take their code in
				// forms beyond -c (su -lc '…', sg group '…', script -qc
				// '…'), or open a shell on standard input.
				p.unreadable = true
			}
		}
		if k, _, isSetting := strings.Cut(w, "="); isSetting && i > 0 && path.Base(p.words[0]) == "env" && codeVar(k) {
			p.unreadable = true // env BASH_ENV=… bash, env 'BASH_FUNC_f%%=() { … }' bash
		}
	}
	if gitAliases(p.words, c.Assigns) {
		// git -c alias.p=push p: p runs push, or with ! shell code. Ask
		// and deny rules read the command git runs as unread.
		p.runsMade = true
	}
	if wordRuns(p.words, "xargs") >= 0 {
		// xargs adds the words it reads to the command it runs (echo
		// push | xargs git): words made at run time, after the last.
		p.words = append(p.words, madeWord)
		written = append(slices.Clip(written), madeWord)
	}
	p.line = strings.Join(written, " ")
	s.parts = append(s.parts, p)
}

// gitAliases says a part that runs git defines git aliases in the command:
// -c alias.NAME=…, --config-env=alias.NAME=…, or the GIT_CONFIG_* settings
// (before the command, or given to env), which may name any key.
func gitAliases(words []string, assigns []*syntax.Assign) bool {
	if wordRuns(words, "git") < 0 {
		return false
	}
	for _, a := range assigns {
		if a.Name != nil && gitConfigVar(a.Name.Value) {
			return true
		}
	}
	for i, w := range words {
		name, _, _ := strings.Cut(w, "=")
		lower := strings.ToLower(w)
		switch {
		case gitConfigVar(name):
			return true // env GIT_CONFIG_PARAMETERS=… git
		case strings.HasPrefix(lower, "--config-env=") && gitAliasKey(lower[len("--config-env="):]) || gitAliasKey(lower) && i > 0 && (words[i-1] == "-c" || words[i-1] == "--config-env"):
			return true
		case w == madeWord && i > 0 && (words[i-1] == "-c" || words[i-1] == "--config-env"):
			return true // git -c "$KV": a key made at run time
		}
	}
	return false
}

// wordRuns is the index of the first word that names the command cmd,
// as written or by its path (/usr/bin/git), -1 for none.
func wordRuns(words []string, cmd string) int {
	return slices.IndexFunc(words, func(w string) bool { return path.Base(w) == cmd })
}

// gitConfigVar says a variable of the environment gives git settings
// (GIT_CONFIG_COUNT/KEY_n, GIT_CONFIG_PARAMETERS) or the files it reads
// them from (GIT_CONFIG_GLOBAL=./x, GIT_CONFIG_SYSTEM).
func gitConfigVar(name string) bool {
	return strings.HasPrefix(name, "GIT_CONFIG")
}

// gitAliasKey says a git setting (key=value, lower case) defines aliases:
// alias.NAME, or a file to include, which may (include.path,
// includeIf.COND.path).
func gitAliasKey(kv string) bool {
	return strings.HasPrefix(kv, "alias.") || strings.HasPrefix(kv, "include.") || strings.HasPrefix(kv, "includeif.") ||
		strings.HasPrefix(kv, "help.autocorrect") // git pusj runs git push
}

// aliasSection says a word names a whole section of git settings that
// defines aliases (git config --rename-section x alias makes x.p alias.p).
func aliasSection(w string) bool {
	return w == "alias" || w == "include" || w == "help" || strings.HasPrefix(w, "includeif.")
}

// gitConfigFile says a file a redirection writes may be one git reads its
// settings from (.git/config, ~/.gitconfig, $XDG_CONFIG_HOME/git/config,
// /etc/gitconfig), and so define aliases for the git commands after it.
func gitConfigFile(t string) bool {
	base := strings.ToLower(path.Base(path.Clean(t)))
	return base == "config" || strings.HasSuffix(base, "gitconfig")
}

// mayNameGitConfig says a redirection's word, made at run time, may name
// a file git reads settings from (gitConfigFile): all but a name whose
// written end rules it out ("$LOG".txt, "$d"/notes.md). A glob or a brace
// in that end (.git/c*g) may be any name.
func mayNameGitConfig(w *syntax.Word) bool {
	var tail strings.Builder // the text after the last expansion
	whole := true            // no expansion at all
	eachOpened(w.Parts, func(p syntax.WordPart) {
		switch x := p.(type) {
		case *syntax.Lit:
			tail.WriteString(unescape(x.Value))
		case *syntax.SglQuoted:
			// $'\x63onfig' is config: its value, not its text.
			v, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{x}})
			if err != nil {
				tail.Reset()
				whole = false
				return
			}
			tail.WriteString(v)
		default:
			tail.Reset()
			whole = false
		}
	})
	t := tail.String()
	switch {
	case expands(t):
		return true
	case whole || strings.Contains(t, "/"):
		return gitConfigFile(t) // the base name is written whole
	}
	// The base name is something made, then t: config or …gitconfig if t
	// ends one of them, or ends with gitconfig itself.
	lt := strings.ToLower(t)
	return strings.HasSuffix("gitconfig", lt) || strings.HasSuffix(lt, "gitconfig")
}

// definesGitAliases says a part sets git aliases for the git commands
// after it: it exports a GIT_CONFIG_* variable, or runs git config with an
// alias or include key.
func definesGitAliases(q part) bool {
	if len(q.words) == 0 {
		return false
	}
	if q.env && declBuiltin(q.words[0]) {
		return slices.ContainsFunc(q.words[1:], gitConfigVar)
	}
	i := wordRuns(q.words, "git")
	// git config "$k" …: a key made at run time may be alias.p.
	return i >= 0 && slices.Contains(q.words[i:], "config") &&
		slices.ContainsFunc(q.words[i:], func(w string) bool {
			return w == madeWord || gitAliasKey(strings.ToLower(w)) || aliasSection(strings.ToLower(w))
		})
}

// xargsReplace is the string xargs' options (args) have it replace with
// what it reads (-I R, -iR, -i, --replace=R), "" for none. Its options
// end at the first word that is neither an option nor an option's value:
// the command, whose own options (grep -ir) are not xargs'.
func xargsReplace(args []string) string {
	replace := ""
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--" || !strings.HasPrefix(a, "-") || a == "-":
			return replace
		case a == "-i" || a == "--replace":
			replace = "{}"
		case strings.HasPrefix(a, "--replace="):
			replace = strings.TrimPrefix(a, "--replace=")
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && slices.Contains([]string{"--arg-file", "--delimiter", "--max-args", "--max-lines",
				"--max-procs", "--max-chars", "--process-slot-var", "--eof"}, a) {
				j++ // its value is the next word
			}
		case a[1] == 'I':
			if replace = a[2:]; replace == "" && j+1 < len(args) {
				j++
				replace = args[j]
			}
		case a[1] == 'i':
			replace = a[2:]
		case strings.IndexByte("aELnPsd", a[1]) >= 0 && len(a) == 2:
			j++ // -n 1, -P 2, -d '\n': the next word is the value
		}
	}
	return replace
}

// redirFD is the descriptor a redirection sets, as written: its number,
// or 0 for an input redirection written without one, 1 for an output one.
func redirFD(r *syntax.Redirect) string {
	if r.N != nil {
		return r.N.Value
	}
	switch r.Op {
	case syntax.RdrIn, syntax.DplIn, syntax.RdrInOut, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return "0"
	}
	return "1"
}

// runTimeWords is the words of a part with those xargs -I (-i) or find
// -exec fill in at run time (xargs -I{} git {} --force, find push -exec
// git {} \;) marked as made at run time: a copy when it marks any.
func runTimeWords(words []string) []string {
	replace := ""
	for i, w := range words {
		switch base := path.Base(w); {
		case base == "xargs":
			replace = xargsReplace(words[i+1:])
		case base == "find":
			replace = "{}"
		}
	}
	if replace == "" {
		return words
	}
	out := words
	for i, w := range words {
		if i > 0 && strings.Contains(w, replace) && !strings.HasPrefix(w, "-I") && !strings.HasPrefix(w, "-i") && !strings.HasPrefix(w, "--replace") {
			if &out[0] == &words[0] {
				out = slices.Clone(words)
			}
			out[i] = madeWord
		}
	}
	return out
}

// zshArith is the indices of the words of a command (words) that zsh's
// builtin taker (printf, test or [) evaluates as arithmetic.
func zshArith(taker string, words []string) []int {
	switch taker {
	case "printf":
		return printfArith(words)
	case "print":
		return printFormatArith(words)
	}
	var out []int
	for j := wordRuns(words, taker) + 1; j > 0 && j+1 < len(words); j++ {
		// a made word may be -t (for o in -t; do test $o …), unless an
		// operator follows it (test "$PWD" = /).
		next := words[j+1]
		operator := strings.HasPrefix(next, "-") || next == "=" || next == "==" || next == "!=" || next == "<" || next == ">"
		if (words[j] == "-t" || words[j] == madeWord && !operator) && (taker != "[" || next != "]") {
			out = append(out, j+1)
		}
	}
	return out
}

// runsPrint says a command's words run zsh's print, after wrappers
// (builtin print, noglob print).
func runsPrint(words []string) bool {
	for _, w := range words {
		if !wrappers[w] && w != "noglob" && w != "-" {
			return w == "print"
		}
	}
	return false
}

// printFormatArith is the indices of the words of a print command that
// zsh may evaluate as arithmetic: with -f (-f FMT, -rf FMT, -f%d) print
// formats as printf does, so every word after print; with no word that
// may be -f, none. It errs toward asking: any word starting with - and
// holding an f, or made at run time, counts as -f.
func printFormatArith(words []string) []int {
	i := wordRuns(words, "print")
	if i < 0 {
		return nil
	}
	var out []int
	formats := false
	for j := i + 1; j < len(words); j++ {
		formats = formats || words[j] == madeWord || strings.HasPrefix(words[j], "-") && strings.Contains(words[j], "f")
		out = append(out, j)
	}
	if !formats {
		return nil
	}
	return out
}

// printfArith is the indices of the words of a printf command (words,
// the command's) that zsh's printf evaluates as arithmetic: those its
// format gives a numeric conversion or a * width or precision, the
// format read again while arguments remain; all after a format made at
// run time or one that numbers its arguments (%1$d).
func printfArith(words []string) []int {
	i := wordRuns(words, "printf") + 1
	if i == 0 {
		return nil
	}
	// zsh's printf takes -v NAME and -- for options; any other word
	// (-%d\n, -vx) is its format: zsh 5.9 ran cmd for
	// printf '-%d' 'HOME[$(cmd)]'. Bash's errors on it.
	for i < len(words) && (words[i] == "-v" || words[i] == "--") {
		if words[i] == "--" {
			i++
			break
		}
		i += 2
	}
	if i >= len(words) {
		return nil
	}
	var numeric []bool // of each argument the format takes, in turn
	all := words[i] == madeWord
	for f := words[i]; !all; {
		k := strings.IndexByte(f, '%')
		if k < 0 {
			break
		}
		f = f[k+1:]
		spec := strings.TrimLeft(f, "-+ #0'123456789.*$")
		flags := f[:len(f)-len(spec)]
		// zsh skips one size modifier (h, l or L): zsh 5.9 ran cmd for
		// printf %ld 'HOME[$(cmd)]', as for %hd, %lu and %Lf.
		if len(spec) > 1 && strings.IndexByte("hlL", spec[0]) >= 0 {
			spec = spec[1:]
		}
		conv := byte(0)
		if spec != "" {
			conv = spec[0]
		}
		if conv == '%' && flags == "" {
			f = f[1:]
			continue
		}
		all = strings.Contains(flags, "$")
		for range strings.Count(flags, "*") {
			numeric = append(numeric, true)
		}
		if conv != 0 {
			numeric = append(numeric, strings.IndexByte("diouxXeEfFgGaA", conv) >= 0)
			f = spec[1:]
		} else {
			f = spec
		}
	}
	var out []int
	for j := i + 1; j < len(words) && (all || len(numeric) > 0); j++ {
		if all || numeric[(j-i-1)%len(numeric)] {
			out = append(out, j)
		}
	}
	return out
}

// assigns are the builtins that set variables they are given by name.
var assigns = map[string]bool{"printf": true, "read": true, "mapfile": true, "readarray": true, "getopts": true, "print": true}

// assigned is the names the builtin name sets, given its arguments: printf
// -v NAME, read's operands and -a NAME, mapfile's and readarray's operand
// (MAPFILE by default), getopts' second operand, zsh's print -v NAME
// (zsh 5.9 ran cmd for print -v histchars 123; ls $(ls # ; cmd⏎)); code
// says it is given code to run (mapfile -C callback).
func assigned(name string, args []string) (names []string, code bool) {
	valued := "" // the options that take a value
	switch name {
	case "printf":
		valued = "v"
	case "print": // zsh's
		valued = "uCfvxX"
	case "read":
		valued = "adinNptu"
	case "mapfile", "readarray":
		valued = "dnOsuCc"
	}
	var operands []string
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--" && len(operands) == 0:
			operands = append(operands, args[j+1:]...)
			j = len(args)
		case a == madeWord && len(operands) == 0:
			// o=-v; printf $o NAME …: an option made at run time may be
			// one that names a variable, or a callback.
			code = true
			operands = append(operands, a)
		case len(a) > 1 && a[0] == '-' && len(operands) == 0:
			for k := 1; k < len(a); k++ {
				if !strings.ContainsRune(valued, rune(a[k])) {
					continue
				}
				// The rest of the word, or the next word, is the value.
				v := a[k+1:]
				if v == "" && j+1 < len(args) {
					j++
					v = args[j]
				}
				switch {
				case a[k] == 'v' || a[k] == 'a' && name == "read":
					names = append(names, v)
				case a[k] == 'C' && name != "print": // mapfile's callback; print -C N is columns
					code = true
				}
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	switch name {
	case "read":
		names = append(names, operands...)
	case "mapfile", "readarray":
		if len(operands) > 0 {
			names = append(names, operands[0])
		} else {
			names = append(names, "MAPFILE")
		}
	case "getopts":
		if len(operands) > 1 {
			names = append(names, operands[1])
		}
	}
	return names, code
}

// opensShell says sudo's or doas' options ask for a shell (-s, -i, and
// their long names) before the command they run, if any.
func opensShell(args []string) bool {
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			return false
		case a == "--shell" || a == "--login":
			return true
		case strings.HasPrefix(a, "--"):
			// --user root: the value is the next word, unless given with =.
			switch a {
			case "--user", "--group", "--chdir", "--close-from", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout":
				j++
			}
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				if a[k] == 's' || a[k] == 'i' {
					return true
				}
				if strings.IndexByte("ugCDhprtUTR", a[k]) >= 0 {
					if k == len(a)-1 {
						j++ // -u root: the next word is its value
					}
					break // -upostgres: the rest is its value
				}
			}
		default:
			return false // the command
		}
	}
	return false
}

// shell reads what the shell named at words[i] runs: the code after -c,
// a here-document or standard input when it runs one (runs: it is the
// command, or follows a wrapper), or a script file. false means it runs
// code that cannot be read from the command.
func (s *shellCmd) shell(p *part, i int, args []*syntax.Word, runs bool, stdin *syntax.Word, depth int) bool {
	words := p.words[i+1:]
	inline, fromStdin, operand := shellArgs(words)
	for j, w := range words {
		// --rcfile <(curl …): a start-up file that is not in the command.
		if (w == "--rcfile" || w == "--init-file") && j+1 < len(words) {
			if fedCode(words[j+1], args[i+2+j], false) {
				return false
			}
			p.onStdin = p.onStdin || fedCode(words[j+1], args[i+2+j], true)
			p.scripts = append(p.scripts, words[j+1]) // unreadable if the command writes it
		}
	}
	if runs && (startsUp(words) || path.Base(p.words[i]) == "zsh") {
		// echo '…' >> ~/.bashrc; bash -ic true: an interactive or login
		// shell, and zsh always (.zshenv), runs its start-up files first.
		p.scripts = append(p.scripts, startupFiles...)
	}
	switch {
	case inline:
		if operand < 0 || words[operand] == madeWord {
			return false // sh -c with no code, code made at run time, or after options we cannot follow
		}
		code, known := literal(args[i+1+operand])
		return known && s.read(code, depth+1)
	case !runs && stdin != nil:
		return false // a here-document fed to a shell after a command we do not know
	case !runs:
		// A shell's name as an argument (grep bash), or one find -exec
		// runs (find . -name x.sh -exec bash {} \;): its file may be one
		// the command writes.
		if operand >= 0 && !fromStdin {
			p.scripts = append(p.scripts, words[operand])
		}
		return true
	case operand >= 0 && !fromStdin:
		// bash script.sh runs a file, an ordinary command; but not a
		// file that is standard input or a substitution (bash <(curl …)).
		if fedCode(words[operand], args[i+1+operand], true) {
			p.onStdin = true // bash /dev/stdin, bash 3 in /dev/fd: what the command feeds
		}
		p.scripts = append(p.scripts, words[operand]) // unreadable if the command writes it
		return !fedCode(words[operand], args[i+1+operand], false)
	case stdin != nil:
		// Its code is the here-document, which is read for what it runs;
		// but the commands in it read the same input as the shell, and
		// may take lines of it before the shell does (read; echo 'x …),
		// so what runs is not surely what is read.
		if doc, ok := document(stdin); ok {
			s.read(doc, depth+1)
		}
		return false
	case slices.Contains(words, "--version") || slices.Contains(words, "--help"):
		return true // bash --version runs nothing
	}
	// It reads its code from standard input: what the command feeds it
	// (a pipe, a file, a redirection of the group or loop around it,
	// exec <<< '…' before it, a coprocess), or, when the command feeds
	// nothing, the agent's own standard input (readShell decides).
	p.onStdin = true
	return true
}

// startsUp says a shell's options make it read start-up files: -i, -l,
// --login, --rcfile or --init-file before its first operand.
func startsUp(words []string) bool {
	for j := 0; j < len(words); j++ {
		w := words[j]
		switch {
		case w == "--" || w == "-":
			return false
		case w == "--login" || w == "--rcfile" || w == "--init-file":
			return true
		case strings.HasPrefix(w, "--"):
		case len(w) > 1 && w[0] == '-':
			if strings.ContainsAny(w[1:], "il") {
				return true
			}
			if strings.ContainsAny(w[1:], "oO") {
				j++ // takes an option's name
			}
		case len(w) > 1 && w[0] == '+':
			if strings.ContainsAny(w[1:], "oO") {
				j++
			}
		default:
			return false
		}
	}
	return false
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
// standard input, a descriptor, or a name made at run time (<(curl …));
// with standard input fed code, also a relative name for it (stdin, fd/0).
func fedCode(word string, arg *syntax.Word, stdinCode bool) bool {
	if _, ok := literal(arg); !ok {
		return true
	}
	base := path.Base(word)
	if stdinCode && !path.IsAbs(word) && (base == "stdin" || base == "stdout" || base == "stderr" || strings.Contains(word, "fd/") || isNumber(word)) {
		return true // cd /dev && curl … | bash stdin
	}
	word = path.Clean(word)
	// /proc/self/fd/0, /proc/self/root/dev/stdin, /proc/1/cwd/…: no script
	// a command runs lives under /proc. /dev/stdout and /dev/stderr are
	// descriptors too, which a redirection may feed (bash /dev/stderr
	// 2<<< '…').
	return word == "/dev/stdin" || word == "/dev/stdout" || word == "/dev/stderr" || strings.HasPrefix(word, "/dev/fd/") || strings.HasPrefix(word, "/proc/")
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
	if len(parts) == 1 {
		if l, ok := parts[0].(*syntax.Lit); ok {
			return quoted || !expands(l.Value) // most words: no copy
		}
	}
	// The word's unquoted text, each quoted piece standing in as one
	// plain character: {"git",push} is a brace expansion, gi["t"] a glob.
	var text strings.Builder
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.Lit:
			text.WriteString(x.Value)
		case *syntax.SglQuoted:
			// $'…' with escapes: bash decodes some (\x{67}, \cX) that the
			// parser's decoding leaves as they are.
			if x.Dollar && strings.Contains(x.Value, "\\") {
				return false
			}
			text.WriteByte('q')
		case *syntax.DblQuoted:
			if !static(x.Parts, true) {
				return false
			}
			text.WriteByte('q')
		default: // $x, $(…), $((…)), <(…), extended globs are decided at run time
			return false
		}
	}
	return quoted || !expands(text.String())
}

// expands says unquoted text changes before it runs: a glob (*, ?, […])
// or a brace expansion ({a,b}, {1..3}). Escaped characters (\*) stay.
func expands(v string) bool { return expandsAs(v, true) }

// expandsAs is expands, of braces too or of globs alone.
func expandsAs(v string, braces bool) bool {
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
			if end := strings.IndexByte(v[i+1:], '}'); braces && end >= 0 {
				inner := v[i+1 : i+1+end]
				if strings.Contains(inner, ",") || strings.Contains(inner, "..") {
					return true
				}
			}
		}
	}
	return false
}

// isDescriptor says a redirection's word names a file descriptor (2),
// moves one (2-) or closes one (-), not a file. Bash takes digits alone
// for a descriptor: >&+1 writes a file named +1.
func isDescriptor(w string) bool {
	if w == "-" {
		return true
	}
	digits := strings.TrimSuffix(w, "-")
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// bigDescriptor says the digits before a redirection are a number past
// bash's int (2147483647), which bash reads as a word instead.
func bigDescriptor(n string) bool {
	if n == "" || strings.Trim(n, "0123456789") != "" {
		return false // {NAME}
	}
	v, err := strconv.ParseInt(n, 10, 64)
	return err != nil || v > math.MaxInt32
}

// closesThenWords says the word of <& or >& starts with an unquoted -
// that has more after it, which bash reads as a word of its own.
func closesThenWords(w *syntax.Word) bool {
	if w == nil || len(w.Parts) == 0 {
		return false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	return ok && strings.HasPrefix(lit.Value, "-") && (len(lit.Value) > 1 || len(w.Parts) > 1)
}

// isSetting says a word is NAME=value (env FOO=$X cmd): a setting, not a
// command, whatever its value.
func isSetting(w *syntax.Word) bool {
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	name, _, found := strings.Cut(lit.Value, "=")
	return found && syntax.ValidName(name)
}

// runsMadeCommand says a wrapper (sudo, env, xargs, timeout …, find -exec)
// runs a command whose name is made at run time (sudo $CMD): the first
// word after the wrapper, its options, settings and numbers (timeout 60,
// nice -n 10) is not a literal. Made arguments of a literal command
// (timeout 60 go test -run $T) are not.
func runsMadeCommand(words []string, args []*syntax.Word) bool {
	base := path.Base(words[0])
	from := -1
	switch {
	case wrappers[base]:
		from = 1
	case base == "find":
		for i, w := range words {
			if w == "-exec" || w == "-execdir" || w == "-ok" || w == "-okdir" {
				from = i + 1
				break
			}
		}
	}
	if from < 0 {
		return false
	}
	for i := from; i < len(words); i++ {
		w := words[i]
		if w == madeWord {
			if isSetting(args[i]) {
				continue // env FOO=$X cmd
			}
			return true
		}
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") || isNumber(w) {
			continue
		}
		if wrappers[path.Base(w)] {
			continue // sudo nice -n 5 $CMD
		}
		return false // the command, literal
	}
	return false
}

func isNumber(w string) bool {
	_, err := strconv.ParseFloat(strings.TrimRight(w, "smhd"), 64)
	return err == nil
}

// testOperands reads the arithmetic operands of [[ … ]] (of -eq, -lt, …,
// and the name -v tests) as the arithmetic bash evaluates them, which may
// assign: [[ HOME=0 -eq 0 ]] and [[ -v a[PATH=63] ]] set HOME and PATH,
// where the parse shows words. An operand that does not read as arithmetic
// but holds an operator that could assign is a change of the environment.
func (s *shellCmd) testOperands(t *syntax.TestClause, depth int) {
	s.arithOperands(t, func(e syntax.TestExpr) {
		w, isWord := e.(*syntax.Word)
		if !isWord {
			return
		}
		text := wordText(w)
		if strings.TrimSpace(text) != "" && !s.read("(( "+text+" ))", depth+1) &&
			assignsText(text) {
			s.parts = append(s.parts, part{words: []string{"[[ ]]"}, env: true})
		}
	})
}

// fcLists says fc's options, read as bash's getopt reads them (-e takes the
// next word; the first word that is no option ends them), hold -l: fc
// lists history rather than running it. fc -s x=x -l runs the entry -l,
// and fc -e '-l;cmd' runs the editor -l;cmd.
func fcLists(args []string) bool {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" || len(w) < 2 || w[0] != '-' || w == madeWord {
			return false
		}
		for j := 1; j < len(w); j++ {
			switch w[j] {
			case 'l':
				return true
			case 'e':
				if j == len(w)-1 {
					i++ // -e EDITOR
				}
				j = len(w) // -eEDITOR
			}
		}
	}
	return false
}

// subscriptHidesCode says an array subscript being assigned holds code
// once its quotes are gone: in a piece (a['$(cmd)']) or across pieces
// (a=(['$'"(cmd)"]=1), a=([\$'(cmd)']=1)).
func (s *shellCmd) subscriptHidesCode(idx syntax.ArithmExpr) bool {
	if s.hidesCode(idx) {
		return true
	}
	w, isWord := idx.(*syntax.Word)
	return isWord && codeSyntax(wordText(w))
}

// endsEarly says a here-document inside a substitution that closer closes
// has a line that begins with its delimiter and holds the closer after it
// (E) under the delimiter E): bash ends the document there, and runs the
// lines after it; the parser reads on to a line that is the delimiter
// alone. Outside a substitution bash reads as the parser does.
func endsEarly(r *syntax.Redirect, closer string) bool {
	delim := wordText(r.Word)
	if delim == "" || closer == "" {
		return false
	}
	for _, line := range strings.Split(wordText(r.Hdoc), "\n") {
		if r.Op == syntax.DashHdoc {
			line = strings.TrimLeft(line, "\t")
		}
		if rest, ok := strings.CutPrefix(line, delim); ok && rest != "" && strings.Contains(rest, closer) {
			return true
		}
	}
	return false
}

// zshSubscript says parts hold $name[…], which bash reads as $name and
// the text […], and zsh (Claude Code's Bash tool runs the user's shell,
// zsh on macOS) as a subscript it evaluates as arithmetic, unquoted, in
// double quotes and in a here-document: zsh 5.9 ran ./63/ls for
// ls $HOME[PATH=63], and git with HOME=5 for git diff $PWD[HOME=5,0]; so
// with zsh's flags before the name ($#name[…], $+name[…], $=name[…],
// $^name[…], $~name[…]), which bash reads as $# and text, or as text.
// Only a subscript of digits, commas and minus signs, which names no
// variable and assigns nothing, is left readable.
func zshSubscript(parts []syntax.WordPart) bool {
	for i := 0; i+1 < len(parts); i++ {
		flags, ok := zshShortExpansion(parts[i])
		if !ok {
			continue
		}
		if l, isLit := parts[i+1].(*syntax.Lit); flags == "" && (!isLit || l.Value != "" && l.Value[0] != '[') {
			continue // $HOME/bin: no subscript, and nothing to join (a Bash read of every $x/… allocated it)
		}
		// The parser splits the text after an expansion into literals
		// (HOME, [PATH=63]): join them, up to the next expansion.
		// What the checks below read ends at a ] or at a character that
		// is no flag, name, [ or number: joining every literal to the
		// next expansion, for each $ of $+a/$+a/…, took n² steps.
		var after strings.Builder
		for _, wp := range parts[i+1:] {
			l, isLit := wp.(*syntax.Lit)
			if !isLit {
				break
			}
			after.WriteString(l.Value)
			if strings.Trim(l.Value, "~=^+#[,-"+zshNameChars) != "" || strings.Contains(l.Value, "]") {
				break
			}
		}
		rest := after.String()
		if flags != "" {
			rest = strings.TrimLeft(strings.TrimLeft(rest, flags), zshNameChars)
		}
		if rest, isSub := strings.CutPrefix(rest, "["); isSub && subscriptNames(rest) {
			return true
		}
	}
	return false
}

// zshNameChars are the characters of a variable's name.
const zshNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

// zshShortExpansion says part p is an unbraced expansion that zsh reads on
// into the text after it (a subscript, modifiers): $name; $#name; or
// $=name, $+name, $~name, $^name, which the parser leaves as text ending
// in a $. flags are what may begin that text before the name: "#" after
// $#, "~=^+#" after a $ that ends text, none after $name, whose name the
// expansion holds.
func zshShortExpansion(p syntax.WordPart) (flags string, ok bool) {
	switch p := p.(type) {
	case *syntax.ParamExp:
		if !p.Short {
			return "", false
		}
		if p.Param != nil && p.Param.Value == "#" {
			return "#", true
		}
		return "", true
	case *syntax.Lit:
		return "~=^+#", dollarEnds(p.Value)
	}
	return "", false
}

// zshRepeatModifier says parts hold an unbraced $name (also $#name,
// $=name, …, $name[…]) followed by zsh's modifiers (:h, :s/a/b/, …) of
// which one is :F:expr:, which repeats the next modifier expr times, expr
// being arithmetic, which assigns; bash reads $name and text. zsh 5.9 ran
// ./63/ls for ls $HOME:F:PATH=63:h; ls, in double quotes and in a
// here-document too.
func zshRepeatModifier(parts []syntax.WordPart) bool {
	// Once modifiers start, the rest of the word is read as theirs: an
	// expansion in a modifier's argument ($HOME:s/a/$x/:F:…) ends none.
	modifies := false
	for i, wp := range parts {
		if l, isLit := wp.(*syntax.Lit); isLit && modifies && repeatModifier(l.Value, i+1 < len(parts)) {
			return true
		}
		if i+1 >= len(parts) {
			break
		}
		next, nextLit := parts[i+1].(*syntax.Lit)
		if !nextLit {
			continue
		}
		flags, ok := zshShortExpansion(wp)
		if !ok {
			continue
		}
		rest := next.Value
		switch flags {
		case "#": // $#name: zsh 5.9 reads $##a:F:… as $# and text
			rest = strings.TrimLeft(rest, zshNameChars)
		case "":
		default:
			rest = strings.TrimLeft(strings.TrimLeft(rest, flags), zshNameChars)
		}
		if strings.HasPrefix(rest, "[") { // $name[1]:…
			rest = rest[strings.IndexByte(rest, ']')+1:]
		}
		if strings.HasPrefix(rest, ":") {
			modifies = true
		}
	}
	return false
}

// repeatModifier says text holds a zsh :F modifier (:F:expr:, :gF…)
// whose expr is arithmetic, which assigns. zsh evaluates expr only up to
// a closing delimiter (the character after F, or its pair for ( [ { <):
// $name:Final and "$svc:FAILED" are text to zsh 5.9 too. more says the
// word goes on after text, where the delimiter may be.
func repeatModifier(v string, more bool) bool {
	for {
		i := strings.IndexByte(v, ':')
		if i < 0 {
			return false
		}
		v = strings.TrimLeft(v[i+1:], "g")
		rest, ok := strings.CutPrefix(v, "F")
		if !ok {
			continue
		}
		if more {
			return true
		}
		if rest == "" {
			continue
		}
		open := rest[0]
		end := map[byte]byte{'(': ')', '[': ']', '{': '}', '<': '>'}[open]
		if end == 0 {
			end = open
		}
		if strings.IndexByte(rest[1:], end) >= 0 {
			return true
		}
	}
}

// dollarEnds says literal text ends in a $ that is not escaped, which
// the parser keeps as text before a character that begins no bash
// expansion ($~x, $=x, $^x, $+x).
func dollarEnds(v string) bool {
	if !strings.HasSuffix(v, "$") {
		return false
	}
	n := 0
	for n < len(v)-1 && v[len(v)-2-n] == '\\' {
		n++
	}
	return n%2 == 0
}

// zshGlobSubst says unquoted parts hold $~name (also $^~name, a$~name),
// which bash reads as the text $~name and zsh as name's value read as a
// glob, whose qualifiers run code: for x in '*(e:cmd:)'; do ls $~x; done
// ran cmd (zsh 5.9).
func zshGlobSubst(parts []syntax.WordPart) bool {
	for i := 0; i+1 < len(parts); i++ {
		l, isLit := parts[i].(*syntax.Lit)
		if !isLit || !dollarEnds(l.Value) {
			continue
		}
		if n, isLit := parts[i+1].(*syntax.Lit); isLit && strings.Contains(n.Value[:len(n.Value)-len(strings.TrimLeft(n.Value, "~=^+#"))], "~") {
			return true
		}
	}
	return false
}

// namesInBrackets says text holds a [ … ] with more than digits, commas
// and minus signs in it (a name, an assignment), or a [ that is not
// closed: in a zsh glob qualifier, arithmetic.
func namesInBrackets(v string) bool {
	for {
		i := strings.IndexByte(v, '[')
		if i < 0 {
			return false
		}
		v = v[i+1:]
		if subscriptNames(v) {
			return true
		}
		v = v[strings.IndexByte(v, ']')+1:]
	}
}

// subscriptNames says the text after a [ is not closed by a ], or holds
// more than digits, commas and minus signs before it (a name, an
// assignment): arithmetic zsh evaluates, in a subscript or a glob
// qualifier's [beg,end].
func subscriptNames(v string) bool {
	end := strings.IndexByte(v, ']')
	return end < 0 || strings.Trim(v[:end], "0123456789,-") != ""
}

// zshNumericGlob says the text of code at pos is a zsh numeric glob,
// <[n]-[m]> (<->, <1-9>, <5->), which zsh reads as part of a word and
// the parser as redirections.
func zshNumericGlob(code string, pos syntax.Pos) bool {
	if !pos.IsValid() || pos.Offset() >= uint(len(code)) {
		return false
	}
	rest := code[pos.Offset():]
	if !strings.HasPrefix(rest, "<") {
		return false
	}
	rest = strings.TrimLeft(rest[1:], "0123456789")
	if !strings.HasPrefix(rest, "-") {
		return false
	}
	rest = strings.TrimLeft(rest[1:], "0123456789")
	return strings.HasPrefix(rest, ">")
}

// unreadablePart adds a part no pattern reads, its words naming what made
// it so: there, what the shell runs is more than the reader can tell.
func (s *shellCmd) unreadablePart(words ...string) {
	s.parts = append(s.parts, part{words: words, unreadable: true})
}

// Package policy decides, from Gatehouse's config, what happens to a tool
// call: which route it takes and whether that route asks a person, allows
// or denies. Routes match the tool and the agent by glob, the call's
// arguments by a CEL condition (when), and Claude Code permission-rule
// patterns (call). It is pure: no I/O, no clock of its own.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Action is what a route does with the calls it matches.
type Action string

// The actions. Agent is the legacy `confirm: false`: the agent's
// requires_confirmation decides (true: ask, false: allow).
const (
	Ask   Action = "ask"
	Allow Action = "allow"
	Deny  Action = "deny"
	Agent Action = "agent"
)

// mayAllow says a route with this action can end in an allow: an allow
// route, or a legacy one where the agent's requires_confirmation false
// allows. Its patterns are read strictly and a failed condition does not
// match, as on an allow route.
func (a Action) mayAllow() bool { return a == Allow || a == Agent }

// Route is what the policy needs of one configured route.
type Route struct {
	Name   string
	Tool   string   // a glob over the tool name; "" matches every tool
	Agent  string   // a glob over the authenticated agent; "" matches every agent
	When   string   // a CEL boolean over the call; "" always holds
	Calls  []string // Claude Code permission-rule patterns; any may match
	Action Action   // Ask when empty
}

// Policy is a compiled list of routes: first match wins.
type Policy struct {
	rules []rule
}

type rule struct {
	Route
	when cel.Program
	// keys are the keys of args and of metadata the condition names
	// (args.env, has(args.env), args["env"], "env" in args).
	keys map[string][]string
	pats []pattern
}

// celEnv declares the variables a condition may use. Numbers compare
// across int and double (args.amount > 50000 works on a JSON number).
var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("agent", cel.StringType),
		cel.Variable("agent_label", cel.StringType),
		cel.Variable("user", cel.StringType),
		cel.Variable("session", cel.StringType),
		cel.Variable("metadata", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
		cel.CrossTypeNumericComparisons(true),
	)
	if err != nil {
		panic(err)
	}
	return env
}()

// costLimit bounds the work one condition may do on one call, so a
// condition over hostile arguments (a huge list, a long string) cannot
// stall the gate. Exceeding it is an evaluation error, which never allows.
const costLimit = 100000

// Compile checks every route's condition and patterns and returns the
// policy, or an error per bad route naming it and, for a condition, the
// position of the error.
func Compile(routes []Route) (*Policy, error) {
	p := &Policy{}
	var errs []string
	for _, r := range routes {
		cr := rule{Route: r}
		if cr.Action == "" {
			cr.Action = Ask
		}
		if strings.TrimSpace(r.When) != "" {
			prg, keys, err := compileWhen(r.When)
			if err != nil {
				errs = append(errs, fmt.Sprintf("route %q: match.when: %v", r.Name, err))
			}
			cr.when, cr.keys = prg, keys
		}
		for i, c := range r.Calls {
			pat, err := parsePattern(c)
			if err != nil {
				errs = append(errs, fmt.Sprintf("route %q: match.call[%d]: %v", r.Name, i, err))
				continue
			}
			cr.pats = append(cr.pats, pat)
		}
		p.rules = append(p.rules, cr)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return p, nil
}

// CheckWhen compiles one condition, for the config's validation.
func CheckWhen(expr string) error {
	_, _, err := compileWhen(expr)
	return err
}

// CheckCall parses one call pattern, for the config's validation.
func CheckCall(s string) error {
	_, err := parsePattern(s)
	return err
}

func compileWhen(expr string) (cel.Program, map[string][]string, error) {
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, fmt.Errorf("%s", strings.TrimSpace(strings.ReplaceAll(iss.Err().Error(), "<input>:", "")))
	}
	if ast.OutputType() != cel.BoolType {
		return nil, nil, fmt.Errorf("must be true or false, not %s", ast.OutputType())
	}
	if n, ok := bigInteger(ast); ok {
		return nil, nil, fmt.Errorf("%s is an integer beyond 2^53: the call's numbers are compared as float64s, where it and its neighbours read alike; compare the value as a string", n)
	}
	prg, err := celEnv.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize), cel.CustomDecoratorV2(noNaN))
	return prg, namedKeys(ast), err
}

// bigInteger finds a whole number the condition writes at or beyond ±2^53
// (args.to == 12345678901234567): a JSON number is a float64, so compared
// with the call's numbers it is rounded, and 12345678901234568 would equal
// it. An integer literal is refused anywhere; one written as a float
// (1.2345678901234568e16) anywhere but as a bound (args.fee < 1e300), for
// wherever else it goes it may reach an equality (through a list, a
// comprehension, double() or arithmetic), which a call's such integer,
// read as its digits, would pass by.
func bigInteger(ast *cel.Ast) (string, bool) {
	bound := map[int64]bool{}
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		switch e.AsCall().FunctionName() {
		case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			for _, a := range e.AsCall().Args() {
				bound[a.ID()] = true
			}
		}
	}))
	var big string
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.LiteralKind || big != "" {
			return
		}
		switch n := e.AsLiteral().(type) {
		case types.Int:
			if n >= maxExact || n <= -maxExact {
				big = fmt.Sprint(int64(n))
			}
		case types.Uint:
			if n >= maxExact {
				big = fmt.Sprint(uint64(n)) + "u"
			}
		case types.Double:
			if f := float64(n); !bound[e.ID()] && math.Abs(f) >= maxExact && f == math.Trunc(f) {
				big = fmt.Sprint(f)
			}
		}
	}))
	return big, big != ""
}

// namedKeys are the keys of the maps args and metadata that a condition
// names: args.env (has(args.env) too), args["env"] and "env" in args.
func namedKeys(ast *cel.Ast) map[string][]string {
	keys := map[string][]string{}
	add := func(m celast.Expr, key string) {
		// The map the key is read from may be nested (args.config.env,
		// args["spec"]["target"]): its root names args or metadata.
		for {
			if m.Kind() == celast.SelectKind {
				m = m.AsSelect().Operand()
			} else if m.Kind() == celast.CallKind && m.AsCall().FunctionName() == operators.Index && len(m.AsCall().Args()) == 2 {
				m = m.AsCall().Args()[0]
			} else {
				break
			}
		}
		if m.Kind() != celast.IdentKind {
			return
		}
		roots := []string{m.AsIdent()}
		switch m.AsIdent() {
		case "args", "metadata":
		case "tool", "agent", "agent_label", "user", "session", "now":
			return
		default:
			// A comprehension's variable (args.items.all(x, x.env …)),
			// which may stand for a part of either.
			roots = []string{"args", "metadata"}
		}
		for _, root := range roots {
			if !slices.Contains(keys[root], key) {
				keys[root] = append(keys[root], key)
			}
		}
	}
	literal := func(e celast.Expr) (string, bool) {
		if e.Kind() != celast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().(types.String)
		return string(s), ok
	}
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			add(e.AsSelect().Operand(), e.AsSelect().FieldName())
		case celast.CallKind:
			args := e.AsCall().Args()
			if len(args) != 2 {
				return
			}
			switch e.AsCall().FunctionName() {
			case operators.Index: // args["env"]
				if k, ok := literal(args[1]); ok {
					add(args[0], k)
				}
			case operators.In: // "env" in args
				if k, ok := literal(args[0]); ok {
					add(args[1], k)
				}
			}
		}
	}))
	return keys
}

// otherCase refuses a key of m given in another case than the condition
// names it (ENV where it reads args.env): has(args.env) would be false, and
// args.env an error no ask could tell from a call without it, though some
// tools read keys whatever their case (Go's encoding/json, ASP.NET's, a
// case-insensitive Jackson) and would take ENV for env.
func otherCase(what string, v any, names []string) error {
	if len(names) == 0 {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			for _, n := range names {
				if k != n && strings.EqualFold(k, n) {
					return fmt.Errorf("%s: key %q is the condition's %q in another case, which some tools read as the same key: give it as the rules write it", what, k, n)
				}
			}
			if err := otherCase(what, e, names); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := otherCase(what, e, names); err != nil {
				return err
			}
		}
	}
	return nil
}

// noNaN makes a NaN that a function gives an error. double() reads "NaN"
// from a string (and 0.0 / 0.0 makes one), and every comparison with NaN
// is false: double(args.amount) > 50000.0 would read {"amount":"NaN"} as
// a small payment. As an error it never allows.
func noNaN(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	if call, ok := i.(interpreter.InterpretableCall); ok {
		return nanChecked{call}, nil
	}
	return i, nil
}

type nanChecked struct{ interpreter.InterpretableCall }

func (n nanChecked) Eval(a interpreter.Activation) ref.Val {
	return n.check(n.InterpretableCall.Eval(a))
}

func (n nanChecked) Exec(f *interpreter.ExecutionFrame) ref.Val {
	return n.check(n.InterpretableCall.Exec(f))
}

func (n nanChecked) check(v ref.Val) ref.Val {
	if d, ok := v.(types.Double); ok && math.IsNaN(float64(d)) {
		return types.NewErr("%s gave NaN, which is not a number", n.Function())
	}
	return v
}

// Call is a tool call as the policy sees it.
type Call struct {
	Tool       string
	Args       map[string]any // the arguments, when they are a JSON object
	Agent      string         // the authenticated agent (the token's name)
	AgentLabel string         // the agent_id the caller sent
	User       string
	Session    string
	Metadata   map[string]any
	Now        time.Time

	// other is the arguments when they are not an object (a string, a
	// list); argsErr says why a condition cannot read them: they are not
	// an object, or hold a number out of a float64's range.
	other   any
	argsErr error

	sh     *shellCmd
	shRead bool
	vars   map[string]any
	// MCPServer says the call goes to an MCP server under a bare tool name
	// (Cursor's beforeMCPExecution): the name is the server's, never the
	// client's own shell or file tool. Only the hook's reading of the
	// client's input sets it, never metadata, which an agent writes.
	MCPServer bool
}

// NewCall builds a call from JSON arguments and metadata (either may be
// empty). Arguments that are not an object still reach the patterns'
// single-argument match when they are one string.
func NewCall(tool string, args, metadata json.RawMessage) *Call {
	c := &Call{Tool: tool, Args: map[string]any{}, Metadata: map[string]any{}}
	if len(args) > 0 {
		v, err := decode(args)
		if m, isObject := v.(map[string]any); isObject {
			c.Args = m
		} else if v != nil {
			c.other, c.argsErr = v, fmt.Errorf("tool_args are %s, not an object", kindOf(v))
		}
		var bad *json.UnmarshalTypeError
		if errors.As(err, &bad) {
			// Decoded as null: what the tool reads (infinity) is not.
			c.argsErr = fmt.Errorf("tool_args: %s is out of range", bad.Value)
		} else if err != nil {
			c.argsErr = fmt.Errorf("tool_args: %v", err)
		}
	}
	if len(metadata) > 0 {
		if m, _ := decode(metadata); m != nil {
			c.Metadata, _ = m.(map[string]any)
		}
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
	}
	return c
}

// maxExact is 2^53: every integer below it is a float64 of its own, and
// from it on integers share float64s with their neighbours.
const maxExact = 1 << 53

// decode reads JSON as conditions see it, numbers as float64s, but for an
// integer at or beyond ±2^53, which a float64 would round to a value its
// neighbours share (12345678901234568 reads as 12345678901234567, so a
// rule naming one account would take the other), though the tool may read
// it exactly: it reads as the string of its digits, exact, which no number
// equals (a condition may not write such an integer, see bigInteger) and
// which no numeric comparison takes (args.to > 5.0 is an error, which
// never allows); int(args.to) and string(args.to) read it exactly. A
// number written with a fraction or an exponent (1e300) is a float, read
// as the tool reads one. (An error value in its place would not do: CEL's
// equality of lists and maps passes over an element that errs.)
func decode(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || !beyondExact(v) {
		return v, err
	}
	// Rare: read the numbers again as they were written.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var written any
	if err := dec.Decode(&written); err != nil {
		return nil, err
	}
	return exactly(written), nil
}

// beyondExact says v holds a number at or beyond ±2^53.
func beyondExact(v any) bool {
	switch v := v.(type) {
	case float64:
		return math.Abs(v) >= maxExact
	case map[string]any:
		for _, e := range v {
			if beyondExact(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if beyondExact(e) {
				return true
			}
		}
	}
	return false
}

// exactly turns the numbers of v, decoded as written, into float64s, in
// place, and an integer at or beyond ±2^53 into its digits (decode).
func exactly(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err == nil && (math.Abs(f) < maxExact || strings.ContainsAny(string(v), ".eE")) {
			return f
		}
		return string(v)
	case map[string]any:
		for k, e := range v {
			v[k] = exactly(e)
		}
	case []any:
		for i, e := range v {
			v[i] = exactly(e)
		}
	}
	return v
}

// shell is the Bash command of the call, read once; nil when it has none.
func (c *Call) shell() *shellCmd {
	if !c.shRead {
		c.shRead = true
		if cmd, ok := c.stringArg("command"); ok {
			c.sh = readShell(cmd)
		}
	}
	return c.sh
}

func (c *Call) stringArg(key string) (string, bool) {
	s, ok := c.Args[key].(string)
	return s, ok
}

// singleString is the call's one argument, when it has exactly one and
// it is a string (or the arguments are one string).
func (c *Call) singleString() (string, bool) {
	if s, ok := c.other.(string); ok || c.argsErr != nil {
		return s, ok
	}
	if len(c.Args) != 1 {
		return "", false
	}
	for _, v := range c.Args {
		s, ok := v.(string)
		return s, ok
	}
	return "", false
}

// anyString says f holds for a string of the call's arguments: a key or
// a value, at any depth. The top's keys count too: they are parameter
// names for most tools, but data for some (an environment's variables, a
// request's headers), and an ask or deny rule errs toward covering.
func (c *Call) anyString(f func(string) bool) bool {
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return f(v)
		case []any:
			return slices.ContainsFunc(v, walk)
		case map[string]any:
			for k, x := range v {
				if f(k) || walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(c.Args) || walk(c.other)
}

// kindOf names a JSON value's kind, for errors.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []any:
		return "a list"
	case bool:
		return "true or false"
	default:
		return "a number"
	}
}

// unreadable says a shell call holds something that cannot be read (see
// pattern.match): a command that does not parse, a part whose code is made
// at run time, a wrapper given a command made at run time.
func (c *Call) unreadable() bool {
	if !shellTool(c.Tool) {
		return false
	}
	sh := c.shell()
	return sh == nil || sh.unreadable || slices.ContainsFunc(sh.parts, func(q part) bool { return q.unreadable || q.runsMade })
}

// cwd is the working directory an agent client reported, for relative paths.
func (c *Call) cwd() string {
	s, _ := c.Metadata["cwd"].(string)
	return s
}

func (c *Call) activation() map[string]any {
	if c.vars == nil {
		c.vars = map[string]any{"tool": c.Tool, "args": c.Args, "agent": c.Agent, "agent_label": c.AgentLabel,
			"user": c.User, "session": c.Session, "metadata": c.Metadata, "now": c.Now}
	}
	return c.vars
}

// Step is one route tried, for explanations and the trail.
type Step struct {
	Route   string `json:"route"`
	Matched bool   `json:"matched"`
	Why     string `json:"why"`
}

// Result is what the policy decided for a call.
type Result struct {
	// Route is the index of the matched route in the list, -1 for none.
	Route int
	// Action is the matched route's action; "" when no route matched.
	Action Action
	// Errors are the conditions that failed to evaluate on the way, with
	// their route; they are written to the request's trail.
	Errors []string
	// Steps explain every route tried (only when asked for).
	Steps []Step
	// Unread says the call, or a part of it, cannot be read (see
	// Evaluate): denied by a deny route it may fall under, or taken by an
	// ask route that cannot see all it does. Such an ask is for this call
	// and a person only: no grant covers it, silence denies it, and it
	// cannot be approved for a while.
	Unread bool
	// ByError says the route matched only because its condition failed to
	// evaluate on the call (an error never allows): it may not be a call
	// the route names, so, as an unread call, it gets none of the route's
	// lenient terms.
	ByError bool
}

// Evaluate finds the first route that matches the call. A condition that
// fails to evaluate (a missing key, a wrong type, the cost limit) never
// allows: an allow route does not match, an ask or deny route does.
//
// What cannot be read (a shell command whose code is made at run time, a
// relative path with no working directory, a host that does not read)
// matches ask patterns and no allow pattern. A deny route whose patterns
// it may or may not match does not end the search, but it holds: if no
// ask or deny route takes the call after it, the call is denied by that
// route rather than allowed by a later route or left to the defaults
// ("deny rm, allow every other command" must not allow $(printf rm) -rf /).
func (p *Policy) Evaluate(c *Call, explain bool) Result {
	res := Result{Route: -1}
	held := -1 // the first deny route the call may fall under
	for i := range p.rules {
		r := &p.rules[i]
		failed := len(res.Errors)
		m, why := r.matches(c, &res, explain)
		if explain {
			res.Steps = append(res.Steps, Step{Route: r.Name, Matched: m == covers || m == unread && r.Action != Deny, Why: why})
		}
		switch {
		case m == unread && r.Action == Deny:
			if held < 0 {
				held = i
			}
		case m == unread:
			// An ask route asks about what it cannot read.
			res.Route, res.Action, res.Unread, res.ByError = i, r.Action, true, len(res.Errors) > failed
			return res
		case m == covers && (held < 0 || !r.Action.mayAllow()):
			res.Route, res.Action, res.ByError = i, r.Action, len(res.Errors) > failed
			res.Unread = held >= 0 || c.unreadable()
			return res
		case m == covers:
			return p.heldBy(held, res, explain, "route "+r.Name+" would allow it")
		}
	}
	if held >= 0 {
		return p.heldBy(held, res, explain, "no route after it takes the call")
	}
	return res
}

// heldBy denies the call by route i, a deny route the call may fall under.
func (p *Policy) heldBy(i int, res Result, explain bool, after string) Result {
	res.Route, res.Action, res.Unread = i, Deny, true
	if explain {
		res.Steps = append(res.Steps, Step{Route: p.rules[i].Name, Matched: true,
			Why: "the call cannot be read, so it may be what this deny route names, and " + after + ": denied"})
	}
	return res
}

// eval is the route's condition on the call: an error when the call's
// arguments cannot be read as the condition reads them.
func (r *rule) eval(c *Call) (ref.Val, error) {
	if c.argsErr != nil {
		return nil, c.argsErr
	}
	if err := otherCase("tool_args", c.Args, r.keys["args"]); err != nil {
		return nil, err
	}
	if err := otherCase("metadata", c.Metadata, r.keys["metadata"]); err != nil {
		return nil, err
	}
	out, _, err := r.when.Eval(c.activation())
	return out, err
}

// matches tests one route, cheapest test first, and says why when asked
// to explain. It is unread only on a deny route whose patterns may or may
// not match (see Evaluate).
func (r *rule) matches(c *Call, res *Result, explain bool) (fit, string) {
	// The reasons are built only when asked for: the arguments of a
	// formatted string escape to the heap even when it is never made.
	why := func(format string, args ...any) string { return fmt.Sprintf(format, args...) }
	if r.Tool != "" && !globMatch(r.Tool, c.Tool) {
		if !explain {
			return misses, ""
		}
		return misses, why("tool %q does not match %q", c.Tool, r.Tool)
	}
	if r.Agent != "" && !globMatch(r.Agent, c.Agent) {
		if !explain {
			return misses, ""
		}
		return misses, why("agent %q does not match %q", c.Agent, r.Agent)
	}
	var reasons []string
	outcome := covers
	if len(r.pats) > 0 {
		hit, maybe := -1, -1
		for i := range r.pats {
			m := r.pats[i].match(c, r.Action)
			if m == covers {
				hit = i
				break
			}
			if m == unread && maybe < 0 {
				maybe = i
			}
		}
		switch {
		case hit < 0 && maybe >= 0 && r.Action == Deny:
			// Decided by Evaluate, after the routes below.
			outcome = unread
			if explain {
				reasons = append(reasons, "the call cannot be read, so it may or may not match "+r.pats[maybe].src)
			}
		case hit < 0 && maybe >= 0:
			// An ask route asks about what it cannot read.
			outcome = unread
			if explain {
				reasons = append(reasons, "the call cannot be read, so it is asked about under "+r.pats[maybe].src)
			}
		case hit < 0 && r.Action.mayAllow():
			return misses, "no call pattern covers every part of the call"
		case hit < 0:
			return misses, "no call pattern matches"
		case explain:
			reasons = append(reasons, "call matches "+r.pats[hit].src)
		}
	}
	if r.when != nil {
		out, err := r.eval(c)
		switch {
		case err != nil:
			res.Errors = append(res.Errors, fmt.Sprintf("route %s: when %s: %v", r.Name, r.When, err))
			if r.Action.mayAllow() {
				if !explain {
					return misses, ""
				}
				return misses, why("when failed (%v): an error never allows", err)
			}
			if explain {
				reasons = append(reasons, why("when failed (%v): matched, as an error never allows", err))
			}
		case out != types.True:
			return misses, "when is false"
		case explain:
			reasons = append(reasons, "when is true")
		}
	}
	if len(reasons) == 0 {
		return outcome, "tool and agent match"
	}
	return outcome, strings.Join(reasons, "; ")
}

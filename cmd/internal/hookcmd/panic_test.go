package hookcmd

import (
	"bytes"
	"strings"
	"testing"
)

// panicOnce is a stdout whose first write panics, standing in for a panic
// anywhere in the hook before its answer is out.
type panicOnce struct {
	bytes.Buffer
	panicked bool
}

func (w *panicOnce) Write(p []byte) (int, error) {
	if !w.panicked {
		w.panicked = true
		panic("the answer could not be written")
	}
	return w.Buffer.Write(p)
}

// TestPanicIsADeny: a panic in the hook would end the process with exit 2
// and nothing on stdout, and Copilot CLI, which reads no exit code, would
// run the tool. It must end in a deny in every client's fields.
func TestPanicIsADeny(t *testing.T) {
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	stdout, stderr := &panicOnce{}, &bytes.Buffer{}
	// Bad flags: the hook answers at once, with no server and no input.
	code := Run([]string{"copilot", "--no-such-flag"}, strings.NewReader(cpIn), stdout, stderr)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	out := stdout.String()
	for _, want := range []string{`"permissionDecision":"deny"`, `"behavior":"deny"`, `"permission":"deny"`, `"decision":"deny"`, "internal error"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout %q lacks %s", out, want)
		}
	}
	if !strings.Contains(stderr.String(), "internal error: the answer could not be written") {
		t.Errorf("stderr %q does not say what failed", stderr.String())
	}
}

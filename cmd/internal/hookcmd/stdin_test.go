package hookcmd

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestHookWaitBoundsStdin: the client wrote one whole hook input but has not
// closed stdin. --wait is the hook's promise to answer (a deny) before the
// client's own timeout kills it, which most clients treat as "proceed"; the
// hook must not sit on stdin past it. Found by a reader.
func TestHookWaitBoundsStdin(t *testing.T) {
	t.Setenv("GATEHOUSE_URL", "http://127.0.0.1:1")
	t.Setenv("GATEHOUSE_HOOK_WAIT", "")
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf build"},"tool_use_id":"t1"}` + "\n"))
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Run([]string{"claude-code", "--wait", "1s"}, pr, &out, &errb) }()
	select {
	case code := <-done:
		if code == 0 || !strings.Contains(out.String()+errb.String(), "did not close the input") {
			t.Fatalf("exit %d, stdout %s, stderr %s; want a deny that says why", code, out.String(), errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("--wait 1s: the hook still runs 5s later, blocked reading stdin; the client's timeout will kill it and run the tool")
	}
}

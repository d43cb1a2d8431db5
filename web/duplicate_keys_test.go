package web_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/policy"
)

// TestDuplicateKeyBehindAnOutOfRangeNumber: the README's shell rules
// ("git push needs a human, force pushes never run, other shell commands do
// not ask") over POST /api/v1/gate. An object that holds a key twice, or
// under another case, is refused, since the policy reads the last value and
// a tool may run the first, or (Go's encoding/json into a struct) the one
// in another case. A number beyond a float64's range earlier in the
// arguments ("pad":1e400) must not switch that check off: the policy would
// read "command":"ls" and allow it by other-shell, while a Go tool
// unmarshalling into struct{Command string `json:"command"`} runs
// "git push --force".
func TestDuplicateKeyBehindAnOutOfRangeNumber(t *testing.T) {
	e := newEnvWith(t, []gate.Route{
		{Name: "no-force-push", Calls: []string{"Bash(git push --force:*)"}, Action: policy.Deny},
		{Name: "pushes", Calls: []string{"Bash(git push:*)", "Bash(gh pr merge:*)"}, Channels: []string{gate.WebChannel}},
		{Name: "other-shell", Calls: []string{"Bash"}, Action: policy.Allow},
	}, nil)
	for name, args := range map[string]string{
		"twice":               `{"pad":1e400,"command":"git push --force","command":"ls"}`,
		"in another case":     `{"pad":1e400,"command":"ls","COMMAND":"git push --force"}`,
		"nested out of range": `{"pad":[-1e999],"command":"ls","Command":"git push --force"}`,
	} {
		t.Run(name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"tool_name": "Bash", "tool_args": json.RawMessage(args), "requires_confirmation": false})
			code, hr := gateCall(t, e, "?wait=1s", string(body))
			if hr.Allow || code != http.StatusBadRequest {
				t.Fatalf("%s: %d %+v, want a 400 deny (a key given twice)", args, code, hr)
			}
		})
	}
}

package policy

import "testing"

// TestShellDirectoryIsACd: Gemini CLI's run_shell_command runs its command
// in dir_path (directory in older versions), as `cd DIR && COMMAND` does,
// which no allow pattern covers: Bash(./build.sh) allowed sub/build.sh.
// Ask and deny patterns still read the command.
func TestShellDirectoryIsACd(t *testing.T) {
	rs := []Route{
		{Name: "no-rm", Calls: []string{"Bash(rm:*)"}, Action: Deny},
		{Name: "ok", Calls: []string{"Bash(./build.sh)", "Bash(npm test:*)"}, Action: Allow},
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "cd sub && ./build.sh"}, "none"},
		{map[string]any{"command": "./build.sh", "dir_path": "sub"}, "none"},
		{map[string]any{"command": "./build.sh", "directory": "sub"}, "none"},
		{map[string]any{"command": "./build.sh", "dir_path": "/elsewhere"}, "none"},
		{map[string]any{"command": "npm test", "dir_path": "node_modules/left-pad"}, "none"},
		{map[string]any{"command": "./build.sh", "dir_path": 7}, "none"},
		{map[string]any{"command": "./build.sh", "dir_path": " "}, "none"},
		{map[string]any{"command": "rm -rf x", "dir_path": "sub"}, "no-rm"},
		{map[string]any{"command": "./build.sh"}, "ok"},
		{map[string]any{"command": "./build.sh", "dir_path": ""}, "ok"},
		{map[string]any{"command": "./build.sh", "dir_path": "./"}, "ok"},
		{map[string]any{"command": "./build.sh", "dir_path": "/proj"}, "ok"},
	} {
		if got := routeOf(t, rs, "run_shell_command", tc.args, `{"cwd":"/proj"}`); got != tc.want {
			t.Errorf("%v: route %s, want %s", tc.args, got, tc.want)
		}
	}
}

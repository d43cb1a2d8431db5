package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
)

// TestCheckConfigWarnsAsServeDoes: check-config prints every warning serve
// logs at start about the config, an agent API open for want of tokens
// among them.
func TestCheckConfigWarnsAsServeDoes(t *testing.T) {
	const open = "warning: no api_tokens configured: the agent API is open to anyone who can reach 127.0.0.1:8080"
	dir := t.TempDir()
	for _, tc := range []struct {
		name, yaml string
		open       bool
	}{
		{"no tokens", "defaults:\n  action: ask\n", true},
		{"tokens", "defaults:\n  action: ask\nauth:\n  api_tokens:\n    - {name: agent, token: check-config-token-0123456789}\n", false},
		{"no tokens, unrouted calls left to the agent", "routes:\n  - name: pay\n    match: {tool: \"oa__*\"}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run([]string{"check-config", "--config", path}, strings.NewReader(""), &out, &errb); code != 0 {
				t.Fatalf("check-config: exit %d\n%s%s", code, out.String(), errb.String())
			}
			if got := strings.Contains(errb.String(), open+"\n"); got != tc.open {
				t.Errorf("check-config warned of an open agent API: %v, want %v:\n%s", got, tc.open, errb.String())
			}
			// Line for line what serve logs.
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for _, w := range startWarnings(cfg) {
				want.WriteString("warning: " + w + "\n")
			}
			if errb.String() != want.String() {
				t.Errorf("check-config printed:\n%s\nserve logs:\n%s", errb.String(), want.String())
			}
		})
	}
}

// A config file that holds no settings (empty, comments only) is refused at
// check-config and at a start as at a reload: read as the built-in default,
// it dropped every route, token and user, and check-config said ok before a
// reload that then refused it. Found by a docs reader.
func TestAConfigWithNoSettingsIsRefused(t *testing.T) {
	dir := t.TempDir()
	for i, body := range []string{"", "\n\n", "# being edited\n", "---\n", "{}\n"} {
		path := filepath.Join(dir, fmt.Sprintf("g%d.yaml", i))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := run([]string{"check-config", "--config", path}, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), "holds no settings") {
			t.Errorf("check-config of %q: exit %d\n%s%s", body, code, out.String(), errb.String())
		}
		// What serve (and every other command) reads a config with.
		if _, err := config.Load(path); err == nil || !strings.Contains(err.Error(), "holds no settings") {
			t.Errorf("config.Load of %q: %v, want it refused", body, err)
		}
	}
}

// check-config never says ok about a file it did not read. Two files named
// (gatehouse check-config configs/*.yaml), a file and --config, or a file
// while GATEHOUSE_CONFIG names another were checked as the built-in config
// (or the environment's file): "built-in config: ok", exit 0, for a file
// with an unknown key.
func TestCheckConfigChecksTheFileNamed(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("defaults:\n  action: ask\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string
		args []string
	}{
		{"two files", "", []string{"check-config", bad, good}},
		{"a file, then --config", "", []string{"check-config", bad, "--config", good}},
		{"--config, then a file", "", []string{"check-config", "--config", good, bad}},
		{"a file while GATEHOUSE_CONFIG names another", good, []string{"check-config", bad}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GATEHOUSE_CONFIG", tc.env)
			var out, errb bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errb)
			if code == 0 || strings.Contains(out.String(), "ok") {
				t.Errorf("check-config %v: exit %d, printed %q: said ok without reading %s", tc.args[1:], code, out.String(), bad)
			}
		})
	}
}

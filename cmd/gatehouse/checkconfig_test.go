package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

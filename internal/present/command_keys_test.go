package present

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Which command key a tool runs is the tool's: when several hold
// something, every one is shown, named; one holding nothing to run (false,
// 0, [], {}) or a harmless command must not stand alone in the large type
// and the headline for a "cmd": "rm -rf ~" beside it. Found by a reader.
func TestEveryCommandKeyIsShown(t *testing.T) {
	for _, args := range []string{
		`{"command":false,"cmd":"rm -rf ~"}`,
		`{"command":0,"cmd":"rm -rf ~"}`,
		`{"command":[],"cmd":"rm -rf ~"}`,
		`{"command":{},"cmd":"rm -rf ~"}`,
		`{"command":["bash","-c","rm -rf ~"],"cmd":"ls"}`,
		`{"command":["ls"],"cmd":"rm -rf ~"}`,
		`{"command":"ls","cmd":"rm -rf ~"}`,
		`{"cmd":"ls","script":"rm -rf ~"}`,
	} {
		v := (*Presenter)(nil).View(req("shell_exec", args, ""))
		if !strings.Contains(v.Big, "rm -rf ~") || !strings.Contains(v.Sentence, "rm -rf ~") {
			t.Errorf("%s: shown as %q / %q", args, v.Sentence, v.Big)
		}
	}
}

// The large type is cut in the middle as drawn: hidden characters written
// as marks (480 zero-width spaces are 3,840 characters) must not push a
// command's end past what the faces show. Found by a second reader.
func TestBigIsCutAsDrawn(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"command": "echo " + strings.Repeat("\u200b", 480) + "; rm -rf ~"})
	v := (*Presenter)(nil).View(req("shell_exec", string(args), ""))
	if n := utf8.RuneCountInString(v.Big); n > maxBig || !strings.HasSuffix(v.Big, "; rm -rf ~") {
		t.Fatalf("large type of %d characters, ending %q", n, v.Big[max(0, len(v.Big)-40):])
	}
}

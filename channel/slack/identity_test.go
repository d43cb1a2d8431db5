package slack

import (
	"testing"

	"github.com/slack-go/slack"
)

// TestIdentityIsTheHomeWorkspace: in a Slack Connect channel the tap comes
// from the host's workspace, but the person belongs to their own; keying
// them by the host would let slack:T_HOST/* admit outsiders.
func TestIdentityIsTheHomeWorkspace(t *testing.T) {
	var ic slack.InteractionCallback
	ic.Team.ID = "T_HOST"
	ic.User.ID, ic.User.TeamID = "U_EXT", "T_GUEST"
	if actor, others := identity(ic); actor != "slack:T_GUEST/U_EXT" || len(others) != 0 {
		t.Fatalf("outsider keyed as %q %v", actor, others)
	}
	ic.User.TeamID = ""
	if actor, _ := identity(ic); actor != "slack:T_HOST/U_EXT" {
		t.Fatalf("without a home workspace: %q", actor)
	}
}

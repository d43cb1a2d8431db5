package web_test

import (
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestPagesNameTheTokenThatAsked: an agent's agent_id is a label it
// picks; the token it authenticated with is who asked. The request page and the CSV export must name the
// token, or one token can pass its call off as prod-deployer's to
// the approver and the auditor (the trail says "agent:prod-deployer").
func TestPagesNameTheTokenThatAsked(t *testing.T) {
	e := newEnvWith(t, nil, func(o *web.Options) {
		o.Tokens = []config.APIToken{{Name: "agent-a", Token: scopeTokens["agent-a"]}}
	})
	r := e.submitAs("agent-a", `{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000},"agent_id":"prod-deployer"}`)
	b := e.login("audrey")
	if _, page := b.get("/approvals/" + r.ID); !strings.Contains(page, "agent-a") {
		t.Errorf("the request page never names the token that asked (agent-a); it shows only the label the agent chose (prod-deployer)")
	}
	if _, csv := b.get("/export.csv"); !strings.Contains(csv, "agent-a") {
		t.Errorf("the CSV export never names the token that asked (agent-a):\n%s", csv)
	}
}

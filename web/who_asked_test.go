package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/web"
)

// TestPagesNameTheTokenThatAsked: an agent's agent_id is a label it picks; the token it authenticated
// with is who asked. The request page and the CSV export must name the
// token, or an intern's token can pass its call off as prod-deployer's to
// the approver and the auditor (the trail says "agent:prod-deployer").
func TestPagesNameTheTokenThatAsked(t *testing.T) {
	e := newEnvWith(t, nil, func(o *web.Options) {
		o.Tokens = []config.APIToken{{Name: "intern-bot", Token: "intern-secret-token"}}
	})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/api/v1/approvals",
		strings.NewReader(`{"tool_name":"oa__purchase_pay","tool_args":{"amount":60000},"agent_id":"prod-deployer"}`))
	req.Header.Set("Authorization", "Bearer intern-secret-token")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", res.StatusCode, body)
	}
	id := strings.SplitN(strings.SplitN(string(body), `"id":"`, 2)[1], `"`, 2)[0]
	b := e.login("audrey")
	if _, page := b.get("/approvals/" + id); !strings.Contains(page, "intern-bot") {
		t.Errorf("the request page never names the token that asked (intern-bot); it shows only the label the agent chose (prod-deployer)")
	}
	if _, csv := b.get("/export.csv"); !strings.Contains(csv, "intern-bot") {
		t.Errorf("the CSV export never names the token that asked (intern-bot):\n%s", csv)
	}
}

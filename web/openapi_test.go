package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/channel/webhook"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
	"github.com/gatehouse-dev/gatehouse/web"
)

// spec is the part of web/openapi.json the tests read.
type spec struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	var s spec
	if err := json.Unmarshal(web.OpenAPI(), &s); err != nil {
		t.Fatalf("web/openapi.json is not JSON: %v", err)
	}
	return s
}

// allRoutes is a server with every optional route mounted: metrics, single
// sign-on, and a callback of each channel type (webhook channels under
// their names).
func allRoutes(t *testing.T) *web.Server {
	t.Helper()
	db := storetest.SQLite(t)
	s, err := web.New(web.Options{Service: gate.NewService(gate.Options{Store: db}), Sessions: db, Metrics: http.NotFoundHandler(),
		Tokens: []config.APIToken{{Name: "agent", Token: "openapi-test-token-0123456789"}},
		OIDC:   &config.OIDC{Issuer: "https://idp.example.com", ClientID: "gatehouse"}, PublicURL: "https://gatehouse.example.com",
		Callbacks: map[string]http.Handler{"slack": http.NotFoundHandler(), "feishu": http.NotFoundHandler(),
			"webhook/ops-relay": http.NotFoundHandler(), "webhook/pager": http.NotFoundHandler()}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	echoParam   = regexp.MustCompile(`:([A-Za-z_]+)`)
	webhookPath = regexp.MustCompile(`^/callbacks/webhook/[^/]+$`)
)

// specPath writes an echo route's path as OpenAPI writes it: :id is {id},
// a trailing * is {path}, and each webhook channel's callback is
// /callbacks/webhook/{channel}.
func specPath(p string) string {
	if webhookPath.MatchString(p) {
		return "/callbacks/webhook/{channel}"
	}
	p = echoParam.ReplaceAllString(p, "{$1}")
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "{path}"
	}
	return p
}

// TestOpenAPIMatchesRoutes: every route the server serves is described in
// web/openapi.json, and everything described there is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	served := map[string]bool{}
	for _, r := range allRoutes(t).Echo().Routes() {
		if strings.HasPrefix(r.Method, "echo_") { // echo's own not-found routes of a group
			continue
		}
		served[r.Method+" "+specPath(r.Path)] = true
	}
	described := map[string]bool{}
	for p, ops := range loadSpec(t).Paths {
		for m := range ops {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			described[strings.ToUpper(m)+" "+p] = true
		}
	}
	var missing, extra []string
	for r := range served {
		if !described[r] {
			missing = append(missing, r)
		}
	}
	for r := range described {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, r := range missing {
		t.Errorf("route %s is served but web/openapi.json does not describe it: add the operation under \"paths\" (its parameters, body and answers)", r)
	}
	for _, r := range extra {
		t.Errorf("web/openapi.json describes %s, which no route serves: remove it, or mount the route in web.Server.routes", r)
	}
	if len(served) < 25 {
		t.Fatalf("only %d routes found; the server's routing changed under this test", len(served))
	}
}

// TestOpenAPIIsWellFormed: a 3.1 document whose references resolve, whose
// operation ids are unique, and whose path templates and path parameters
// agree.
func TestOpenAPIIsWellFormed(t *testing.T) {
	s := loadSpec(t)
	if !strings.HasPrefix(s.OpenAPI, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", s.OpenAPI)
	}
	var doc any
	_ = json.Unmarshal(web.OpenAPI(), &doc)
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name, found := strings.CutPrefix(ref, "#/components/schemas/")
				if _, ok := s.Components.Schemas[name]; !found || !ok {
					t.Errorf("%s: $ref %q resolves to nothing", at, ref)
				}
			}
			for k, x := range v {
				walk(x, at+"/"+k)
			}
		case []any:
			for _, x := range v {
				walk(x, at)
			}
		}
	}
	walk(doc, "")

	template := regexp.MustCompile(`\{([^}]+)\}`)
	ids := map[string]string{}
	for p, ops := range s.Paths {
		var want []string
		for _, m := range template.FindAllStringSubmatch(p, -1) {
			want = append(want, m[1])
		}
		sort.Strings(want)
		for method, raw := range ops {
			var op struct {
				OperationID string `json:"operationId"`
				Parameters  []struct {
					Name, In string
					Required bool
				} `json:"parameters"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Errorf("%s %s: %v", method, p, err)
				continue
			}
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, p)
			} else if other, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %q is used by %s and %s %s", op.OperationID, other, method, p)
			}
			ids[op.OperationID] = method + " " + p
			if len(op.Responses) == 0 {
				t.Errorf("%s %s has no responses", method, p)
			}
			var got []string
			for _, prm := range op.Parameters {
				if prm.In == "path" {
					got = append(got, prm.Name)
					if !prm.Required {
						t.Errorf("%s %s: path parameter %s must be required", method, p, prm.Name)
					}
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: path parameters %v, the template has %v", method, p, got, want)
			}
		}
	}
}

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestOpenAPISchemasMatchTheTypes: the documented bodies have the fields
// the Go types read and write, no more and no fewer.
func TestOpenAPISchemasMatchTheTypes(t *testing.T) {
	s := loadSpec(t)
	for name, v := range map[string]any{
		"Submission":     web.SubmitBody{},
		"Approval":       gate.Request{},
		"HookResult":     web.HookResult{},
		"Event":          gate.Event{},
		"Grant":          gate.Grant{},
		"Checkpoint":     audit.Checkpoint{},
		"WebhookVerdict": webhook.Verdict{},
		"WebhookAnswer":  webhook.Answer{},
		"WebhookMessage": webhook.Message{},
		"WebhookRequest": webhook.Request{},
	} {
		schema, ok := s.Components.Schemas[name]
		if !ok {
			t.Errorf("web/openapi.json has no schema %s", name)
			continue
		}
		var documented []string
		for p := range schema.Properties {
			documented = append(documented, p)
		}
		sort.Strings(documented)
		if want := jsonFields(v); !slices.Equal(documented, want) {
			t.Errorf("schema %s has properties %v; the Go type %T has %v", name, documented, v, want)
		}
	}
}

// TestOpenAPIServed: GET /api/v1/openapi.json answers the document, with
// no token, on a server that has tokens.
func TestOpenAPIServed(t *testing.T) {
	hs := httptest.NewServer(allRoutes(t).Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !bytes.Equal(body, web.OpenAPI()) {
		t.Fatalf("%d %s: %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

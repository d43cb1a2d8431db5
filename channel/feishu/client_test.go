package feishu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
)

func TestTenantTokenIsCachedUntilNearExpiry(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for range 3 {
		if _, err := e.ch.Post(ctx, sampleRequest()); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.api.Calls("POST /open-apis/auth/v3/")); n != 1 {
		t.Fatalf("token fetched %d times for 3 posts, want 1", n)
	}
	e.clock.Add(2*time.Hour - 4*time.Minute) // inside the last 5 minutes of a 2h token
	if _, err := e.ch.Post(ctx, sampleRequest()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.api.Calls("POST /open-apis/auth/v3/")); n != 2 {
		t.Fatalf("token fetched %d times, want a refresh near expiry", n)
	}
	msgs := e.api.Calls("POST /open-apis/im/v1/messages")
	if got := msgs[len(msgs)-1].Auth; got != "Bearer t-2" {
		t.Errorf("after refresh auth = %q, want the new token", got)
	}
}

func TestDeliveryRetries(t *testing.T) {
	const send = "POST /open-apis/im/v1/messages"
	cases := []struct {
		name      string
		script    []feishutest.Answer
		wantErr   string
		wantSends int
	}{
		{"rate limited by HTTP 429", []feishutest.Answer{{Status: 429, Body: `{"code":99991400,"msg":"request trigger frequency limit"}`, Header: map[string]string{"X-Ogw-Ratelimit-Reset": "0"}}}, "", 2},
		{"message rate limit code", []feishutest.Answer{{Status: 400, Body: `{"code":230020,"msg":"This operation triggers the frequency limit."}`}}, "", 2},
		{"server errors then success", []feishutest.Answer{{Status: 502, Body: `bad gateway`}, {Status: 503, Body: `{}`}}, "", 3},
		{"stale token is refreshed", []feishutest.Answer{{Status: 400, Body: `{"code":99991663,"msg":"Invalid access token for authorization."}`}}, "", 2},
		{"server errors exhaust the tries", []feishutest.Answer{{Status: 500, Body: `{}`}, {Status: 500, Body: `{}`}, {Status: 500, Body: `{}`}}, "HTTP 500", 3},
		{"permanent error is not retried", []feishutest.Answer{{Status: 400, Body: `{"code":230002,"msg":"Bot/User can NOT be out of the chat."}`}}, "code 230002", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.api.FailNext(send, tc.script...)
			ref, err := e.ch.Post(context.Background(), sampleRequest())
			if tc.wantErr == "" && (err != nil || ref == "") {
				t.Fatalf("Post = %q, %v; want success after retries", ref, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Post error = %v, want it to mention %q", err, tc.wantErr)
			}
			if n := len(e.api.Calls(send)); n != tc.wantSends {
				t.Errorf("sends = %d, want %d", n, tc.wantSends)
			}
			sends := e.api.Calls(send)
			uuid := ""
			for _, c := range sends {
				body, _, _ := decodeBody(t, c.Body)
				if uuid != "" && body["uuid"] != uuid {
					t.Error("a retry changed the uuid; Feishu could show the card twice")
				}
				uuid, _ = body["uuid"].(string)
			}
		})
	}
}

func TestUpdateRetriesAndReportsFailure(t *testing.T) {
	e := newTestEnv(t)
	r := sampleRequest()
	r.Status = "approved"
	e.api.FailNext("PATCH /open-apis/im/v1/messages/om_7", feishutest.Answer{Status: 429, Body: `{"code":99991400,"msg":"limit"}`})
	if err := e.ch.Update(context.Background(), r, "om_7"); err != nil {
		t.Fatalf("Update after one 429: %v", err)
	}
	e.api.FailNext("PATCH /open-apis/im/v1/messages/om_8", feishutest.Answer{Status: 400, Body: `{"code":230031,"msg":"message too old to update"}`})
	err := e.ch.Update(context.Background(), r, "om_8")
	if err == nil || !strings.Contains(err.Error(), "230031") || !strings.HasPrefix(err.Error(), "feishu: update card") {
		t.Errorf("Update error = %v, want the platform's code for the gate to record", err)
	}
}

func TestTokenFailureIsReported(t *testing.T) {
	e := newTestEnv(t)
	e.api.FailNext("POST /open-apis/auth/v3/tenant_access_token/internal", feishutest.Answer{Status: 400, Body: `{"code":10014,"msg":"app secret invalid"}`})
	_, err := e.ch.Post(context.Background(), sampleRequest())
	if err == nil || !strings.Contains(err.Error(), "10014") {
		t.Fatalf("Post error = %v, want the token failure", err)
	}
	if n := len(e.api.Calls("POST /open-apis/im/v1/messages")); n != 0 {
		t.Errorf("sent %d messages without a token", n)
	}
}

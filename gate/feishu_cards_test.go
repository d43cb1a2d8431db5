package gate_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/channel/feishu"
	"github.com/gatehouse-dev/gatehouse/channel/feishu/feishutest"
	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/storetest"
)

// lateDecider lets channels be built before the service they decide on.
type lateDecider struct{ gate.Decider }

// Two Feishu channels of one app post a request's cards to one chat; an
// approver taps legal's card, and the tap counts through ops (the chat's
// taps go to a channel the request was sent to). The callback's answer
// replaces the tapped message, legal's card, and nothing else: ops's card
// must still be updated, not recorded as showing the verdict while it
// keeps its pending buttons.
func TestTapOnAnotherChannelsCardLeavesNoCardPending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		api := feishutest.NewServer(t, "cli_test", "app-secret")
		ld := &lateDecider{}
		channel := func(name string) *feishu.Channel {
			ch, err := feishu.New(feishu.Options{Name: name, Decider: ld, Config: config.Feishu{
				AppID: "cli_test", AppSecret: "app-secret", VerificationToken: "v-token", EncryptKey: "e-key",
				ChatID: "oc_chat", BaseURL: api.URL, Mode: config.FeishuWebhook}})
			if err != nil {
				t.Fatal(err)
			}
			return ch
		}
		ops, legal := channel("ops-feishu"), channel("legal-feishu")
		svc := newService(t, db, svcOpts{
			routes: []gate.Route{{Name: "payments", Tool: "oa__*", Channels: []string{"ops-feishu", "legal-feishu"}}},
			chans:  []gate.Channel{ops, legal},
		})
		ld.Decider = svc.Service
		r := submit(t, svc, gate.Submission{ToolName: "oa__purchase_pay", Timeout: time.Hour, Caller: "bot"})
		refs := map[string]string{}
		for _, c := range cardsSettle(t, svc, r.ID, gate.CardPosted) {
			refs[c.Channel] = c.Ref
		}
		if len(refs) != 2 || refs["ops-feishu"] == "" || refs["legal-feishu"] == "" {
			t.Fatalf("cards posted: %v", refs)
		}
		tap := feishutest.CardAction(feishutest.Tap{EventID: "ev_1", Token: "v-token", AppID: "cli_test", TenantKey: "tk", At: time.Now(),
			OpenID: "ou_alice", UnionID: "on_alice", RequestID: r.ID, Choice: "approve", MessageID: refs["legal-feishu"], ChatID: "oc_chat"})
		d := feishutest.Callback(tap, "e-key", "e-key", time.Now())
		req := httptest.NewRequest(http.MethodPost, "/callbacks/feishu", bytes.NewReader(d.Body))
		for k, v := range d.Header {
			req.Header[k] = v
		}
		w := httptest.NewRecorder()
		feishu.NewCallbackHandler([]*feishu.Channel{ops, legal}).ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"card"`) {
			t.Fatalf("answer %d: %s", w.Code, w.Body.String())
		}
		replaced := map[string]bool{refs["legal-feishu"]: true} // by the answer
		for _, c := range cardsSettle(t, svc, r.ID, string(gate.StatusApproved)) {
			if !replaced[c.Ref] {
				api.WaitCalls(t, "PATCH "+feishutest.MessagesPath+"/"+c.Ref, 1)
			}
		}
	})
}

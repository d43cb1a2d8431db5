package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestObserverSeries(t *testing.T) {
	m := New()
	m.RequestCreated("payments")
	m.RequestFinished("payments", gate.StatusApproved, 42*time.Second)
	m.WaitersChanged(3)
	m.WaitersChanged(-1)
	m.CardDone("ops-slack", "post", nil, 20*time.Millisecond)
	m.CardDone("ops-slack", "update", errors.New("boom"), time.Second)
	m.CallbackRefused("ops-slack")
	m.DecisionRefused("ops-slack", gate.ECONFLICT)
	m.Decided("reads", gate.StatusApproved, gate.ViaPolicy, false)
	m.Decided("reads", gate.StatusApproved, gate.ViaPolicy, false)
	out := scrape(t, m)
	for _, want := range []string{
		`gatehouse_requests_created_total{route="payments"} 1`,
		`gatehouse_requests_finished_total{route="payments",status="approved"} 1`,
		`gatehouse_time_to_decision_seconds_bucket{route="payments",status="approved",le="60"} 1`,
		`gatehouse_time_to_decision_seconds_bucket{route="payments",status="approved",le="30"} 0`,
		`gatehouse_waiters 2`,
		`gatehouse_channel_operations_total{channel="ops-slack",op="post",result="ok"} 1`,
		`gatehouse_channel_operations_total{channel="ops-slack",op="update",result="error"} 1`,
		`gatehouse_channel_errors_total{channel="ops-slack",op="update"} 1`,
		`gatehouse_channel_operation_seconds_count{channel="ops-slack",op="post"} 1`,
		`gatehouse_callbacks_refused_total{channel="ops-slack"} 1`,
		`gatehouse_decisions_refused_total{channel="ops-slack",code="already_decided"} 1`,
		`gatehouse_decided_without_a_person_total{recorded="false",route="reads",status="approved",via="policy"} 2`,
		`go_goroutines`,
		`process_resident_memory_bytes`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

func TestMiddlewareLabelsByRoutePattern(t *testing.T) {
	m := New()
	e := echo.New()
	e.GET("/api/v1/approvals/:id", func(c echo.Context) error {
		if c.Param("id") == "missing" {
			return echo.NewHTTPError(http.StatusNotFound, "no such request")
		}
		return c.String(http.StatusOK, "ok")
	})
	e.Use(m.Middleware())
	for _, p := range []string{"/api/v1/approvals/01A", "/api/v1/approvals/01B", "/api/v1/approvals/missing", "/nowhere/at/all"} {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	out := scrape(t, m)
	for _, want := range []string{
		`gatehouse_http_requests_total{code="200",method="GET",route="/api/v1/approvals/:id"} 2`,
		`gatehouse_http_requests_total{code="404",method="GET",route="/api/v1/approvals/:id"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(out, "/nowhere") || strings.Contains(out, "01A") {
		t.Errorf("raw paths leaked into labels:\n%s", out)
	}
}

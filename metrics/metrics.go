// Package metrics exposes Gatehouse's measurements to Prometheus. Metrics
// implements gate.Observer, so the gate itself stays free of Prometheus,
// and offers an echo middleware that counts HTTP requests by route.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Metrics holds Gatehouse's collectors in a registry of its own (with the
// Go runtime and process collectors), so tests can build several.
type Metrics struct {
	reg *prometheus.Registry

	created          *prometheus.CounterVec
	finished         *prometheus.CounterVec
	decision         *prometheus.HistogramVec
	waiters          prometheus.Gauge
	cardOps          *prometheus.CounterVec
	cardErrors       *prometheus.CounterVec
	cardSeconds      *prometheus.HistogramVec
	callbacksRefused *prometheus.CounterVec
	decisionsRefused *prometheus.CounterVec
	decided          *prometheus.CounterVec
	httpRequests     *prometheus.CounterVec
}

var _ gate.Observer = (*Metrics)(nil)

// New builds and registers every collector.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.created = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_requests_created_total",
		Help: "Approval requests created, by route.",
	}, []string{"route"})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_requests_finished_total",
		Help: "Approval requests that reached a final state, by route and status (approved, rejected, expired, cancelled).",
	}, []string{"route", "status"})
	m.decision = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gatehouse_time_to_decision_seconds",
		Help: "Time from a request's creation to its final state, by route and status.",
		// Humans answer in seconds to hours; policy answers in no time.
		Buckets: []float64{0.1, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600},
	}, []string{"route", "status"})
	m.waiters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gatehouse_waiters",
		Help: "Agents waiting for a verdict on this replica now (long polls and gate calls).",
	})
	m.cardOps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_channel_operations_total",
		Help: "Card posts and updates sent to chat platforms, by channel, operation (post, update) and result (ok, error).",
	}, []string{"channel", "op", "result"})
	m.cardErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_channel_errors_total",
		Help: "Card posts and updates that failed (after the adapter's own retries), by channel and operation.",
	}, []string{"channel", "op"})
	m.cardSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gatehouse_channel_operation_seconds",
		Help:    "Latency of card posts and updates, retries included, by channel and operation.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"channel", "op"})
	m.callbacksRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_callbacks_refused_total",
		Help: "Channel callbacks not accepted (replayed, malformed, naming an unknown request), by channel. Bad signatures show as 401s in gatehouse_http_requests_total.",
	}, []string{"channel"})
	m.decisionsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_decisions_refused_total",
		Help: "Verdicts the gate did not take, by channel and reason code (already_decided, expired, forbidden, ...).",
	}, []string{"channel", "code"})
	m.decided = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_decided_without_a_person_total",
		Help: "Calls decided at once, with no one asked, by route, status (approved, rejected), via (policy, grant) and recorded (false for a route's record: false allows, which are stored nowhere else).",
	}, []string{"route", "status", "via", "recorded"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_http_requests_total",
		Help: "HTTP requests served, by method, route pattern and status code.",
	}, []string{"method", "route", "code"})
	m.reg.MustRegister(m.created, m.finished, m.decision, m.waiters, m.cardOps, m.cardErrors, m.cardSeconds,
		m.callbacksRefused, m.decisionsRefused, m.decided, m.httpRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the collectors live, for callers adding their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// RequestCreated counts a new request.
func (m *Metrics) RequestCreated(route string) { m.created.WithLabelValues(route).Inc() }

// RequestFinished counts a request reaching its final state and records
// how long it took.
func (m *Metrics) RequestFinished(route string, status gate.Status, waited time.Duration) {
	m.finished.WithLabelValues(route, string(status)).Inc()
	m.decision.WithLabelValues(route, string(status)).Observe(waited.Seconds())
}

// WaitersChanged moves the waiter gauge.
func (m *Metrics) WaitersChanged(delta int) { m.waiters.Add(float64(delta)) }

// CardDone records one post or update.
func (m *Metrics) CardDone(channel, op string, err error, took time.Duration) {
	result := "ok"
	if err != nil {
		result = "error"
		m.cardErrors.WithLabelValues(channel, op).Inc()
	}
	m.cardOps.WithLabelValues(channel, op, result).Inc()
	m.cardSeconds.WithLabelValues(channel, op).Observe(took.Seconds())
}

// CallbackRefused counts a refused callback.
func (m *Metrics) CallbackRefused(channel string) { m.callbacksRefused.WithLabelValues(channel).Inc() }

// DecisionRefused counts a verdict that was not taken.
func (m *Metrics) DecisionRefused(channel, code string) {
	m.decisionsRefused.WithLabelValues(channel, code).Inc()
}

// Middleware counts every HTTP request by its route pattern (not its
// path, so ids do not explode the label set). It renders a handler's error
// itself, as the server's access log does, so the status is the one sent.
func (m *Metrics) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			route := c.Path()
			if route == "" || c.Response().Status == http.StatusNotFound && route == "/*" {
				route = "unmatched"
			}
			m.httpRequests.WithLabelValues(c.Request().Method, route, strconv.Itoa(c.Response().Status)).Inc()
			return nil
		}
	}
}

// Decided counts a call decided with no one asked.
func (m *Metrics) Decided(route string, status gate.Status, via string, recorded bool) {
	m.decided.WithLabelValues(route, string(status), via, strconv.FormatBool(recorded)).Inc()
}

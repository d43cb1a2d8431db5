package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/channel"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// statusOf maps a domain error code to its HTTP status: the one place the
// domain meets HTTP.
func statusOf(code string) int {
	if code == ETOOLARGE {
		return http.StatusRequestEntityTooLarge
	}
	return channel.Status(code)
}

// ETOOLARGE is the web layer's own code for a body over MaxBody.
const ETOOLARGE = "too_large"

// errorBody is the JSON every API error answers with.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func newErrorBody(code, msg string) errorBody {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	return b
}

// apiError writes err as {"error":{...}} with its status; on
// /api/v1/gate, as a hook result that denies.
func (s *Server) apiError(c echo.Context, err error) error {
	code := gate.ErrorCode(err)
	if code == gate.EINTERNAL || code == gate.EUNAVAILABLE {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if isGate(c) {
		return c.JSON(statusOf(code), denied("", err))
	}
	return c.JSON(statusOf(code), newErrorBody(code, gate.ErrorMessage(err)))
}

// isGate tells the hook-contract endpoint, whose every answer, errors
// included, is a hook result with allow: false, so that a caller reading
// only "allow" is denied whatever went wrong.
func isGate(c echo.Context) bool { return c.Request().URL.Path == "/api/v1/gate" }

// httpErrorHandler answers echo's own errors (404 routes, 413 bodies, 405)
// in the same JSON shape as the domain's.
func (s *Server) httpErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if !errors.As(err, &he) {
		_ = s.apiError(c, err)
		return
	}
	code := "error"
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok && m != "" {
		msg = m
	}
	switch he.Code {
	case http.StatusNotFound:
		code = gate.ENOTFOUND
	case http.StatusRequestEntityTooLarge:
		code, msg = ETOOLARGE, "request body larger than 1 MiB"
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	case http.StatusUnauthorized:
		code = gate.EUNAUTHORIZED
	case http.StatusBadRequest:
		code = gate.EINVALID
	default:
		if he.Code >= 500 {
			code = gate.EINTERNAL
			s.log.Error("request failed", "path", c.Path(), "err", err)
		}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(he.Code)
		return
	}
	if isGate(c) {
		_ = c.JSON(he.Code, denied("", gate.Errorf(code, "%s", msg)))
		return
	}
	if wantsPage(c.Request()) {
		if err := s.page(c, he.Code, "error", pageData{Title: http.StatusText(he.Code), Message: msg}); err == nil {
			return
		}
	}
	_ = c.JSON(he.Code, newErrorBody(code, msg))
}

// wantsPage tells a person's browser from an API client: pages answer
// errors as HTML, everything under the API, hook and callback paths as JSON.
func wantsPage(r *http.Request) bool {
	for _, p := range []string{"/api/", "/hooks/", "/callbacks/", "/live/", "/export"} {
		if strings.HasPrefix(r.URL.Path, p) {
			return false
		}
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openapiJSON is the HTTP API as OpenAPI 3.1, kept in the repository
// (web/openapi.json) and equal to the routes by TestOpenAPIMatchesRoutes.
//
//go:embed openapi.json
var openapiJSON []byte

// OpenAPI returns the HTTP API's OpenAPI 3.1 document.
func OpenAPI() []byte { return openapiJSON }

// openapi is GET /api/v1/openapi.json. It needs no token: it describes the
// API, it holds nothing of anyone's.
func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openapiJSON)
}

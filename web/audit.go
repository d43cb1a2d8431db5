package web

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/audit"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// auditCheckpoint is GET /api/v1/audit/checkpoint: the audit chain's head,
// signed with audit.signing_key_file, for an auditor to keep where the
// database's writers cannot reach it (gatehouse audit verify --checkpoint
// then catches a chain rewritten before it or cut short after it). Any
// token may fetch it: it says how long the chain is and nothing of any
// request. Not when the server redacts: two heads a few events apart let
// a reader test guesses at what those events hide (the checkpoint files
// in audit.checkpoint_dir are written all the same).
func (s *Server) auditCheckpoint(c echo.Context) error {
	if s.opts.Checkpoints == nil {
		return s.apiError(c, gate.Errorf(gate.ENOTFOUND, "%v", audit.ErrNoKey))
	}
	if s.opts.Present.Redactor().Active() {
		return s.apiError(c, gate.Errorf(gate.EFORBIDDEN, "the server redacts (redact:), and the chain's head hashes values it hides: "+
			"take checkpoints from audit.checkpoint_dir on the server"))
	}
	cp, err := s.opts.Checkpoints.Checkpoint(c.Request().Context())
	if errors.Is(err, audit.ErrNoKey) {
		return s.apiError(c, gate.Errorf(gate.ENOTFOUND, "%v", err))
	}
	if err != nil {
		return s.apiError(c, err)
	}
	return c.JSON(http.StatusOK, cp)
}

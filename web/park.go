package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// answerFunc turns what a wait returned into the HTTP answer: status and
// JSON body; it may set headers on h.
type answerFunc func(h http.Header, r *gate.Request, err error) (int, any)

// parkAfter is how long a long poll holds its handler goroutine before it
// is parked. Most machine-speed waits (a policy, an automated approver, the
// benchmark's life cycles) end within it and keep their keep-alive
// connection; waits on people park, so thousands of waiting agents cost
// small structs and timers rather than two goroutines and net/http's
// buffers each.
const parkAfter = 500 * time.Millisecond

type waitResult struct {
	r   *gate.Request
	err error
}

// Parking states of a long poll.
const (
	pollHeld     int32 = iota // the handler goroutine waits for the answer
	pollAnswered              // the answer went to the handler
	pollParked                // the connection is ours: the callback writes
)

// longPoll waits for request id as svc.Wait does and answers with answer.
// When the row is still pending after parkAfter it parks the agent: it
// takes the connection over from net/http (HTTP/1.x only), lets the handler
// goroutine and net/http's per-connection reader and buffers go, and writes
// the whole response (Connection: close) later from the wake-up, the wait
// limit, the request's deadline or Stop. Where the connection cannot be
// taken over it keeps waiting the blocking way.
func (s *Server) longPoll(c echo.Context, id string, wait time.Duration, answer answerFunc) error {
	p, r, err := s.svc.Park(c.Request().Context(), id, wait)
	return s.hold(c, id, p, r, err, answer)
}

// hold answers a long poll parked by Park or SubmitAndPark.
func (s *Server) hold(c echo.Context, id string, p *gate.Parked, r *gate.Request, err error, answer answerFunc) error {
	ctx := c.Request().Context()
	if p == nil {
		st, body := answer(c.Response().Header(), r, err)
		return c.JSON(st, body)
	}
	var (
		state atomic.Int32
		conn  net.Conn
		hdr   http.Header
		ch    = make(chan waitResult, 1)
		// What a parked answer that cannot be made says instead: on
		// /api/v1/gate a deny, as every failure there.
		failure any = newErrorBody(gate.EINTERNAL, "internal error")
	)
	if isGate(c) {
		failure = denied(id, gate.Errorf(gate.EINTERNAL, "internal error"))
	}
	p.Arm(func(r *gate.Request, err error) {
		if state.CompareAndSwap(pollHeld, pollAnswered) {
			ch <- waitResult{r, err}
			return
		}
		// pollParked: conn and hdr were set before the state changed.
		defer s.parkedN.Add(-1)
		defer func() {
			// No echo Recover out here: a bug must not take the server
			// down, and the agent gets an explicit failure, never silence.
			if v := recover(); v != nil {
				s.log.Error("parked answer failed", "request_id", id, "panic", v)
				writeRaw(conn, http.StatusInternalServerError, hdr, failure, failure)
			}
		}()
		st, body := answer(hdr, r, err)
		writeRaw(conn, st, hdr, body, failure)
	})
	reply := func(res waitResult) error {
		st, body := answer(c.Response().Header(), res.r, res.err)
		return c.JSON(st, body)
	}
	grace := time.NewTimer(parkAfter)
	defer grace.Stop()
	select {
	case res := <-ch:
		return reply(res)
	case <-ctx.Done():
		p.Cancel()
		return nil
	case <-grace.C:
	}
	// c goes back to echo's pool when the handler returns: the callback
	// keeps only copies.
	hdr = c.Response().Header().Clone()
	hc, ok := hijack(c)
	if !ok {
		select {
		case res := <-ch:
			return reply(res)
		case <-ctx.Done():
			p.Cancel()
			return nil
		}
	}
	conn = hc
	s.parkedN.Add(1)
	if !state.CompareAndSwap(pollHeld, pollParked) {
		// Answered while the connection was being taken over: the
		// response writer is gone, so write it here.
		defer s.parkedN.Add(-1)
		res := <-ch
		st, body := answer(hdr, res.r, res.err)
		writeRaw(conn, st, hdr, body, failure)
	}
	return nil
}

// hijack takes the connection over, when the protocol allows.
func hijack(c echo.Context) (net.Conn, bool) {
	if c.Request().ProtoMajor != 1 {
		return nil, false
	}
	hj, ok := c.Response().Writer.(http.Hijacker)
	if !ok {
		return nil, false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return nil, false
	}
	return conn, true
}

// writeRaw writes one complete HTTP/1.1 response (the same JSON echo's
// c.JSON writes) and closes the connection; when v cannot be encoded it
// writes failure with a 500 instead. A client that went away just fails
// the write.
func writeRaw(conn net.Conn, status int, hdr http.Header, v, failure any) {
	defer conn.Close()
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(v); err != nil {
		status = http.StatusInternalServerError
		body.Reset()
		_ = json.NewEncoder(&body).Encode(failure)
	}
	hdr.Set("Content-Type", echo.MIMEApplicationJSON)
	hdr.Set("Content-Length", strconv.Itoa(body.Len()))
	hdr.Set("Connection", "close")
	hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var buf bytes.Buffer
	buf.Grow(body.Len() + 256)
	fmt.Fprintf(&buf, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = hdr.Write(&buf)
	buf.WriteString("\r\n")
	buf.Write(body.Bytes())
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(buf.Bytes()); err != nil {
		return
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// waitParked waits, at most until ctx ends, for the parked agents' answers
// to be written (Stop answers them all).
func (s *Server) waitParked(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.parkedN.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Parked reports how many agents are parked now (tests).
func (s *Server) Parked() int64 { return s.parkedN.Load() }

package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// parkAfter is how long a long poll holds net/http's handler before it
// parks. Machine-speed waits (a policy, an automated approver) end within
// it and keep their keep-alive connection; waits on people park.
const parkAfter = 100 * time.Millisecond

// answerFunc turns what a wait returned into the HTTP answer.
type answerFunc func(h http.Header, r *gate.Request, err error) (status int, body any)

// longPoll waits up to wait for request id to leave pending and answers.
//
// Past parkAfter it parks the agent: it takes the connection over from
// net/http (HTTP/1.x), which lets go of net/http's goroutine and buffers
// for it, and hands it to gate's WaitFunc, which holds no goroutine while
// nothing happens and writes the whole response (Connection: close) when
// the wait ends. A waiting agent then costs a few KB of heap rather than
// ~55 KB with net/http or ~12 KB with a goroutine of its own, which is what
// keeps 10,000 of them under 200 MB (README, "Speed mechanisms"). Where the
// connection cannot be taken over it waits on the handler.
func (s *Server) longPoll(c echo.Context, id string, wait time.Duration, answer answerFunc) error {
	ctx := c.Request().Context()
	held := min(wait, parkAfter)
	r, err := s.svc.Wait(ctx, id, held)
	if err == nil && !r.Status.Final() && wait > held && ctx.Err() == nil {
		if s.parked.add() {
			if conn, ok := hijack(c); ok {
				// c goes back to echo's pool when the handler returns: the
				// goroutine keeps only copies.
				hdr := c.Response().Header().Clone()
				s.svc.WaitFunc(context.Background(), id, wait-held, func(r *gate.Request, err error) {
					defer s.parked.done()
					s.answerParked(conn, hdr, id, r, err, answer)
				})
				return nil
			}
			s.parked.done()
		}
		r, err = s.svc.Wait(ctx, id, wait-held)
	}
	st, body := answer(c.Response().Header(), r, err)
	return c.JSON(st, body)
}

// answerParked writes a parked agent's answer and closes its connection.
// A bug must not take the server down, and the agent gets an explicit
// failure (on /api/v1/gate a deny), never silence.
func (s *Server) answerParked(conn net.Conn, hdr http.Header, id string, r *gate.Request, err error, answer answerFunc) {
	defer conn.Close()
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("parked answer failed", "request_id", id, "panic", v)
			st, body := answer(hdr, nil, gate.Errorf(gate.EINTERNAL, "internal error"))
			writeRaw(conn, st, hdr, body)
		}
	}()
	st, body := answer(hdr, r, err)
	writeRaw(conn, st, hdr, body)
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

// writeRaw writes one complete HTTP/1.1 response with v as its JSON body
// (as echo's c.JSON writes it). A client that went away just fails the write.
func writeRaw(conn net.Conn, status int, hdr http.Header, v any) {
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(v); err != nil {
		panic(fmt.Sprintf("encoding the answer: %v", err)) // answerParked turns it into a failure answer
	}
	hdr.Set("Content-Type", echo.MIMEApplicationJSON)
	hdr.Set("Content-Length", strconv.Itoa(body.Len()))
	hdr.Set("Connection", "close")
	hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = hdr.Write(&buf)
	buf.WriteString("\r\n")
	buf.Write(body.Bytes())
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write(buf.Bytes())
}

// Parked reports how many agents are parked now (tests).
func (s *Server) Parked() int64 { return s.parked.n.Load() }

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The load generator's HTTP client. net/http's Transport runs two
// goroutines per connection and hands every request and response between
// them and the caller; on a 2-core machine shared with the server those
// hand-offs are CPU the server does not get and microseconds the latency
// figures would count. Here each call writes its request and reads its
// response on the caller's goroutine, over a kept-alive connection, with
// net/http's own request writer and response parser (so the wire format
// is exactly net/http's). Timestamps taken around a call are the time the
// request went onto the socket and the time its whole response came off.

type benchConn struct {
	c      net.Conn
	br     *bufio.Reader
	out    bytes.Buffer // the request being sent
	used   bool         // carried an exchange before
	broken bool         // a cancelled context cut it
}

// pool keeps idle connections per host.
type pool struct {
	mu   sync.Mutex
	idle map[string][]*benchConn
}

var conns = &pool{idle: map[string][]*benchConn{}}

func (p *pool) get(ctx context.Context, host string) (*benchConn, error) {
	p.mu.Lock()
	if l := p.idle[host]; len(l) > 0 {
		c := l[len(l)-1]
		p.idle[host] = l[:len(l)-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &benchConn{c: c, br: bufio.NewReaderSize(c, 8<<10)}, nil
}

func (p *pool) put(host string, c *benchConn) {
	p.mu.Lock()
	p.idle[host] = append(p.idle[host], c)
	p.mu.Unlock()
}

// roundTrip sends req and reads the whole response. sent, when not nil, is
// called once the request is serialised, just before its bytes are written
// to the socket. The body returned
// is fully read; the connection goes back to the pool unless the server
// closes it (a parked long poll's answer does).
func roundTrip(req *http.Request, sent func()) (*http.Response, []byte, error) {
	ctx := req.Context()
	host := req.URL.Host
	for attempt := 0; ; attempt++ {
		c, err := conns.get(ctx, host)
		if err != nil {
			return nil, nil, err
		}
		reused := c.used
		resp, body, err := c.do(req, sent)
		if err == nil {
			if resp.Close || c.broken {
				c.c.Close()
			} else {
				conns.put(host, c)
			}
			return resp, body, nil
		}
		c.c.Close()
		// A kept-alive connection the server closed while idle fails
		// before any byte of an answer: retry once on a fresh one, as
		// net/http does for requests it may safely resend.
		if !reused || !errors.Is(err, errNoAnswer) || attempt > 0 || ctx.Err() != nil || req.GetBody == nil {
			return nil, nil, err
		}
		if req.Body, err = req.GetBody(); err != nil {
			return nil, nil, err
		}
	}
}

// errNoAnswer is a connection that failed before any byte of an answer.
var errNoAnswer = errors.New("connection closed before an answer")

// do writes req and reads its response.
func (c *benchConn) do(req *http.Request, sent func()) (*http.Response, []byte, error) {
	stop := context.AfterFunc(req.Context(), func() { c.c.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() {
			c.broken = true
		}
	}()
	// The whole request is serialised first, so that sent marks the
	// moment its bytes go onto the socket.
	c.out.Reset()
	if err := req.Write(&c.out); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	if sent != nil {
		sent()
	}
	if _, err := c.c.Write(c.out.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.used = true
	return resp, body, err
}

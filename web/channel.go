package web

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// Channel is the built-in web channel: its "card" is the request's entry in
// the web page's pending queue, which needs no credentials and no platform.
type Channel struct{}

var _ gate.Channel = Channel{}

// Name is "web".
func (Channel) Name() string { return gate.WebChannel }

// Post lists the request on the pending page; the reference is its path.
func (Channel) Post(_ context.Context, r *gate.Request) (string, error) {
	return "/approvals/" + r.ID, nil
}

// Update has nothing to do: the page renders the request's current state.
func (Channel) Update(context.Context, *gate.Request, string) error { return nil }

package main

import (
	"log/slog"
	"net/http"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/gate"
)

// builtChannels are the configured channels, ready to register, with the
// callback routes and the connections (sockets) they need.
type builtChannels struct {
	channels  []gate.Channel
	callbacks map[string]http.Handler
	runners   []gate.Runner
}

// buildChannels is the one place that knows every channel type. Adding a
// platform means one package and one case here.
func buildChannels(cfg *config.Config, svc *gate.Service, log *slog.Logger) (builtChannels, error) {
	out := builtChannels{callbacks: map[string]http.Handler{}}
	return out, nil
}

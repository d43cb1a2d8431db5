package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler wraps h so that every log line is redacted before it is
// written: the message and string values by the patterns, JSON values
// (json.RawMessage) by keys and patterns, errors and Stringers by their
// text, and attributes whose key matches a key glob are shown as Mark.
// With a nil or inactive r it returns h itself.
func Handler(h slog.Handler, r *Redactor) slog.Handler {
	if !r.Active() {
		return h
	}
	return &handler{next: h, r: r}
}

type handler struct {
	next slog.Handler
	r    *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Text(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), r: h.r}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if h.r.Key(a.Key) && v.Kind() != slog.KindGroup {
		return slog.String(a.Key, Mark)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case json.RawMessage:
			return slog.String(a.Key, string(h.r.JSON(x)))
		case error:
			return slog.String(a.Key, h.r.Text(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.r.Text(x.String()))
		case []byte:
			return slog.String(a.Key, h.r.Text(string(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

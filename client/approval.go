package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Approval is a request as GET /api/v1/approvals/{id} returns it: the fields
// an agent acts on beyond the verdict Gate gives (who decided, when, for
// which call id).
type Approval struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	ToolName     string          `json:"tool_name"`
	ToolCallID   string          `json:"tool_call_id"`
	Route        string          `json:"route"`
	CreatedAt    time.Time       `json:"created_at"`
	ExpiresAt    time.Time       `json:"expires_at"`
	DecidedAt    *time.Time      `json:"decided_at"`
	DecidedBy    string          `json:"decided_by"`
	DecidedVia   string          `json:"decided_via"`
	Reason       string          `json:"reason"`
	ModifiedArgs json.RawMessage `json:"modified_args"`
}

// Get returns one request as it stands now.
func (c *Client) Get(ctx context.Context, id string) (Approval, error) {
	target := strings.TrimRight(c.URL, "/") + "/api/v1/approvals/" + url.PathEscape(id)
	_, data, err := c.send(ctx, http.MethodGet, target, nil, 30*time.Second)
	if err != nil {
		return Approval{}, err
	}
	var a Approval
	if err := json.Unmarshal(data, &a); err != nil {
		return Approval{}, fmt.Errorf("gatehouse: unreadable answer: %w", err)
	}
	return a, nil
}

// Ping checks that the server answers at all (GET /healthz), so that a
// caller can tell "not running" from "still deciding" before it waits.
func (c *Client) Ping(ctx context.Context) error {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/healthz", nil)
	if err != nil {
		return err
	}
	return c.expectOK(hr)
}

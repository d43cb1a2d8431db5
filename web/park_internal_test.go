package web

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/gatehouse-dev/gatehouse/gate"
)

// A parked answer that cannot be encoded is answered with its failure
// body; for /api/v1/gate that is a deny, like every failure there.
func TestParkedAnswerThatFailsDenies(t *testing.T) {
	server, client := net.Pipe()
	go writeRaw(server, http.StatusOK, http.Header{}, map[string]any{"x": make(chan int)},
		denied("req-1", gate.Errorf(gate.EINTERNAL, "internal error")))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h HookResult
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusInternalServerError || h.Allow || h.Status != "error" || h.RequestID != "req-1" {
		t.Fatalf("answer %d %+v; want 500 and a deny for req-1", resp.StatusCode, h)
	}
}

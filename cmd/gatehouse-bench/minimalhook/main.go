// Command minimalhook is the yardstick of gatehouse-bench's hook figures:
// the least a command hook can do, in Go. It reads the hook's JSON on
// stdin, posts it to the URL in its argument with GATEHOUSE_TOKEN, and
// prints the answer. gatehouse-hook is measured against it.
package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
)

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		os.Exit(1)
	}
	req, err := http.NewRequest("POST", os.Args[1], bytes.NewReader(body))
	if err != nil {
		os.Exit(1)
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv("GATEHOUSE_TOKEN"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		os.Exit(1)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		os.Exit(1)
	}
}

package policy

import "testing"

// TestShellParserReused: reading a command reuses a pooled parser rather
// than making one (~2.3 KB) per call, the bytes whose garbage collections
// set the Bash evaluation's p99 (docs/benchmark.md). Under -race the pool
// drops a quarter of what is put back, hence the margin.
func TestShellParserReused(t *testing.T) {
	readShell("warm up") // the pool's first parser
	res := testing.Benchmark(func(b *testing.B) {
		for range b.N {
			readShell("ls -la")
		}
	})
	// Measured: 3,096 B/op with the pool (3,842 under -race), 5,800
	// without it (5,864 under -race).
	if got := res.AllocedBytesPerOp(); got > 4800 {
		t.Errorf("reading `ls -la` allocates %d B/op: is a parser made per call?", got)
	}
}

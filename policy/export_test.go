package policy

// ReadShell reads a command as a Bash call's evaluation does, for
// BenchmarkBashCallParts, which times it apart from the rest.
func ReadShell(cmd string) { readShell(cmd) }

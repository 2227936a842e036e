//go:build windows

package osproc

// processArgs is nil on Windows: another process's command line is not read there.
func processArgs(int) []string { return nil }

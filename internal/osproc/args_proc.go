//go:build !darwin && !windows

package osproc

import (
	"bytes"
	"os"
	"strconv"
)

// processArgs reads pid's command line from /proc; nil where there is no /proc.
func processArgs(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	return nulArgs(data)
}

// nulArgs splits a NUL-separated, NUL-terminated argument vector (Linux's /proc/<pid>/cmdline).
func nulArgs(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	var args []string
	for _, a := range bytes.Split(bytes.TrimRight(data, "\x00"), []byte{0}) {
		args = append(args, string(a))
	}
	return args
}

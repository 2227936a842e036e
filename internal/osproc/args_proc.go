//go:build !darwin && !windows

package osproc

import (
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

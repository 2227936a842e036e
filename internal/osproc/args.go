package osproc

import (
	"bytes"
	"encoding/binary"
	"os"
)

// ParentArgs returns the command line of this process's parent (for a provider: the terraform command
// that started it): from /proc on Linux, from the kernel's process table (sysctl kern.procargs2) on
// macOS; nil where neither can be read (Windows, a Linux without /proc) or the parent is gone.
func ParentArgs() []string { return processArgs(os.Getppid()) }

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

// procArgs2Args reads the argument vector out of macOS's kern.procargs2 buffer: argc as a 32-bit
// integer in host order, the executable's path, NUL padding, then argc NUL-terminated arguments (the
// environment follows them). nil when the buffer is shorter than it says.
func procArgs2Args(data []byte) []string {
	if len(data) < 4 {
		return nil
	}
	argc := int(binary.NativeEndian.Uint32(data))
	rest := data[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil
	}
	rest = bytes.TrimLeft(rest[i:], "\x00")
	args := make([]string, 0, argc)
	for len(args) < argc {
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			return nil
		}
		args = append(args, string(rest[:j]))
		rest = rest[j+1:]
	}
	return args
}

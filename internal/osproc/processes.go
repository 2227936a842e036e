package osproc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Process is one live process: its pid, the uid it runs as, and its command line.
type Process struct {
	PID  int
	UID  int
	Args []string
}

// List lists the live (not zombie) processes, from /proc, or from ps where there is no /proc.
func List() []Process {
	if _, err := os.Stat("/proc/self/cmdline"); err == nil {
		return procProcesses()
	}
	return psProcesses()
}

func procProcesses() []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		if !Alive(pid) {
			continue // a zombie
		}
		uid := procUID(pid)
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		out = append(out, Process{PID: pid, UID: uid, Args: args})
	}
	return out
}

func psProcesses() []Process {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "ps", "-A", "-ww", "-o", "pid=", "-o", "uid=", "-o", "state=", "-o", "command=").Output()
	if err != nil {
		return nil
	}
	var out []Process
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		uid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || strings.HasPrefix(f[2], "Z") {
			continue
		}
		// One string for the whole command line: matching only needs substrings.
		out = append(out, Process{PID: pid, UID: uid, Args: []string{strings.Join(f[3:], " ")}})
	}
	return out
}

// NamesDir reports whether one of args names dir or a path inside it (not merely a longer name that
// starts the same).
func NamesDir(args []string, dir string) bool {
	for _, a := range args {
		for off := 0; ; {
			i := strings.Index(a[off:], dir)
			if i < 0 {
				break
			}
			end := off + i + len(dir)
			if end == len(a) || !IsNameByte(a[end]) {
				return true
			}
			off = end
		}
	}
	return false
}

// IsNameByte reports whether c can continue a file name: a directory's name followed by it is the
// start of a longer name, not the directory.
func IsNameByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.'
}

// KillReferrers SIGKILLs every process of this user (other than this one) whose command line names
// dir, waits (briefly) for them to be gone, and returns their pids.
func KillReferrers(dir string) []int {
	self, uid := os.Getpid(), os.Geteuid()
	var pids []int
	for _, p := range List() {
		if p.PID == self || p.UID != uid || !NamesDir(p.Args, dir) {
			continue
		}
		if err := SignalProcess(p.PID, Kill); err == nil {
			pids = append(pids, p.PID)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return pids
}

// procUID is the effective uid of pid (from /proc/<pid>/status, which, unlike the owner of
// /proc/<pid>, is right for processes that made themselves non-dumpable), or -1.
func procUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				if uid, err := strconv.Atoi(f[1]); err == nil {
					return uid
				}
			}
		}
	}
	return -1
}

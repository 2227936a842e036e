package realos

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// A machine's cgroups. systemd-nspawn, run with --keep-unit where the host has no systemd to ask for a
// scope, puts its container in "payload" (and itself in "supervisor") below the cgroup it was started
// in. Two containers started from the same cgroup would share one tree: both containers' systemd would
// create, fill and remove the same system.slice/<unit> cgroups, and a unit of one fails when the other
// removes its cgroup as it starts (a boot found "degraded" in CI). So each machine is started in a
// cgroup of its own, named after it, below this process's cgroup in each hierarchy nspawn uses, and Stop
// removes it.

// cgroupPrefix begins the name of each machine's cgroup (the machine's name: hydra-realos-<run>).
const cgroupPrefix = "hydra-realos-"

// cgroupParents are the directories of this process's cgroup in the hierarchies systemd-nspawn places
// containers in: the unified one (cgroup2) and, with legacy or hybrid cgroups, the named "systemd" one.
func cgroupParents() []string {
	own := map[string]string{} // hierarchy ("" for cgroup2, "name=systemd") → this process's path
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			own[""] = f[2]
		case slices.Contains(strings.Split(f[1], ","), "name=systemd"):
			own["name=systemd"] = f[2]
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	var parents []string
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || f[3] != "/" {
			continue
		}
		var path string
		var found bool
		switch {
		case g[0] == "cgroup2":
			path, found = own[""]
		case g[0] == "cgroup" && slices.Contains(strings.Split(g[2], ","), "name=systemd"):
			path, found = own["name=systemd"]
		}
		if found {
			parents = append(parents, filepath.Join(f[4], path))
		}
	}
	return parents
}

// makeCgroups makes the machine's cgroup in each hierarchy (see cgroupParents) and returns their
// cgroup.procs files, for the process that starts systemd-nspawn to move into.
func makeCgroups(name string) ([]string, error) {
	parents := cgroupParents()
	if len(parents) == 0 {
		return nil, errors.New("no cgroup hierarchy of this process is mounted")
	}
	var procs []string
	for _, p := range parents {
		dir := filepath.Join(p, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			removeCgroups(name)
			return nil, err
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs, nil
}

// removeCgroups removes the machine's cgroups and the ones its container made below them, deepest first
// (a cgroup is removed with rmdir once no process is in it or below it). It reports whether none is left.
func removeCgroups(name string) bool {
	if !isMachineName(name) {
		return true // never a cgroup that is not a machine's
	}
	gone := true
	for _, p := range cgroupParents() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(p, name), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !os.IsNotExist(err) {
				gone = false
			}
		}
	}
	return gone
}

// endCgroups kills every process in the machine's cgroups (a machine whose test was killed), waits for
// them to exit, and removes the cgroups. It reports whether none is left.
func endCgroups(name string) bool {
	if !isMachineName(name) {
		return true
	}
	var pids []int
	for _, p := range cgroupParents() {
		_ = filepath.WalkDir(filepath.Join(p, name), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
				b, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() && !slices.Contains(pids, pid) {
						pids = append(pids, pid)
					}
				}
			}
			return nil // a cgroup gone meanwhile has no process to end
		})
	}
	for _, pid := range pids {
		_ = osproc.SignalProcess(pid, osproc.Kill)
	}
	waitExited(pids, 10*time.Second)
	return removeCgroups(name)
}

// isMachineName says whether name is a machine's (hydra-realos- and the digits of its run directory).
func isMachineName(name string) bool {
	n, ok := strings.CutPrefix(name, cgroupPrefix)
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// machineCgroups are the names of the machines' cgroups below this process's cgroups.
func machineCgroups() []string {
	var names []string
	for _, p := range cgroupParents() {
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if e.IsDir() && isMachineName(e.Name()) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// nspawn is the command that runs systemd-nspawn with args in the cgroups whose cgroup.procs files are
// procs (see makeCgroups): a shell moves itself into them, then becomes systemd-nspawn.
func nspawn(ctx context.Context, procs []string, args ...string) *exec.Cmd {
	const shim = `while [ "$1" != -- ]; do echo $$ 2>/dev/null > "$1" || echo "hydra: could not move into $1; the container shares its parent's cgroup" >&2; shift; done; shift; exec systemd-nspawn "$@"`
	a := append([]string{"-c", shim, "sh"}, procs...)
	a = append(append(a, "--"), args...)
	return exec.CommandContext(ctx, "/bin/sh", a...)
}

// cgroupOf is the path of pid's cgroup in the unified hierarchy ("" when unknown).
func cgroupOf(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

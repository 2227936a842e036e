package provision

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// SweepStale cleans up after provisioning runs whose provider process is gone (killed hard: SIGKILL,
// out of memory, a crash, before its own cleanup and its guardian could run). A run directory
// (<temp>/hydra-<pid>-<n>) is stale when its owner is not alive any more (a live process that only
// reuses the pid does not count: the owner's start time must match). For each stale run, every process
// of this user whose command line names the directory (ssh masters, ansible-playbook and its workers)
// is killed, and the directory, which holds a private key, is removed. Processes naming a stale run
// directory that is already gone are killed too.
//
// tempDirs are the directories runs are made in; without any, the default ones (the system temporary
// directory, and /tmp). A Runner configured with Config.TempDir needs that directory passed. Runs of
// live providers, this process's among them, are never touched. Call it once when the provider starts;
// it returns how many stale run directories it removed and logs what it did.
func SweepStale(logger hclog.Logger, tempDirs ...string) int {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if len(tempDirs) == 0 {
		tempDirs = []string{defaultTempBase(), "/tmp"}
	}
	var bases []string
	seenBase := map[string]bool{}
	for _, b := range tempDirs {
		if b == "" {
			continue
		}
		abs, err := filepath.Abs(b)
		if err != nil || seenBase[abs] {
			continue
		}
		seenBase[abs] = true
		bases = append(bases, abs)
	}

	// Candidates: the run directories on disk, and those named by live processes.
	candidates := map[string]bool{}
	for _, base := range bases {
		entries, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && runDirName.MatchString(e.Name()) {
				candidates[filepath.Join(base, e.Name())] = true
			}
		}
	}
	procs := osproc.List()
	for _, p := range procs {
		for _, base := range bases {
			for _, d := range runDirsNamed(p.Args, base) {
				candidates[d] = true
			}
		}
	}
	dirs := make([]string, 0, len(candidates))
	for d := range candidates {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)

	removed := 0
	for _, dir := range dirs {
		if !runDirStale(dir) {
			continue
		}
		fi, err := os.Lstat(dir)
		exists := err == nil
		if exists && !osproc.OwnedByMe(fi) {
			continue // another user's: not ours to judge, and not removable anyway
		}
		killed := osproc.KillReferrers(dir)
		if !exists {
			if len(killed) > 0 {
				logger.Warn("killed processes of a provisioning run whose provider died", "dir", dir, "pids", fmt.Sprint(killed))
			}
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logger.Error("cannot remove the directory of a provisioning run whose provider died", "dir", dir, "error", err.Error())
			continue
		}
		removed++
		logger.Warn("removed the directory of a provisioning run whose provider died", "dir", dir, "killed_pids", fmt.Sprint(killed))
	}
	return removed
}

// runDirName matches the name of a run directory: hydra-<owner pid>-<random digits>.
var runDirName = regexp.MustCompile(`^hydra-([0-9]+)-[0-9]+$`)

// runDirStale says whether dir belongs to a provider process that is gone.
func runDirStale(dir string) bool {
	m := runDirName.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return false
	}
	pid, _ := strconv.Atoi(m[1])
	start := ""
	if p, s, ok := parseOwner(dir); ok {
		pid, start = p, s
	}
	if pid <= 0 {
		return false
	}
	if !osproc.Alive(pid) {
		return true
	}
	// Alive: the owner, unless the pid was reused by a process that started at another time.
	return start != "" && start != "?" && processStart(pid) != "?" && processStart(pid) != start
}

// runDirsNamed returns the run directories directly under base that args name.
func runDirsNamed(args []string, base string) []string {
	re := regexp.MustCompile(regexp.QuoteMeta(base+string(filepath.Separator)) + `(hydra-[0-9]+-[0-9]+)`)
	var out []string
	for _, a := range args {
		for _, m := range re.FindAllStringSubmatchIndex(a, -1) {
			if m[1] == len(a) || !osproc.IsNameByte(a[m[1]]) {
				out = append(out, filepath.Join(base, a[m[2]:m[3]]))
			}
		}
	}
	return out
}

// processStart returns pid's start time (field 22 of /proc/<pid>/stat: clock ticks since boot), or
// "?" where it cannot be read. Together with the pid it identifies a process across pid reuse.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "?"
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "?"
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return "?"
	}
	return f[19]
}

package provision

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// A run directory is private to one provisioning run (a batch of machines, see batch.go): <temp>/hydra-<owner pid>-<random>, mode 0700,
// holding the private key, known_hosts, inventory, variables, the staged playbooks and the ssh control
// sockets. Its name and its owner file (ownerFile: "<pid> <start time>") say which provider process
// owns it, so SweepStale can tell the runs of a dead provider from those of a live one.
//
// Nothing of a run outlives it:
//   - on every normal path (success, failure, cancellation) remove closes the ssh masters, kills any
//     process still naming the directory, and deletes it;
//   - when the provider is killed hard, ansible-playbook gets SIGKILL from the kernel (Pdeathsig, on
//     Linux), and the run's guardian, a tiny shell that only waits for EOF on a pipe the provider holds,
//     kills the process group, closes the ssh masters and deletes the directory;
//   - whatever even the guardian missed (the whole process tree killed, a reboot of a host whose temp
//     directory persists) is found by SweepStale when the next provider starts.

// ownerFile, inside a run directory, holds "<pid> <start time>" of the provider process that owns it.
const ownerFile = "owner"

// runDirPrefix starts the name of every run directory.
const runDirPrefix = "hydra-"

// runDir is one run's private directory.
type runDir struct {
	path  string
	cp    string // ssh control sockets
	pb    string // the playbooks
	files runFiles
	guard *guardian
}

// prepareRunDir creates a batch's run directory, stages the playbooks and writes the run's files. On
// error nothing is left behind.
func (r *Runner) prepareRunDir(playbook string, hosts []*member) (*runDir, error) {
	d, err := newRunDir(r.tempBase(), r.logger)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			d.remove(r.logger)
		}
	}()
	if d.pb, err = r.stagePlaybooks(d.path); err != nil {
		return nil, err
	}
	if d.files, err = writeRunFiles(d.path, d.pb, r.cfg.PrivateKey, playbook, hosts); err != nil {
		return nil, err
	}
	ok = true
	return d, nil
}

// newRunDir makes an empty run directory marked with this process as its owner, and starts its guardian.
func newRunDir(base string, logger hclog.Logger) (*runDir, error) {
	pid := os.Getpid()
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", runDirPrefix, pid))
	if err != nil {
		return nil, fmt.Errorf("provisioning: temporary directory: %w", err)
	}
	d := &runDir{path: dir, cp: filepath.Join(dir, "cp")}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir) // best-effort cleanup: the chmod already failed
		return nil, err
	}
	owner := strconv.Itoa(pid) + " " + processStart(pid) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
		_ = os.RemoveAll(dir) // best-effort cleanup: the write already failed
		return nil, err
	}
	if !guardianEnabled {
		return d, nil
	}
	if d.guard, err = startGuardian(dir); err != nil {
		// SweepStale remains as the backstop.
		logger.Warn("cannot start the run directory's guardian; a hard kill of the provider would leave it until the next start", "error", err.Error())
	}
	return d, nil
}

// remove ends everything of the run: ssh masters, any process still naming the directory, the
// directory itself; then releases the guardian.
func (d *runDir) remove(logger hclog.Logger) {
	closeMasters(d.cp)
	if pids := osproc.KillReferrers(d.path); len(pids) > 0 {
		logger.Warn("killed processes left over by a provisioning run", "pids", fmt.Sprint(pids))
	}
	if err := os.RemoveAll(d.path); err != nil {
		logger.Error("cannot remove the provisioning run's directory", "dir", d.path, "error", err.Error())
	}
	d.guard.release()
}

// guardianScript runs detached from the provider, in its own process group. It reads lines from a
// pipe only the provider can write: "pg <n>" names ansible-playbook's process group, "done" ends it.
// EOF without "done" means the provider died: it kills the group, closes the ssh masters and removes
// the run directory ($HYDRA_RUN_DIR; kept out of its command line so the run's own cleanup, which kills
// every process naming the directory, leaves it alone).
const guardianScript = `pg=
while IFS= read -r line; do
	case $line in
	done) exit 0 ;;
	"pg "*) pg=${line#pg } ;;
	esac
done
[ -n "$pg" ] && kill -s KILL -- "-$pg" 2>/dev/null
for s in "$HYDRA_RUN_DIR"/cp/*; do
	[ -S "$s" ] && "$HYDRA_SSH" -F /dev/null -o ControlPath="$s" -O exit hydra-mux >/dev/null 2>&1
done
rm -rf -- "$HYDRA_RUN_DIR"
`

// guardianEnabled is switched off only by tests of what SweepStale finds after a hard kill.
var guardianEnabled = true

// guardian is the handle on one run directory's guardian process.
type guardian struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	w   io.WriteCloser
}

func startGuardian(dir string) (*guardian, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, err
	}
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		sshBin = "ssh"
	}
	cmd := exec.Command(sh, "-c", guardianScript, "hydra-run-guardian")
	cmd.Dir = "/"
	cmd.Env = append(ansibleBaseEnv(), "HYDRA_RUN_DIR="+dir, "HYDRA_SSH="+sshBin)
	// Its own process group: neither a signal to the provider's group nor the kill of ansible's reaches it.
	cmd.SysProcAttr = osproc.NewGroup()
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &guardian{cmd: cmd, w: w}, nil
}

// processGroup tells the guardian which process group to kill should the provider die.
func (g *guardian) processGroup(pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		_, _ = fmt.Fprintf(g.w, "pg %d\n", pgid)
	}
}

// release ends the guardian without it touching anything.
func (g *guardian) release() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return
	}
	_, _ = io.WriteString(g.w, "done\n")
	_ = g.w.Close()
	g.w = nil
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
}

// closeMasters asks every ssh connection master left in the control directory to exit, so no
// connection outlives the run (and none can be reused by a later run without a host key check).
func closeMasters(cp string) {
	entries, err := os.ReadDir(cp)
	if err != nil || len(entries) == 0 {
		return
	}
	sshBin, err := exec.LookPath("ssh")
	if err != nil {
		return
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		sock := filepath.Join(cp, n)
		if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, sshBin, "-F", "/dev/null", "-o", "ControlPath="+sock, "-O", "exit", "hydra-mux")
		cmd.Env = ansibleBaseEnv()
		_ = cmd.Run()
		cancel()
	}
}

// tempBase returns where per-run directories go: short paths, because ssh control sockets are limited
// to about 104 bytes.
func (r *Runner) tempBase() string {
	if r.cfg.TempDir != "" {
		return r.cfg.TempDir
	}
	return defaultTempBase()
}

func defaultTempBase() string {
	if d := os.TempDir(); len(d) <= 40 {
		return d
	}
	return "/tmp"
}

// parseOwner reads a run directory's owner file: the pid and start time of the provider owning it.
func parseOwner(dir string) (pid int, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, "", false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, "", false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	if len(f) > 1 {
		start = f[1]
	}
	return pid, start, true
}

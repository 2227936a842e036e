package osproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
)

// TestMain lets the test binary play the processes of TestStartingParentGone and TestParentArgs:
// OSPROC_TEST_ROLE names the role, OSPROC_TEST_DIR where it reports (each report written whole, so
// that waitFile never reads one half-written).
func TestMain(m *testing.M) {
	dir := os.Getenv("OSPROC_TEST_DIR")
	switch os.Getenv("OSPROC_TEST_ROLE") {
	case "middle":
		// Starts the child, says its pid, and waits to be killed.
		cmd := playing("child", dir)
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		_ = atomicfile.Write(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		time.Sleep(time.Hour)
		os.Exit(0)
	case "child":
		p := StartingParent()
		_ = atomicfile.Write(filepath.Join(dir, "ready"), []byte(strconv.Itoa(p.PID())), 0o644)
		p.Wait(20 * time.Millisecond)
		_ = os.WriteFile(filepath.Join(dir, "gone"), nil, 0o644)
		os.Exit(0)
	case "args":
		_ = atomicfile.Write(filepath.Join(dir, "args"), []byte(fmt.Sprintf("%q", ParentArgs())), 0o644)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// playing is this test binary started to play role, reporting in dir.
func playing(role, dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OSPROC_TEST_ROLE="+role, "OSPROC_TEST_DIR="+dir)
	return cmd
}

// waitFile waits (up to a minute: the machine may be busy) for path to exist.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			return b
		}
	}
	t.Fatalf("%s never appeared", path)
	return nil
}

// TestStartingParentGone: a process whose parent is killed sees StartingParent's Wait return (on
// Windows through the parent's process handle, elsewhere through re-parenting); while the parent lives
// it does not.
func TestStartingParentGone(t *testing.T) {
	dir := t.TempDir()
	middle := playing("middle", dir)
	if err := middle.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = middle.Process.Kill(); _ = middle.Wait() }()
	child, err := strconv.Atoi(string(waitFile(t, filepath.Join(dir, "child.pid"))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = SignalProcess(child, Kill) }()
	if seen := string(waitFile(t, filepath.Join(dir, "ready"))); seen != strconv.Itoa(middle.Process.Pid) {
		t.Fatalf("the child's StartingParent is pid %s, want its parent %d", seen, middle.Process.Pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); err == nil {
		t.Fatal("the child saw its parent gone while it was alive")
	}
	if err := middle.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = middle.Wait()
	waitFile(t, filepath.Join(dir, "gone"))
}

// TestParentArgs: a child reads its parent's (this test binary's) command line, where the system
// gives it (Linux /proc, macOS sysctl); elsewhere nil.
func TestParentArgs(t *testing.T) {
	dir := t.TempDir()
	if err := playing("args", dir).Run(); err != nil {
		t.Fatal(err)
	}
	got := string(waitFile(t, filepath.Join(dir, "args")))
	want := fmt.Sprintf("%q", os.Args)
	if _, err := os.Stat("/proc/self/cmdline"); err != nil && processArgs(os.Getpid()) == nil {
		want = fmt.Sprintf("%q", []string(nil))
	}
	if got != want {
		t.Fatalf("the child read its parent's command line as %s, want %s", got, want)
	}
}

// TestProcArgs2Args reads a buffer laid out as macOS's kern.procargs2 (xnu's sysctl_procargsx: argc,
// the executable path, NUL padding to a word, the arguments, then the environment).
func TestProcArgs2Args(t *testing.T) {
	buf := []byte{3, 0, 0, 0}
	buf = append(buf, "/usr/local/bin/terraform\x00\x00\x00\x00"...)
	buf = append(buf, "terraform\x00apply\x00-destroy\x00TF_CLI_ARGS=-x\x00"...)
	if got, want := procArgs2Args(buf), []string{"terraform", "apply", "-destroy"}; !slices.Equal(got, want) {
		t.Errorf("procArgs2Args = %q, want %q", got, want)
	}
	if got := procArgs2Args(buf[:len(buf)-30]); got != nil {
		t.Errorf("a truncated buffer gave %q, want nil", got)
	}
	if got := procArgs2Args([]byte{1, 0}); got != nil {
		t.Errorf("a short buffer gave %q, want nil", got)
	}
}

package provider

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// pluginEnv is the environment Terraform starts a provider with (go-plugin's handshake: the magic
// cookie of terraform-plugin-go's tf6server, and the protocol versions Terraform speaks).
var pluginEnv = []string{
	"TF_PLUGIN_MAGIC_COOKIE=d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
	"PLUGIN_PROTOCOL_VERSIONS=6",
}

// TestAccProviderExitRemovesSocket: the real provider binary, started as Terraform starts it by a
// process that is then killed, exits and leaves nothing in the temporary directory (go-plugin's Unix
// socket included, which os.Exit used to leave behind, one per kill).
func TestAccProviderExitRemovesSocket(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	if runtime.GOOS == "windows" {
		t.Skip("go-plugin listens on TCP on Windows")
	}
	t.Parallel()
	bin := filepath.Join(providerBinary(t), "terraform-provider-hydra")
	tmp, out := t.TempDir(), t.TempDir()
	// sh plays Terraform: the provider is its child; killing sh orphans the provider.
	sh := exec.Command("sh", "-c", `"$0" >"$1/handshake" 2>"$1/stderr" & echo $! >"$1/pid"; wait`, bin, out)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PLUGIN_UNIX_SOCKET_DIR=") && !strings.HasPrefix(e, "TMPDIR=") {
			sh.Env = append(sh.Env, e)
		}
	}
	sh.Env = append(sh.Env, append(pluginEnv, "TMPDIR="+tmp)...)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()

	var socket string
	var pid int
	for deadline := time.Now().Add(time.Minute); socket == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(out, "handshake"))
		// 1|6|unix|<path>|grpc|...
		if f := strings.Split(strings.TrimSpace(string(b)), "|"); len(f) >= 5 && f[2] == "unix" {
			socket = f[3]
		}
		p, _ := os.ReadFile(filepath.Join(out, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(p)))
	}
	if socket == "" || pid == 0 {
		stderr, _ := os.ReadFile(filepath.Join(out, "stderr"))
		t.Fatalf("the provider never gave its handshake (pid %d):\n%s", pid, stderr)
	}
	defer func() { _ = osproc.SignalProcess(pid, osproc.Kill) }()
	if rel, err := filepath.Rel(tmp, socket); err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("the socket %s is not in the temporary directory %s", socket, tmp)
	}
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("the socket the handshake names is missing while the provider runs: %v", err)
	}

	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sh.Wait()
	for deadline := time.Now().Add(time.Minute); osproc.Alive(pid) && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if osproc.Alive(pid) {
		t.Fatalf("the provider (pid %d) still runs after its parent was killed", pid)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Fatalf("the provider exited because its parent died and left %q in the temporary directory", names)
	}
}

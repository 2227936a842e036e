package provider

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
)

// The provider process's lifetime. Terraform starts the provider as its child and, on a normal exit,
// stops it. When Terraform itself dies (SIGKILL, a CI job timing out, two Ctrl-C), nothing tells the
// provider, and what it was doing (a create, an Ansible run) would go on with nobody to report to.
// WatchParent notices the lost parent, cancels every operation through its context (Ansible process
// groups and SSH masters are stopped by their runners' cancellation), gives them a moment to clean up,
// and exits.
var lifetime = struct {
	ctx    context.Context
	cancel context.CancelFunc
	ops    sync.WaitGroup
	parent *osproc.Parent
}{}

func init() {
	lifetime.ctx, lifetime.cancel = context.WithCancel(context.Background())
	lifetime.parent = osproc.StartingParent()
}

// terraformGone reports whether Terraform, which will record what an operation returns, is gone.
// When an operation was cancelled, Terraform may have been killed: its connection closes a moment
// before the kernel re-parents the provider, so a cancelled operation waits up to half a second for
// the answer.
func terraformGone(cancelled bool) bool {
	deadline := time.Now()
	if cancelled {
		deadline = deadline.Add(500 * time.Millisecond)
	}
	for {
		if lifetime.ctx.Err() != nil || lifetime.parent.Gone() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// operation ties an RPC's context to the process's lifetime and to the control plane's logger. done
// must be called when the operation ends.
func operation(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(withControlPlaneLogger(ctx))
	stop := context.AfterFunc(lifetime.ctx, cancel)
	lifetime.ops.Add(1)
	return ctx, func() {
		stop()
		cancel()
		lifetime.ops.Done()
	}
}

// Shutdown cancels every operation in flight and waits up to grace for them to finish their cleanup.
func Shutdown(grace time.Duration) {
	lifetime.cancel()
	done := make(chan struct{})
	go func() { lifetime.ops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

// WatchParent waits for the parent process (Terraform) to die, noticed every interval on Unix-like
// systems (the provider is re-parented) and at once on Windows (the parent's process handle); then it
// shuts down, runs cleanup (the plugin socket's removal) and exits. It never returns.
func WatchParent(interval time.Duration, cleanup func()) {
	lifetime.parent.Wait(interval)
	Shutdown(5 * time.Second)
	cleanup()
	os.Exit(1)
}

// PluginSocketDir has go-plugin create the provider's Unix socket in a directory of this process's own
// (PLUGIN_UNIX_SOCKET_DIR, inside the one Terraform named or the temporary directory), so that a
// provider that exits because Terraform died, which cannot stop its server gracefully, removes the
// socket with it: the returned func removes the directory. Nothing changes on Windows (go-plugin
// listens on TCP there) or when the socket must be group-writable (PLUGIN_UNIX_SOCKET_GROUP).
func PluginSocketDir() (cleanup func()) {
	if runtime.GOOS == "windows" || os.Getenv("PLUGIN_UNIX_SOCKET_GROUP") != "" {
		return func() {}
	}
	base := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "hydra-plugin-")
	if err != nil {
		return func() {} // go-plugin makes the socket where it would have
	}
	if err := os.Setenv("PLUGIN_UNIX_SOCKET_DIR", dir); err != nil {
		_ = os.Remove(dir)
		return func() {}
	}
	return func() { _ = os.RemoveAll(filepath.Clean(dir)) }
}

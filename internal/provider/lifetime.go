package provider

import (
	"context"
	"os"
	"sync"
	"time"
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
	parent int
}{}

func init() {
	lifetime.ctx, lifetime.cancel = context.WithCancel(context.Background())
	lifetime.parent = os.Getppid()
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
		if lifetime.ctx.Err() != nil || os.Getppid() != lifetime.parent {
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

// WatchParent polls the parent process every interval; when the provider has been orphaned (its
// parent, Terraform, is gone and it was re-parented), it shuts down and exits. It never returns.
func WatchParent(interval time.Duration) {
	parent := os.Getppid()
	for {
		time.Sleep(interval)
		if os.Getppid() != parent {
			Shutdown(5 * time.Second)
			os.Exit(1)
		}
	}
}

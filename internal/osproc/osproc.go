// Package osproc is what hydra needs from the operating system's processes: starting a process as the
// leader of its own group or session, signalling a whole group, and telling whether a pid is alive.
// Provisioning (ansible-playbook) and the sandbox's simulated machines (sshd) run only on Unix-like
// systems; on Windows these functions exist so that the provider builds, and the provider refuses those
// features with a diagnostic before they would be used.
package osproc

// Signal is what to ask of a process or process group.
type Signal int

const (
	// Interrupt asks it to stop as after Ctrl-C (SIGINT; CTRL_BREAK on Windows).
	Interrupt Signal = iota
	// Terminate asks it to exit (SIGTERM; on Windows it is killed).
	Terminate
	// Kill ends it at once (SIGKILL; TerminateProcess on Windows).
	Kill
)

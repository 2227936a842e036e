// Package onrealos holds the real-OS provisioning tests: hydra's playbooks run through
// internal/provision's Runner (the real ansible-playbook, the host key pinned) against real Debian 12
// system containers booted by internal/testsupport/realos, side by side, each in a network namespace of its own.
// They are a package of their own so that go test runs them, its longest tests, beside
// internal/provision's other tests rather than after them. See internal/testsupport/realos/README.md.
package onrealos

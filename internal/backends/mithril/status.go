package mithril

import (
	"net"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// SSHUser is the login user of Mithril's images.
const SSHUser = "ubuntu"

// instanceStatuses maps an instance's status onto hydra's (reference section 4.5). A RUNNING instance
// is running only once it has an ssh_destination; the backend checks that separately.
var instanceStatuses = map[string]struct {
	status controlplane.Status
	// gone says the instance will not come back while its bid is open: the bid must be cancelled so it
	// is not allocated again (hydra's sales model wants no replacement machine). Get and List report
	// it as an error (see evaluate); Delete, and Create's housekeeping, cancel it.
	gone bool
	note string
}{
	InstNew:           {status: controlplane.StatusPending},
	InstConfirmed:     {status: controlplane.StatusPending},
	InstInitializing:  {status: controlplane.StatusPending},
	InstStarting:      {status: controlplane.StatusPending},
	"STATUS_CREATING": {status: controlplane.StatusPending},
	"STATUS_PENDING":  {status: controlplane.StatusPending},
	InstRunning:       {status: controlplane.StatusRunning},
	InstStopping:      {status: controlplane.StatusPending, note: "stopping"},
	InstRelocating:    {status: controlplane.StatusPending, note: "relocating: Mithril restarts it elsewhere"},
	InstPreempting:    {status: controlplane.StatusError, gone: true, note: "preempted: outbid in the spot auction"},
	InstPreempted:     {status: controlplane.StatusError, gone: true, note: "preempted: outbid in the spot auction"},
	InstTerminated:    {status: controlplane.StatusError, gone: true, note: "terminated outside hydra"},
	InstReplaced:      {status: controlplane.StatusError, gone: true, note: "replaced"},
	"STATUS_STOPPED":  {status: controlplane.StatusError, note: "stopped outside hydra"},
	InstPaused:        {status: controlplane.StatusError, note: "paused outside hydra"},
	InstError:         {status: controlplane.StatusError, note: "Mithril reports an error"},
	"STATUS_FAILED":   {status: controlplane.StatusError, note: "Mithril reports a failure"},
}

// bidStatuses maps a bid's status when it has no instance to look at.
var bidStatuses = map[string]struct {
	status controlplane.Status
	note   string
}{
	BidOpen:       {status: controlplane.StatusPending, note: "bid open: waiting for allocation"},
	BidAllocated:  {status: controlplane.StatusPending, note: "bid allocated: instance not reported yet"},
	BidRelocating: {status: controlplane.StatusPending, note: "relocating"},
	BidPreempting: {status: controlplane.StatusError, note: "preempted: outbid in the spot auction"}, // evaluate: gone
	BidPaused:     {status: controlplane.StatusError, note: "bid paused outside hydra"},
	BidTerminated: {status: controlplane.StatusTerminated, note: "bid cancelled"},
}

// instanceAlive says whether an instance status is one a bid's current machine can be in (used to pick
// the current instance among a bid's past ones).
func instanceAlive(status string) bool {
	switch strings.ToUpper(status) {
	case InstTerminated, InstPreempted, InstReplaced:
		return false
	}
	return true
}

// parseSSHDestination reads ssh_destination, which is normally a bare host or IP; "user@host",
// "host:port" and "[v6]:port" are accepted too.
func parseSSHDestination(dest string) *controlplane.SSHEndpoint {
	dest = strings.TrimSpace(dest)
	if dest == "" {
		return nil
	}
	ep := &controlplane.SSHEndpoint{Host: dest, Port: 22, User: SSHUser}
	if user, rest, ok := strings.Cut(dest, "@"); ok && user != "" && rest != "" {
		ep.User, dest = user, rest
		ep.Host = dest
	}
	if host, port, err := net.SplitHostPort(dest); err == nil {
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p < 65536 {
			ep.Host, ep.Port = host, p
		}
	}
	ep.Host = strings.Trim(ep.Host, "[]")
	if ep.Host == "" {
		return nil
	}
	return ep
}

package mithril

import (
	"net"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// SSHUser is the login user of Mithril's images.
const SSHUser = "ubuntu"

// instanceStatuses maps an instance's status onto hydra's (reference section 4.5). A RUNNING instance
// is running only once it has an ssh_destination; the backend checks that separately.
var instanceStatuses = map[string]struct {
	status cloudprovider.Status
	// gone says the instance will not come back while its bid is open: the bid must be cancelled so it
	// is not allocated again (hydra's sales model wants no replacement machine). Get and List report
	// it as an error (see evaluate); Delete, and Create's housekeeping, cancel it.
	gone bool
	note string
}{
	InstNew:           {status: cloudprovider.StatusPending},
	InstConfirmed:     {status: cloudprovider.StatusPending},
	InstInitializing:  {status: cloudprovider.StatusPending},
	InstStarting:      {status: cloudprovider.StatusPending},
	"STATUS_CREATING": {status: cloudprovider.StatusPending},
	"STATUS_PENDING":  {status: cloudprovider.StatusPending},
	InstRunning:       {status: cloudprovider.StatusRunning},
	InstStopping:      {status: cloudprovider.StatusPending, note: "stopping"},
	InstRelocating:    {status: cloudprovider.StatusPending, note: "relocating: Mithril restarts it elsewhere"},
	InstPreempting:    {status: cloudprovider.StatusError, gone: true, note: "preempted: outbid in the spot auction"},
	InstPreempted:     {status: cloudprovider.StatusError, gone: true, note: "preempted: outbid in the spot auction"},
	InstTerminated:    {status: cloudprovider.StatusError, gone: true, note: "terminated outside hydra"},
	InstReplaced:      {status: cloudprovider.StatusError, gone: true, note: "replaced"},
	"STATUS_STOPPED":  {status: cloudprovider.StatusError, note: "stopped outside hydra"},
	InstPaused:        {status: cloudprovider.StatusError, note: "paused outside hydra"},
	InstError:         {status: cloudprovider.StatusError, note: "Mithril reports an error"},
	"STATUS_FAILED":   {status: cloudprovider.StatusError, note: "Mithril reports a failure"},
}

// bidStatuses maps a bid's status when it has no instance to look at.
var bidStatuses = map[string]struct {
	status cloudprovider.Status
	note   string
}{
	BidOpen:       {status: cloudprovider.StatusPending, note: "bid open: waiting for allocation"},
	BidAllocated:  {status: cloudprovider.StatusPending, note: "bid allocated: instance not reported yet"},
	BidRelocating: {status: cloudprovider.StatusPending, note: "relocating"},
	BidPreempting: {status: cloudprovider.StatusError, note: "preempted: outbid in the spot auction"}, // evaluate: gone
	BidPaused:     {status: cloudprovider.StatusError, note: "bid paused outside hydra"},
	BidTerminated: {status: cloudprovider.StatusTerminated, note: "bid cancelled"},
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
func parseSSHDestination(dest string) *cloudprovider.SSHEndpoint {
	dest = strings.TrimSpace(dest)
	if dest == "" {
		return nil
	}
	ep := &cloudprovider.SSHEndpoint{Host: dest, Port: 22, User: SSHUser}
	if user, rest, ok := strings.Cut(dest, "@"); ok && user != "" && rest != "" {
		ep.User, dest = user, rest
		ep.Host = dest
	}
	if host, port, err := net.SplitHostPort(dest); err == nil {
		if p, ok := backendkit.Port(port); ok {
			ep.Host, ep.Port = host, p
		}
	}
	ep.Host = strings.Trim(ep.Host, "[]")
	if ep.Host == "" {
		return nil
	}
	return ep
}

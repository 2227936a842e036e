package primeintellect

import (
	"cmp"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// podStatuses maps Prime's PodStatusEnum onto hydra's statuses (reference §3.4). ACTIVE is only a
// candidate for running: installation must be finished and an SSH connection set (see mapPod).
// DELETING stays pending so a caller waiting for termination keeps polling; STOPPED is an error
// because hydra never stops pods and a stopped pod is not usable. Words not listed are pending: the
// API adds statuses without notice. Keys are in lower case (backendkit.TableStatus).
var podStatuses = map[string]cloudprovider.Status{
	"provisioning": cloudprovider.StatusPending,
	"pending":      cloudprovider.StatusPending,
	"active":       cloudprovider.StatusRunning,
	"stopped":      cloudprovider.StatusError,
	"error":        cloudprovider.StatusError,
	"deleting":     cloudprovider.StatusPending,
	"unknown":      cloudprovider.StatusPending,
	"terminated":   cloudprovider.StatusTerminated,
}

// installationFinished reports whether the pod's installation is done: installationStatus FINISHED,
// or progress 100. A pod that reports neither field is taken as installed.
func installationFinished(status string, progress Number) bool {
	s := strings.ToUpper(strings.TrimSpace(status))
	if s == "FINISHED" || (progress.Set && progress.V >= 100) {
		return true
	}
	return s == "" && !progress.Set
}

// mapStatus returns hydra's status and a message for a pod's status fields.
func mapStatus(status, installStatus, installFailure string, progress Number, ssh *cloudprovider.SSHEndpoint) (cloudprovider.Status, string) {
	st := backendkit.TableStatus(podStatuses, status, installationFinished(installStatus, progress) && ssh != nil)
	if strings.EqualFold(strings.TrimSpace(installStatus), "ERROR") && st != cloudprovider.StatusTerminated {
		return cloudprovider.StatusError, cmp.Or(installFailure, "installation failed")
	}
	switch strings.ToUpper(strings.TrimSpace(status)) {
	case "STOPPED":
		return st, "the pod is stopped"
	case "ERROR":
		return st, cmp.Or(installFailure, "the pod is in ERROR")
	}
	return st, ""
}

// parseSSH reads an sshConnection such as "root@1.2.3.4 -p 22" (also "ssh root@host -p 22",
// "root@host:2222", "-p 22 root@host" or a bare host) into an endpoint. It returns nil when there is
// nothing usable.
func parseSSH(conns StringList) *cloudprovider.SSHEndpoint {
	for _, conn := range conns {
		if ep := parseSSHOne(conn); ep != nil {
			return ep
		}
	}
	return nil
}

func parseSSHOne(conn string) *cloudprovider.SSHEndpoint {
	fields := strings.Fields(conn)
	ep := cloudprovider.SSHEndpoint{User: "root", Port: 22}
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "ssh":
		case f == "-p" && i+1 < len(fields):
			if p, ok := backendkit.Port(fields[i+1]); ok {
				ep.Port = p
			}
			i++
		case strings.HasPrefix(f, "-p") && len(f) > 2:
			if p, ok := backendkit.Port(f[2:]); ok {
				ep.Port = p
			}
		case strings.HasPrefix(f, "-"):
			// another ssh option (-i, -o ...): skip its value too when it takes one
			if (f == "-i" || f == "-o" || f == "-l") && i+1 < len(fields) {
				if f == "-l" {
					ep.User = fields[i+1]
				}
				i++
			}
		case ep.Host == "":
			host := f
			if at := strings.LastIndex(host, "@"); at >= 0 {
				if at > 0 {
					ep.User = host[:at]
				}
				host = host[at+1:]
			}
			if h, p, ok := strings.Cut(host, ":"); ok && !strings.Contains(p, ":") {
				if n, ok := backendkit.Port(p); ok {
					host, ep.Port = h, n
				}
			}
			host = strings.Trim(host, "[]")
			if host == "" || strings.EqualFold(host, "null") || strings.EqualFold(host, "none") {
				continue
			}
			ep.Host = host
		}
	}
	if ep.Host == "" {
		return nil
	}
	return &ep
}

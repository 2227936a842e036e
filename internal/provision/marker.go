package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Marker is the record a successful provisioning run leaves on the machine (the playbooks' marker
// role writes it as JSON at Config.MarkerPath): which playbook provisioned it, with which provisioning
// digest (see Digest), and when. A re-run with the same digest and playbook leaves it as it is (so
// ProvisionedAt is when that digest was first applied); a run with another digest removes it right
// after its preflight and writes it again only when it succeeds. It says what hydra configured, not
// that the machine is still healthy.
type Marker struct {
	Digest        string    `json:"digest"`
	Playbook      string    `json:"playbook"`
	ProvisionedAt time.Time `json:"provisioned_at"`
	// Machine is what the run found and did (absent in markers of older playbooks).
	Machine *MarkerMachine `json:"machine,omitempty"`
}

// MarkerMachine is what a provisioning run recorded of the machine: its kind, and how the exporters
// run on it.
type MarkerMachine struct {
	// Virtualization is "vm", "container", "none" (bare metal) or "unknown".
	Virtualization string `json:"virtualization"`
	// Systemd says whether systemd runs the machine.
	Systemd bool `json:"systemd"`
	// Driver is the NVIDIA driver version the run left.
	Driver string `json:"driver"`
	// Exporters says how node_exporter and dcgm-exporter run ("systemd", "process" on a machine
	// without systemd, or "none") and on which address they listen.
	Exporters MarkerExporters `json:"exporters"`
	// HealthSpec is the health probe's specification for this machine as the run applied it, minus
	// what only provisioning may do (the DCGM diagnostic, the waits): ProbeHealth runs it again.
	HealthSpec map[string]any `json:"health_spec,omitempty"`
}

// MarkerExporters is how the exporters run on a provisioned machine.
type MarkerExporters struct {
	Address      string `json:"address,omitempty"`
	NodeExporter string `json:"node_exporter"`
	DCGMExporter string `json:"dcgm_exporter"`
}

// ErrNoMarker is matched (errors.Is) by the error of ReadMarker when the machine has no usable marker.
// It is the control plane's (cloudprovider.ErrNoMarker), which reads markers at import.
var ErrNoMarker = cloudprovider.ErrNoMarker

// NoMarkerError says the machine has no usable provisioning marker: none at all, or one that cannot
// be read as a marker. errors.Is(err, ErrNoMarker) holds for it.
type NoMarkerError struct {
	Address string
	Path    string
	// Reason is empty when there is no marker file; otherwise it says what is wrong with it.
	Reason string
}

func (e *NoMarkerError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s has no provisioning marker at %s (hydra's playbooks have not completed a run on it)", e.Address, e.Path)
	}
	return fmt.Sprintf("the provisioning marker at %s on %s is unusable: %s", e.Path, e.Address, e.Reason)
}

// Is makes errors.Is(err, ErrNoMarker) hold.
func (e *NoMarkerError) Is(target error) bool { return target == ErrNoMarker }

// MarkerReadTimeout bounds ReadMarker (connection, handshake and reading).
const MarkerReadTimeout = 30 * time.Second

// markerMaxSize bounds the marker file read.
const markerMaxSize = 64 << 10

// markerAbsent is the exit status of the remote read when there is no marker file.
const markerAbsent = 3

// ReadMarker reads the provisioning marker of the machine at ep over SSH (no Ansible), logging in
// with the provisioning key. The host key is checked against hostKey (an authorized_keys line), or
// trusted on first use when hostKey is empty. It returns the marker and the host key the machine
// presented (authorized_keys form; also returned with ErrNoMarker, empty on a mismatch). A missing or
// unusable marker is a *NoMarkerError (errors.Is(err, ErrNoMarker)); a host key mismatch is a
// *cloudprovider.PermanentError wrapping a *HostKeyMismatchError. It gives up after MarkerReadTimeout.
//
// On hydra's sandbox machines the marker lies under the machine's root directory (HYDRA_ROOT in their
// SSH sessions), where the playbooks write it.
func (r *Runner) ReadMarker(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (Marker, string, error) {
	if ep.Port == 0 {
		ep.Port = 22
	}
	if ep.User == "" {
		ep.User = "root"
	}
	if err := validateEndpoint(ep); err != nil {
		return Marker{}, "", &cloudprovider.PermanentError{Err: err}
	}
	rt, err := r.route(ep, strings.TrimSpace(hostKey))
	if err != nil {
		return Marker{}, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, MarkerReadTimeout)
	defer cancel()
	path := r.cfg.MarkerPath
	script := `f="${HYDRA_ROOT%/}"` + shellQuote(path) + `; [ -e "$f" ] || exit ` + fmt.Sprint(markerAbsent) + `; exec cat -- "$f"`
	stdout := &cappedBuffer{max: markerMaxSize}
	stderr := &cappedBuffer{max: 4 << 10}
	runErr := remoteRun(ctx, rt, "/bin/sh -c "+shellQuote(script), stdout, stderr)
	key, _, mismatch := rt.result()
	if mismatch != nil {
		return Marker{}, "", &cloudprovider.PermanentError{Err: mismatch}
	}
	seen := ""
	if key != nil {
		seen = strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	}
	if runErr != nil {
		var exit *ssh.ExitError
		if errors.As(runErr, &exit) && exit.ExitStatus() == markerAbsent {
			return Marker{}, seen, &NoMarkerError{Address: rt.name(), Path: path}
		}
		if keyRefused(runErr) {
			return Marker{}, seen, fmt.Errorf("%s@%s refuses hydra's provisioning key; before an apply provisions the machine, add "+
				"this line to the authorized_keys of %s there: %s", ep.User, rt.name(), ep.User, r.AuthorizedKey())
		}
		if ctx.Err() != nil {
			return Marker{}, seen, fmt.Errorf("reading the provisioning marker of %s: %w (%v)", rt.name(), ctx.Err(), runErr)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			msg = ": " + cut(msg, 300)
		}
		return Marker{}, seen, fmt.Errorf("reading the provisioning marker of %s: %w%s", rt.name(), runErr, msg)
	}
	if stdout.overflow {
		return Marker{}, seen, &NoMarkerError{Address: rt.name(), Path: path, Reason: fmt.Sprintf("larger than %d bytes", markerMaxSize)}
	}
	var m Marker
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		return Marker{}, seen, &NoMarkerError{Address: rt.name(), Path: path, Reason: "not a JSON marker: " + err.Error()}
	}
	return m, seen, nil
}

// cappedBuffer keeps the first max bytes written to it and notes whether there were more.
type cappedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.overflow = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

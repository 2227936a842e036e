package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// HealthProbeTimeout bounds one health probe of a ready machine (reading its marker and running the
// probe), so that a refresh of many machines stays quick and a hung machine cannot stall a plan.
const HealthProbeTimeout = 20 * time.Second

// healthProbeScript is the probe's path in the playbooks (the one place the health criteria live).
const healthProbeScript = "files/health_probe.py"

// Health is what the health probe found on a machine.
type Health struct {
	// Healthy is the verdict.
	Healthy bool
	// Failed names the failed checks; Reasons says, per failed check, what is wrong.
	Failed  []string
	Reasons []string
}

// Reason is the verdict in one line: every reason, or "" when healthy.
func (h Health) Reason() string { return strings.Join(h.Reasons, "; ") }

// ErrHealthUnknown is matched (errors.Is) by the error of ProbeHealth when the machine's health could
// not be read: unreachable, no marker, or a probe that gave no verdict. Such a machine is "unknown",
// never "unhealthy". It is the control plane's (cloudprovider.ErrHealthUnknown), which decides health.
var ErrHealthUnknown = cloudprovider.ErrHealthUnknown

type unknownHealth struct{ err error }

func (e *unknownHealth) Error() string        { return e.err.Error() }
func (e *unknownHealth) Unwrap() error        { return e.err }
func (e *unknownHealth) Is(target error) bool { return target == ErrHealthUnknown }

// ProbeHealth runs the health probe on a provisioned machine, reading only, with the pinned host
// key, within HealthProbeTimeout: the same criteria provisioning applied (the spec its marker
// records), without the DCGM diagnostic. A machine that cannot be reached or read is ErrHealthUnknown.
func (r *Runner) ProbeHealth(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, HealthProbeTimeout)
	defer cancel()
	unknown := func(format string, args ...any) (Health, error) {
		return Health{}, &unknownHealth{fmt.Errorf(format, args...)}
	}
	marker, _, err := r.ReadMarker(ctx, ep, hostKey)
	if err != nil {
		return unknown("reading the machine's provisioning marker: %v", err)
	}
	if marker.Machine == nil || len(marker.Machine.HealthSpec) == 0 {
		return unknown("the machine's marker records no health criteria (provisioned by older playbooks; the next provisioning records them)")
	}
	script, err := fs.ReadFile(r.fsys, healthProbeScript)
	if err != nil {
		return unknown("the playbooks have no health probe (%s): %v", healthProbeScript, err)
	}
	spec, err := json.Marshal(marker.Machine.HealthSpec)
	if err != nil {
		return unknown("the marker's health criteria: %v", err)
	}
	if ep.Port == 0 {
		ep.Port = 22
	}
	if ep.User == "" {
		ep.User = "root"
	}
	rt, err := r.route(ep, strings.TrimSpace(hostKey))
	if err != nil {
		return unknown("%v", err)
	}
	stdout := &cappedBuffer{max: 256 << 10}
	stderr := &cappedBuffer{max: 4 << 10}
	runErr := remoteRun(ctx, rt, "python3 -S -c "+shellQuote(string(script))+" "+shellQuote(string(spec)), stdout, stderr)
	if _, _, mismatch := rt.result(); mismatch != nil {
		return unknown("%v", mismatch)
	}
	var exit *ssh.ExitError
	if runErr != nil && (!errors.As(runErr, &exit) || exit.ExitStatus() != 1) {
		return unknown("probing %s: %v %s", rt.name(), runErr, cut(strings.TrimSpace(stderr.String()), 300))
	}
	var v struct {
		Verdict string   `json:"verdict"`
		Failed  []string `json:"failed"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || (v.Verdict != "healthy" && v.Verdict != "unhealthy") {
		return unknown("the health probe on %s gave no verdict: %s", rt.name(), cut(strings.TrimSpace(stdout.String()+" "+stderr.String()), 300))
	}
	return Health{Healthy: v.Verdict == "healthy", Failed: v.Failed, Reasons: v.Reasons}, nil
}

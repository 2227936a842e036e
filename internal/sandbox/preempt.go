package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Facts: the sandbox writes an interruption notice inside its machines (see Preempt), in the same
// format as the one cloud that documents such a file.
var Facts = cloudprovider.Facts{Signal: cloudprovider.InterruptionSignal{Path: SignalPath, Format: cloudprovider.SignalStatusYAML}}

// SignalPath is where Preempt writes the notice on a machine, under the machine's root (HYDRA_ROOT).
const SignalPath = "/var/lib/hydra-sandbox/INTERRUPTION_SIGNAL.yml"

// Facts states the sandbox's in-machine interruption signal (cloudprovider.FactStater).
func (b *Backend) Facts() cloudprovider.Facts { return Facts }

// Preempt gives a spot instance notice that the sandbox takes it back after window, as a spot cloud
// does: SignalPath is written in the machine's root (instance_status STATUS_PREEMPTING, bid_status
// Preempting, end_time), Get reports the instance running with its Interruption until the end, then
// terminated with it (cloud status "preempted"), and its machine is stopped. An on-demand, deleted or
// unknown instance is refused.
func (b *Backend) Preempt(id string, window time.Duration) error {
	if window <= 0 {
		return fmt.Errorf("sandbox: a preemption needs a positive notice, not %s", window)
	}
	return b.update(func(st *state, _ *Faults) error {
		now := time.Now().UTC()
		for _, r := range st.Instances {
			if r.ID != id {
				continue
			}
			if !r.Spot || !r.DeletedAt.IsZero() || !r.PreemptNoticeAt.IsZero() {
				return fmt.Errorf("sandbox: instance %s is not a live spot machine without notice", id)
			}
			return b.giveNotice(r, now, window)
		}
		return fmt.Errorf("sandbox: no instance %s", id)
	})
}

// writeSignal writes the notice file under a machine's root.
func writeSignal(root string, end time.Time) error {
	path := filepath.Join(root, SignalPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	body := fmt.Sprintf("instance_status: STATUS_PREEMPTING\nbid_status: Preempting\nend_time: %q\n", end.UTC().Format(time.RFC3339))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// interruption is the instance's interruption at now (nil: none), and whether its notice has ended.
func (r *Record) interruption(now time.Time) (*cloudprovider.Interruption, bool) {
	if r.PreemptNoticeAt.IsZero() {
		return nil, false
	}
	it := &cloudprovider.Interruption{NoticeAt: r.PreemptNoticeAt, EndsAt: r.PreemptEndsAt,
		Reason: "the sandbox preempted the spot machine (an injected preemption with notice)"}
	return it, !now.Before(r.PreemptEndsAt)
}

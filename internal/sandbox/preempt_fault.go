package sandbox

import (
	"fmt"
	"path/filepath"
	"time"
)

// PreemptFault is faults.json's `preempt` entry: the spot machine or cluster node of that cloud-side
// name is preempted with notice (as Preempt) on the sandbox's next call, so a run without Go (users'
// CI) can rehearse a preemption.
type PreemptFault struct {
	// Name is the machine's cloud-side name (hydra_gpu_instance's id) or a cluster node's
	// (`<cluster id>-<i>`).
	Name string `json:"name"`
	// Notice is the notice before the machine is taken back, a Go duration ("2m"); empty:
	// DefaultPreemptNotice.
	Notice string `json:"notice,omitempty"`
}

// DefaultPreemptNotice is a preempt fault's notice where it names none: 5 minutes, the one notice a
// cloud documents.
const DefaultPreemptNotice = 5 * time.Minute

// firePreemptFaults gives notice to every live spot instance a `preempt` entry of f names, and uses
// those entries up; the caller holds the lock and writes f back when fired. An entry naming no
// instance yet stays armed; one naming an instance that cannot be preempted (on-demand, deleted,
// already under notice) is used up with a warning in the log, as is one with an invalid notice.
func (b *Backend) firePreemptFaults(f *Faults) (fired bool, err error) {
	if len(f.Preempt) == 0 {
		return false, nil
	}
	st, err := b.readState()
	if err != nil {
		return false, err
	}
	now := time.Now().UTC()
	var armed []PreemptFault
	changed := false
	for _, p := range f.Preempt {
		var target *Record
		for _, r := range st.Instances {
			if r.Name == p.Name && (target == nil || r.DeletedAt.IsZero()) {
				target = r
			}
		}
		if target == nil {
			armed = append(armed, p)
			continue
		}
		fired = true
		window := DefaultPreemptNotice
		if p.Notice != "" {
			if window, err = time.ParseDuration(p.Notice); err != nil || window <= 0 {
				b.log.Warn("faults.json preempt: not a positive Go duration; entry dropped", "name", p.Name, "notice", p.Notice)
				continue
			}
		}
		if !target.Spot || !target.DeletedAt.IsZero() || !target.PreemptNoticeAt.IsZero() {
			b.log.Warn("faults.json preempt: not a live spot machine without notice; entry dropped", "name", p.Name, "id", target.ID)
			continue
		}
		if err := b.giveNotice(target, now, window); err != nil {
			return false, err
		}
		changed = true
		b.log.Info("injected fault: spot machine preempted with notice", "name", p.Name, "id", target.ID, "ends_at", target.PreemptEndsAt)
	}
	f.Preempt = armed
	if changed {
		if err := writeJSON(filepath.Join(b.cfg.Dir, StateFile), st); err != nil {
			return false, fmt.Errorf("sandbox: %s: %w", StateFile, err)
		}
	}
	return fired, nil
}

// giveNotice starts r's notice at now for window and writes the notice file in its machine's root.
func (b *Backend) giveNotice(r *Record, now time.Time, window time.Duration) error {
	r.PreemptNoticeAt, r.PreemptEndsAt = now, now.Add(window)
	return writeSignal(filepath.Join(b.machineDir(r.ID), "root"), r.PreemptEndsAt)
}

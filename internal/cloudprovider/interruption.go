package cloudprovider

import "time"

// Interruption is a cloud's word that it takes a spot machine back. A backend sets
// Instance.Interruption from the cloud's status while the notice runs and after the machine is gone; a
// machine whose cloud took the notice back (a Mithril bid that won its capacity again) has none.
type Interruption struct {
	// NoticeAt is when the cloud gave notice; zero when the cloud does not say (the control plane then
	// records when it first saw it).
	NoticeAt time.Time
	// EndsAt is when the cloud stops the machine; zero when the cloud does not say.
	EndsAt time.Time
	// Reason is the cloud's word and what it means, for the plan and the docs.
	Reason string
}

// Ended says whether the machine is gone by now: its end has passed, or the cloud said no end (it
// gave no notice before stopping the machine).
func (i Interruption) Ended(now time.Time) bool {
	return i.EndsAt.IsZero() || !now.Before(i.EndsAt)
}

// SignalFormat names the format of an in-machine interruption signal file.
type SignalFormat string

// SignalStatusYAML is a YAML mapping with instance_status, bid_status and end_time (RFC 3339): the
// file is written when notice is given, with a status naming the preemption (a word containing
// "PREEMPT", any case), and removed again when the notice is taken back.
const SignalStatusYAML SignalFormat = "status-yaml"

// InterruptionSignal is a file the cloud writes inside its machines when it gives notice. The zero
// value is a cloud that writes none.
type InterruptionSignal struct {
	// Path is the file's absolute path on the machine.
	Path   string
	Format SignalFormat
}

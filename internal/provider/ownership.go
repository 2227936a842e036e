package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// walk is what one Terraform walk (one Configure: the plan, or the apply) has seen of this
// configuration. Terraform validates each resource instance once per walk before planning it, so two
// validations of one name in a walk are two resources sharing it; and every machine read from or
// planned against prior state belongs to this configuration's state (a create_before_destroy
// replacement's predecessor, for one).
type walk struct {
	mu    sync.Mutex
	names map[string]int
	held  map[string]bool
}

func newWalk() *walk { return &walk{names: map[string]int{}, held: map[string]bool{}} }

// validated counts a resource instance named name.
func (w *walk) validated(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.names[name]++
}

// sharedName reports whether more than one resource instance of this walk is named name.
func (w *walk) sharedName(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.names[name] > 1
}

// hold records that this configuration's state holds the machine with the cloud id.
func (w *walk) hold(id string) {
	if id == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held[id] = true
}

func (w *walk) holds(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held[id]
}

// sharedNameError is the diagnostic for two resources with one name.
func sharedNameDetail(name string) string {
	return fmt.Sprintf("More than one hydra_gpu_instance in this configuration is named %q. Each machine needs its own name: "+
		"the name is how hydra finds the machine an interrupted create left behind. Give each resource a distinct name "+
		"(with count or for_each, include count.index or each.key in it).", name)
}

// describeMachine names a machine for a person: cloud, cloud-side name, id, age and price.
func describeMachine(m controlplane.Machine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (id %s", m.Instance.Cloud, m.Instance.Name, m.Instance.ID)
	if !m.Instance.CreatedAt.IsZero() {
		fmt.Fprintf(&b, ", created %s, %s ago", m.Instance.CreatedAt.UTC().Format(time.RFC3339), m.Age.Round(time.Second))
	}
	if m.Instance.PricePerHour > 0 {
		fmt.Fprintf(&b, ", %s", m.Instance.PricePerHour.PerHour())
	}
	b.WriteString(")")
	return b.String()
}

// collisions checks, at plan, whether a machine another state holds already carries the name.
// strict makes such a machine an error (else a warning: the caller cannot tell it from this
// configuration's own machine, as in an apply-time re-plan on another machine).
func (r *gpuInstanceResource) collisions(ctx context.Context, name, kind string, clouds []string, strict bool, diags *diag.Diagnostics) {
	machines, unreachable := r.data.cp.Named(ctx, name, kind, clouds)
	var foreign, adopt []string
	for _, m := range machines {
		switch {
		case r.data.walk.holds(m.Instance.ID):
			// This configuration's own machine (the predecessor of a replacement).
		case m.Ownership == controlplane.OwnedInterrupted:
			adopt = append(adopt, describeMachine(m))
		case m.Ownership == controlplane.NotHydras:
			// Created outside hydra with a hydra-like name: never touched, not in the way.
		default:
			foreign = append(foreign, describeMachine(m))
		}
	}
	if len(adopt) > 0 {
		diags.AddWarning("A create of this machine was cut short; apply adopts it",
			fmt.Sprintf("An earlier create of hydra_gpu_instance %q in this working directory was interrupted before Terraform recorded "+
				"the machine. The next apply takes it over instead of buying another (if it still matches the plan; otherwise "+
				"apply deletes it and creates the planned one):\n  %s", name, strings.Join(adopt, "\n  ")))
	}
	if len(foreign) > 0 {
		detail := fmt.Sprintf("A machine named %q already exists and belongs to another Terraform state (another working "+
			"directory or workspace), or to a create still in flight elsewhere:\n  %s\n\nhydra never adopts, changes or deletes "+
			"another resource's machine. Ways out: give this resource another name; or, if this configuration should manage that "+
			"machine, adopt it with `terraform import <address> <cloud-side name>` (and remove it from the other state).",
			name, strings.Join(foreign, "\n  "))
		if strict {
			diags.AddError("GPU instance name already in use", detail)
		} else {
			diags.AddWarning("GPU instance name may already be in use", detail+
				"\n\n(This is a warning: during an apply hydra cannot tell another state's machine from this configuration's own "+
				"predecessor in a create_before_destroy replacement.)")
		}
	}
	if len(unreachable) > 0 {
		var parts []string
		for c, why := range unreachable {
			parts = append(parts, c+": "+why)
		}
		sort.Strings(parts)
		diags.AddWarning("Could not check every cloud for a machine of this name",
			fmt.Sprintf("hydra looks for machines named %q before creating one; these clouds did not answer:\n  %s", name, strings.Join(parts, "\n  ")))
	}
}

// orphanWarning names every machine that is probably billed with no state holding it, except those
// this working directory's journal names (journalWarning reports them, in every command).
func orphanWarning(res controlplane.ListResult, grace time.Duration) (summary, detail string, ok bool) {
	var orphans []controlplane.Machine
	for _, m := range res.Orphans(grace) {
		if m.Ownership != controlplane.OwnedInterrupted {
			orphans = append(orphans, m)
		}
	}
	if len(orphans) == 0 {
		return "", "", false
	}
	var lines []string
	for _, m := range orphans {
		how := fmt.Sprintf("adopt it with `terraform import <address> %s`, or delete it at the cloud", m.Instance.Name)
		why := fmt.Sprintf("never confirmed by a completed create, refresh or import, %s old", m.Age.Round(time.Second))
		lines = append(lines, fmt.Sprintf("- %s: %s; %s", describeMachine(m), why, how))
	}
	return fmt.Sprintf("%d GPU machine(s) may be billed with no Terraform state holding them", len(orphans)),
		"hydra created these machines, but no Terraform state is known to hold them (a create cut short by a hard kill " +
			"of Terraform or of the provider leaves such machines):\n" + strings.Join(lines, "\n"), true
}

// journalWarning names the creates this working directory's journal holds: creates cut short by a
// hard kill of Terraform or of the provider (Terraform's state lock rules out one in flight). It reads
// only local files, so it runs in ValidateConfig, the one call Terraform makes in every command,
// destroy of an empty state included.
func journalWarning(j controlplane.Journal) (summary, detail string, ok bool) {
	intents, err := j.All()
	if err != nil || len(intents) == 0 {
		return "", "", false
	}
	var lines []string
	for _, in := range intents {
		price := ""
		if p, err := controlplane.ParseOfferID(in.OfferID); err == nil {
			price = ", " + p.PricePerHour.PerHour()
		}
		lines = append(lines, fmt.Sprintf("- hydra_gpu_instance name %q: %s in %s (offer %s%s), create started %s, %s ago",
			in.Resource, in.CloudName, in.Pool, in.OfferID, price, in.StartedAt.Format(time.RFC3339), time.Since(in.StartedAt).Round(time.Second)))
	}
	return fmt.Sprintf("%d GPU machine create(s) in this working directory were cut short", len(intents)),
		"Terraform (or the provider) was killed while hydra created these machines, so no state holds them, and they " +
			"may be billed:\n" + strings.Join(lines, "\n") + "\n\nThe next `terraform apply` with a hydra_gpu_instance of that name " +
			"adopts the machine instead of buying another. If that resource is no longer in the configuration, adopt the " +
			"machine with `terraform import <address> <cloud-side name>` and destroy it, or delete it at the cloud; hydra " +
			"forgets the entry once the machine is gone.", true
}

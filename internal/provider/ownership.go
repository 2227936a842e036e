package provider

import (
	"fmt"
	"strings"
	"sync"
	"time"

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
	// read holds the cloud ids of the machines this walk read (refreshed).
	read map[string]bool
	// guarded is set once the leftovers guard ran in this walk.
	guarded bool
}

func newWalk() *walk {
	return &walk{names: map[string]int{}, held: map[string]bool{}, read: map[string]bool{}}
}

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

// refreshed records that this walk read the machine with the cloud id (Terraform refreshed it).
func (w *walk) refreshed(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.read[id] = true
}

// destroyPlanned reports whether the destroy plan of the machine id, now, runs the leftovers guard under
// command c (see command.guardsOnDestroyPlan); true at most once per walk.
func (w *walk) destroyPlanned(c command, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	validated := 0
	for _, n := range w.names {
		validated += n
	}
	if w.guarded || !c.guardsOnDestroyPlan(validated, w.read[id]) {
		return false
	}
	w.guarded = true
	return true
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

// orphanWarning names every machine that is probably billed with no state holding it (the control
// plane's Startup.Orphans): creates cut short (recognised at once, on any runner, by their derived
// ownership token) and, after orphan_grace, machines never confirmed.
func orphanWarning(orphans []controlplane.Machine) (summary, detail string, ok bool) {
	if len(orphans) == 0 {
		return "", "", false
	}
	var lines []string
	for _, m := range orphans {
		if m.Ownership == controlplane.OwnedInterrupted {
			lines = append(lines, fmt.Sprintf("- %s: left by an interrupted create of hydra_gpu_instance %q (it carries that name's ownership "+
				"token and no state ever confirmed it); %s", controlplane.DescribeMachine(m), m.Resource, leftoverRemedy(m)))
			continue
		}
		how := fmt.Sprintf("adopt it with `terraform import <address> %s`, or delete it at the cloud", m.Instance.Name)
		why := fmt.Sprintf("never confirmed by a completed create, refresh or import, %s old", m.Age.Round(time.Second))
		lines = append(lines, fmt.Sprintf("- %s: %s; %s", controlplane.DescribeMachine(m), why, how))
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

// leftoverRemedy says what removes or keeps a machine an interrupted create left.
func leftoverRemedy(m controlplane.Machine) string {
	return fmt.Sprintf("the next `terraform apply` of a configuration with a hydra_gpu_instance named %q adopts it (or deletes it "+
		"when the plan changed); to remove it now, run `terraform import <address of that resource> %s` and then `terraform "+
		"destroy` (or delete it at the cloud)", m.Resource, m.Instance.Name)
}

// leftoversError is the error a destroy ends with while machines that interrupted creates left are
// billed outside the state: each named, with what removes it. ok is false when there are none.
func leftoversError(res controlplane.ListResult) (summary, detail string, ok bool) {
	var lines []string
	for _, m := range res.Machines {
		if m.Ownership == controlplane.OwnedInterrupted {
			lines = append(lines, fmt.Sprintf("- %s, left by an interrupted create of hydra_gpu_instance %q: %s",
				controlplane.DescribeMachine(m), m.Resource, leftoverRemedy(m)))
		}
	}
	if len(lines) == 0 {
		return "", "", false
	}
	return fmt.Sprintf("%d GPU machine(s) are billed outside this state; destroy would leave them running", len(lines)),
		"hydra created these machines, but their creates were cut short (for example a killed `terraform apply`) before " +
			"Terraform recorded them, so no state holds them and `terraform destroy` cannot see them:\n" + strings.Join(lines, "\n") +
			"\n\nNothing was destroyed. Adopt each one into this state with the import command shown (the resource must be in the " +
			"configuration), then run `terraform destroy` again; or delete it at the cloud.", true
}

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Notice is something a plan decision tells the user: a one-line summary and its detail, about one
// input (Field, in the resource's attribute names) or about the whole resource (Field "").
type Notice struct {
	Field, Summary, Detail string
}

// Refusal is a plan decision's "no", worded for the user: nothing can be planned as asked.
type Refusal struct{ Notice }

func (r *Refusal) Error() string { return r.Summary + ": " + r.Detail }

func refuse(field, summary, detail string) *Refusal {
	return &Refusal{Notice{Field: field, Summary: summary, Detail: detail}}
}

// Quote is a plan's choice for one new machine, kept (by the caller) so that the apply-time re-plan
// shows the same values as the plan.
type Quote struct {
	// OfferID is the chosen offer (it carries the quoted price).
	OfferID string `json:"offer_id"`
	// Estimate is the price shown when the offer itself is left to apply (allow_fallback).
	Estimate money.USD `json:"estimate_micro_usd"`
	// WhyNot says why each other cloud lost (shown in the plan as other_clouds).
	WhyNot map[string]string `json:"why_not,omitempty"`
	// Details are the chosen offer's details (shown in the plan as offer_details).
	Details map[string]string `json:"details,omitempty"`
	// Hardware is what the chosen offer's cloud said of the machine; Known says the quote has it.
	Hardware cloudprovider.Hardware `json:"hardware"`
	Known    bool                   `json:"hardware_known,omitempty"`
	Expires  time.Time              `json:"expires"`
	// Skipped are the offers the plan skipped because their creates recently failed for lack of
	// capacity (capacity_memory), so a re-plan does not call them cheaper offers missed.
	Skipped []string `json:"skipped,omitempty"`
	// NameInUse is the name check the plan could not refuse (NewPlanRequest.NameRefusedAtApply): the
	// create refuses while one of its machines is still there (NameStillInUse).
	NameInUse *NameInUse `json:"name_in_use,omitempty"`
}

// NameInUse is a refusal of a name in use, left to the create: the machines in the way and why.
type NameInUse struct {
	IDs     []string `json:"ids"`
	Summary string   `json:"summary"`
	Detail  string   `json:"detail"`
}

// NewPlanRequest asks how a new machine (a create, or a replacement) is planned.
type NewPlanRequest struct {
	// Name is the resource's name.
	Name string
	// Request is what the machine asks for; its Volumes are the machine's volumes.
	Request OfferRequest
	// OfferID is the configured offer_id ("" when hydra chooses).
	OfferID string
	// AllowFallback leaves the offer to apply time.
	AllowFallback bool
	// Quote is the quote an earlier plan of this create recorded (nil: none): it is reused, so that
	// plan and apply agree.
	Quote *Quote
	// QuotePath is where that quote is kept on this runner, named in the warning that the market moved
	// since ("" when it came with the plan itself).
	QuotePath string
	// Held reports whether this configuration's state holds the machine with a cloud id (such a
	// machine of the same name is the predecessor of a replacement, not a collision).
	Held func(id string) bool
	// NameRefusedAtApply is set where the plan must not fail for a name in use (it may be the refresh
	// `terraform destroy` plans first): the refusal is a notice, and the quote carries it to the
	// create (Quote.NameInUse).
	NameRefusedAtApply bool
	// Provisioning is what the planned provisioning digest needs.
	Provisioning PlannedProvisioning
}

// NewPlan is how a new machine is planned, and why.
type NewPlan struct {
	// OfferID is the planned offer; "" with AllowFallback (apply chooses).
	OfferID string
	// Offer is OfferID parsed; Cloud is its pool's cloud.
	Offer ParsedOfferID
	Cloud string
	// Estimate is, with AllowFallback, the cheapest price now.
	Estimate money.USD
	// WhyNot and Details are the quote's; both nil when the offer was pinned by offer_id.
	WhyNot, Details map[string]string
	// Hardware is the planned offer's hardware when HardwareKnown (not with a pinned offer or with
	// AllowFallback: the launched offer tells it at apply).
	Hardware      cloudprovider.Hardware
	HardwareKnown bool
	// NewQuote, when not nil, is a fresh choice the caller keeps for the next plan of this create.
	NewQuote *Quote
	// Unmapped is the GPU names the asked clouds offer that the inventory does not map.
	Unmapped map[string][]string
	// Notices are the warnings that go with the plan.
	Notices []Notice
	// Digest is the planned provisioning digest ("" with provisioning off); DigestKnown is false
	// while the playbook's variables are unknown.
	Digest      string
	DigestKnown bool
}

// PlanNew decides a new machine's offer. With an offer_id it checks the pinned offer against the
// request and the cloud's offers. Otherwise it reuses the earlier plan's quote when there is one
// (saying so when the market moved since), or, in the first plan, checks that no other state's machine
// carries the name, asks the clouds, lets the fleet share stock among the instances planned together,
// and returns the choice as a NewQuote. Errors are *RequestError (an impossible request), *Refusal, or
// the context's.
func (cp *ControlPlane) PlanNew(ctx context.Context, req NewPlanRequest) (NewPlan, error) {
	if req.Provisioning.Volumes == nil {
		req.Provisioning.Volumes = req.Request.Volumes
	}
	plan, err := cp.planNew(ctx, req)
	if err != nil {
		return plan, err
	}
	if plan.Digest, plan.DigestKnown, err = cp.plannedDigest(req.Provisioning); err != nil {
		return plan, err
	}
	if req.AllowFallback {
		return plan, cp.CountBudget(req.Name, "cheapest offer now, chosen at apply", plan.Estimate)
	}
	return plan, cp.CountBudget(req.Name, plan.OfferID, plan.Offer.PricePerHour)
}

func (cp *ControlPlane) planNew(ctx context.Context, req NewPlanRequest) (NewPlan, error) {
	if err := cp.Validate(req.Request); err != nil {
		return NewPlan{}, err
	}
	if req.OfferID != "" {
		return cp.planPinned(ctx, req)
	}
	if req.Quote != nil && req.Quote.OfferID != "" {
		// A quote made before the volumes changed may be elsewhere: choose afresh.
		if q, err := ParseOfferID(req.Quote.OfferID); err == nil && cp.checkPinnedVolumes(req.Quote.OfferID, cp.PoolCloud(q.Pool), q.Region, req.Request) != nil {
			req.Quote = nil
		}
	}
	var plan NewPlan
	var q Quote
	var inUse *NameInUse
	if req.Quote == nil {
		// The first plan of this create (a re-plan reuses the quote): is the name free?
		notes, inTheWay, err := cp.checkName(ctx, req.Name, req.Request.Kind, req.Request.Clouds, req.Held, true)
		plan.Notices = append(plan.Notices, notes...)
		var rf *Refusal
		if err != nil && (!req.NameRefusedAtApply || !errors.As(err, &rf)) {
			return plan, err
		}
		if rf != nil {
			inUse = &NameInUse{IDs: inTheWay, Summary: rf.Summary, Detail: rf.Detail}
			plan.Notices = append(plan.Notices, Notice{Summary: rf.Summary + "; apply refuses this create",
				Detail: rf.Detail + "\n\nThis is a warning at plan because hydra cannot tell here whether this plan is the refresh that " +
					"`terraform destroy` runs first (a name check must never fail a destroy); the apply refuses the create while " +
					"that machine is there."})
		}
		res, err := cp.Offers(ctx, req.Request, false)
		if err != nil {
			return plan, err
		}
		plan.Unmapped = res.Unmapped
		if _, ok := res.Cheapest(); !ok {
			return plan, refuse("", "No GPU offer matches hydra_gpu_instance "+req.Name, NoOfferDetail(req.Request, res, cp.Closest(ctx, req.Request)))
		}
		// Offers that recently failed for lack of capacity are skipped (capacity_memory).
		offers, skippedIDs, err := cp.skipForPlan(res.Offers, "offer", "hydra_gpu_instance "+req.Name, &plan.Notices)
		if err != nil {
			return plan, err
		}
		// Instances planned in this run share the known stock (deterministically, by name).
		choice, ok, err := cp.fleet.Choose(ctx, req.Name, offers)
		if err != nil {
			return plan, refuse("", "Planning hydra_gpu_instance "+req.Name, err.Error())
		}
		if !ok {
			return plan, refuse("", "No GPU offer left for hydra_gpu_instance "+req.Name, fleetExhaustedDetail(choice))
		}
		best := choice.Offer
		if len(choice.Passed) > 0 {
			plan.Notices = append(plan.Notices, Notice{Summary: "Cheaper stock taken by other instances of this plan", Detail: fleetPassedDetail(req.Name, choice)})
		}
		q = Quote{OfferID: best.ID, Estimate: best.PricePerHour, WhyNot: res.WhyNot(best), Details: ShownDetails(best), Hardware: best.Hardware, Known: true,
			Skipped: skippedIDs, NameInUse: inUse}
		plan.NewQuote = &q
		cp.logger(ctx).Info("offer chosen", "name", req.Name, "offer", best.ID, "price", best.PricePerHour.PerHour(), "eligible", len(res.Offers))
		for _, rej := range res.Rejections {
			cp.logger(ctx).Debug("cloud had no eligible offer", "name", req.Name, "cloud", rej.Cloud, "why", rej.Reason)
		}
	} else {
		q = *req.Quote
		if !req.AllowFallback {
			plan.Notices = append(plan.Notices, cp.staleQuote(ctx, q, req)...)
		}
	}
	plan.WhyNot = q.WhyNot
	if plan.WhyNot == nil {
		plan.WhyNot = map[string]string{}
	}
	if req.AllowFallback {
		// The offer, and so its details, are decided at apply.
		plan.Estimate = q.Estimate
		plan.Notices = append(plan.Notices, Notice{Summary: "GPU offer chosen at apply time",
			Detail: fmt.Sprintf("allow_fallback is set for %q: the cheapest offer now is %s at %s; apply takes the cheapest offer within the same limits when it creates the machine.",
				req.Name, q.OfferID, q.Estimate.PerHour())})
		return plan, nil
	}
	parsed, err := ParseOfferID(q.OfferID)
	if err != nil {
		return plan, refuse("", "Corrupt plan quote", err.Error())
	}
	plan.OfferID, plan.Offer, plan.Cloud = q.OfferID, parsed, cp.PoolCloud(parsed.Pool)
	plan.Hardware, plan.HardwareKnown = q.Hardware, q.Known
	plan.Details = q.Details
	if plan.Details == nil {
		plan.Details = map[string]string{}
	}
	return plan, nil
}

// planPinned checks an offer pinned by offer_id: it pins everything the plan shows.
func (cp *ControlPlane) planPinned(ctx context.Context, req NewPlanRequest) (NewPlan, error) {
	parsed, err := ParseOfferID(req.OfferID)
	if err != nil {
		return NewPlan{}, refuse("offer_id", "Invalid offer_id", err.Error())
	}
	if err := cp.CheckPinned(parsed, req.Request); err != nil {
		return NewPlan{}, refuse("offer_id", "Offer does not match the request", MismatchDetail(err))
	}
	if err := cp.checkPinnedVolumes(req.OfferID, cp.PoolCloud(parsed.Pool), parsed.Region, req.Request); err != nil {
		return NewPlan{}, refuse("offer_id", "Offer does not match the request", MismatchDetail(err))
	}
	plan := NewPlan{OfferID: req.OfferID, Offer: parsed, Cloud: cp.PoolCloud(parsed.Pool)}
	if _, found, err := cp.CheckPinnedHardware(ctx, parsed, req.Request); err != nil {
		return NewPlan{}, refuse("offer_id", "Offer does not match the request", MismatchDetail(err))
	} else if !found {
		plan.Notices = append(plan.Notices, Notice{Field: "offer_id", Summary: "Pinned offer not listed now",
			Detail: fmt.Sprintf("The cloud does not list offer_id %s now, so its GPUs could not be checked against gpu_type %q and "+
				"gpu_count %d; apply creates it only if the cloud still has it.", req.OfferID, req.Request.GPUType, req.Request.GPUCount)})
	}
	if plan.Cloud != "" {
		// A pinned plan may be re-planned during an apply on another machine, where hydra cannot
		// tell another state's machine from this configuration's own: a warning, not an error.
		notes, _ := cp.CheckName(ctx, req.Name, req.Request.Kind, []string{plan.Cloud}, req.Held, false)
		plan.Notices = append(plan.Notices, notes...)
	}
	return plan, nil
}

// staleQuote says when a reused quote no longer shows the market: the quoted offer's live price
// moved, or a cheaper offer exists now. The quote still pins the plan (so an apply agrees with its
// plan); the notice gives both figures and the way to re-quote at once.
func (cp *ControlPlane) staleQuote(ctx context.Context, q Quote, req NewPlanRequest) []Notice {
	quoted, err := ParseOfferID(q.OfferID)
	if err != nil {
		return nil
	}
	res, err := cp.Offers(ctx, req.Request, false)
	if err != nil {
		return nil
	}
	var notes []string
	for _, o := range append(res.Offers, res.Ineligible...) {
		if o.Pool == quoted.Pool && o.Region == quoted.Region && o.InstanceType == quoted.InstanceType && o.Spot == quoted.Spot &&
			o.PricePerHour != quoted.PricePerHour {
			notes = append(notes, fmt.Sprintf("the quoted offer now costs %s (quoted %s)", o.PricePerHour.PerHour(), quoted.PricePerHour.PerHour()))
		}
	}
	if best, ok := cheapestNotSkipped(res.Offers, q.Skipped); ok && best.ID != q.OfferID && best.PricePerHour < quoted.PricePerHour {
		notes = append(notes, fmt.Sprintf("a cheaper offer exists now: %s at %s", best.ID, best.PricePerHour.PerHour()))
	}
	return reusedQuote("The offer "+q.OfferID+" was quoted by an earlier plan", notes, req.QuotePath, q.Expires)
}

// reusedQuote is the notice that a plan reuses an earlier quote (what says which) although the market
// moved since (notes say how; none: no notice). path is where this runner keeps the quote ("" when
// it came with the plan), expires when it expires there.
func reusedQuote(what string, notes []string, path string, expires time.Time) []Notice {
	if len(notes) == 0 {
		return nil
	}
	how := "To re-quote, run `terraform plan` again (a saved plan applies as it was planned)."
	if path != "" {
		how = fmt.Sprintf("To re-quote now, delete %s and plan again (quotes otherwise expire at %s, after plan_quote_ttl).", path, expires.Format(time.RFC3339))
	}
	return []Notice{{Summary: "This plan reuses an earlier quote",
		Detail: fmt.Sprintf("%s and is reused so that plan and apply agree, but %s. %s", what, strings.Join(notes, "; "), how)}}
}

// CheckName looks, at plan, for machines that already carry the resource's name. A machine another
// state holds is in the way: with strict a *Refusal, else a notice (the caller cannot tell it from its
// own machine, as in an apply-time re-plan on another machine). A machine an interrupted create of
// this resource left (OwnedInterrupted: journaled here, or recognised at the cloud by its derived
// token) is adopted by the next apply (a notice); held machines (this
// configuration's own) and machines hydra did not create are not in the way. Clouds that could not be
// asked are named in a notice.
func (cp *ControlPlane) CheckName(ctx context.Context, name, kind string, clouds []string, held func(id string) bool, strict bool) ([]Notice, error) {
	notes, _, err := cp.checkName(ctx, name, kind, clouds, held, strict)
	return notes, err
}

// checkName is CheckName, which also returns the cloud ids of the machines in the way.
func (cp *ControlPlane) checkName(ctx context.Context, name, kind string, clouds []string, held func(id string) bool, strict bool) ([]Notice, []string, error) {
	machines, unreachable := cp.Named(ctx, name, kind, clouds)
	var foreign, adopt, unrecorded, inTheWay []string
	for _, m := range machines {
		switch {
		case held != nil && held(m.Instance.ID):
			// This configuration's own machine (the predecessor of a replacement).
		case m.Ownership == OwnedInterrupted:
			adopt = append(adopt, DescribeMachine(m))
		case m.Ownership == OwnedUnrecorded && cloudprovider.DerivedToken(name, m.Instance.Owner.Token):
			inTheWay = append(inTheWay, m.Instance.ID)
			unrecorded = append(unrecorded, fmt.Sprintf("%s\n    if it is this configuration's: terraform import <address of the hydra_gpu_instance named %q> %s",
				DescribeMachine(m), name, m.Instance.Name))
		case m.Ownership == NotHydras:
			// Created outside hydra with a hydra-like name: never touched, not in the way.
		default:
			inTheWay = append(inTheWay, m.Instance.ID)
			foreign = append(foreign, DescribeMachine(m))
		}
	}
	var notes []Notice
	var refusal error
	if len(adopt) > 0 {
		notes = append(notes, Notice{Summary: "A create of this machine was cut short; apply adopts it",
			Detail: fmt.Sprintf("An earlier create of hydra_gpu_instance %q was interrupted (for example a killed `terraform apply`) before "+
				"Terraform recorded the machine, and no state holds it: it carries this resource name's ownership token and was never "+
				"confirmed by a state. The next apply, on any runner, takes it over instead of buying another (if it still matches "+
				"the plan; otherwise apply deletes it and creates the planned one):\n  %s", name, strings.Join(adopt, "\n  "))})
	}
	if len(unrecorded) > 0 {
		detail := fmt.Sprintf("A machine named for hydra_gpu_instance %q exists, and its cloud cannot record whether a Terraform state "+
			"holds it, while this state holds nothing of it: it is either left by this configuration's interrupted create, or "+
			"another state's machine of the same name. hydra cannot tell which, so it touches neither:\n  %s\n\nIf it is this "+
			"configuration's, adopt it with the command shown; otherwise give this resource another name.", name, strings.Join(unrecorded, "\n  "))
		if strict {
			refusal = refuse("", "GPU instance name already in use", detail)
		} else {
			notes = append(notes, Notice{Summary: "GPU instance name may already be in use", Detail: detail})
		}
	}
	if len(foreign) > 0 {
		detail := fmt.Sprintf("A machine named %q already exists and belongs to another Terraform state (another working "+
			"directory or workspace), or to a create still in flight elsewhere:\n  %s\n\nhydra never adopts, changes or deletes "+
			"another resource's machine. Ways out: give this resource another name; or, if this configuration should manage that "+
			"machine, adopt it with `terraform import <address> <cloud-side name>` (and remove it from the other state).",
			name, strings.Join(foreign, "\n  "))
		if strict {
			refusal = refuse("", "GPU instance name already in use", detail)
		} else {
			notes = append(notes, Notice{Summary: "GPU instance name may already be in use", Detail: detail +
				"\n\n(This is a warning: during an apply hydra cannot tell another state's machine from this configuration's own " +
				"predecessor in a create_before_destroy replacement.)"})
		}
	}
	if len(unreachable) > 0 {
		var parts []string
		for c, why := range unreachable {
			parts = append(parts, c+": "+why)
		}
		sort.Strings(parts)
		notes = append(notes, Notice{Summary: "Could not check every cloud for a machine of this name",
			Detail: fmt.Sprintf("hydra looks for machines named %q before creating one; these clouds did not answer:\n  %s", name, strings.Join(parts, "\n  "))})
	}
	return notes, inTheWay, refusal
}

// NameStillInUse reports whether a machine a plan found in the way of the name (in) is still there (as
// this control plane's shared listing shows it), or whether that cannot be told (a cloud did not answer).
func (cp *ControlPlane) NameStillInUse(ctx context.Context, name, kind string, clouds []string, in *NameInUse) bool {
	if in == nil {
		return false
	}
	machines, unreachable := cp.Named(ctx, name, kind, clouds)
	if len(unreachable) > 0 {
		return true
	}
	for _, m := range machines {
		if slices.Contains(in.IDs, m.Instance.ID) {
			return true
		}
	}
	return false
}

// DescribeMachine names a machine for a person: cloud, cloud-side name, id, age and price.
func DescribeMachine(m Machine) string {
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

// ChangeRequest asks what a plan does to a machine a state holds.
type ChangeRequest struct {
	// Name is the resource's name.
	Name string
	// Record is the machine as the state holds it.
	Record Record
	// ReplaceWhenUnhealthy replaces a ready machine found unhealthy.
	ReplaceWhenUnhealthy bool
	// ReplaceWhenPreempted replaces a machine its cloud interrupted or gave notice of interrupting.
	ReplaceWhenPreempted bool
	// Digest is the planned provisioning digest ("" with provisioning off); DigestKnown is false while
	// the variables are unknown.
	Digest      string
	DigestKnown bool
	// Provisioning, when set, computes Digest and DigestKnown from the playbook's variables.
	Provisioning *PlannedProvisioning
}

// Change is what a plan does to an existing machine.
type Change int

// The changes a plan makes to an existing machine.
const (
	// Keep: nothing to do at the machine (inputs that need no action may still change).
	Keep Change = iota
	// Reprovision: run provisioning again in place (changed playbooks or variables, or a machine left
	// short of ready by an interrupted or failed apply).
	Reprovision
	// Replace: delete the machine and create another.
	Replace
)

// ChangePlan is the decision for an existing machine, with its reasons.
type ChangePlan struct {
	Change Change
	// ReplaceBecause names the record's part whose state forces the replacement: "health" (unhealthy
	// with ReplaceWhenUnhealthy), "interruption" (interrupted with ReplaceWhenPreempted) or "status"
	// (failed at the cloud).
	ReplaceBecause string
	// Notices say why, where the user should hear it.
	Notices []Notice
	// Digest is the planned provisioning digest when the request gave Provisioning (see NewPlan).
	Digest      string
	DigestKnown bool
	// Provisioning says whether provisioning is on: a re-provisioned machine's host key and health
	// are known only after apply.
	Provisioning bool
}

// PlanChange decides what a plan does to a machine a state holds: replace it when it is unhealthy
// and ReplaceWhenUnhealthy is set (else only say so), or when it failed at the cloud (which cannot be
// repaired in place); provision it again when the planned digest differs from the one it was
// provisioned with (or is not known yet), or when it is not ready (an interrupted or failed apply:
// resumed in place); otherwise keep it.
func (cp *ControlPlane) PlanChange(req ChangeRequest) (ChangePlan, error) {
	if req.Provisioning != nil {
		var err error
		if req.Digest, req.DigestKnown, err = cp.plannedDigest(*req.Provisioning); err != nil {
			return ChangePlan{}, err
		}
	}
	plan := cp.planChange(req)
	plan.Digest, plan.DigestKnown, plan.Provisioning = req.Digest, req.DigestKnown, cp.Provisioning()
	if plan.Change == Replace {
		return plan, nil // a replacement counts at its new price
	}
	// Kept or provisioned in place: it bills its price in state.
	return plan, cp.CountBudget(req.Name, "in state, "+req.Record.Name, req.Record.PricePerHour)
}

func (cp *ControlPlane) planChange(req ChangeRequest) ChangePlan {
	var plan ChangePlan
	rec := req.Record
	if it := rec.Interruption; it != nil {
		what := fmt.Sprintf("hydra_gpu_instance %q (%s) is interrupted by its cloud (notice %s, %s): %s", req.Name, rec.Name,
			formatTime(it.NoticeAt), interruptionEnd(it), it.Reason)
		// Replaced, or kept as the user asked: its status is the cloud's doing, not a failure to repair.
		replaceWhen(&plan, req.ReplaceWhenPreempted, "interruption", "replace_when_preempted", "preempted", what)
		return plan
	}
	if rec.Health.Status == HealthUnhealthy && rec.Status == cloudprovider.StatusReady {
		what := fmt.Sprintf("hydra_gpu_instance %q (%s) is unhealthy: %s (checked %s)", req.Name, rec.Name, rec.Health.Reason,
			formatTime(rec.Health.CheckedAt))
		if replaceWhen(&plan, req.ReplaceWhenUnhealthy, "health", "replace_when_unhealthy", "unhealthy", what) {
			return plan
		}
	}
	if rec.Status == cloudprovider.StatusError && rec.ProvisioningError == "" {
		// Failed at the cloud: cannot be repaired in place.
		plan.Change, plan.ReplaceBecause = Replace, "status"
		return plan
	}
	if req.DigestKnown && req.Digest == rec.ProvisioningDigest && rec.Status == cloudprovider.StatusReady {
		return plan
	}
	plan.Change = Reprovision
	switch {
	case rec.Status == cloudprovider.StatusPending || rec.Status == cloudprovider.StatusProvisioning:
		plan.Notices = append(plan.Notices, Notice{Summary: "GPU instance will be resumed",
			Detail: fmt.Sprintf("%s was left %s by an interrupted apply; apply resumes it in place (waits for it and provisions it).", rec.Name, rec.Status)})
	case rec.Status == cloudprovider.StatusRunning && rec.ProvisioningDigest == "" && cp.Provisioning():
		plan.Notices = append(plan.Notices, Notice{Summary: "GPU instance will be provisioned",
			Detail: fmt.Sprintf("%s carries no record of a provisioning with the current playbooks and variables (for example it was "+
				"imported, or provisioned by other means); apply provisions it in place.", rec.Name)})
	}
	return plan
}

// replaceWhen is the decision a replace_when_* setting makes for a machine in the state it names
// (adjective, as what says): with the setting on, the plan replaces the machine because of the record's
// part because, and says why (true); off, it says why and how to replace it, and changes nothing.
func replaceWhen(plan *ChangePlan, on bool, because, setting, adjective, what string) bool {
	if on {
		article := "a "
		if strings.ContainsRune("aeiou", rune(adjective[0])) {
			article = "an "
		}
		plan.Notices = append(plan.Notices, Notice{Summary: "Replacing " + article + adjective + " GPU machine",
			Detail: what + ". " + setting + " is set, so this plan replaces it."})
		plan.Change, plan.ReplaceBecause = Replace, because
		return true
	}
	plan.Notices = append(plan.Notices, Notice{Summary: strings.ToUpper(adjective[:1]) + adjective[1:] + " GPU machine",
		Detail: what + ". Nothing changes; set " + setting + " = true to replace it, or `terraform apply -replace` it."})
	return false
}

// formatTime prints a time as RFC 3339 in UTC ("" for the zero time).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// NoOfferDetail says why no cloud can rent what req asks for: each cloud's reason, and the closest
// offers with one setting relaxed.
func NoOfferDetail(req OfferRequest, res OfferResult, closest []Near) string {
	what := fmt.Sprintf("%dx %s (%s", req.GPUCount, req.GPUType, req.Kind)
	if req.AllowSpot {
		what += ", spot allowed"
	}
	if req.FormFactor != "" {
		what += ", form factor " + req.FormFactor
	}
	if req.MaxPricePerHour > 0 {
		what += ", at most " + req.MaxPricePerHour.PerHour()
	}
	what += ")"
	var b strings.Builder
	fmt.Fprintf(&b, "No cloud can rent %s right now. Why each cloud said no:\n%s", what, res.Explain())
	if len(res.UnknownRegions) > 0 {
		fmt.Fprintf(&b, "\n\nregions names %s, which no configured cloud has (a typo, or a cloud that is not configured?). "+
			"Regions of the configured clouds: %s.", quoteList(res.UnknownRegions, ", "), quoteList(res.KnownRegions, ", "))
	}
	if len(closest) > 0 {
		b.WriteString("\n\nClosest offers, each with one setting relaxed:")
		for _, n := range closest {
			b.WriteString("\n  - " + n.String())
		}
	}
	b.WriteString("\n\nNothing was created.")
	return b.String()
}

// MismatchDetail words a pinned offer's mismatch (a *MismatchError) in the resource's attribute names.
func MismatchDetail(err error) string {
	var me *MismatchError
	if !errors.As(err, &me) {
		return err.Error()
	}
	if me.Field == "price" || me.Field == "region" {
		return fmt.Sprintf("offer_id %s does not match the cloud's current offer: %s. Pin the current offer (for example from a "+
			"hydra_gpu_offer data source), or leave offer_id unset to let hydra choose. Nothing was created.", me.OfferID, me.Msg)
	}
	if me.Field == "pool" {
		return fmt.Sprintf("offer_id %s does not fit: %s. Pin an offer of a configured pool (for example from a hydra_gpu_offer "+
			"data source), or leave offer_id unset to let hydra choose.", me.OfferID, me.Msg)
	}
	return fmt.Sprintf("offer_id %s does not fit this resource's `%s`: %s. Pin an offer that matches (for example from a "+
		"hydra_gpu_offer data source with the same request), or leave offer_id unset to let hydra choose.", me.OfferID, me.Field, me.Msg)
}

// fleetPassedDetail explains why an instance did not get the cheapest offer: instances planned before
// it in this run (by name) took that offer's last stock.
func fleetPassedDetail(name string, c FleetChoice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hydra_gpu_instance %q takes %s at %s because cheaper offers have no stock left for it in this plan:\n", name, c.Offer.ID, c.Offer.PricePerHour.PerHour())
	writePassed(&b, c.Passed)
	b.WriteString("Instances planned together share the known stock in name order. The choice is pinned like any other.")
	return b.String()
}

// fleetExhaustedDetail explains that every matching offer's stock went to other instances of the plan.
func fleetExhaustedDetail(c FleetChoice) string {
	var b strings.Builder
	b.WriteString("Every matching offer's known stock is taken by other instances planned in this run (they are served in name order):\n")
	writePassed(&b, c.Passed)
	b.WriteString("Plan fewer instances, allow more clouds, regions or spot, or raise max_price_per_hour. Nothing was created.")
	return b.String()
}

func writePassed(b *strings.Builder, passed []PassedOffer) {
	for _, p := range passed {
		fmt.Fprintf(b, "  - %s at %s: %d in stock, taken by %s\n", p.Offer.ID, p.Offer.PricePerHour.PerHour(), p.Offer.Available, strings.Join(p.TakenBy, ", "))
	}
}

// ShownDetails is what a plan shows of an offer's Details: what a buyer may weigh beyond the
// first-class attributes. Values that repeat one (the region, the instance type, the cloud's GPU name)
// and the clouds' internal identifiers (keys ending in _id or _fid) stay out of the plan's way; the
// control plane keeps them all for the create.
func ShownDetails(o cloudprovider.Offer) map[string]string {
	out := map[string]string{}
	for k, v := range o.Details {
		switch {
		case strings.HasSuffix(k, "_id"), strings.HasSuffix(k, "_fid"),
			v == "", v == o.Region, v == o.InstanceType, v == o.CloudGPU:
			continue
		}
		out[k] = v
	}
	return out
}

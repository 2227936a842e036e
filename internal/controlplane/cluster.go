package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// ClusterSpec is what a hydra_gpu_cluster asks for.
type ClusterSpec struct {
	// Name is the resource's name; GPUType and Kind as for a machine.
	Name, GPUType, Kind string
	// GPUCount is the GPUs per node; Nodes the number of nodes.
	GPUCount, Nodes int
	// Clouds and Regions, when not empty, are the only ones allowed.
	Clouds, Regions []string
	// Spot: nil allows either, true only spot, false only on-demand.
	Spot *bool
	// MaxPricePerHour is the ceiling for the whole cluster (0: none).
	MaxPricePerHour money.USD
	// Interconnect is what the nodes must share ("" means fabric).
	Interconnect  cloudprovider.Interconnect
	SSHPublicKeys []string
	// ProvisioningVars are the playbook's extra variables, as for a machine; ProvisioningVarsUnknown
	// is set at plan while any of them is unknown.
	ProvisioningVars        map[string]any
	ProvisioningVarsUnknown bool
	// MinBusBandwidthGBps, when above 0, is nccl_check's floor for the all-reduce's bus bandwidth.
	MinBusBandwidthGBps float64
	// ReplaceWhenUnhealthy replaces a ready cluster with an unhealthy node (PlanClusterChange).
	ReplaceWhenUnhealthy bool
	// ReplaceWhenPreempted replaces a cluster its cloud interrupted (ClusterRecord.Interruption).
	ReplaceWhenPreempted bool
	// BidTimeout bounds how long CreateCluster waits for an order the cloud has not allocated yet (an
	// auction bid for the nodes) before it cancels it (0: no bound; wait as for any boot).
	BidTimeout time.Duration
	// Volumes are the volumes every node gets: only offers of their cloud and region match, and only
	// clouds whose cluster create takes volumes.
	Volumes []VolumeUse
}

// ClusterPlan is what a plan shows of a new cluster.
type ClusterPlan struct {
	Cloud, Pool, Region, OfferID string
	// PricePerHour is the whole cluster's.
	PricePerHour money.USD
	// OtherClouds says why each other cloud lost (cloud -> reason), and, keyed "<pool>/<region>", the
	// chosen cloud's other regions.
	OtherClouds map[string]string
	Notices     []Notice
}

// ClusterNodeRecord is one node of a cluster as the state holds it. Status is hydra's (pending,
// running, provisioning, ready, error, terminated); Health is healthy, unhealthy, unknown or "".
type ClusterNodeRecord struct {
	ID, Name, SSHHost, SSHUser, PrivateIP, HostKey, Status, Health string
	SSHPort                                                        int
	// SSHJump is the host the node is reached through (the cluster's login node, as the cloud
	// reports it: cloudprovider.SSHEndpoint.Jump); nil when the node is reached directly. Its HostKey
	// is the login node's key, pinned as HostKey is (the cloud reports none): kept across refreshes
	// and passed to every later connection, so a login node whose key changed is refused.
	SSHJump *cloudprovider.SSHEndpoint
	// Interruption is the cloud's interruption of the node as last read (Record.Interruption); nil: none.
	Interruption *cloudprovider.Interruption
}

// ClusterRecord is a cluster as the state holds it.
type ClusterRecord struct {
	// ID is the cluster's cloud-side name (the resource's id); CloudClusterID the cloud's own id.
	ID, Name, CloudClusterID, Cloud, Pool, Region, OfferID, Status, ProvisioningDigest string
	// PricePerHour is the whole cluster's.
	PricePerHour money.USD
	// Nodes are in node order (the cloud-side names' "-<i>").
	Nodes []ClusterNodeRecord
	// Hostfile has one line per node, `<private_ip> slots=<gpu_count>`.
	Hostfile string
	// NCCLEnv are the variables the cloud's fabric needs.
	NCCLEnv map[string]string
	// BusBandwidthGBps is what nccl_check measured (0 when not asked).
	BusBandwidthGBps float64
	// GPUType and GPUCount are each node's GPUs; Interconnect is the cluster offer's.
	GPUType      string
	GPUCount     int
	Interconnect cloudprovider.Interconnect
	// ProvisioningError says why provisioning or the cluster check failed (status error); "" when
	// they did not, so an error status without it is the cloud's.
	ProvisioningError string
	// Interruption is the first notice among the nodes' (clusterInterruption): a cluster is
	// interrupted when any node is, since it is one order; nil when none is.
	Interruption *cloudprovider.Interruption
	// Volumes are the hydra volumes its nodes have, as ImportCluster finds them (hydra_volume ids,
	// no mount path: the cloud does not say it); nil from every other call.
	Volumes []VolumeUse
}

// ClusterQuote is the choice an earlier plan of a cluster create recorded, reused so that plan and
// apply agree.
type ClusterQuote struct {
	Plan ClusterPlan
	// Path is where this runner keeps it, named in the notice that the market moved ("" when it came
	// with the plan itself); Expires is when it expires there.
	Path    string
	Expires time.Time
}

// PlanNewCluster chooses a new cluster's offer: the earlier plan's quote when there is one (saying so
// when the market moved since), else the best-ranked eligible cluster offer (ClusterOffers) not
// skipped by the capacity memory, with why each other cloud lost. Either way it counts the whole
// cluster's price in the budget (max_total_price_per_hour). Errors are *RequestError,
// *UnconfiguredError or *Refusal.
func (cp *ControlPlane) PlanNewCluster(ctx context.Context, spec ClusterSpec, earlier *ClusterQuote) (ClusterPlan, error) {
	if earlier != nil && cp.checkClusterVolumes(spec, earlier.Plan.OfferID) != nil {
		earlier = nil // quoted before the volumes changed, elsewhere: choose afresh
	}
	if earlier != nil {
		plan := earlier.Plan
		plan.Notices = cp.staleClusterQuote(ctx, spec, *earlier)
		return plan, cp.CountBudget(budgetName(spec.Name), plan.OfferID, plan.PricePerHour)
	}
	res, err := cp.clusterOffers(ctx, spec)
	if err != nil {
		return ClusterPlan{}, err
	}
	var plan ClusterPlan
	if len(res.flat) == 0 {
		return plan, refuse("", "No GPU cluster offer matches hydra_gpu_cluster "+spec.Name, noClusterDetail(spec, OfferResult{Rejections: res.rejections}))
	}
	offers, _, err := cp.skipForPlan(res.flat, "cluster offer", "hydra_gpu_cluster "+spec.Name, &plan.Notices)
	if err != nil {
		return plan, err
	}
	best := offers[0]
	rejections := res.rejections
	for _, o := range res.flat {
		// A cloud whose every eligible offer was skipped lost for that reason.
		if !slices.ContainsFunc(offers, func(k cloudprovider.Offer) bool { return k.Cloud == o.Cloud }) &&
			!slices.ContainsFunc(rejections, func(r Rejection) bool { return r.Cloud == o.Cloud }) {
			rejections = append(rejections, Rejection{Cloud: o.Cloud, Reason: "its cluster offers recently ran out of capacity at create (skipped for capacity_memory)"})
		}
	}
	plan.Notices = append(plan.Notices, cp.leftClusters(ctx, spec)...)
	co := res.byID[best.ID]
	plan.Cloud, plan.Pool, plan.Region, plan.OfferID, plan.PricePerHour = co.Cloud, co.Pool, co.Region, best.ID, co.PricePerHour
	plan.OtherClouds = OfferResult{Offers: offers, Rejections: rejections}.WhyNot(best)
	cp.logger(ctx).Info("cluster offer chosen", "name", spec.Name, "offer", best.ID, "price", co.PricePerHour.PerHour(), "eligible", len(offers))
	return plan, cp.CountBudget(budgetName(spec.Name), best.ID, co.PricePerHour)
}

// staleClusterQuote says when the market moved since q was quoted: its cluster offer costs another
// price now, or a cheaper cluster offer exists (nothing when the offers cannot be read).
func (cp *ControlPlane) staleClusterQuote(ctx context.Context, spec ClusterSpec, q ClusterQuote) []Notice {
	quoted, err := ParseOfferID(q.Plan.OfferID)
	if err != nil {
		return nil
	}
	res, err := cp.clusterOffers(ctx, spec)
	if err != nil {
		return nil
	}
	var notes []string
	var cheapest *cloudprovider.Offer
	for i, o := range res.flat {
		if o.Pool == quoted.Pool && o.Region == quoted.Region && o.InstanceType == quoted.InstanceType && o.Spot == quoted.Spot {
			if o.PricePerHour != quoted.PricePerHour {
				notes = append(notes, fmt.Sprintf("the quoted cluster offer now costs %s (quoted %s)", o.PricePerHour.PerHour(), quoted.PricePerHour.PerHour()))
			}
			continue
		}
		if o.PricePerHour < quoted.PricePerHour && (cheapest == nil || o.PricePerHour < cheapest.PricePerHour) {
			cheapest = &res.flat[i]
		}
	}
	if cheapest != nil {
		notes = append(notes, fmt.Sprintf("a cheaper cluster offer exists now: %s at %s", cheapest.ID, cheapest.PricePerHour.PerHour()))
	}
	return reusedQuote(fmt.Sprintf("The cluster offer %s was quoted by an earlier plan of hydra_gpu_cluster %q", q.Plan.OfferID, spec.Name), notes, q.Path, q.Expires)
}

// leftClusters says, at plan, which clusters an interrupted create of this resource left (named by
// this runner's journal, or, on a cloud that records confirmation, never confirmed and named with a
// token derived from the resource's name): the apply adopts one that fits the plan, and deletes the
// others. Clouds that cannot be asked are left out: the apply looks again.
func (cp *ControlPlane) leftClusters(ctx context.Context, spec ClusterSpec) []Notice {
	in, journaled, _ := cp.clusterJournal().Get(spec.Name)
	var left []string
	for _, pm := range cp.manager.Pools() {
		cb, ok := pm.Backend.(cloudprovider.ClusterBackend)
		if !ok || pm.Pool.Kind != spec.Kind || !cloudAllowed(spec.Clouds, pm.Pool.Cloud) {
			continue
		}
		_, confirmable := pm.Backend.(cloudprovider.OwnershipConfirmer)
		lctx, cancel := context.WithTimeout(ctx, cp.opts.OfferTimeout)
		list, err := cb.ListClusters(lctx, cloudprovider.CloudName(pm.Pool, spec.Name, "")+cloudprovider.TokenSeparator)
		cancel()
		if err != nil {
			continue
		}
		for _, c := range list {
			name, token, ok := cloudprovider.ParseCloudName(pm.Pool, c.Name)
			if !ok || name != spec.Name || c.Status == cloudprovider.StatusTerminated {
				continue
			}
			if (journaled && in.CloudName == c.Name) || (confirmable && !clusterConfirmed(c) && cloudprovider.DerivedToken(spec.Name, token)) {
				left = append(left, fmt.Sprintf("%s %s (id %s, %d nodes, %s)", pm.Pool.Cloud, c.Name, c.ID, len(c.Nodes), c.Status))
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	return []Notice{{Summary: "A create of this GPU cluster was cut short; apply adopts it",
		Detail: fmt.Sprintf("An earlier create of hydra_gpu_cluster %q was interrupted before Terraform recorded the cluster, and no state holds it. "+
			"The next apply takes it over instead of ordering another if it still matches the plan; otherwise apply deletes it and "+
			"orders the planned one:\n  %s", spec.Name, strings.Join(left, "\n  "))}}
}

// budgetName is a cluster's entry in the budget, apart from a machine of the same name.
func budgetName(name string) string { return name + " (cluster)" }

// noClusterDetail says why no cloud can rent the cluster spec asks for.
func noClusterDetail(spec ClusterSpec, res OfferResult) string {
	what := fmt.Sprintf("a cluster of %s (%s, interconnect %q", spec.shape(), spec.Kind, spec.interconnect())
	if spec.Spot != nil {
		what += map[bool]string{true: ", spot only", false: ", on-demand only"}[*spec.Spot]
	}
	if spec.MaxPricePerHour > 0 {
		what += ", at most " + spec.MaxPricePerHour.PerHour() + " for the whole cluster"
	}
	return fmt.Sprintf("No cloud can rent %s) right now. Why each cloud said no:\n%s\n\nNothing was created.", what, res.Explain())
}

// PlanClusterChange decides what a plan does to a cluster a state holds, as PlanChange does for a
// machine: replace it when what it is no longer fits the spec (nodes, GPU type or count per node, a
// fabric asked of a cluster without one, a cloud, region or market no longer allowed), when it failed
// at the cloud, or when a node is unhealthy and ReplaceWhenUnhealthy is set; provision it again in
// place (then check it again) when the provisioning digest changed or is not known yet, or when it is
// not ready (an interrupted or failed apply); otherwise keep it. A kept cluster counts its price in
// the budget.
func (cp *ControlPlane) PlanClusterChange(spec ClusterSpec, prior ClusterRecord) (ChangePlan, error) {
	var plan ChangePlan
	var err error
	plan.Digest, plan.DigestKnown, err = cp.plannedDigest(PlannedProvisioning{Pool: prior.Pool, Kind: spec.Kind, Vars: spec.ProvisioningVars, VarsKnown: !spec.ProvisioningVarsUnknown,
		Volumes: spec.Volumes})
	if err != nil {
		return plan, err
	}
	plan.Provisioning = cp.Provisioning()
	if field, why := clusterMisfit(spec, prior); field != "" {
		plan.Change, plan.ReplaceBecause = Replace, field
		plan.Notices = append(plan.Notices, Notice{Field: field, Summary: "Replacing the GPU cluster",
			Detail: fmt.Sprintf("hydra_gpu_cluster %q (%s) %s; a cluster cannot change that in place, so this plan replaces it.", spec.Name, prior.ID, why)})
		return plan, nil
	}
	if planClusterInterruption(spec, prior, &plan) {
		if plan.Change == Replace {
			return plan, nil
		}
		return plan, cp.CountBudget(budgetName(spec.Name), "in state, "+prior.ID, prior.PricePerHour)
	}
	var unhealthy []string
	for _, n := range prior.Nodes {
		if n.Health == HealthUnhealthy {
			unhealthy = append(unhealthy, n.Name)
		}
	}
	if len(unhealthy) > 0 && prior.Status == string(cloudprovider.StatusReady) {
		if spec.ReplaceWhenUnhealthy {
			plan.Change, plan.ReplaceBecause = Replace, "health"
			plan.Notices = append(plan.Notices, Notice{Summary: "Replacing an unhealthy GPU cluster",
				Detail: fmt.Sprintf("hydra_gpu_cluster %q (%s) has unhealthy nodes: %s. replace_when_unhealthy is set, so this plan replaces the whole cluster.",
					spec.Name, prior.ID, strings.Join(unhealthy, ", "))})
			return plan, nil
		}
		plan.Notices = append(plan.Notices, Notice{Summary: "Unhealthy GPU cluster nodes",
			Detail: fmt.Sprintf("hydra_gpu_cluster %q (%s) has unhealthy nodes: %s. Nothing changes; set replace_when_unhealthy = true to replace "+
				"the cluster, or `terraform apply -replace` it.", spec.Name, prior.ID, strings.Join(unhealthy, ", "))})
	}
	switch {
	case prior.Status == string(cloudprovider.StatusError) && prior.ProvisioningError == "" && !allNodesReady(prior):
		// Failed at the cloud (a cluster whose every node is ready failed hydra's cluster check).
		plan.Change, plan.ReplaceBecause = Replace, "status"
		return plan, nil
	case plan.DigestKnown && plan.Digest == prior.ProvisioningDigest && prior.Status == string(cloudprovider.StatusReady):
	default:
		plan.Change = Reprovision
		if prior.Status != string(cloudprovider.StatusReady) {
			plan.Notices = append(plan.Notices, Notice{Summary: "GPU cluster will be resumed",
				Detail: fmt.Sprintf("%s was left %s by an interrupted or failed apply; apply resumes it in place (waits for its nodes, provisions them and checks the cluster).", prior.ID, prior.Status)})
		}
	}
	return plan, cp.CountBudget(budgetName(spec.Name), "in state, "+prior.ID, prior.PricePerHour)
}

// allNodesReady reports whether the record has nodes and every one is ready.
func allNodesReady(rec ClusterRecord) bool {
	return len(rec.Nodes) > 0 && !slices.ContainsFunc(rec.Nodes, func(n ClusterNodeRecord) bool { return n.Status != string(cloudprovider.StatusReady) })
}

// clusterMisfit names the first input a cluster in state no longer fits ("" when it fits all), and why.
func clusterMisfit(spec ClusterSpec, prior ClusterRecord) (field, why string) {
	p, perr := ParseClusterOfferID(prior.OfferID)
	nodes := len(prior.Nodes)
	if perr == nil {
		nodes = p.Nodes
	}
	switch {
	case nodes != 0 && spec.Nodes != nodes:
		return "nodes", fmt.Sprintf("has %d nodes, and nodes is %d", nodes, spec.Nodes)
	case prior.GPUType != "" && spec.GPUType != prior.GPUType:
		return "gpu_type", fmt.Sprintf("has %s GPUs, and gpu_type is %q", prior.GPUType, spec.GPUType)
	case prior.GPUCount != 0 && spec.GPUCount != prior.GPUCount:
		return "gpu_count", fmt.Sprintf("has %d GPUs per node, and gpu_count is %d", prior.GPUCount, spec.GPUCount)
	case prior.Interconnect != "" && spec.interconnect() == cloudprovider.InterconnectFabric && prior.Interconnect != cloudprovider.InterconnectFabric:
		return "interconnect", fmt.Sprintf("has no fabric (interconnect %q), and interconnect is %q", prior.Interconnect, spec.interconnect())
	case prior.Cloud != "" && !cloudAllowed(spec.Clouds, prior.Cloud):
		return "clouds", fmt.Sprintf("is at %s, which clouds no longer allows", prior.Cloud)
	case len(spec.Regions) > 0 && prior.Region != "" && !slices.Contains(spec.Regions, prior.Region):
		return "regions", fmt.Sprintf("is in %s, which regions no longer allows", prior.Region)
	case perr == nil && spec.Spot != nil && *spec.Spot != p.Spot:
		return "spot", fmt.Sprintf("is %s, and spot is %t", map[bool]string{true: "spot", false: "on-demand"}[p.Spot], *spec.Spot)
	}
	return "", ""
}

// ClusterCapacityError says a cluster create failed because the cloud could not deliver every node:
// nothing was created and nothing stays billed (the backend's all-or-nothing rule). Capacity, set when
// capacity_memory is on, is what the next plans skip (the caller keeps it, as for a machine).
type ClusterCapacityError struct {
	Name, OfferID string
	Capacity      *CapacityRecord
	Err           error
}

func (e *ClusterCapacityError) Error() string {
	msg := fmt.Sprintf("the cloud cannot deliver every node of %s (offer %s): %v. Nothing was created and nothing stays billed", e.Name, e.OfferID, e.Err)
	if e.Capacity != nil {
		msg += fmt.Sprintf("; plans skip this offer until %s (capacity_memory %s)", formatTime(e.Capacity.Until), e.Capacity.Memory)
	}
	return msg
}

// Unwrap makes it a capacity error for KindOf and IsCapacity.
func (e *ClusterCapacityError) Unwrap() error { return e.Err }

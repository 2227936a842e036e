package controlplane

import (
	"fmt"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// A cluster is one order at its cloud, all or nothing: when the cloud takes any node back, the
// cluster is interrupted, and the plan replaces the whole cluster (replace_when_preempted), as it does
// for an unhealthy node (replace_when_unhealthy).

// clusterInterruption is the cluster's interruption from its nodes' as read: the earliest notice
// (ties: the earliest end), nil when no node has one. A cluster whose cloud reports no node with a
// notice while it is in error or terminated keeps prior (a cloud may drop a preempted order's nodes
// once the notice ends); a running node without one means the cloud took the
// notice back.
func clusterInterruption(nodes []ClusterNodeRecord, status string, prior *cloudprovider.Interruption) *cloudprovider.Interruption {
	var first *cloudprovider.Interruption
	for _, n := range nodes {
		it := n.Interruption
		if it == nil {
			continue
		}
		if first == nil || it.NoticeAt.Before(first.NoticeAt) || it.NoticeAt.Equal(first.NoticeAt) && endsBefore(it.EndsAt, first.EndsAt) {
			first = it
		}
	}
	if first == nil && prior != nil && (status == string(cloudprovider.StatusError) || status == string(cloudprovider.StatusTerminated)) {
		return prior
	}
	if first == nil {
		return nil
	}
	out := *first
	return &out
}

// endsBefore orders ends with "no end said" (zero) last.
func endsBefore(a, b time.Time) bool {
	return !a.IsZero() && (b.IsZero() || a.Before(b))
}

// interruptedNodes names the nodes with a notice, in node order.
func interruptedNodes(nodes []ClusterNodeRecord) []string {
	var out []string
	for _, n := range nodes {
		if n.Interruption != nil {
			out = append(out, n.Name)
		}
	}
	return out
}

// takenBack says whether a cluster the cloud reports terminated was taken back by it (a node carries
// an interruption): RefreshCluster keeps it so the plan shows why and replaces it.
func takenBack(c cloudprovider.Cluster) bool {
	for _, n := range c.Nodes {
		if n.Interruption != nil {
			return true
		}
	}
	return false
}

// interruptionEnd says when an interruption ends or ended, or that its cloud gave no end time.
func interruptionEnd(it *cloudprovider.Interruption) string {
	switch {
	case it.EndsAt.IsZero():
		return "its cloud gave no end time"
	case it.Ended(time.Now()):
		return "it ended " + formatTime(it.EndsAt)
	}
	return "it ends " + formatTime(it.EndsAt)
}

// planClusterInterruption decides for an interrupted cluster (ok false when prior is not): replaced
// when spec.ReplaceWhenPreempted, else kept with a notice saying so. Either way nothing else is
// decided: its status is the cloud's doing, not a failure to repair in place.
func planClusterInterruption(spec ClusterSpec, prior ClusterRecord, plan *ChangePlan) (ok bool) {
	it := prior.Interruption
	if it == nil {
		return false
	}
	nodes := strings.Join(interruptedNodes(prior.Nodes), ", ")
	if nodes == "" {
		nodes = "its nodes are gone"
	}
	what := fmt.Sprintf("hydra_gpu_cluster %q (%s) is interrupted by its cloud (notice %s, %s; %s): %s", spec.Name, prior.ID,
		formatTime(it.NoticeAt), interruptionEnd(it), nodes, it.Reason)
	if spec.ReplaceWhenPreempted {
		plan.Change, plan.ReplaceBecause = Replace, "interruption"
		plan.Notices = append(plan.Notices, Notice{Summary: "Replacing a preempted GPU cluster",
			Detail: what + ". replace_when_preempted is set, so this plan replaces the whole cluster (a cluster is one order at its cloud)."})
		return true
	}
	plan.Change = Keep
	plan.Notices = append(plan.Notices, Notice{Summary: "Preempted GPU cluster",
		Detail: what + ". Nothing changes; set replace_when_preempted = true to replace the cluster, or `terraform apply -replace` it."})
	return true
}

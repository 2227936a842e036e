package mithril

import (
	"context"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// clusterInterruptions gives every node of a preempted cluster bid the bid's interruption: a cluster
// is one bid, preempted as a whole, so each node carries it, those Mithril has since allocated to the
// open bid too (they are not the cluster hydra ordered). Its end is the bid's, read from one preempted
// instance's status (GET /v2/instances/{fid}/status, as Get does for a machine); a failed read leaves
// it unknown.
func (b *Backend) clusterInterruptions(ctx context.Context, c *cloudprovider.Cluster, bid Bid, insts []Instance) {
	whole, _ := b.evaluate(ctx, bid, insts)
	if whole.Interruption == nil {
		return
	}
	if in := preemptedInstance(insts); in != nil {
		if st, err := b.client.InstanceStatus(ctx, in.FID); err == nil && st.EndTime != nil {
			whole.Interruption.EndsAt = st.EndTime.Time
		}
	}
	for i := range c.Nodes {
		it := *whole.Interruption
		c.Nodes[i].Interruption = &it
	}
}

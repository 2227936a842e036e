package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// interconnects are the values interconnect accepts.
var interconnects = []string{string(cloudprovider.InterconnectFabric), string(cloudprovider.InterconnectAny)}

// clusterNodeAttrTypes is one element of a cluster's node list.
var clusterNodeAttrTypes = attrTypes(nodeAttributes())

// ncclCheckAttrTypes is nccl_check's object.
var ncclCheckAttrTypes = map[string]attr.Type{"min_bus_bandwidth_gbps": types.Float64Type}

func (r *gpuClusterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Several GPU machines (nodes) on one interconnect, rented as one order from the cheapest cloud that " +
			"can deliver them all, provisioned, and `ready` when they can train together.\n\n" +
			"During `terraform plan` hydra asks every configured cloud that has a cluster mechanism for cluster offers and shows the " +
			"cheapest as known values (`cloud`, `pool`, `region`, `offer_id`, `price_usd_per_hour` for the whole cluster) with why " +
			"each other cloud lost (`other_clouds`). `terraform apply` orders it through the cloud's own cluster mechanism, all or " +
			"nothing: a cloud that cannot deliver every node leaves nothing billed. Apply then provisions every node and runs the " +
			"cluster check. `nodes` is the number of nodes; `node` lists them once they exist.",
		Attributes: withAttributes(requestAttributes(clusterSubject), map[string]schema.Attribute{
			"id": keptString("The cluster's cloud-side name: the pool's prefix, `name`, `--` and the cluster's ownership token " +
				"(e.g. `sbx-vm-train--k3j9x2ab`). Node i (from 1) is named `<id>-<i>`. Known once the cluster is ordered."),
			"nodes": schema.Int64Attribute{
				MarkdownDescription: "How many nodes (machines) the cluster has, each with `gpu_count` GPUs of `gpu_type`: at least 2 " +
					"(one machine is a `hydra_gpu_instance`). Clusters are not resized: changing it replaces the cluster.",
				Required:      true,
				Validators:    []validator.Int64{clusterNodes},
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			},
			"interconnect": schema.StringAttribute{
				MarkdownDescription: "What the nodes must share. `fabric` (the default): every node on one high-speed fabric " +
					"(InfiniBand, say) as the cloud promises it; clouds that promise none do not compete (`other_clouds` says " +
					"\"no fabric\"). `any`: the nodes in one region, on whatever network the cloud's own cluster mechanism " +
					"gives them. Changing it replaces the cluster.",
				Optional:      true,
				Computed:      true,
				Default:       stringdefault.StaticString(string(cloudprovider.InterconnectFabric)),
				Validators:    []validator.String{stringvalidator.OneOf(interconnects...)},
				PlanModifiers: replace,
			},
			"nccl_check": schema.SingleNestedAttribute{
				MarkdownDescription: "Go beyond every node reaching every other: after provisioning, run an NCCL all-reduce across " +
					"all nodes (`all_reduce_perf` from nccl-tests under `mpirun`, with `hostfile`) and refuse `ready` when its " +
					"average bus bandwidth is below `min_bus_bandwidth_gbps`. Default: not run. It is checked when the cluster is " +
					"created; changing it replaces the cluster.",
				Optional: true,
				Attributes: map[string]schema.Attribute{
					"min_bus_bandwidth_gbps": schema.Float64Attribute{
						MarkdownDescription: "The lowest acceptable average bus bandwidth, in GB/s, as `all_reduce_perf` reports it " +
							"(`Avg bus bandwidth`). More than 0.",
						Required:   true,
						Validators: []validator.Float64{positiveBandwidth},
					},
				},
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			},
			"volumes": volumesAttribute(clusterSubject),
			"bid_timeout": schema.StringAttribute{
				MarkdownDescription: "For auction offers (one bid for every node): how long apply waits for the bid to win " +
					"before it cancels the bid (nothing is billed for a bid that did not win; the bid wins all nodes or none). Apply " +
					"then fails saying so, and the next plans skip that offer for `capacity_memory`. A Go duration such as `10m` or " +
					"`90s`, from `1s` to `24h`. Default: `15m`. Counted within `timeouts.create`.",
				Optional:   true,
				Validators: []validator.String{durationBetween(time.Second, 24*time.Hour)},
			},
			"replace_when_unhealthy": schema.BoolAttribute{
				MarkdownDescription: "Replace a `ready` cluster when the health check of any node (run on every refresh, see " +
					"`node[*].health`) finds it unhealthy: the plan replaces the whole cluster (a cluster is one order at its cloud; " +
					"no cloud's cluster mechanism swaps one node) and says why. Default `false`: the plan names the unhealthy nodes " +
					"and changes nothing. A node that cannot be reached is `unknown`, never replaced for that.",
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
			},
			"replace_when_preempted": clusterReplaceWhenPreemptedSchema(),
			"interruption":           clusterInterruptionSchema(),
			"offer_id": keptString("The chosen cluster offer, `<pool>/<region>/<instance type>/<ondemand|spot>@<price>` (the price is " +
				"the whole cluster's), chosen at plan time."),
			"price_usd_per_hour": keptFloat64("The price the cloud bills for the whole cluster (every node), in US dollars per hour, exact; " +
				"`max_price_per_hour` caps it. The plan shows the quoted price; the next refresh records what the cloud bills."),
			"cloud_cluster_id": keptString("The cloud's own identifier of the cluster (what `terraform import` takes after `<cloud>/`)."),
			"status": keptString("hydra's status of the cluster: `pending`, `running`, `provisioning`, `ready`, `terminated` or " +
				"`error`. `ready` only when every node is `ready` and the cluster check passed: every node reaches every other " +
				"over the private network, the fabric's ports are up where a fabric is promised, and `nccl_check`'s floor is met " +
				"when set."),
			"node": schema.ListNestedAttribute{
				MarkdownDescription: "The cluster's nodes, in order (node 1 first). (`nodes` is their number; this list is named " +
					"`node` so the two do not clash.)",
				Computed:      true,
				PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
				NestedObject:  schema.NestedAttributeObject{Attributes: nodeAttributes()},
			},
			"hostfile": keptString("One line per node, `<private_ip> slots=<gpu_count>` (Open MPI's hostfile format), node 1 " +
				"first: write it to a file for `mpirun --hostfile`, or take the first line's address as `torchrun`'s " +
				"`--master_addr`."),
			"nccl_env": schema.MapAttribute{
				MarkdownDescription: "Environment variables the cloud's fabric needs for NCCL (for example `NCCL_IB_PKEY` where " +
					"the cloud partitions InfiniBand per cluster); empty where it needs none. Export them in every process of the job.",
				Computed:      true,
				ElementType:   types.StringType,
				PlanModifiers: []planmodifier.Map{mapplanmodifier.UseStateForUnknown()},
			},
			"provisioning_error": keptString("Why provisioning a node or the cluster check failed (the node, the task and the message), or " +
				"null. A cluster in `error` with it is provisioned again in place by the next apply; one in `error` without it " +
				"failed at the cloud and is replaced."),
			"nccl_bus_bandwidth_gbps": keptFloat64("The average bus bandwidth `nccl_check` measured at creation, in GB/s; null without `nccl_check`."),
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true,
				CreateDescription: "How long apply may take to order the cluster and take every node to `ready` and through the " +
					"cluster check, as a Go duration. Default `\"120m\"`. A create that runs out keeps the cluster in state, " +
					"tainted, so it is replaced and never forgotten.",
				UpdateDescription: "How long an in-place update (provisioning resumed or run again on every node) may take, as a " +
					"Go duration. Default `\"60m\"`.",
				DeleteDescription: "How long destroy waits (drain included) for the cloud to say every node is gone, as a Go " +
					"duration. Default `\"30m\"`.",
			}),
		}),
	}
}

// nodeAttributes are a node's in node: computed, described once each.
func nodeAttributes() map[string]schema.Attribute {
	attrs := map[string]schema.Attribute{
		"ssh_port": schema.Int64Attribute{MarkdownDescription: "SSH port of the node.", Computed: true},
		"ssh_jump_port": schema.Int64Attribute{MarkdownDescription: "SSH port of `ssh_jump_host`; null when the node is reached directly.",
			Computed: true},
		"interruption": nodeInterruptionSchema(),
	}
	for name, desc := range map[string]string{
		"id":         "The cloud's own identifier of the node.",
		"name":       "The node's cloud-side name, `<id>-<i>`.",
		"ssh_host":   "Address to reach the node over SSH.",
		"ssh_user":   "SSH login user of the node.",
		"private_ip": "The node's address on the cluster's private network.",
		"host_key":   "The node's SSH host key, pinned.",
		"status":     "hydra's status of the node (as a machine's `status`).",
		"health":     "The node's GPU health as last read: `healthy`, `unhealthy` or `unknown`; null with provisioning off.",
		"ssh_jump_host": "The host the node is reached through (the cluster's login node, on clouds whose nodes have " +
			"no public address: `ssh -J ssh_jump_user@ssh_jump_host:ssh_jump_port ssh_user@ssh_host`); null when the node " +
			"is reached directly at `ssh_host`.",
		"ssh_jump_user": "SSH login user of `ssh_jump_host`; null when the node is reached directly.",
		"ssh_jump_host_key": "The SSH host key of `ssh_jump_host`, pinned when provisioning first reached the node through it: a " +
			"login node presenting another key is refused. Null when the node is reached directly, or not provisioned yet.",
	} {
		attrs[name] = schema.StringAttribute{MarkdownDescription: desc, Computed: true}
	}
	return attrs
}

// clusterNodes accepts 2 nodes or more.
var clusterNodes = numberCheck{description: "at least 2", summary: "Invalid number of nodes", problem: func(n float64) string {
	if n < 2 {
		return "a cluster has at least 2 nodes. For one machine, use a hydra_gpu_instance."
	}
	return ""
}}

// positiveBandwidth accepts a bandwidth above 0.
var positiveBandwidth = numberCheck{description: "more than 0 (GB/s)", summary: "Invalid bus bandwidth", problem: func(f float64) string {
	if !(f > 0) {
		return "it must be more than 0, in GB/s as all_reduce_perf reports \"Avg bus bandwidth\" (for example 100). " +
			"To skip the NCCL check, leave nccl_check out."
	}
	return ""
}}

package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
)

// hydra_gpu_cluster's interruption attributes: `interruption` on the cluster and on each `node`, and
// `replace_when_preempted`. A cluster is one order at its cloud, so it is interrupted when any node is,
// and replaced whole.

// interruptionAttributes are the attributes of an `interruption` object, described for subject.
func interruptionAttributes(subject string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"notice_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the cloud gave notice (RFC 3339, UTC)."},
		"ends_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the cloud stops " + subject +
			" (RFC 3339, UTC); null where it does not say."},
		"reason": schema.StringAttribute{Computed: true, MarkdownDescription: "The cloud's word for the interruption and what it means."},
	}
}

// clusterInterruptionSchema is the cluster's computed `interruption`.
func clusterInterruptionSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		MarkdownDescription: "The cloud's interruption of this spot cluster, as the last refresh read it: the earliest notice " +
			"among its nodes' (see `node[*].interruption`), since a cluster is one order and is interrupted when any node is. " +
			"It stays set while the cloud reports the cluster gone or failed after the notice; null when no node has one (a " +
			"notice the cloud took back clears it). `notice_at`: when the cloud gave notice (RFC 3339, UTC), or when hydra first " +
			"saw it where the cloud does not say; `ends_at`: when the cloud stops the node, null where the cloud does not say; " +
			"`reason`: the cloud's word and what it means. See the Spot capacity guide.",
		Computed:      true,
		PlanModifiers: []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
		Attributes:    interruptionAttributes("the node"),
	}
}

// nodeInterruptionSchema is a node's computed `interruption`.
func nodeInterruptionSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		MarkdownDescription: "The cloud's interruption of this node, as the last refresh read it (as `hydra_gpu_instance`'s " +
			"`interruption`); null when there is none.",
		Computed:   true,
		Attributes: interruptionAttributes("the node"),
	}
}

// clusterReplaceWhenPreemptedSchema is the cluster's `replace_when_preempted`.
func clusterReplaceWhenPreemptedSchema() schema.BoolAttribute {
	return schema.BoolAttribute{
		MarkdownDescription: "Replace a cluster its cloud interrupted or gave notice of interrupting, on any node (see " +
			"`interruption`): the plan replaces the whole cluster under the same name (a cluster is one order at its cloud; no " +
			"cloud's cluster mechanism swaps one node) and says why. Default `true`. `false`: the plan shows the interruption and " +
			"changes nothing (`terraform apply -replace` it yourself).",
		Optional: true,
		Computed: true,
		Default:  booldefault.StaticBool(true),
	}
}

package controlplane

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// TestClusterNodeKeepsItsJumpHost: a node the cloud reports behind its cluster's login node (Verda's)
// keeps that jump host through the cluster record, so its provisioning, cluster check, marker and
// health reads go through the login node; a node reached directly has none.
func TestClusterNodeKeepsItsJumpHost(t *testing.T) {
	login := &cloudprovider.SSHEndpoint{Host: "203.0.113.9", Port: 22, User: "root"}
	for _, tc := range []struct {
		name string
		ssh  *cloudprovider.SSHEndpoint
	}{
		{"behind the login node", &cloudprovider.SSHEndpoint{Host: "10.1.1.11", Port: 22, User: "root", Jump: login}},
		{"direct", &cloudprovider.SSHEndpoint{Host: "198.51.100.7", Port: 22, User: "root"}},
	} {
		var rec ClusterRecord
		rec.observe(cloudprovider.Cluster{ID: "c1", Status: cloudprovider.StatusRunning, Nodes: []cloudprovider.ClusterNode{{
			Instance:  cloudprovider.Instance{ID: "n1", Name: "verda-vm-train--ab12cd34-1", Status: cloudprovider.StatusRunning, SSH: tc.ssh},
			PrivateIP: "10.1.1.11",
		}}})
		got := rec.Nodes[0].record().SSH
		if got == nil || got.Host != tc.ssh.Host || got.Jump != tc.ssh.Jump {
			t.Errorf("%s: the node's endpoint read back from its record is %+v, want %+v", tc.name, got, tc.ssh)
		}
	}
}

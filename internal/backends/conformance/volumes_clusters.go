package conformance

import (
	"slices"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// testClusterVolumes checks ClusterRequest.Volumes on a cloud that keeps shared volumes in the cluster
// offer's region: a cluster created with one has it on every node (the volume lists each node, or the
// cluster's own id where the cloud attaches volumes to the order) and every node says how it appears
// inside; deleting the cluster leaves the volume, detached, and it then deletes. A cloud without
// volumes, or without shared ones there, is skipped with the reason.
func testClusterVolumes(t *testing.T, h Harness, b cloudprovider.ClusterBackend, _ simulation.Admin) {
	vb, ok := b.(cloudprovider.VolumeBackend)
	if !ok {
		t.Skipf("%s keeps no volumes", h.Cloud)
	}
	offer := clusterOffer(t, b)
	if !slices.Contains(volumeTypes(t, vb)[cloudprovider.VolumeSharedFS], offer.Region) {
		t.Skipf("%s has no %s volumes in the cluster offer's region %s", h.Cloud, cloudprovider.VolumeSharedFS, offer.Region)
	}
	vreq := volumeRequest(t, h, "shared", cloudprovider.VolumeSharedFS, offer.Region)
	v, err := vb.CreateVolume(ctxFor(t), vreq)
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	req := clusterRequest(t, h, offer, "with-volume")
	req.Volumes = []cloudprovider.VolumeMount{{VolumeID: v.ID, MountPath: "/data"}}
	c, err := b.CreateCluster(ctxFor(t), req)
	if err != nil {
		t.Fatalf("CreateCluster with a shared volume: %v", err)
	}
	running := waitForCluster(t, b, c.ID, "running", clusterRunning)
	got, err := vb.GetVolume(ctxFor(t), v.ID)
	if err != nil {
		t.Fatalf("GetVolume: %v", err)
	}
	for _, n := range running.Nodes {
		if !slices.Contains(got.AttachedTo, n.ID) && !slices.Contains(got.AttachedTo, c.ID) {
			t.Errorf("the volume is attached to %v: neither node %s (%s) nor the cluster %s", got.AttachedTo, n.Name, n.ID, c.ID)
		}
		checkAttachment(t, b, n.Instance, got, "/data")
	}
	if err := b.DeleteCluster(ctxFor(t), c.ID); err != nil {
		t.Fatalf("DeleteCluster: %v", err)
	}
	left := waitForVolume(t, vb, v.ID, "no machine in AttachedTo", volumeDetached)
	if left.ID != v.ID {
		t.Fatalf("the volume did not outlive its cluster: %+v", left)
	}
	if err := vb.DeleteVolume(ctxFor(t), v.ID); err != nil {
		t.Errorf("DeleteVolume after the cluster's delete: %v", err)
	}
}

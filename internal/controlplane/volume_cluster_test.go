package controlplane

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// A cluster with a shared file system, on the Verda emulator (its clusters take NVMe_Shared volumes,
// FIN-03 has 2-node h200 clusters) and on the sandbox (sbx-eu-1's fabric): only the volume's cloud and
// region is offered (every other cloud says where the volume is: Lambda has no cluster API, the others'
// clusters are elsewhere), every node is ordered with the volume and provisioned with its attachment,
// the cluster's planned digest is the applied one, the volume's delete is refused naming the nodes, and
// the cluster's delete keeps the volume.
func TestClusterWithAVolume(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cloud, region, gpuType string
		others                 []string
		// elsewhere is a cluster offer of the cloud in another region.
		elsewhere ClusterPlan
	}{
		{cloud: "verda", region: "FIN-03", gpuType: "h200", others: []string{"lambda", "mithril"},
			elsewhere: ClusterPlan{Cloud: "verda", Pool: "verda-vm-pool", Region: "ICE-01", OfferID: "verda-vm-pool/ICE-01/4x32B200/ondemand@100.00"}},
		{cloud: "sandbox", region: "sbx-eu-1", gpuType: "h100", others: []string{"lambda", "verda"},
			elsewhere: ClusterPlan{Cloud: "sandbox", Pool: "sandbox-vm-pool", Region: "sbx-us-1", OfferID: "sandbox-vm-pool/sbx-us-1/2xgpu-h100x8/ondemand@40.00"}},
	}
	for _, tc := range cases {
		t.Run(tc.cloud, func(t *testing.T) {
			t.Parallel()
			clusterWithAVolume(t, tc.cloud, tc.region, tc.gpuType, tc.others, tc.elsewhere)
		})
	}
}

func clusterWithAVolume(t *testing.T, cloud, region, gpuType string, others []string, elsewhere ClusterPlan) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var backends []cloudprovider.InstanceManagerBackend
	for _, c := range append([]string{cloud}, others...) {
		backends = append(backends, volumeClouds[c](t))
	}
	prov := &volumeProvisioner{}
	cp := volumeCP(t, prov, backends...)
	rec, err := cp.CreateVolume(ctx, VolumeSpec{Name: "shared", Type: cloudprovider.VolumeSharedFS, SizeGB: 100, Cloud: cloud, Region: region})
	if err != nil {
		t.Fatal(err)
	}
	where := "volume shared is in " + cloud + "/" + region
	spec := ClusterSpec{Name: "train", GPUType: gpuType, GPUCount: 8, Nodes: 2, Kind: "vm", SSHPublicKeys: []string{backendtest.TestKey},
		ProvisioningVars: map[string]any{"team": "ml"}, Volumes: []VolumeUse{{ID: rec.ID, MountPath: "/shared"}}}

	offers, why, err := cp.ClusterOffers(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(offers) == 0 {
		t.Fatalf("no cluster offer where the volume is: %v", why)
	}
	for _, o := range offers {
		if o.Cloud != cloud || o.Region != region {
			t.Errorf("cluster offer %s is not in %s/%s", o.ID, cloud, region)
		}
	}
	for _, c := range others {
		if why[c] != where {
			t.Errorf("%s: %q, want where the volume is", c, why[c])
		}
	}

	plan, err := cp.PlanNewCluster(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A quote made before the volume was asked, elsewhere, is not reused, and not created from.
	if again, err := cp.PlanNewCluster(ctx, spec, &ClusterQuote{Plan: elsewhere}); err != nil || again.OfferID != plan.OfferID {
		t.Errorf("re-plan with a quote elsewhere: %s, %v; want %s", again.OfferID, err, plan.OfferID)
	}
	var me *MismatchError
	if _, err := cp.CreateCluster(ctx, spec, elsewhere, nil); !errors.As(err, &me) || me.Field != "volumes" ||
		!strings.Contains(err.Error(), where) {
		t.Errorf("creating a cluster elsewhere than its volume: %v", err)
	}
	crec, err := cp.CreateCluster(ctx, spec, plan, nil)
	if err != nil {
		t.Fatalf("CreateCluster: %v (record %+v)", err, crec)
	}
	var nodes []string
	for _, n := range crec.Nodes {
		nodes = append(nodes, n.Name)
	}
	slices.Sort(nodes)
	if len(nodes) != 2 || crec.Status != string(cloudprovider.StatusReady) {
		t.Fatalf("cluster %s with nodes %v", crec.Status, nodes)
	}
	prov.mu.Lock()
	provisioned := map[string]cloudprovider.ProvisionRequest{}
	for _, r := range prov.reqs {
		provisioned[r.Instance.Name] = r
	}
	prov.mu.Unlock()
	for _, n := range nodes {
		r, ok := provisioned[n]
		if !ok || len(r.Volumes) != 1 || r.Volumes[0].VolumeID != rec.CloudVolumeID || r.Volumes[0].MountPath != "/shared" || r.Volumes[0].Type != cloudprovider.VolumeSharedFS {
			t.Errorf("node %s provisioned (%v) with volumes %+v, want %s at /shared", n, ok, r.Volumes, rec.CloudVolumeID)
		}
		if _, ok := r.Vars[cloudprovider.VolumesVar]; !ok {
			t.Errorf("node %s: provisioning variables %v lack %s", n, r.Vars, cloudprovider.VolumesVar)
		}
	}
	// The cluster's digest is the one a plan of it computes.
	if change, err := cp.PlanClusterChange(spec, crec); err != nil || !change.DigestKnown || change.Digest != crec.ProvisioningDigest || change.Change != Keep {
		t.Errorf("plan of the created cluster: %+v, %v; want kept with digest %s", change, err, crec.ProvisioningDigest)
	}

	rec = waitVolume(t, ctx, cp, rec, "the nodes", func(r VolumeRecord, found bool) bool { return found && len(r.AttachedTo) == 2 })
	if !slices.Equal(rec.AttachedTo, nodes) {
		t.Errorf("volume attached to %v, want the nodes %v", rec.AttachedTo, nodes)
	}
	list := cp.Machines(ctx, []string{cloud})
	if i := slices.IndexFunc(list.Volumes, func(v ListedVolume) bool { return v.Volume.ID == rec.CloudVolumeID }); i < 0 || !slices.Equal(list.Volumes[i].UsedBy, nodes) {
		t.Errorf("Machines lists volumes %+v, want %s used by %v", list.Volumes, rec.CloudName, nodes)
	}
	if imp, err := cp.ImportCluster(ctx, cloud+"/"+crec.CloudClusterID); err != nil || len(imp.Volumes) != 1 || imp.Volumes[0].ID != rec.ID {
		t.Errorf("importing the cluster: volumes %+v, %v; want %s", imp.Volumes, err, rec.ID)
	}
	var inUse *VolumeInUseError
	if err := cp.DeleteVolume(ctx, rec); !errors.As(err, &inUse) || !strings.Contains(err.Error(), strings.Join(nodes, ", ")) {
		t.Errorf("deleting the cluster's volume: %v", err)
	}
	if err := cp.DeleteCluster(ctx, crec, time.Second); err != nil {
		t.Fatal(err)
	}
	rec = waitVolume(t, ctx, cp, rec, "the deleted cluster to let go", func(r VolumeRecord, found bool) bool {
		if !found {
			t.Fatal("deleting the cluster deleted its volume")
		}
		return len(r.AttachedTo) == 0
	})
	if err := cp.DeleteVolume(ctx, rec); err != nil {
		t.Fatal(err)
	}
}

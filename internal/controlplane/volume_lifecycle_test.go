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

// waitVolume polls RefreshVolume until done says so, for at most 30 s.
func waitVolume(t *testing.T, ctx context.Context, cp *ControlPlane, rec VolumeRecord, what string, done func(VolumeRecord, bool) bool) VolumeRecord {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := rec
		cp.forgetListings()
		found, err := cp.RefreshVolume(ctx, &r)
		if err != nil {
			t.Fatalf("RefreshVolume: %v", err)
		}
		if done(r, found) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume %s: waited 30s for %s; last %+v (found %v)", rec.ID, what, r, found)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mountPathOn is where the test mounts a volume on cloud's machines: /data, or /workspace on Prime
// Intellect, which mounts a pod's disk there itself.
func mountPathOn(cloud string) string {
	if cloud == "primeintellect" {
		return "/workspace"
	}
	return "/data"
}

// createWithVolume plans and creates machine name with rec mounted at mountPathOn(its cloud), checks what the
// provisioner was given and that the applied digest is the planned one, and returns the record.
func createWithVolume(t *testing.T, ctx context.Context, cp *ControlPlane, prov *volumeProvisioner, o cloudprovider.Offer, name string, rec VolumeRecord) Record {
	t.Helper()
	mount := mountPathOn(rec.Cloud)
	req := OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", AllowSpot: o.Spot, Volumes: []VolumeUse{{ID: rec.ID, MountPath: mount}}}
	vars := map[string]any{"team": "ml"}
	plan, err := cp.PlanNew(ctx, NewPlanRequest{Name: name, Request: req, Provisioning: PlannedProvisioning{Kind: "vm", Vars: vars, VarsKnown: true}})
	if err != nil {
		t.Fatalf("PlanNew: %v", err)
	}
	if plan.Cloud != rec.Cloud || plan.Offer.Region != rec.Region {
		t.Fatalf("planned %s (cloud %s), want an offer in the volume's %s/%s", plan.OfferID, plan.Cloud, rec.Cloud, rec.Region)
	}
	if !plan.DigestKnown || plan.Digest == "" {
		t.Fatalf("planned digest %q known %v", plan.Digest, plan.DigestKnown)
	}
	created, err := cp.Create(ctx, CreateRequest{Name: name, Request: req, OfferID: plan.OfferID, SSHPublicKeys: []string{backendtest.TestKey},
		BringUp: BringUpSpec{GPUType: o.GPUType, GPUCount: o.GPUCount, Vars: vars}}, nil)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got := created.Record
	if got.Status != cloudprovider.StatusReady {
		t.Fatalf("machine %s is %s (%s), want ready", got.Name, got.Status, got.ProvisioningError)
	}
	if got.ProvisioningDigest != plan.Digest {
		t.Errorf("applied digest %s, planned %s: the next plan would provision again", got.ProvisioningDigest, plan.Digest)
	}
	pr := prov.last(t)
	if pr.Instance.Name != got.Name || len(pr.Volumes) != 1 || pr.Volumes[0].VolumeID != rec.CloudVolumeID || pr.Volumes[0].MountPath != mount ||
		pr.Volumes[0].Type != rec.Type {
		t.Errorf("provisioned %s with volumes %+v, want volume %s (%s) at %s", pr.Instance.Name, pr.Volumes, rec.CloudVolumeID, rec.Type, mount)
	}
	a := pr.Volumes[0]
	if a.Device == "" && a.Source == "" && !a.MountedByCloud {
		t.Errorf("attachment %+v says neither a device, a source nor that the cloud mounts it", a)
	}
	if _, ok := pr.Vars[cloudprovider.VolumesVar]; !ok || pr.Vars["team"] != "ml" {
		t.Errorf("provisioning variables %v lack the user's or %s", pr.Vars, cloudprovider.VolumesVar)
	}
	return got
}

func TestVolumeLifecycleOnEmulators(t *testing.T) {
	t.Parallel()
	for _, cloud := range slices.Sorted(func(yield func(string) bool) {
		for c := range volumeClouds {
			if !yield(c) {
				return
			}
		}
	}) {
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := volumeClouds[cloud](t)
			prov := &volumeProvisioner{}
			cp := volumeCP(t, prov, b)
			vb := b.(cloudprovider.VolumeBackend)
			o, typ := volumeOffer(t, ctx, b)
			pool, _ := cp.volumePool(cloud)
			spec := VolumeSpec{Name: "data", Type: typ, SizeGB: 50, Cloud: cloud, Region: o.Region}

			// Plan: the type in the region, and a clear refusal elsewhere.
			if err := cp.PlanVolume(ctx, spec); err != nil {
				t.Fatalf("PlanVolume: %v", err)
			}
			nowhere := spec
			nowhere.Region = "nowhere-9"
			var re *RequestError
			if err := cp.PlanVolume(ctx, nowhere); !errors.As(err, &re) || re.Field != "region" ||
				!strings.Contains(err.Error(), cloud+" has no "+string(typ)+" volumes in nowhere-9; it has: ") {
				t.Errorf("PlanVolume in an unknown region: %v", err)
			}

			// Create: the first free token of the name, journal cleared, exact price as the cloud says.
			rec, err := cp.CreateVolume(ctx, spec)
			if err != nil {
				t.Fatalf("CreateVolume: %v", err)
			}
			wantName := cloudprovider.CloudName(pool, "data", VolumeToken("data", 0))
			if rec.ID != VolumeID(cloud, o.Region, "data") || rec.CloudName != wantName || rec.CloudVolumeID == "" || rec.Name != "data" ||
				rec.Type != typ || rec.Region != o.Region || len(rec.AttachedTo) != 0 {
				t.Fatalf("created %+v, want id %s named %s", rec, VolumeID(cloud, o.Region, "data"), wantName)
			}
			if v, err := vb.GetVolume(ctx, rec.CloudVolumeID); err != nil || v.PricePerMonth != rec.PricePerMonth {
				t.Errorf("record's price %v, the cloud's %v (%v)", rec.PricePerMonth, v.PricePerMonth, err)
			}
			if _, ok, _ := cp.volumeJournal().Get("data"); ok {
				t.Error("the volume's intent outlived its create")
			}
			if imp, err := cp.ImportVolume(ctx, cloud+"/"+rec.CloudVolumeID); err != nil || imp.ID != rec.ID || imp.CloudName != rec.CloudName {
				t.Errorf("ImportVolume = %+v, %v; want id %s", imp, err, rec.ID)
			}
			if _, err := cp.ImportVolume(ctx, cloud+"/no-such-volume"); !cloudprovider.IsNotFound(err) {
				t.Errorf("importing an unknown volume: %v, want not found", err)
			}

			// A machine with the volume: planned where it is, launched with it, provisioned with its attachment.
			m1 := createWithVolume(t, ctx, cp, prov, o, "train", rec)
			rec = waitVolume(t, ctx, cp, rec, "its machine", func(r VolumeRecord, found bool) bool { return found && len(r.AttachedTo) > 0 })
			if !slices.Equal(rec.AttachedTo, []string{m1.Name}) {
				t.Errorf("volume attached to %v, want [%s]", rec.AttachedTo, m1.Name)
			}
			if imp, found, err := cp.Import(ctx, m1.Name); err != nil || !found || len(imp.Volumes) != 1 || imp.Volumes[0].ID != rec.ID {
				t.Errorf("importing %s: volumes %+v (found %v, %v), want %s", m1.Name, imp.Volumes, found, err, rec.ID)
			}
			var inUse *VolumeInUseError
			if err := cp.DeleteVolume(ctx, rec); !errors.As(err, &inUse) || !slices.Equal(inUse.Machines, []string{m1.Name}) ||
				err.Error() != "used by "+m1.Name+"; destroy or change those first" {
				t.Errorf("deleting a used volume: %v", err)
			}
			cp.forgetListings()
			list := cp.Machines(ctx, nil)
			i := slices.IndexFunc(list.Volumes, func(v ListedVolume) bool { return v.Volume.Name == rec.CloudName })
			if i < 0 || list.Volumes[i].ID != rec.ID || !slices.Equal(list.Volumes[i].UsedBy, []string{m1.Name}) || list.Volumes[i].Ownership != OwnedUnrecorded {
				t.Errorf("Machines lists volumes %+v, want %s used by %s", list.Volumes, rec.CloudName, m1.Name)
			}

			// Replacing the machine (deleted, then created again at once, as Terraform replaces) keeps the
			// volume, and the next machine gets it.
			if err := cp.Terminate(ctx, InstanceRef{Name: m1.Name, ID: m1.ID}); err != nil {
				t.Fatalf("Terminate: %v", err)
			}
			m2 := createWithVolume(t, ctx, cp, prov, o, "train", rec)
			if m2.ID == m1.ID {
				t.Fatal("the replacement is the same machine")
			}
			rec = waitVolume(t, ctx, cp, rec, "the replacement", func(r VolumeRecord, found bool) bool {
				if !found {
					t.Fatal("deleting the machine deleted its volume")
				}
				return slices.Equal(r.AttachedTo, []string{m2.Name})
			})
			if err := cp.Terminate(ctx, InstanceRef{Name: m2.Name, ID: m2.ID}); err != nil {
				t.Fatalf("Terminate: %v", err)
			}
			rec = waitVolume(t, ctx, cp, rec, "the second machine to let go", func(r VolumeRecord, found bool) bool { return found && len(r.AttachedTo) == 0 })

			// Delete: gone, and gone again is success.
			if err := cp.DeleteVolume(ctx, rec); err != nil {
				t.Fatalf("DeleteVolume: %v", err)
			}
			waitVolume(t, ctx, cp, rec, "its delete", func(_ VolumeRecord, found bool) bool { return !found })
			if err := cp.DeleteVolume(ctx, rec); err != nil {
				t.Errorf("deleting a deleted volume: %v", err)
			}
		})
	}
}

// A volume create cut short is resumed under the name its intent journaled (the cloud's create is
// idempotent by name), never made twice; without an intent, a second volume of the name takes the
// next token (a create_before_destroy replacement).
func TestCreateVolumeResumesAndTakesTheFirstFreeToken(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := volumeClouds["verda"](t)
	cp := volumeCP(t, nil, b)
	vb := b.(cloudprovider.VolumeBackend)
	o, typ := volumeOffer(t, ctx, b)
	pool, _ := cp.volumePool("verda")
	spec := VolumeSpec{Name: "logs", Type: typ, SizeGB: 10, Cloud: "verda", Region: o.Region}
	token0 := VolumeToken("logs", 0)
	name0 := cloudprovider.CloudName(pool, "logs", token0)

	// The cut-short create: the volume made and its intent journaled, but no state holds it.
	left, err := vb.CreateVolume(ctx, cloudprovider.VolumeRequest{Name: name0, Type: typ, Region: o.Region, SizeGB: 10,
		Owner: cloudprovider.Ownership{Resource: "logs", Token: token0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.volumeJournal().Put(Intent{Resource: "logs", Token: token0, Pool: pool.Name, CloudName: name0, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if l := cp.Machines(ctx, nil).OrphanVolumes(); len(l) != 1 || l[0].Volume.ID != left.ID || l[0].Ownership != OwnedInterrupted {
		t.Errorf("orphan volumes %+v, want the cut-short %s", l, name0)
	}
	rec, err := cp.CreateVolume(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if rec.CloudVolumeID != left.ID || rec.CloudName != name0 {
		t.Errorf("resumed create gave %+v, want the left volume %s (%s)", rec, left.ID, name0)
	}
	if _, ok, _ := cp.volumeJournal().Get("logs"); ok {
		t.Error("the intent outlived the resumed create")
	}
	second, err := cp.CreateVolume(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := cloudprovider.CloudName(pool, "logs", VolumeToken("logs", 1)); second.CloudName != want || second.CloudVolumeID == left.ID {
		t.Errorf("second volume of the name is %s (%s), want %s, a new one", second.CloudName, second.CloudVolumeID, want)
	}
	all, err := vb.ListVolumes(ctx, cloudprovider.CloudName(pool, "logs", "")+cloudprovider.TokenSeparator)
	if err != nil || len(all) != 2 {
		t.Errorf("volumes of the name: %d (%v), want 2", len(all), err)
	}
	// Two live volumes of one name in one region: the id cannot be resolved, and says why.
	if _, err := cp.resolveVolume(ctx, rec.ID); cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !strings.Contains(err.Error(), "2 volumes of \"logs\"") {
		t.Errorf("resolving an ambiguous volume id: %v", err)
	}
}

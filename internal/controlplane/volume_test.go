package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/conformance"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
)

// The volume lifecycle runs against the emulators of the clouds that keep volumes (Verda, Lambda,
// Mithril, UpCloud, Prime Intellect), each over real HTTP on loopback with its real backend, and the sandbox; the provisioner is the in-test
// volumeProvisioner (the playbooks that mount are the provisioning package's tests).

// volumeClouds are the clouds that keep volumes; volumeCloud starts one's emulator and backend with its
// conformance harness, fresh per call.
var volumeClouds = []string{"lambda", "mithril", "primeintellect", "sandbox", "upcloud", "verda"}

func volumeCloud(t *testing.T, cloud string) cloudprovider.InstanceManagerBackend {
	b, _ := conformance.Start(t, cloud)
	return b
}

// volumeProvisioner records every provisioning request; its digest is the SHA-256 of the variables'
// JSON (keys sorted), so plan and apply digests can be compared.
type volumeProvisioner struct {
	mu   sync.Mutex
	reqs []cloudprovider.ProvisionRequest
}

func (p *volumeProvisioner) Digest(_ inventory.Pool, vars map[string]any) (string, error) {
	b, err := json.Marshal(vars)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:8]), nil
}

func (p *volumeProvisioner) Provision(_ context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	return cloudprovider.ProvisionResult{HostKey: "ssh-ed25519 AAAA"}, nil
}

func (p *volumeProvisioner) last(t *testing.T) cloudprovider.ProvisionRequest {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		t.Fatal("nothing was provisioned")
	}
	return p.reqs[len(p.reqs)-1]
}

// volumeCP is a control plane over backends with the in-test provisioner and a journal of its own.
func volumeCP(t *testing.T, prov cloudprovider.Provisioner, backends ...cloudprovider.InstanceManagerBackend) *ControlPlane {
	t.Helper()
	if prov == nil {
		prov = &volumeProvisioner{}
	}
	return New(testInventory(t), backends, Options{Provisioner: prov, Journal: Journal{Dir: t.TempDir()},
		PollInterval: 20 * time.Millisecond, PollMax: 100 * time.Millisecond, ProvisionBackoff: time.Millisecond, FleetQuiet: time.Millisecond})
}

// volumeOffer is an offer of b with stock in a region where b has a volume type (on-demand where b
// has one, only on-demand when alike are given), and that type (block first). Each of alike must offer
// its GPU type and count too, on demand with stock.
func volumeOffer(t *testing.T, ctx context.Context, b cloudprovider.InstanceManagerBackend, alike ...cloudprovider.InstanceManagerBackend) (cloudprovider.Offer, cloudprovider.VolumeType) {
	t.Helper()
	types, err := b.(cloudprovider.VolumeBackend).VolumeTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var others [][]cloudprovider.Offer
	for _, a := range alike {
		others = append(others, offersOnSale(t, ctx, a, false))
	}
	spots := []bool{false, true} // Mithril has only auctions (spot)
	if len(alike) > 0 {
		spots = spots[:1]
	}
	for _, spot := range spots {
		for _, o := range offersOnSale(t, ctx, b, spot) {
			if slices.ContainsFunc(others, func(offers []cloudprovider.Offer) bool {
				return !slices.ContainsFunc(offers, func(x cloudprovider.Offer) bool { return x.GPUType == o.GPUType && x.GPUCount == o.GPUCount })
			}) {
				continue
			}
			for _, typ := range []cloudprovider.VolumeType{cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS} {
				if slices.Contains(types[typ], o.Region) {
					return o, typ
				}
			}
		}
	}
	t.Fatalf("no offer of %s with stock in a region with volumes (volume types %v) whose GPUs the other %d clouds offer too", b.Cloud(), types, len(alike))
	return cloudprovider.Offer{}, ""
}

// offersOnSale is b's eligible offers of a GPU, spot or on-demand, with stock.
func offersOnSale(t *testing.T, ctx context.Context, b cloudprovider.InstanceManagerBackend, spot bool) []cloudprovider.Offer {
	t.Helper()
	offers, err := b.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(offers, func(o cloudprovider.Offer) bool {
		return o.GPUType == "" || o.Spot != spot || o.Available == 0 || o.Ineligible != ""
	})
}

// newVolume creates with cp a 10 GB volume "data" of b's cloud in the region of the offer volumeOffer
// finds, and returns that offer, the volume's spec and its record.
func newVolume(t *testing.T, ctx context.Context, cp *ControlPlane, b cloudprovider.InstanceManagerBackend) (cloudprovider.Offer, VolumeSpec, VolumeRecord) {
	t.Helper()
	o, typ := volumeOffer(t, ctx, b)
	spec := VolumeSpec{Name: "data", Type: typ, SizeGB: 10, Cloud: b.Cloud(), Region: o.Region}
	rec, err := cp.CreateVolume(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return o, spec, rec
}

// verdaVolume creates a volume on a fresh Verda emulator (newVolume), for a test whose cases wrap
// that backend; the context ends with the test.
func verdaVolume(t *testing.T) (context.Context, cloudprovider.InstanceManagerBackend, cloudprovider.Offer, VolumeSpec, VolumeRecord) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	vd := volumeCloud(t, "verda")
	o, spec, rec := newVolume(t, ctx, volumeCP(t, nil, vd), vd)
	return ctx, vd, o, spec, rec
}

// withVolume asks for a vm of o's GPU type and count with the volume rec mounted at /data.
func withVolume(o cloudprovider.Offer, rec VolumeRecord) OfferRequest {
	return OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", Volumes: []VolumeUse{{ID: rec.ID, MountPath: "/data"}}}
}

// createTrain creates the machine "train" of req with cp.
func createTrain(ctx context.Context, cp *ControlPlane, req OfferRequest) (Created, error) {
	return cp.Create(ctx, CreateRequest{Name: "train", Request: req, SSHPublicKeys: []string{backendtest.TestKey},
		BringUp: BringUpSpec{GPUType: req.GPUType, GPUCount: req.GPUCount}}, nil)
}

func TestVolumeIDs(t *testing.T) {
	cases := []struct {
		id                  string
		cloud, region, name string
		wantErr             bool
	}{
		{id: "verda/FIN-01/data", cloud: "verda", region: "FIN-01", name: "data"},
		{id: "lambda/us-east-1/my-fs", cloud: "lambda", region: "us-east-1", name: "my-fs"},
		{id: "verda/FIN-01", wantErr: true},
		{id: "verda//data", wantErr: true},
		{id: "verda/FIN-01/data/x", wantErr: true},
		{id: "", wantErr: true},
	}
	for _, tc := range cases {
		cloud, region, name, err := ParseVolumeID(tc.id)
		if (err != nil) != tc.wantErr || cloud != tc.cloud || region != tc.region || name != tc.name {
			t.Errorf("ParseVolumeID(%q) = %q %q %q %v", tc.id, cloud, region, name, err)
		}
		if !tc.wantErr && VolumeID(cloud, region, name) != tc.id {
			t.Errorf("VolumeID does not give %q back", tc.id)
		}
	}
}

func TestPlaceVolumes(t *testing.T) {
	cases := []struct {
		name    string
		uses    []VolumeUse
		want    string // "<cloud>/<region>" or the error's words
		wantErr bool
	}{
		{"none", nil, "", false},
		{"one", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/data"}}, "verda/FIN-01", false},
		{"two in one place", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/data"}, {ID: "verda/FIN-01/ckpt", MountPath: "/ckpt"}}, "verda/FIN-01", false},
		{"two clouds", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/data"}, {ID: "lambda/us-east-1/ckpt", MountPath: "/ckpt"}},
			"volume data is in verda/FIN-01, volume ckpt in lambda/us-east-1", true},
		{"two regions", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/data"}, {ID: "verda/FIN-02/ckpt", MountPath: "/ckpt"}},
			"volume ckpt in verda/FIN-02", true},
		{"relative path", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "data"}}, "must be an absolute path", true},
		{"root", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/"}}, "must be an absolute path other than /", true},
		{"same volume twice", []VolumeUse{{ID: "verda/FIN-01/data", MountPath: "/a"}, {ID: "verda/FIN-01/data", MountPath: "/b"}}, "given twice", true},
		{"same path twice", []VolumeUse{{ID: "verda/FIN-01/a", MountPath: "/d"}, {ID: "verda/FIN-01/b", MountPath: "/d/"}}, "two volumes are mounted at /d", true},
		{"bad id", []VolumeUse{{ID: "data", MountPath: "/d"}}, "is not <cloud>/<region>/<name>", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok, err := placeVolumes(tc.uses)
			var re *RequestError
			switch {
			case tc.wantErr && (!errors.As(err, &re) || re.Field != "volumes" || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want a RequestError on volumes saying %q", err, tc.want)
			case !tc.wantErr && err != nil:
				t.Errorf("error %v", err)
			case !tc.wantErr && ok != (tc.want != ""):
				t.Errorf("ok %v for %q", ok, tc.want)
			case !tc.wantErr && ok && p.String() != tc.want:
				t.Errorf("placed in %s, want %s", p, tc.want)
			}
		})
	}
}

func TestVolumeVarsInTheDigest(t *testing.T) {
	vars := map[string]any{"x": 1}
	if got := volumeVars(vars, nil); len(got) != 1 || got[cloudprovider.VolumesVar] != nil {
		t.Errorf("without volumes the variables must stay as they are (digests of machines without volumes unchanged): %v", got)
	}
	a := volumeVars(vars, []VolumeUse{{ID: "verda/FIN-01/b", MountPath: "/data/"}, {ID: "verda/FIN-01/a", MountPath: "/ckpt"}})
	b := volumeVars(vars, []VolumeUse{{ID: "verda/FIN-01/a", MountPath: "/ckpt"}, {ID: "verda/FIN-01/b", MountPath: "/data"}})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	want := `{"hydra_volumes":[{"mount_path":"/ckpt","volume_id":"verda/FIN-01/a"},{"mount_path":"/data","volume_id":"verda/FIN-01/b"}],"x":1}`
	if string(ja) != want || string(jb) != want {
		t.Errorf("volume vars\n%s\n%s\nwant (sorted by mount path, paths cleaned)\n%s", ja, jb, want)
	}
	if len(vars) != 1 {
		t.Errorf("the caller's variables were changed: %v", vars)
	}
	moved := volumeVars(vars, []VolumeUse{{ID: "verda/FIN-01/a", MountPath: "/other"}, {ID: "verda/FIN-01/b", MountPath: "/data"}})
	if jm, _ := json.Marshal(moved); string(jm) == want {
		t.Error("a changed mount path must change the digest's variables")
	}
}

// PlanVolume refuses, touching no cloud where it can, what no cloud could create, naming the attribute.
func TestPlanVolumeRefusals(t *testing.T) {
	t.Parallel()
	cp := volumeCP(t, nil, volumeCloud(t, sandbox.CloudName))
	ctx := context.Background()
	types, err := cp.VolumeRegions(ctx, cloudprovider.VolumeBlock)
	if err != nil || len(types[sandbox.CloudName]) == 0 {
		t.Fatalf("the sandbox's block regions: %v, %v", types, err)
	}
	region := types[sandbox.CloudName][0]
	ok := VolumeSpec{Name: "data", Type: cloudprovider.VolumeBlock, SizeGB: 10, Cloud: sandbox.CloudName, Region: region}
	cases := []struct {
		name  string
		edit  func(*VolumeSpec)
		field string // "" for no error; "unconfigured" for an *UnconfiguredError
		words string
	}{
		{"fine", func(*VolumeSpec) {}, "", ""},
		{"no name", func(s *VolumeSpec) { s.Name = "" }, "name", "must be non-empty"},
		{"slash in name", func(s *VolumeSpec) { s.Name = "a/b" }, "name", `without "/"`},
		{"unknown type", func(s *VolumeSpec) { s.Type = "ssd" }, "type", `unknown volume type "ssd"; expected "block" or "shared_fs"`},
		{"no size", func(s *VolumeSpec) { s.SizeGB = 0 }, "size_gb", "at least 1, got 0"},
		{"no region", func(s *VolumeSpec) { s.Region = "" }, "region", "needs a region"},
		{"unknown region", func(s *VolumeSpec) { s.Region = "nowhere-9" }, "region", "sandbox has no block volumes in nowhere-9; it has: block in " + region},
		{"unknown cloud", func(s *VolumeSpec) { s.Cloud = "nocloud" }, "cloud", `unknown cloud "nocloud"`},
		{"unconfigured cloud", func(s *VolumeSpec) { s.Cloud = "verda" }, "unconfigured", "verda"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok
			tc.edit(&spec)
			err := cp.PlanVolume(ctx, spec)
			var re *RequestError
			var ue *UnconfiguredError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("PlanVolume: %v", err)
			case tc.field == "unconfigured" && !errors.As(err, &ue):
				t.Errorf("PlanVolume: %v, want an UnconfiguredError", err)
			case tc.field != "" && tc.field != "unconfigured" && (!errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.words)):
				t.Errorf("PlanVolume: %v, want a RequestError on %s saying %q", err, tc.field, tc.words)
			}
		})
	}
}

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
	for _, cloud := range volumeClouds {
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := volumeCloud(t, cloud)
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
	b := volumeCloud(t, "verda")
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

// Backends that lack one volume ability each, built over a real one (interface embedding promotes only
// the embedded interfaces' methods).
type (
	noVolumeAPI struct {
		cloudprovider.InstanceManagerBackend
	}
	noVolumeLaunch struct {
		cloudprovider.InstanceManagerBackend
		cloudprovider.VolumeBackend
	}
	noVolumeAttacher struct {
		cloudprovider.InstanceManagerBackend
		cloudprovider.VolumeBackend
		cloudprovider.VolumeLauncher
	}
)

// Placement by volumes, across the three volume clouds' emulators: a machine with a volume is offered
// only the volume's cloud and region, every other cloud says where the volume is, and a request whose
// regions or pinned offer exclude it is refused saying so.
func TestOffersWhereTheVolumesAre(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vd, lb, mt := volumeCloud(t, "verda"), volumeCloud(t, "lambda"), volumeCloud(t, "mithril")
	cp := volumeCP(t, nil, vd, lb, mt)
	o, typ := volumeOffer(t, ctx, vd, lb)
	rec, err := cp.CreateVolume(ctx, VolumeSpec{Name: "data", Type: typ, SizeGB: 10, Cloud: "verda", Region: o.Region})
	if err != nil {
		t.Fatal(err)
	}
	where := "volume data is in verda/" + o.Region
	use := []VolumeUse{{ID: rec.ID, MountPath: "/data"}}
	req := OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", AllowSpot: true, Volumes: use}

	// Without the volume the other clouds compete; with it only Verda in its region does.
	free := req
	free.Volumes = nil
	all, err := cp.Offers(ctx, free, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cp.Offers(ctx, req, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Offers) == 0 {
		t.Fatalf("no offer where the volume is; rejections %+v", res.Rejections)
	}
	for _, o2 := range res.Offers {
		if o2.Cloud != "verda" || o2.Region != o.Region {
			t.Errorf("offer %s is not in verda/%s, where the volume is", o2.ID, o.Region)
		}
	}
	rejected := 0
	for _, r := range res.Rejections {
		switch {
		case r.Cloud == "verda":
			t.Errorf("the volume's cloud was rejected: %s", r.Reason)
		case r.Reason != where:
			t.Errorf("%s rejected with %q, want %q", r.Cloud, r.Reason, where)
		default:
			rejected++
		}
	}
	if !hasRejection(res, "lambda", where) {
		t.Errorf("lambda, which offers %dx %s, is not rejected for the volume: %+v", o.GPUCount, o.GPUType, res.Rejections)
	}

	// Regions that exclude the volume's.
	elsewhere := req
	elsewhere.Regions = []string{"nowhere-9"}
	res, err = cp.Offers(ctx, elsewhere, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Offers) != 0 || !hasRejection(res, "verda", where+", outside regions \"nowhere-9\"") {
		t.Errorf("offers %d, rejections %+v; want verda: %s, outside regions", len(res.Offers), res.Rejections, where)
	}

	// An offer pinned elsewhere is refused at plan and at apply, creating nothing.
	var pinned cloudprovider.Offer
	for _, o2 := range all.Offers {
		if o2.Cloud != "verda" || o2.Region != o.Region {
			pinned = o2
			break
		}
	}
	if pinned.ID == "" {
		t.Fatal("no offer outside the volume's place to pin")
	}
	_, err = cp.PlanNew(ctx, NewPlanRequest{Name: "pinned", Request: req, OfferID: pinned.ID})
	var rf *Refusal
	if !errors.As(err, &rf) || !strings.Contains(rf.Detail, "volume data is in verda/"+o.Region) {
		t.Errorf("planning %s with the volume: %v", pinned.ID, err)
	}
	_, err = cp.Create(ctx, CreateRequest{Name: "pinned", Request: req, OfferID: pinned.ID, SSHPublicKeys: []string{backendtest.TestKey}}, nil)
	var me *MismatchError
	if !errors.As(err, &me) || me.Field != "volumes" {
		t.Errorf("creating %s with the volume: %v", pinned.ID, err)
	}

	// Volumes in two places, or in a cloud not configured, are refused before any cloud is asked.
	two := req
	two.Volumes = append(use, VolumeUse{ID: "lambda/us-east-1/ckpt", MountPath: "/ckpt"})
	var re *RequestError
	if _, err := cp.Offers(ctx, two, false); !errors.As(err, &re) || re.Field != "volumes" || !strings.Contains(err.Error(), "one cloud and region") {
		t.Errorf("volumes in two clouds: %v", err)
	}
	away := req
	away.Volumes = []VolumeUse{{ID: "upcloud/fi-hel2/data", MountPath: "/data"}}
	if _, err := cp.Offers(ctx, away, false); !errors.As(err, &re) || !strings.Contains(err.Error(), "upcloud is not configured") {
		t.Errorf("a volume in an unconfigured cloud: %v", err)
	}
}

func hasRejection(res OfferResult, cloud, reason string) bool {
	for _, r := range res.Rejections {
		if r.Cloud == cloud && r.Reason == reason {
			return true
		}
	}
	return false
}

// A cloud whose backend lacks a volume ability says so: at the volume's plan (no volume API), at the
// machine's plan (no launch with volumes), and after the machine runs (no VolumeAttacher: the machine
// is kept, in error, with the reason, and nothing is provisioned).
func TestVolumeAbilitiesMissing(t *testing.T) {
	t.Parallel()
	ctx, vd, o, spec, rec := verdaVolume(t)
	req := withVolume(o, rec)

	cases := []struct {
		name    string
		backend cloudprovider.InstanceManagerBackend
		// volumeErr and offerWhy are PlanVolume's error and the cloud's rejection ("": none).
		volumeErr, offerWhy string
		// provisionErr is the create's provisioning error ("": the create is not tried).
		provisionErr string
	}{
		{name: "no volume API", backend: noVolumeAPI{vd},
			volumeErr: "verda has no volume API", offerWhy: "verda has no volume API, so its machines cannot have volume data"},
		{name: "no launch with volumes", backend: noVolumeLaunch{vd, vd.(cloudprovider.VolumeBackend)},
			offerWhy: "verda cannot create a machine with volumes (its backend has no launch with volumes)"},
		{name: "no attacher", backend: noVolumeAttacher{vd, vd.(cloudprovider.VolumeBackend), vd.(cloudprovider.VolumeLauncher)},
			provisionErr: "no VolumeAttacher"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prov := &volumeProvisioner{}
			cp := volumeCP(t, prov, tc.backend)
			err := cp.PlanVolume(ctx, spec)
			if tc.volumeErr == "" && err != nil || tc.volumeErr != "" && (err == nil || !strings.Contains(err.Error(), tc.volumeErr)) {
				t.Errorf("PlanVolume: %v, want %q", err, tc.volumeErr)
			}
			res, err := cp.Offers(ctx, req, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.offerWhy != "" {
				if len(res.Offers) != 0 || !hasRejection(res, "verda", tc.offerWhy) {
					t.Errorf("offers %d, rejections %+v; want verda: %s", len(res.Offers), res.Rejections, tc.offerWhy)
				}
				return
			}
			if len(res.Offers) == 0 {
				t.Fatalf("no offer: %+v", res.Rejections)
			}
			created, err := createTrain(ctx, cp, req)
			var pf *ProvisioningFailedError
			if !errors.As(err, &pf) || created.Record.ID == "" || created.Record.Status != cloudprovider.StatusError ||
				!strings.Contains(created.Record.ProvisioningError, tc.provisionErr) {
				t.Errorf("create: %v; record %+v; want the machine kept in error saying %q", err, created.Record, tc.provisionErr)
			}
			if len(prov.reqs) != 0 {
				t.Errorf("provisioned %d times without the volumes' attachments", len(prov.reqs))
			}
			if err := cp.Terminate(ctx, InstanceRef{Name: created.Record.Name, ID: created.Record.ID}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A cloud that mounts a volume itself at its own path (Prime Intellect mounts a pod's disk at
// /workspace, Facts.VolumeMountPath): another mount_path is refused before anything is created, naming
// the path to set (the data would not be where the user looks).
func TestVolumeMountedByTheCloudElsewhere(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := volumeCloud(t, "primeintellect")
	prov := &volumeProvisioner{}
	cp := volumeCP(t, prov, b)
	o, _, rec := newVolume(t, ctx, cp, b)
	req := withVolume(o, rec)
	var re *RequestError
	want := "primeintellect mounts a machine's volume at /workspace itself, not at mount_path /data; set mount_path = \"/workspace\""
	if err := cp.Validate(req); !errors.As(err, &re) || re.Field != "volumes" || !strings.Contains(re.Msg, want) {
		t.Errorf("Validate: %v; want an error on volumes saying %q", err, want)
	}
	if _, err := createTrain(ctx, cp, req); !errors.As(err, &re) {
		t.Errorf("create: %v; want the request refused", err)
	}
	if got := cp.Machines(ctx, []string{"primeintellect"}); len(got.Machines) != 0 {
		t.Errorf("machines after a refused create: %+v", got.Machines)
	}
	req.Volumes[0].MountPath = "/workspace/"
	if err := cp.Validate(req); err != nil {
		t.Errorf("Validate at the cloud's own path: %v", err)
	}
}

// lateAttacher answers its first failures Attachment calls with err, then as the real backend does.
type lateAttacher struct {
	noVolumeAttacher
	real     cloudprovider.VolumeAttacher
	err      error
	failures int
	calls    int
}

func (l *lateAttacher) Attachment(ctx context.Context, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) (cloudprovider.Attachment, error) {
	l.calls++
	if l.calls <= l.failures {
		return cloudprovider.Attachment{}, l.err
	}
	return l.real.Attachment(ctx, inst, v, mountPath)
}

// A volume the cloud has not attached yet (ErrOther) is asked about again until it is; a refusal
// (ErrInvalid) is not asked again and fails the bring-up.
func TestAttachmentAskedAgainUntilAttached(t *testing.T) {
	t.Parallel()
	ctx, vd, o, _, rec := verdaVolume(t)
	cases := []struct {
		name      string
		err       error
		wantCalls int
		wantReady bool
	}{
		{"not attached yet", cloudprovider.Errorf(cloudprovider.ErrOther, "verda", "reading", "volume not attached yet"), 3, true},
		{"refused", cloudprovider.Errorf(cloudprovider.ErrInvalid, "verda", "reading", "the machine has no such volume"), 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			late := &lateAttacher{noVolumeAttacher: noVolumeAttacher{vd, vd.(cloudprovider.VolumeBackend), vd.(cloudprovider.VolumeLauncher)},
				real: vd.(cloudprovider.VolumeAttacher), err: tc.err, failures: 2}
			prov := &volumeProvisioner{}
			cp := volumeCP(t, prov, late)
			created, err := createTrain(ctx, cp, withVolume(o, rec))
			ready := err == nil && created.Record.Status == cloudprovider.StatusReady && len(prov.reqs) == 1
			if ready != tc.wantReady || late.calls != tc.wantCalls {
				t.Errorf("create: %v, status %s, provisioned %d times, Attachment called %d times; want ready %v after %d calls",
					err, created.Record.Status, len(prov.reqs), late.calls, tc.wantReady, tc.wantCalls)
			}
			if !tc.wantReady && !strings.Contains(created.Record.ProvisioningError, "the machine has no such volume") {
				t.Errorf("provisioning error %q does not say the cloud's refusal", created.Record.ProvisioningError)
			}
			if err := cp.Terminate(ctx, InstanceRef{Name: created.Record.Name, ID: created.Record.ID}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// unlistedVolumes is a volume cloud whose volume listing fails.
type unlistedVolumes struct{ noVolumeAttacher }

func (unlistedVolumes) ListVolumes(context.Context, string) ([]cloudprovider.Volume, error) {
	return nil, cloudprovider.Errorf(cloudprovider.ErrOther, "verda", "listing volumes", "503 Service Unavailable")
}

// A cloud whose volumes cannot be listed is named in Machines()' Unreachable; its machines are still
// listed.
func TestMachinesNamesACloudWhoseVolumesCannotBeListed(t *testing.T) {
	t.Parallel()
	vd := volumeCloud(t, "verda")
	cp := volumeCP(t, nil, unlistedVolumes{noVolumeAttacher{vd, vd.(cloudprovider.VolumeBackend), vd.(cloudprovider.VolumeLauncher)}})
	res := cp.Machines(context.Background(), nil)
	if why := res.Unreachable["verda"]; !strings.HasPrefix(why, "volumes: ") || !strings.Contains(why, "503 Service Unavailable") || len(res.Volumes) != 0 {
		t.Errorf("unreachable %v, volumes %v; want verda's volumes named unreachable", res.Unreachable, res.Volumes)
	}
}

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
		backends = append(backends, volumeCloud(t, c))
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

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
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	lambdaemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	mithrilemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	primeemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	upcloudemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	verdaemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// The volume lifecycle runs against the emulators of the clouds that keep volumes (Verda, Lambda,
// Mithril, UpCloud, Prime Intellect), each over real HTTP on loopback with its real backend, and the sandbox; the provisioner is the in-test
// volumeProvisioner (the playbooks that mount are the provisioning package's tests).

// volumeClouds start each volume cloud's emulator and backend, fresh per call (machines boot in 300 ms).
var volumeClouds = map[string]func(t *testing.T) cloudprovider.InstanceManagerBackend{
	verda.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		srv := verdaemu.New(verdaemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}})
		cfg := verda.Config{ClientID: verdaemu.DefaultClientID, ClientSecret: verdaemu.DefaultClientSecret,
			BaseURL: backendtest.Serve(t, srv) + verdaemu.BasePath, Tuning: backendtest.Tuning(time.Millisecond, 50*time.Millisecond),
			DeleteRetryWait: 50 * time.Millisecond}
		return backendtest.Must(verda.New(cfg, backendtest.Inventory(t), nil))(t)
	},
	lambda.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		srv := lambdaemu.New(lambdaemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, TerminateDuration: 100 * time.Millisecond, LaunchInterval: -1})
		cfg := lambda.Config{APIKey: lambdaemu.DefaultAPIKey, BaseURL: backendtest.Serve(t, srv) + lambdaemu.BasePath,
			Tuning: backendtest.Tuning(time.Millisecond, 50*time.Millisecond), LaunchInterval: -1, UnhealthyGrace: 300 * time.Millisecond}
		return backendtest.Must(lambda.New(cfg, backendtest.Inventory(t), nil))(t)
	},
	// Prime Intellect's offers report no stock count.
	primeintellect.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		srv := primeemu.New(primeemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, DeleteDuration: 100 * time.Millisecond})
		cfg := primeintellect.Config{APIKey: primeemu.DefaultAPIKey, BaseURL: backendtest.Start(t, srv.Start),
			Tuning: backendtest.Tuning(10*time.Millisecond, 200*time.Millisecond), EmptyAvailabilityWait: 10 * time.Millisecond}
		return backendtest.Must(primeintellect.New(cfg, backendtest.Inventory(t), nil))(t)
	},
	upcloud.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		const user, pass = "hydra-sub", "s3cret-Pass!"
		srv := upcloudemu.New(upcloudemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, StopDuration: 100 * time.Millisecond,
			Username: user, Password: pass})
		cfg := upcloud.Config{Username: user, Password: pass, BaseURL: backendtest.Serve(t, srv) + upcloudemu.APIPrefix,
			Tuning: backendtest.Tuning(10*time.Millisecond, 200*time.Millisecond), PollInterval: 20 * time.Millisecond, DeleteTimeout: 20 * time.Second}
		return backendtest.Must(upcloud.New(cfg, backendtest.Inventory(t), nil))(t)
	},
	// The sandbox in process, over a directory of its own, without SSH machines.
	sandbox.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		cfg := sandbox.Config{Dir: t.TempDir(), BootTime: 300 * time.Millisecond, DeleteTime: 100 * time.Millisecond}
		return backendtest.Must(sandbox.New(cfg, backendtest.Inventory(t), nil))(t)
	},
	mithril.CloudName: func(t *testing.T) cloudprovider.InstanceManagerBackend {
		srv := mithrilemu.New(mithrilemu.Options{Options: simulation.Options{BootDuration: 300 * time.Millisecond}, PreemptionWindow: time.Second})
		cfg := mithril.Config{APIKey: mithrilemu.DefaultAPIKey, Project: mithrilemu.DefaultProject,
			BaseURL: backendtest.Start(t, srv.Start), Tuning: backendtest.Tuning(10*time.Millisecond, 200*time.Millisecond)}
		return backendtest.Must(mithril.New(cfg, backendtest.Inventory(t), nil))(t)
	},
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

// volumeOffer is an offer (on-demand where the cloud has one) with stock in a region where the cloud has a volume type, and that
// type (block first).
func volumeOffer(t *testing.T, ctx context.Context, b cloudprovider.InstanceManagerBackend) (cloudprovider.Offer, cloudprovider.VolumeType) {
	t.Helper()
	types, err := b.(cloudprovider.VolumeBackend).VolumeTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	offers, err := b.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, spot := range []bool{false, true} { // Mithril has only auctions (spot)
		for _, o := range offers {
			if o.GPUType == "" || o.Spot != spot || o.Available == 0 || o.Ineligible != "" {
				continue
			}
			for _, typ := range []cloudprovider.VolumeType{cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS} {
				if slices.Contains(types[typ], o.Region) {
					return o, typ
				}
			}
		}
	}
	t.Fatalf("no offer with stock in a region with volumes (volume types %v)", types)
	return cloudprovider.Offer{}, ""
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
	cp := volumeCP(t, nil, volumeClouds[sandbox.CloudName](t))
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

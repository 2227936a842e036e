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
	vd, lb, mt := volumeClouds["verda"](t), volumeClouds["lambda"](t), volumeClouds["mithril"](t)
	cp := volumeCP(t, nil, vd, lb, mt)
	o, typ := sharedOffer(t, ctx, vd, lb)
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

// sharedOffer is an offer of a (on-demand, with stock, in a region with volumes) whose GPU type and
// count b offers too, and a's volume type there.
func sharedOffer(t *testing.T, ctx context.Context, a, b cloudprovider.InstanceManagerBackend) (cloudprovider.Offer, cloudprovider.VolumeType) {
	t.Helper()
	types, err := a.(cloudprovider.VolumeBackend).VolumeTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ao, err := a.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bo, err := b.Offers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ao {
		if o.GPUType == "" || o.Spot || o.Available == 0 || o.Ineligible != "" || len(types[cloudprovider.VolumeBlock]) == 0 && len(types[cloudprovider.VolumeSharedFS]) == 0 {
			continue
		}
		for _, o2 := range bo {
			if o2.GPUType != o.GPUType || o2.GPUCount != o.GPUCount || o2.Available == 0 || o2.Ineligible != "" || o2.Spot {
				continue
			}
			for _, typ := range []cloudprovider.VolumeType{cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS} {
				if slices.Contains(types[typ], o.Region) {
					return o, typ
				}
			}
		}
	}
	t.Fatalf("no offer of %s with volumes whose GPUs %s offers too", a.Cloud(), b.Cloud())
	return cloudprovider.Offer{}, ""
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vd := volumeClouds["verda"](t)
	o, typ := volumeOffer(t, ctx, vd)
	spec := VolumeSpec{Name: "data", Type: typ, SizeGB: 10, Cloud: "verda", Region: o.Region}
	rec, err := volumeCP(t, nil, vd).CreateVolume(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	req := OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", Volumes: []VolumeUse{{ID: rec.ID, MountPath: "/data"}}}

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
			created, err := cp.Create(ctx, CreateRequest{Name: "train", Request: req, SSHPublicKeys: []string{backendtest.TestKey},
				BringUp: BringUpSpec{GPUType: o.GPUType, GPUCount: o.GPUCount}}, nil)
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
	b := volumeClouds["primeintellect"](t)
	prov := &volumeProvisioner{}
	cp := volumeCP(t, prov, b)
	o, typ := volumeOffer(t, ctx, b)
	rec, err := cp.CreateVolume(ctx, VolumeSpec{Name: "data", Type: typ, SizeGB: 10, Cloud: "primeintellect", Region: o.Region})
	if err != nil {
		t.Fatal(err)
	}
	req := OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", Volumes: []VolumeUse{{ID: rec.ID, MountPath: "/data"}}}
	var re *RequestError
	want := "primeintellect mounts a machine's volume at /workspace itself, not at mount_path /data; set mount_path = \"/workspace\""
	if err := cp.Validate(req); !errors.As(err, &re) || re.Field != "volumes" || !strings.Contains(re.Msg, want) {
		t.Errorf("Validate: %v; want an error on volumes saying %q", err, want)
	}
	if _, err := cp.Create(ctx, CreateRequest{Name: "train", Request: req, SSHPublicKeys: []string{backendtest.TestKey},
		BringUp: BringUpSpec{GPUType: o.GPUType, GPUCount: o.GPUCount}}, nil); !errors.As(err, &re) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vd := volumeClouds["verda"](t)
	o, typ := volumeOffer(t, ctx, vd)
	rec, err := volumeCP(t, nil, vd).CreateVolume(ctx, VolumeSpec{Name: "data", Type: typ, SizeGB: 10, Cloud: "verda", Region: o.Region})
	if err != nil {
		t.Fatal(err)
	}
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
			req := OfferRequest{GPUType: o.GPUType, GPUCount: o.GPUCount, Kind: "vm", Volumes: []VolumeUse{{ID: rec.ID, MountPath: "/data"}}}
			created, err := cp.Create(ctx, CreateRequest{Name: "train", Request: req, SSHPublicKeys: []string{backendtest.TestKey},
				BringUp: BringUpSpec{GPUType: o.GPUType, GPUCount: o.GPUCount}}, nil)
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
	vd := volumeClouds["verda"](t)
	cp := volumeCP(t, nil, unlistedVolumes{noVolumeAttacher{vd, vd.(cloudprovider.VolumeBackend), vd.(cloudprovider.VolumeLauncher)}})
	res := cp.Machines(context.Background(), nil)
	if why := res.Unreachable["verda"]; !strings.HasPrefix(why, "volumes: ") || !strings.Contains(why, "503 Service Unavailable") || len(res.Volumes) != 0 {
		t.Errorf("unreachable %v, volumes %v; want verda's volumes named unreachable", res.Unreachable, res.Volumes)
	}
}

package conformance

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// volumeSizeGB is the size of every volume the suite asks for.
const volumeSizeGB = 50

// RunVolumes runs the volume contract (cloudprovider.VolumeBackend, VolumeLauncher and VolumeAttacher)
// against h's emulator: the cloud names its volume types per region; a create is idempotent by name and
// the volume is read back by id and by prefix, changing nothing; a machine launched with it lists it in
// AttachedTo and says how it appears inside (checkAttachment), and so does a replacement launched with
// it after the first is gone; deleting it while attached is ErrInvalid and deletes nothing; deleting the machine
// leaves the volume, which then deletes, and deletes again as success; a volume of another region is
// refused at launch with ErrInvalid and nothing is created; an unknown id is ErrNotFound. Each case
// starts its own emulator and runs in parallel.
func RunVolumes(t *testing.T, h Harness) {
	t.Helper()
	runCases(t, h, "cloudprovider.VolumeBackend, VolumeLauncher and VolumeAttacher (every VolumeBackend must be all three)",
		[]suiteCase[volumeBackend]{
			{"Lifecycle", testVolumeLifecycle},
			{"OtherRegionRefusedAtLaunch", testVolumeOtherRegion},
			{"UnknownIsNotFound", testVolumeUnknown},
		})
}

// volumeBackend is a backend with every volume ability: the volume suite runs only on such.
type volumeBackend interface {
	cloudprovider.InstanceManagerBackend
	cloudprovider.VolumeBackend
	cloudprovider.VolumeLauncher
	cloudprovider.VolumeAttacher
}

// volumeTypes reads the cloud's volume types, failing when it has none.
func volumeTypes(t *testing.T, b cloudprovider.VolumeBackend) map[cloudprovider.VolumeType][]string {
	t.Helper()
	types, err := b.VolumeTypes(ctxFor(t))
	if err != nil {
		t.Fatalf("VolumeTypes: %v", err)
	}
	n := 0
	for typ, regions := range types {
		if typ != cloudprovider.VolumeBlock && typ != cloudprovider.VolumeSharedFS {
			t.Errorf("VolumeTypes names an unknown type %q", typ)
		}
		n += len(regions)
	}
	if n == 0 {
		t.Fatalf("VolumeTypes names no type in any region: %v", types)
	}
	return types
}

// volumeTypeIn is a type the cloud has in region (block first), or "".
func volumeTypeIn(types map[cloudprovider.VolumeType][]string, region string) cloudprovider.VolumeType {
	for _, typ := range []cloudprovider.VolumeType{cloudprovider.VolumeBlock, cloudprovider.VolumeSharedFS} {
		if slices.Contains(types[typ], region) {
			return typ
		}
	}
	return ""
}

// volumeRequest asks for a volume for resource name in the cloud's pool, with a fresh token.
func volumeRequest(t *testing.T, h Harness, name string, typ cloudprovider.VolumeType, region string) cloudprovider.VolumeRequest {
	pool := backendtest.Pool(t, h.Cloud)
	owner := cloudprovider.Ownership{Resource: name, Token: cloudprovider.NewOwnerToken()}
	return cloudprovider.VolumeRequest{Name: cloudprovider.CloudName(pool, name, owner.Token), Type: typ, Region: region,
		SizeGB: volumeSizeGB, Owner: owner}
}

// checkVolume checks a volume against its request.
func checkVolume(t *testing.T, h Harness, req cloudprovider.VolumeRequest, v cloudprovider.Volume) {
	t.Helper()
	if v.ID == "" || v.Name != req.Name || v.Region != req.Region || v.Type != req.Type || v.Cloud != h.Cloud {
		t.Errorf("volume %+v does not match its request %+v", v, req)
	}
	if v.SizeGB != 0 && v.SizeGB != req.SizeGB {
		t.Errorf("volume size %d GB, asked %d", v.SizeGB, req.SizeGB)
	}
	if v.Owner.Token != "" && v.Owner != req.Owner {
		t.Errorf("the cloud's ownership record of the volume is %+v, want %+v", v.Owner, req.Owner)
	}
	// The name is the ownership record every cloud keeps.
	if name, token, ok := cloudprovider.ParseCloudName(backendtest.Pool(t, h.Cloud), v.Name); !ok || name != req.Owner.Resource || token != req.Owner.Token {
		t.Errorf("the volume's name %q does not carry its ownership record %+v", v.Name, req.Owner)
	}
	if v.PricePerMonth < 0 {
		t.Errorf("volume price %v a month", v.PricePerMonth)
	}
}

// waitForVolume polls GetVolume until done says so, for at most 30 s.
func waitForVolume(t *testing.T, b cloudprovider.VolumeBackend, id, what string, done func(cloudprovider.Volume, error) bool) cloudprovider.Volume {
	t.Helper()
	return waitUntil(t, "volume", id, what, b.GetVolume, done, func(v cloudprovider.Volume) string { return fmt.Sprintf("%+v", v) })
}

// volumeDetached is the state the suite waits for a volume to reach once its machines are gone.
func volumeDetached(v cloudprovider.Volume, err error) bool {
	return err != nil || len(v.AttachedTo) == 0
}

// launchWith launches a machine of offer for resource name with volume v mounted at /data, and waits
// until the volume lists the machine in AttachedTo; it returns the machine and the volume then.
func launchWith(t *testing.T, h Harness, b volumeBackend, offer cloudprovider.Offer, name string, v cloudprovider.Volume) (cloudprovider.Instance, cloudprovider.Volume) {
	t.Helper()
	inst, err := b.CreateWithVolumes(ctxFor(t), request(t, h, offer, name),
		[]cloudprovider.VolumeMount{{VolumeID: v.ID, MountPath: "/data"}})
	if err != nil {
		t.Fatalf("CreateWithVolumes of %s with the volume: %v", name, err)
	}
	return inst, waitForVolume(t, b, v.ID, "machine "+inst.ID+" in AttachedTo", func(v cloudprovider.Volume, err error) bool {
		return err == nil && slices.Contains(v.AttachedTo, inst.ID)
	})
}

func testVolumeLifecycle(t *testing.T, h Harness, b volumeBackend, admin simulation.Admin) {
	offer := pickOffer(t, h, b)
	typ := volumeTypeIn(volumeTypes(t, b), offer.Region)
	if typ == "" {
		t.Fatalf("the cloud has no volume type in the offer's region %s", offer.Region)
	}
	req := volumeRequest(t, h, "data", typ, offer.Region)
	v, err := b.CreateVolume(ctxFor(t), req)
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	checkVolume(t, h, req, v)
	if again, err := b.CreateVolume(ctxFor(t), req); err != nil || again.ID != v.ID {
		t.Errorf("a second CreateVolume of the name: %+v, %v; want the same volume %s", again, err, v.ID)
	}

	// GetVolume and ListVolumes find it and change nothing at the cloud.
	before := stats(t, admin)
	got, err := b.GetVolume(ctxFor(t), v.ID)
	if err != nil {
		t.Fatalf("GetVolume: %v", err)
	}
	checkVolume(t, h, req, got)
	if len(got.AttachedTo) != 0 {
		t.Errorf("a new volume is attached to %v", got.AttachedTo)
	}
	pool := backendtest.Pool(t, h.Cloud)
	list, err := b.ListVolumes(ctxFor(t), pool.Prefix)
	if err != nil {
		t.Fatalf("ListVolumes: %v", err)
	}
	if n := len(slices.DeleteFunc(list, func(l cloudprovider.Volume) bool { return l.ID != v.ID })); n != 1 {
		t.Errorf("ListVolumes(%q) holds the volume %d times, want 1", pool.Prefix, n)
	}
	if none, err := b.ListVolumes(ctxFor(t), pool.Prefix+"no-such-"); err != nil || len(none) != 0 {
		t.Errorf("ListVolumes with a prefix nothing has: %d volumes, %v", len(none), err)
	}
	if after := stats(t, admin); after.Created != before.Created || len(after.Live) != len(before.Live) {
		t.Errorf("GetVolume and ListVolumes changed the cloud: before %+v, after %+v", before, after)
	}

	// A machine launched with it uses it; the volume cannot be deleted under it.
	inst, attached := launchWith(t, h, b, offer, "with-volume", v)
	if len(attached.AttachedTo) != 1 {
		t.Errorf("the volume is attached to %v, want only %s", attached.AttachedTo, inst.ID)
	}
	// The control plane asks how the volume appears once the machine runs.
	running := waitFor(t, b, inst.ID, "running", instanceRunning)
	checkAttachment(t, b, running, attached, "/data")
	err = b.DeleteVolume(ctxFor(t), v.ID)
	if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("DeleteVolume of an attached volume: %v, want an invalid-request error", err)
	}
	if _, err := b.GetVolume(ctxFor(t), v.ID); err != nil {
		t.Errorf("the attached volume is gone after a refused delete: %v", err)
	}

	// Deleting the machine leaves the volume, which then deletes, and deletes again.
	if err := b.Delete(ctxFor(t), inst.ID); err != nil {
		t.Fatalf("Delete of the machine: %v", err)
	}
	waitFor(t, b, inst.ID, "terminated", instanceGone)
	left := waitForVolume(t, b, v.ID, "no machine in AttachedTo", volumeDetached)
	if left.ID != v.ID {
		t.Fatalf("the volume did not outlive its machine: %+v", left)
	}

	// A replacement is a new create with the same volume: it gets it, and says how it appears.
	next, again := launchWith(t, h, b, offer, "replacement", v)
	checkAttachment(t, b, waitFor(t, b, next.ID, "running", instanceRunning), again, "/data")
	if err := b.Delete(ctxFor(t), next.ID); err != nil {
		t.Fatalf("Delete of the replacement: %v", err)
	}
	waitForVolume(t, b, v.ID, "no machine in AttachedTo", volumeDetached)
	if err := b.DeleteVolume(ctxFor(t), v.ID); err != nil {
		t.Fatalf("DeleteVolume: %v", err)
	}
	if _, err := b.GetVolume(ctxFor(t), v.ID); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetVolume of a deleted volume: %v, want a not-found error", err)
	}
	if list, err := b.ListVolumes(ctxFor(t), pool.Prefix); err != nil || len(list) != 0 {
		t.Errorf("ListVolumes after the delete: %+v, %v; want none", list, err)
	}
	if err := b.DeleteVolume(ctxFor(t), v.ID); err != nil {
		t.Errorf("DeleteVolume of a deleted volume: %v, want success", err)
	}
}

func testVolumeOtherRegion(t *testing.T, h Harness, b volumeBackend, admin simulation.Admin) {
	offer := pickOffer(t, h, b)
	types := volumeTypes(t, b)
	var regions []string
	for _, rs := range types {
		for _, r := range rs {
			if r != offer.Region && !slices.Contains(regions, r) {
				regions = append(regions, r)
			}
		}
	}
	if len(regions) == 0 {
		t.Fatalf("the cloud has volumes in no region but the offer's %s: %v", offer.Region, types)
	}
	sort.Strings(regions)
	req := volumeRequest(t, h, "elsewhere", volumeTypeIn(types, regions[0]), regions[0])
	v, err := b.CreateVolume(ctxFor(t), req)
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	ireq := request(t, h, offer, "wrong-region")
	_, err = b.CreateWithVolumes(ctxFor(t), ireq, []cloudprovider.VolumeMount{{VolumeID: v.ID, MountPath: "/data"}})
	if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid {
		t.Errorf("a launch in %s with a volume of %s: %v, want an invalid-request error", offer.Region, v.Region, err)
	}
	wantNothingMade(t, admin, "a refused launch")
	if list, err := b.List(ctxFor(t), ireq.Pool.Prefix); err != nil || len(list) != 0 {
		t.Errorf("List after a refused launch: %d machines, %v", len(list), err)
	}
	if got, err := b.GetVolume(ctxFor(t), v.ID); err != nil || len(got.AttachedTo) != 0 {
		t.Errorf("the volume after a refused launch: %+v, %v", got, err)
	}
}

func testVolumeUnknown(t *testing.T, _ Harness, b volumeBackend, _ simulation.Admin) {
	if _, err := b.GetVolume(ctxFor(t), unknownVolumeID); !cloudprovider.IsNotFound(err) {
		t.Errorf("GetVolume of an unknown id: %v, want a not-found error", err)
	}
	if err := b.DeleteVolume(ctxFor(t), unknownVolumeID); err != nil {
		t.Errorf("DeleteVolume of an unknown id: %v, want success", err)
	}
}

// checkAttachment asks b how volume v appears inside inst, which got it at launch to be mounted at
// mountPath, and checks the answer can be mounted: the volume and its type, the mount path echoed (a
// volume the cloud mounts itself may name the cloud's own path, logged), and exactly one way to mount it:
// a block volume's device under /dev, a source with its fstype (a network file system, a bind mount), or
// the cloud's own mount.
func checkAttachment(t *testing.T, b any, inst cloudprovider.Instance, v cloudprovider.Volume, mountPath string) {
	t.Helper()
	va, ok := b.(cloudprovider.VolumeAttacher)
	if !ok {
		t.Errorf("%T implements no cloudprovider.VolumeAttacher", b)
		return
	}
	a, err := va.Attachment(ctxFor(t), inst, v, mountPath)
	if err != nil {
		t.Errorf("Attachment of volume %s on machine %s: %v", v.ID, inst.ID, err)
		return
	}
	stated := "" // where the cloud mounts volumes itself, if it says (Facts.VolumeMountPath); plans ask for it
	if ib, ok := b.(cloudprovider.InstanceManagerBackend); ok {
		stated = cloudprovider.FactsOf(ib).VolumeMountPath
	}
	switch {
	case a.VolumeID != v.ID || a.Type != v.Type:
		t.Errorf("Attachment %+v: want volume %s, type %s", a, v.ID, v.Type)
	case a.MountedByCloud && !strings.HasPrefix(a.MountPath, "/"):
		t.Errorf("Attachment %+v: a volume the cloud mounts itself names where (an absolute path)", a)
	case a.MountPath != mountPath && (stated == "" || a.MountPath != stated):
		t.Errorf("Attachment %+v: want the mount path %s echoed (or the cloud's stated VolumeMountPath)", a, mountPath)
	}
	// Exactly one way to mount it: the cloud's own mount, a block volume's device, or a source (a network
	// file system, or a bind mount from where the cloud mounted it) with its fstype.
	ways := 0
	if a.MountedByCloud {
		ways++
	}
	if a.Device != "" {
		ways++
		if v.Type != cloudprovider.VolumeBlock || !strings.HasPrefix(a.Device, "/dev/") {
			t.Errorf("Attachment %+v: a device is a block volume's, under /dev", a)
		}
	}
	if a.Source != "" || a.FSType != "" {
		ways++
		if a.Source == "" || a.FSType == "" {
			t.Errorf("Attachment %+v: a source needs its fstype, and an fstype its source", a)
		}
	}
	if ways != 1 {
		t.Errorf("Attachment %+v: want exactly one of mounted by the cloud, a device, a source", a)
	}
}

// unknownVolumeID is an id no emulator gives (UUID-shaped, as some clouds' ids are).
const unknownVolumeID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"

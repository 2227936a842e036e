package verda

import (
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
)

// TestVolumes walks a volume through the behaviour Verda's clients document: a plain-text id at create,
// attached at an instance's create only in its location, attach and detach only while the instance is
// shut down, detached (not deleted) with its instance, deleted to the trash for 96 hours.
func TestVolumes(t *testing.T) {
	c, srv, base, tok := started(t)

	var types []verdaapi.VolumeType
	do(t, base, "GET", "/volume-types", tok, nil).json(t, &types)
	if len(types) != 3 || types[0].Type != "NVMe" || types[0].Price.PricePerMonthPerGB != 0.2 || types[0].Price.Currency != "usd" || !types[2].IsSharedFS {
		t.Errorf("volume types %+v", types)
	}
	r := do(t, base, "POST", "/volumes", tok, verdaapi.CreateVolumeRequest{Type: "NVMe", Name: "data", Size: 50, LocationCode: "FIN-01"})
	volID := string(r.body)
	if r.status != 202 || !strings.HasPrefix(r.ctype, "text/plain") || !uuidRE.MatchString(volID) {
		t.Fatalf("create: %d %s %q", r.status, r.ctype, r.body)
	}
	var v verdaapi.Volume
	do(t, base, "GET", "/volumes/"+volID, tok, nil).json(t, &v)
	if v.Status != "detached" || v.InstanceID != nil || v.Location != "FIN-01" || v.Size != 50 || v.MonthlyPrice != 10 {
		t.Errorf("new volume %+v", v)
	}

	create := func(loc string) resp {
		return do(t, base, "POST", "/instances", tok, map[string]any{"instance_type": "1H100.80S.30V", "image": "ubuntu-24.04",
			"hostname": "verda-vm-v", "description": "v", "location_code": loc, "existing_volumes": []string{volID}})
	}
	if r := create("FIN-02"); r.status != 400 {
		t.Errorf("an instance in another location with the volume: %d %s", r.status, r.body)
	}
	if st, _ := srv.Stats(); st.Created != 0 {
		t.Errorf("a refused create made %d instances", st.Created)
	}
	r = create("FIN-01")
	inst := string(r.body)
	if r.status != 200 {
		t.Fatalf("create instance: %d %s", r.status, r.body)
	}
	do(t, base, "GET", "/volumes/"+volID, tok, nil).json(t, &v)
	if v.Status != "attached" || v.InstanceID == nil || *v.InstanceID != inst || len(v.Instances) != 1 {
		t.Errorf("the volume after the create %+v", v)
	}
	if r := create("FIN-01"); r.status != 400 {
		t.Errorf("a block volume on a second instance: %d %s", r.status, r.body)
	}
	var got map[string]any
	do(t, base, "GET", "/instances/"+inst, tok, nil).json(t, &got)
	if ids, _ := got["volume_ids"].([]any); len(ids) != 1 || ids[0] != volID {
		t.Errorf("volume_ids %v", got["volume_ids"])
	}

	// Detach, delete and attach need the instance shut down.
	c.Advance(time.Minute)
	for _, body := range []map[string]any{{"id": volID, "action": "detach"}, {"id": []string{volID}, "action": "delete"}} {
		if r := do(t, base, "PUT", "/volumes", tok, body); r.status != 400 {
			t.Errorf("%v on a running instance: %d %s", body["action"], r.status, r.body)
		}
	}
	if r := do(t, base, "DELETE", "/volumes/"+volID, tok, nil); r.status != 400 {
		t.Errorf("DELETE of an attached volume of a running instance: %d %s", r.status, r.body)
	}
	do(t, base, "PUT", "/instances", tok, map[string]any{"id": inst, "action": "shutdown"})
	if r := do(t, base, "PUT", "/volumes", tok, map[string]any{"id": volID, "action": "detach"}); r.status != 202 {
		t.Errorf("detach from a shut-down instance: %d %s", r.status, r.body)
	}
	if r := do(t, base, "PUT", "/volumes", tok, map[string]any{"id": volID, "action": "attach", "instance_id": inst}); r.status != 202 {
		t.Errorf("attach to a shut-down instance: %d %s", r.status, r.body)
	}

	// Deleting the instance detaches the volume.
	if r := do(t, base, "PUT", "/instances", tok, map[string]any{"id": inst, "action": "delete"}); r.status != 202 {
		t.Fatalf("delete instance: %d %s", r.status, r.body)
	}
	do(t, base, "GET", "/volumes/"+volID, tok, nil).json(t, &v)
	if v.Status != "detached" || v.InstanceID != nil {
		t.Errorf("the volume after its instance's delete %+v", v)
	}

	// Deleted: in the trash (still readable) for 96 hours, then gone.
	if r := do(t, base, "DELETE", "/volumes/"+volID, tok, nil); r.status != 202 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	var list, trash []verdaapi.Volume
	do(t, base, "GET", "/volumes", tok, nil).json(t, &list)
	do(t, base, "GET", "/volumes/trash", tok, nil).json(t, &trash)
	if len(list) != 0 || len(trash) != 1 || trash[0].Status != "deleted" || trash[0].DeletedAt == nil {
		t.Errorf("after the delete: list %+v, trash %+v", list, trash)
	}
	c.Advance(TrashRetention - time.Second)
	tok = login(t, base).AccessToken // tokens last an hour
	if r := do(t, base, "GET", "/volumes/"+volID, tok, nil); r.status != 200 {
		t.Errorf("a trashed volume before 96 h: %d %s", r.status, r.body)
	}
	c.Advance(time.Second)
	tok = login(t, base).AccessToken
	if r := do(t, base, "GET", "/volumes/"+volID, tok, nil); r.status != 404 {
		t.Errorf("a trashed volume after 96 h: %d %s", r.status, r.body)
	}
}

// TestVolumeTargets checks how volumes appear as Verda reports them: block volumes get the disk names
// after the OS volume's vda in the order they are attached, freed when detached; a shared volume is no
// disk but an NFS export whose endpoint, pseudo path and mount commands agree, created, exported while
// attached, detached after.
func TestVolumeTargets(t *testing.T) {
	c, _, base, tok := started(t)
	mk := func(typ, name string) string {
		r := do(t, base, "POST", "/volumes", tok, verdaapi.CreateVolumeRequest{Type: typ, Name: name, Size: 10, LocationCode: "FIN-01"})
		if r.status != 202 {
			t.Fatalf("create %s: %d %s", name, r.status, r.body)
		}
		return string(r.body)
	}
	one, two, lib := mk("NVMe", "one"), mk("HDD", "two"), mk("NVMe_Shared", "lib")
	get := func(id string) verdaapi.Volume {
		var v verdaapi.Volume
		do(t, base, "GET", "/volumes/"+id, tok, nil).json(t, &v)
		return v
	}
	if v := get(lib); v.Status != "created" || v.Target == nil || v.PseudoPath == nil || v.MountCommand == nil ||
		*v.Target != "nfs.fin-01.datacrunch.io:"+*v.PseudoPath || !strings.HasPrefix(*v.PseudoPath, "/lib-") ||
		*v.MountCommand != "mount -t nfs -o nconnect=16 "+*v.Target+" /mnt/lib" || !strings.Contains(deref(v.FilesystemToFstabCommand), *v.Target+" /mnt/lib nfs") {
		t.Errorf("a new shared volume %+v", v)
	}
	if v := get(one); v.Target != nil || v.PseudoPath != nil {
		t.Errorf("a detached block volume reports target %v, pseudo path %v", v.Target, v.PseudoPath)
	}
	r := do(t, base, "POST", "/instances", tok, map[string]any{"instance_type": "1H100.80S.30V", "image": "ubuntu-24.04",
		"hostname": "verda-vm-t", "description": "t", "location_code": "FIN-01", "existing_volumes": []string{two, lib, one}})
	if r.status != 200 {
		t.Fatalf("create instance: %d %s", r.status, r.body)
	}
	inst := string(r.body)
	for id, want := range map[string]string{two: "vdb", one: "vdc"} {
		if v := get(id); v.Status != "attached" || deref(v.Target) != want {
			t.Errorf("block volume %s: status %s, target %q; want attached at %s", v.Name, v.Status, deref(v.Target), want)
		}
	}
	if v := get(lib); v.Status != "exported" || len(v.Instances) != 1 {
		t.Errorf("the attached shared volume: %+v", v)
	}
	c.Advance(time.Minute)
	for _, a := range []map[string]any{{"id": inst, "action": "shutdown"}} {
		if r := do(t, base, "PUT", "/instances", tok, a); r.status != 202 {
			t.Fatalf("%v: %d %s", a, r.status, r.body)
		}
	}
	if r := do(t, base, "PUT", "/volumes", tok, map[string]any{"id": []string{two, lib}, "action": "detach"}); r.status != 202 {
		t.Fatalf("detach: %d %s", r.status, r.body)
	}
	if v := get(lib); v.Status != "detached" {
		t.Errorf("the shared volume after its detach: %s", v.Status)
	}
	if r := do(t, base, "PUT", "/volumes", tok, map[string]any{"id": two, "action": "attach", "instance_id": inst}); r.status != 202 {
		t.Fatalf("attach: %d %s", r.status, r.body)
	}
	if v := get(two); deref(v.Target) != "vdb" {
		t.Errorf("a block volume attached again takes the free vdb, not %q", deref(v.Target))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

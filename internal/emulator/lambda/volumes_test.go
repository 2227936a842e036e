package lambda

import (
	"testing"
)

// TestFileSystems walks a file system through Lambda's documented answers: created in a region, mounted
// only at launch (by name at /lambda/nfs/<name>, by id at a path under /home, /lambda/nfs or /data),
// refused for a launch of another region, not deletable while mounted, deletable after its instance is
// terminated.
func TestFileSystems(t *testing.T) {
	s, _ := newServer(t, Options{})
	addKey(t, s, "k")
	created := call(t, s, "POST", BasePath+"/filesystems", map[string]any{"name": "fs-a", "region": "us-east-1"})
	fs := created.dataMap()
	id, _ := fs["id"].(string)
	if created.status != 200 || id == "" || fs["mount_point"] != "/lambda/nfs/fs-a" || fs["is_in_use"] != false {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	if region, _ := fs["region"].(map[string]any); region["name"] != "us-east-1" {
		t.Errorf("region %v", fs["region"])
	}
	if a := call(t, s, "POST", BasePath+"/filesystems", map[string]any{"name": "fs-a", "region": "us-east-1"}); a.status != 400 || a.errCode() != "global/duplicate" {
		t.Errorf("a duplicate name: %d %s", a.status, a.raw)
	}

	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"other region", map[string]any{"region_name": "us-west-1", "file_system_names": []string{"fs-a"}},
			400, "instance-operations/launch/file-system-in-wrong-region"},
		{"other region by id", map[string]any{"region_name": "us-west-1", "file_system_mounts": []map[string]any{{"file_system_id": id, "mount_point": "/data"}}},
			400, "instance-operations/launch/file-system-in-wrong-region"},
		{"unknown name", map[string]any{"file_system_names": []string{"nope"}}, 400, "global/object-does-not-exist"},
		{"mount point outside the roots", map[string]any{"file_system_mounts": []map[string]any{{"file_system_id": id, "mount_point": "/mnt/x"}}},
			400, "global/invalid-parameters"},
		{"mount point outside the pattern", map[string]any{"file_system_mounts": []map[string]any{{"file_system_id": id, "mount_point": "/data/my_ckpt"}}},
			400, "global/invalid-parameters"},
	} {
		if a := launch(t, s, tc.body); a.status != tc.status || a.errCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, a.status, a.raw, tc.status, tc.code)
		}
	}
	if n := len(s.Instances()); n != 0 {
		t.Fatalf("refused launches left %d instances", n)
	}

	inst := launchedID(t, launch(t, s, map[string]any{"file_system_mounts": []map[string]any{{"file_system_id": id, "mount_point": "/data/work"}}}))
	got := call(t, s, "GET", BasePath+"/instances/"+inst, nil).dataMap()
	names, _ := got["file_system_names"].([]any)
	mounts, _ := got["file_system_mounts"].([]any)
	if len(names) != 1 || names[0] != "fs-a" || len(mounts) != 1 || mounts[0].(map[string]any)["mount_point"] != "/data/work" {
		t.Errorf("the instance's file systems: names %v, mounts %v", names, mounts)
	}
	if fss := s.FileSystems(); len(fss) != 1 || !fss[0].InUse {
		t.Errorf("file systems %+v, want fs-a in use", fss)
	}
	if a := call(t, s, "DELETE", BasePath+"/filesystems/"+id, nil); a.status != 400 || a.errCode() != "filesystems/filesystem-in-use" {
		t.Errorf("deleting a mounted file system: %d %s", a.status, a.raw)
	}
	if a := call(t, s, "POST", BasePath+"/instance-operations/terminate", map[string]any{"instance_ids": []string{inst}}); a.status != 200 {
		t.Fatalf("terminate: %d %s", a.status, a.raw)
	}
	list, _ := call(t, s, "GET", BasePath+"/file-systems", nil).data().([]any)
	if len(list) != 1 || list[0].(map[string]any)["is_in_use"] != false {
		t.Errorf("after the terminate the file systems are %v", list)
	}
	deleted := call(t, s, "DELETE", BasePath+"/filesystems/"+id, nil)
	if ids, _ := deleted.dataMap()["deleted_ids"].([]any); deleted.status != 200 || len(ids) != 1 || ids[0] != id {
		t.Errorf("delete: %d %s", deleted.status, deleted.raw)
	}
	if a := call(t, s, "DELETE", BasePath+"/filesystems/"+id, nil); a.status != 404 || a.errCode() != "global/object-does-not-exist" {
		t.Errorf("deleting it again: %d %s", a.status, a.raw)
	}
}

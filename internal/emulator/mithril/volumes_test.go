package mithril

import (
	"testing"
)

// TestVolumes checks the VolumeModel answers and refusals: the name pattern (422), a volume of another
// region at a bid, a Block volume at a second live bid, deletion refused while a bid uses the volume,
// deleted volumes listed only with include_deleted.
func TestVolumes(t *testing.T) {
	_, _, srv, fid := auctionServer(t)
	proj := ProjectFID(DefaultProject)
	create := func(name, region string) (int, map[string]any) {
		var v map[string]any
		code := call(t, srv.URL, "POST", "/v2/volumes", map[string]any{"name": name, "project": proj, "disk_interface": "Block", "region": region, "size_gb": 100}, &v)
		return code, v
	}
	if code, _ := create("Data_1", "us-central1-a"); code != 422 {
		t.Errorf("a name outside the pattern: %d", code)
	}
	code, v := create("data-1", "us-central1-a")
	volFID, _ := v["fid"].(string)
	if code != 201 || v["capacity_gb"] != float64(100) || v["interface"] != "Block" || v["deleted_at"] != nil || len(v["bids"].([]any)) != 0 {
		t.Fatalf("create: %d %v", code, v)
	}
	_, other := create("data-2", "us-central1-b")

	bidWith := func(name string, vols ...string) (int, map[string]any) {
		body := bidBody(name, fid, "us-central1-a", "$10.00")
		body["launch_specification"] = map[string]any{"volumes": vols, "ssh_keys": []string{}}
		var b map[string]any
		return call(t, srv.URL, "POST", "/v2/spot/bids", body, &b), b
	}
	if code, _ := bidWith("wrong-region", other["fid"].(string)); code != 400 {
		t.Errorf("a bid with a volume of another region: %d", code)
	}
	code, b := bidWith("with-volume", volFID)
	if code != 201 {
		t.Fatalf("a bid with the volume: %d %v", code, b)
	}
	if code, _ := bidWith("second", volFID); code != 400 {
		t.Errorf("a second live bid with a Block volume: %d", code)
	}
	var list []map[string]any
	call(t, srv.URL, "GET", "/v2/volumes?project="+proj+"&region=us-central1-a", nil, &list)
	if len(list) != 1 || len(list[0]["bids"].([]any)) != 1 || list[0]["bids"].([]any)[0] != b["fid"] {
		t.Errorf("the volume with its bid: %v", list)
	}
	if code := call(t, srv.URL, "DELETE", "/v2/volumes/"+volFID, nil, nil); code != 409 {
		t.Errorf("deleting a volume in use: %d", code)
	}
	if code := call(t, srv.URL, "DELETE", "/v2/spot/bids/"+b["fid"].(string), nil, nil); code != 204 {
		t.Fatalf("cancel: %d", code)
	}
	if code := call(t, srv.URL, "DELETE", "/v2/volumes/"+volFID, nil, nil); code != 204 {
		t.Errorf("deleting the volume after its bid's cancel: %d", code)
	}
	call(t, srv.URL, "GET", "/v2/volumes?project="+proj, nil, &list)
	if len(list) != 1 || list[0]["name"] != "data-2" {
		t.Errorf("volumes after the delete: %v", list)
	}
	call(t, srv.URL, "GET", "/v2/volumes?project="+proj+"&include_deleted=true", nil, &list)
	if len(list) != 2 || list[0]["deleted_at"] == nil {
		t.Errorf("with include_deleted: %v", list)
	}
	if code := call(t, srv.URL, "DELETE", "/v2/volumes/"+volFID, nil, nil); code != 404 {
		t.Errorf("deleting a deleted volume: %d", code)
	}
}

package primeintellect

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// pod is a create body for a runpod item: the A100 SXM4 in US-KS-2, or the H100 SXM5 in CA-MTL-1.
func pod(name string, dc string, disks ...string) string {
	spec := map[string]any{"name": name, "cloudId": "NVIDIA A100-SXM4-80GB", "gpuType": "A100_80GB", "socket": "SXM4",
		"gpuCount": 1, "maxPrice": 10, "dataCenterId": dc}
	if dc == "CA-MTL-1" {
		spec["cloudId"], spec["gpuType"], spec["socket"] = "NVIDIA H100 80GB HBM3", "H100_80GB", "SXM5"
	}
	body := map[string]any{"pod": spec, "provider": map[string]any{"type": "runpod"}}
	if disks != nil {
		body["disks"] = disks
	}
	b, _ := json.Marshal(body)
	return string(b)
}

// TestDiskCreateValidation checks the create body as Prime's document states it: size required and
// positive, no unknown field in disk (additionalProperties false), a provider; and the place must sell
// disks.
func TestDiskCreateValidation(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		loc        string // the 422's loc, joined with "."
	}{
		{"no disk", `{"provider":{"type":"runpod"}}`, 422, "body.disk"},
		{"no size", `{"disk":{"name":"x","dataCenterId":"US-KS-2"},"provider":{"type":"runpod"}}`, 422, "body.disk.size"},
		{"zero size", `{"disk":{"size":0,"dataCenterId":"US-KS-2"},"provider":{"type":"runpod"}}`, 422, "body.disk.size"},
		{"unknown field", `{"disk":{"size":10,"dataCenterId":"US-KS-2","type":"block"},"provider":{"type":"runpod"}}`, 422, "body.disk.type"},
		{"no provider", `{"disk":{"size":10,"dataCenterId":"US-KS-2"}}`, 422, "body.provider.type"},
		{"no disks sold there", `{"disk":{"size":10,"dataCenterId":"us-east-1"},"provider":{"type":"lambdalabs"}}`, 400, ""},
		{"above the maximum", `{"disk":{"size":9000,"dataCenterId":"US-KS-2"},"provider":{"type":"runpod"}}`, 400, ""},
		{"fine", `{"disk":{"size":10,"name":"d","dataCenterId":"US-KS-2","country":"US","cloudId":null},"provider":{"type":"runpod"},"team":null}`, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, raw := do(t, New(Options{}), http.MethodPost, "/api/v1/disks/", tc.body)
			if code != tc.status {
				t.Fatalf("%d %s, want %d", code, raw, tc.status)
			}
			if tc.loc != "" {
				d, _ := body["detail"].([]any)
				if len(d) != 1 {
					t.Fatalf("422 detail %s", raw)
				}
				var loc []string
				for _, l := range d[0].(map[string]any)["loc"].([]any) {
					loc = append(loc, fmt.Sprint(l))
				}
				if strings.Join(loc, ".") != tc.loc {
					t.Errorf("loc %v, want %s", loc, tc.loc)
				}
			}
			if code == 400 {
				if _, ok := body["detail"].(string); !ok {
					t.Errorf("a 400 without a {detail} string: %s", raw)
				}
			}
		})
	}
}

// TestDiskLifecycle walks a disk through its documented life: created PROVISIONING then ACTIVE with the
// place's price per GB and hour; listed; renamed; attached only at a pod's create and only to a pod of
// its provider and data center (a refused create makes no pod); listed in the pod's attachedResources,
// mounted at /workspace once the pod runs, and in the disk's pods; not deletable while the pod lives;
// deletable after, DELETING then TERMINATED, then gone.
func TestDiskLifecycle(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{BootDuration: 20 * time.Second, Now: c.Now}, DeleteDuration: 3 * time.Second,
		TerminatedRetention: time.Minute})
	code, d, raw := do(t, s, http.MethodPost, "/api/v1/disks/", `{"disk":{"size":50,"name":"primeintellect-vm-data--ab12cd34","dataCenterId":"US-KS-2","country":"US"},"provider":{"type":"runpod"}}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, raw)
	}
	id, _ := d["id"].(string)
	if len(id) != 36 || d["status"] != "PROVISIONING" || d["size"] != 50.0 || d["providerType"] != "runpod" {
		t.Fatalf("created disk %s", raw)
	}
	if price := d["priceHr"].(float64); price < 50*0.00014-1e-12 || price > 50*0.00014+1e-12 {
		t.Errorf("priceHr %v, want 50 GB at 0.00014 $/GB/h", price)
	}
	// APIDiskConfig's properties, as Prime's OpenAPI document lists them.
	if keys := strings.Join(slices.Sorted(maps.Keys(d)), ","); keys != "clusters,createdAt,id,info,name,pods,priceHr,providerType,provisioningPriceHr,size,status,stoppedPriceHr,teamId,terminatedAt,updatedAt,userId,walletId" {
		t.Errorf("disk keys %s, not APIDiskConfig's", keys)
	}
	info, _ := d["info"].(map[string]any)
	if info["dataCenterId"] != "US-KS-2" || info["country"] != "US" {
		t.Errorf("info %v", info)
	}
	c.Advance(10 * time.Second)
	if _, got, _ := do(t, s, http.MethodGet, "/api/v1/disks/"+id, ""); got["status"] != "ACTIVE" {
		t.Errorf("after provisioning: %v", got["status"])
	}
	if code, got, raw := do(t, s, http.MethodPatch, "/api/v1/disks/"+id, `{"name":"renamed"}`); code != 200 || got["name"] != "renamed" {
		t.Errorf("rename: %d %s", code, raw)
	}
	_, _, _ = do(t, s, http.MethodPatch, "/api/v1/disks/"+id, `{"name":"primeintellect-vm-data--ab12cd34"}`)
	if _, list, _ := do(t, s, http.MethodGet, "/api/v1/disks/?offset=0&limit=10", ""); list["total_count"] != 1.0 || len(list["data"].([]any)) != 1 {
		t.Errorf("list %v", list)
	}

	// The GPUs co-located with the disk are runpod's in US-KS-2 only.
	_, av, raw := do(t, s, http.MethodGet, "/api/v1/availability/gpus?disks="+id, "")
	items, _ := av["items"].([]any)
	if len(items) == 0 {
		t.Fatalf("no GPU co-located with the disk: %s", raw)
	}
	for _, it := range items {
		m := it.(map[string]any)
		if m["provider"] != "runpod" || m["dataCenter"] != "US-KS-2" {
			t.Errorf("availability with disks= lists %v in %v", m["provider"], m["dataCenter"])
		}
	}
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/availability/gpus?disks=nope", ""); code != 404 {
		t.Errorf("availability with an unknown disk: %d, want 404", code)
	}

	// A pod of another data center (or an unknown disk) is refused, and nothing is created.
	for _, body := range []string{pod("elsewhere", "CA-MTL-1", id), pod("unknown", "US-KS-2", "nope")} {
		if code, got, raw := do(t, s, http.MethodPost, "/api/v1/pods/", body); code != 400 || got["detail"] == nil {
			t.Errorf("a refused create: %d %s", code, raw)
		}
	}
	if st, _ := s.Stats(); st.Created != 0 {
		t.Fatalf("refused creates made %d pods", st.Created)
	}

	code, p, raw := do(t, s, http.MethodPost, "/api/v1/pods/", pod("with-disk", "US-KS-2", id))
	if code != 200 {
		t.Fatalf("create with the disk: %d %s", code, raw)
	}
	podID := p["id"].(string)
	wantResource := func(status string) {
		t.Helper()
		_, got, raw := do(t, s, http.MethodGet, "/api/v1/pods/"+podID, "")
		ar, _ := got["attachedResources"].([]any)
		if len(ar) != 1 {
			t.Fatalf("attachedResources %s", raw)
		}
		r := ar[0].(map[string]any)
		if r["resourceType"] != "DISK" || r["id"] != id || r["mountPath"] != "/workspace" || r["status"] != status || r["size"] != 50.0 {
			t.Errorf("attached resource %v, want the disk %s at /workspace %s", r, id, status)
		}
		keys := strings.Join(slices.Sorted(maps.Keys(r)), ",")
		if keys != "id,isDetachable,isShared,mountPath,resourcePath,resourceType,size,status" {
			t.Errorf("attached resource keys %s, not AttachedResources'", keys)
		}
	}
	wantResource("UNATTACHED")
	c.Advance(30 * time.Second)
	wantResource("MOUNTED")
	if _, got, _ := do(t, s, http.MethodGet, "/api/v1/disks/"+id, ""); fmt.Sprint(got["pods"]) != fmt.Sprint([]any{podID}) {
		t.Errorf("the disk's pods %v, want [%s]", got["pods"], podID)
	}
	if code, got, raw := do(t, s, http.MethodDelete, "/api/v1/disks/"+id, ""); code != 400 || !strings.Contains(fmt.Sprint(got["detail"]), podID) {
		t.Errorf("deleting an attached disk: %d %s", code, raw)
	}
	if len(s.Disks()) != 1 {
		t.Fatal("a refused delete removed the disk")
	}

	// The pod goes; its disk stays and is then deletable.
	if code, _, raw := do(t, s, http.MethodDelete, "/api/v1/pods/"+podID, ""); code != 200 {
		t.Fatalf("pod delete: %d %s", code, raw)
	}
	if code, _, _ := do(t, s, http.MethodDelete, "/api/v1/disks/"+id, ""); code != 400 {
		t.Errorf("deleting the disk of a DELETING pod: %d, want 400", code)
	}
	c.Advance(5 * time.Second)
	if _, got, _ := do(t, s, http.MethodGet, "/api/v1/disks/"+id, ""); got["status"] != "ACTIVE" || len(got["pods"].([]any)) != 0 {
		t.Errorf("the disk after its pod terminated: %v, pods %v", got["status"], got["pods"])
	}
	if code, got, raw := do(t, s, http.MethodDelete, "/api/v1/disks/"+id, ""); code != 200 || got["status"] != "DELETING" {
		t.Fatalf("delete: %d %s", code, raw)
	}
	c.Advance(5 * time.Second)
	if code, got, _ := do(t, s, http.MethodGet, "/api/v1/disks/"+id, ""); code != 200 || got["status"] != "TERMINATED" || got["terminatedAt"] == nil {
		t.Errorf("after the delete: %d %v", code, got)
	}
	if code, _, _ := do(t, s, http.MethodDelete, "/api/v1/disks/"+id, ""); code != 404 {
		t.Errorf("deleting a terminated disk: %d, want 404", code)
	}
	c.Advance(2 * time.Minute)
	if code, _, _ := do(t, s, http.MethodGet, "/api/v1/disks/"+id, ""); code != 404 {
		t.Errorf("a long-terminated disk: %d, want 404", code)
	}
}

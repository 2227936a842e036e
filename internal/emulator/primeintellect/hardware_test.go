package primeintellect

import (
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
)

// TestHardwareAvailability: items carry socket, gpuMemory as the recorded answers have it (the total of
// all GPUs: 160 for 2x A100_80GB), and vcpu and memory defaultCount.
func TestHardwareAvailability(t *testing.T) {
	s := New(Options{})
	a := emutest.Do(t, s, http.MethodGet, "/api/v1/availability/gpus?gpu_type=A100_80GB&gpu_count=2&page_size=100", nil, "Authorization", "Bearer "+DefaultAPIKey)
	if a.Status != 200 {
		t.Fatalf("%d %s", a.Status, a.Raw)
	}
	found := 0
	for _, raw := range a.Body["items"].([]any) {
		it := raw.(map[string]any)
		if it["cloudId"] != "NVIDIA A100-SXM4-80GB" {
			continue
		}
		found++
		vcpu, mem := it["vcpu"].(map[string]any), it["memory"].(map[string]any)
		if it["socket"] != "SXM4" || it["gpuCount"] != 2.0 || it["gpuMemory"] != 160.0 || vcpu["defaultCount"] != 32.0 || mem["defaultCount"] != 250.0 {
			t.Errorf("2x A100 SXM4 item: socket %v, gpuCount %v, gpuMemory %v, vcpu %v, memory %v", it["socket"], it["gpuCount"], it["gpuMemory"], vcpu, mem)
		}
	}
	if found != 1 {
		t.Fatalf("found %d 2x A100 SXM4 items, want 1", found)
	}

	a = emutest.Do(t, s, http.MethodGet, "/api/v1/availability/gpus?gpu_type=H100_80GB&gpu_count=1&socket=PCIe&page_size=100", nil, "Authorization", "Bearer "+DefaultAPIKey)
	for _, raw := range a.Body["items"].([]any) {
		if it := raw.(map[string]any); it["cloudId"] == "NVIDIA H100 PCIe" && it["gpuMemory"] != 80.0 {
			t.Errorf("1x H100 PCIe gpuMemory %v, want 80", it["gpuMemory"])
		}
	}
}

// TestHardwarePodResources: a pod ordered without vcpus and memory reports its offer's defaults in
// resources; one ordered with them reports what was ordered.
func TestHardwarePodResources(t *testing.T) {
	s := New(Options{})
	auth := []string{"Authorization", "Bearer " + DefaultAPIKey}
	tests := []struct {
		body       string
		vcpus, mem float64
	}{
		{`{"pod":{"name":"a","cloudId":"NVIDIA L40S","gpuType":"L40S_48GB","socket":"PCIe","gpuCount":1,"maxPrice":5},"provider":{"type":"runpod"}}`, 16, 125},
		{`{"pod":{"name":"b","cloudId":"NVIDIA L40S","gpuType":"L40S_48GB","socket":"PCIe","gpuCount":1,"maxPrice":5,"vcpus":8,"memory":62},"provider":{"type":"runpod"}}`, 8, 62},
	}
	for _, tt := range tests {
		a := emutest.Do(t, s, http.MethodPost, "/api/v1/pods/", tt.body, auth...)
		if a.Status != 200 {
			t.Fatalf("%d %s", a.Status, a.Raw)
		}
		res, _ := a.Body["resources"].(map[string]any)
		if a.Body["socket"] != "PCIe" || a.Body["gpuName"] != "L40S_48GB" || res["vcpus"] != tt.vcpus || res["memory"] != tt.mem {
			t.Errorf("pod %v: socket %v, gpuName %v, resources %v; want vcpus %v memory %v", a.Body["name"], a.Body["socket"], a.Body["gpuName"], res, tt.vcpus, tt.mem)
		}
	}
}

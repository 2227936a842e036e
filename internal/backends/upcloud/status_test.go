package upcloud

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestMapState(t *testing.T) {
	cases := []struct {
		state   string
		ip      string
		want    cloudprovider.Status
		wantMsg bool
	}{
		{"maintenance", "", cloudprovider.StatusPending, false},
		{"maintenance", "94.237.1.2", cloudprovider.StatusPending, false},
		{"started", "", cloudprovider.StatusPending, false},
		{"started", "94.237.1.2", cloudprovider.StatusRunning, false},
		{"STARTED", "94.237.1.2", cloudprovider.StatusRunning, false},
		{"stopped", "94.237.1.2", cloudprovider.StatusError, true},
		{"error", "", cloudprovider.StatusError, true},
		{"something-new", "94.237.1.2", cloudprovider.StatusPending, false},
	}
	for _, tc := range cases {
		got, msg := mapState(tc.state, tc.ip)
		if got != tc.want || (msg != "") != tc.wantMsg {
			t.Errorf("mapState(%q, %q) = %v, %q; want %v (message %v)", tc.state, tc.ip, got, msg, tc.want, tc.wantMsg)
		}
	}
}

func TestPickTemplate(t *testing.T) {
	list := []Storage{
		{UUID: "a", Title: "Ubuntu Server 22.04 LTS (Jammy Jellyfish)", Type: "template", State: "online", Access: "public", TemplateType: "cloud-init"},
		{UUID: "b", Title: "Ubuntu Server 24.04 LTS (Noble Numbat)", Type: "template", State: "online", Access: "public", TemplateType: "cloud-init"},
		{UUID: "c", Title: "Ubuntu Server 22.04 LTS GPU (NVIDIA)", Type: "template", State: "online", Access: "public", TemplateType: "cloud-init"},
		{UUID: "d", Title: "Ubuntu Server 24.04 LTS with NVIDIA CUDA", Type: "template", State: "online", Access: "public", TemplateType: "cloud-init"},
		{UUID: "e", Title: "Ubuntu Server 24.04 LTS GPU native", Type: "template", State: "online", Access: "public", TemplateType: "native"},
		{UUID: "f", Title: "Ubuntu Server 26.04 LTS GPU", Type: "template", State: "maintenance", Access: "public", TemplateType: "cloud-init"},
		{UUID: "g", Title: "Debian GNU/Linux 12 (Bookworm)", Type: "template", State: "online", Access: "public"},
	}
	cases := []struct {
		name, want, wantUUID string
		list                 []Storage
		wantErr              bool
	}{
		{"newest cloud-init GPU template", "", "d", list, false},
		{"by uuid", "a", "a", list, false},
		{"by title, any case", "ubuntu server 24.04 lts (noble numbat)", "b", list, false},
		{"unknown", "zzz", "", list, true},
		{"plain Ubuntu fallback", "", "b", list[:2], false},
		{"nothing usable", "", "", list[6:], true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickTemplate(tc.list, tc.want)
			if (err != nil) != tc.wantErr || got.UUID != tc.wantUUID {
				t.Fatalf("pickTemplate = %+v, %v", got, err)
			}
		})
	}
}

func TestGPUOfPlan(t *testing.T) {
	cases := []struct {
		plan  Plan
		model string
		n     int
	}{
		{Plan{Name: "GPU-8xCPU-64GB-1xL40S", GPUModel: "NVIDIA L40S", GPUAmount: 1}, "NVIDIA L40S", 1},
		{Plan{Name: "GPU-96xCPU-1920GB-8xH100"}, "NVIDIA H100", 8},
		{Plan{Name: "GPU-SPOT-8xCPU-64GB-1xL4"}, "NVIDIA L4", 1},
		{Plan{Name: "2xCPU-4GB"}, "", 0},
		{Plan{Name: "HIMEM-4xCPU-32GB"}, "", 0},
	}
	for _, tc := range cases {
		m, n := gpuOfPlan(tc.plan)
		if m != tc.model || n != tc.n {
			t.Errorf("gpuOfPlan(%s) = %q, %d", tc.plan.Name, m, n)
		}
	}
}

func TestFlexTypes(t *testing.T) {
	var p struct {
		A FlexInt   `json:"a"`
		B FlexInt   `json:"b"`
		C FlexFloat `json:"c"`
		D YesNo     `json:"d"`
		E YesNo     `json:"e"`
		F FlexInt   `json:"f"`
	}
	if err := jsonUnmarshal(`{"a":"1024","b":null,"c":"111.1607","d":"yes","e":false,"f":9223372036854776000}`, &p); err != nil {
		t.Fatal(err)
	}
	if p.A != 1024 || p.B != 0 || p.C != 111.1607 || !bool(p.D) || bool(p.E) || p.F <= 0 {
		t.Errorf("%+v", p)
	}
	var l PriceList
	if err := jsonUnmarshal(`{"prices":{"currency":"EUR","zone":[{"name":"fi-hel2","server_plan_X":{"amount":"1","price":"57"}}]}}`, &l); err != nil {
		t.Fatal(err)
	}
	if l.Prices.Currency != "EUR" || l.Prices.Zone[0].Items["server_plan_X"].Price != 57 {
		t.Errorf("%+v", l)
	}
	var y YesNo
	if err := jsonUnmarshal(`"maybe"`, &y); err == nil {
		t.Error("accepted \"maybe\" as yes/no")
	}
}

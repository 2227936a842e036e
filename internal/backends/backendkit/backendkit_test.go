package backendkit

import (
	"reflect"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

func TestLive(t *testing.T) {
	type cloudVM struct {
		name, state string
	}
	all := []cloudVM{{"web-1", "up"}, {"db-1", "up"}, {"web-2", "gone"}, {"web-3", "booting"}}
	convert := func(v cloudVM) cloudprovider.Instance {
		st := cloudprovider.StatusRunning
		if v.state == "gone" {
			st = cloudprovider.StatusTerminated
		}
		return cloudprovider.Instance{Name: v.name, Status: st}
	}
	name := func(v cloudVM) string { return v.name }
	got := Live(all, "web-", name, convert)
	if len(got) != 2 || got[0].Name != "web-1" || got[1].Name != "web-3" {
		t.Fatalf("got %+v", got)
	}
	if got := Live(all, "none-", name, convert); got != nil {
		t.Fatalf("got %+v, want nil", got)
	}
}

func TestSortOffers(t *testing.T) {
	o := func(region, typ string, spot bool) cloudprovider.Offer {
		return cloudprovider.Offer{Region: region, InstanceType: typ, Spot: spot}
	}
	offers := []cloudprovider.Offer{o("b", "x", false), o("a", "y", true), o("a", "y", false), o("a", "x", true)}
	SortOffers(offers)
	want := []cloudprovider.Offer{o("a", "x", true), o("a", "y", false), o("a", "y", true), o("b", "x", false)}
	if !reflect.DeepEqual(offers, want) {
		t.Fatalf("got %+v, want %+v", offers, want)
	}
}

func TestCheckBackend(t *testing.T) {
	if _, err := Check("x", nil, nil); err == nil || err.Error() != "x: no inventory" {
		t.Fatalf("no inventory: %v", err)
	}
	log, err := Check("x", &inventory.Inventory{}, nil)
	if err != nil || log == nil {
		t.Fatalf("got %v, %v; want a null logger", log, err)
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		filter []string
		v      string
		want   bool
	}{
		{nil, "FIN-01", true},
		{[]string{"fin-01", "ICE-01"}, "FIN-01", true},
		{[]string{"fin-01"}, "ice-01", false},
	}
	for _, tt := range tests {
		if got := Allowed(tt.filter, tt.v); got != tt.want {
			t.Errorf("Allowed(%v, %q) = %v, want %v", tt.filter, tt.v, got, tt.want)
		}
	}
}

func TestFillHardware(t *testing.T) {
	offer := cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 80, VCPUs: 30, MemoryGB: 120}
	if got := FillHardware(cloudprovider.Hardware{}, offer); got != offer {
		t.Errorf("empty: %+v", got)
	}
	have := cloudprovider.Hardware{GPUMemoryGB: 48, VCPUs: 8}
	want := cloudprovider.Hardware{FormFactor: "sxm", GPUMemoryGB: 48, VCPUs: 8, MemoryGB: 120}
	if got := FillHardware(have, offer); got != want {
		t.Errorf("partial: %+v, want %+v", got, want)
	}
	if got := FillHardware(have, cloudprovider.Hardware{}); got != have {
		t.Errorf("nothing to fill from: %+v", got)
	}
}

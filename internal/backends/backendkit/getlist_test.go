package backendkit

import (
	"context"
	"errors"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestGetAndList(t *testing.T) {
	boom := cloudprovider.NewError(cloudprovider.ErrNotFound, "cloud", "get", errors.New("no such machine"))
	vms := map[string]string{"a1": "web-a", "b2": "db-b", "c3": "web-c"}
	read := func(_ context.Context, id string) (string, error) {
		if n, ok := vms[id]; ok {
			return n, nil
		}
		return "", boom
	}
	convert := func(n string) cloudprovider.Instance {
		return cloudprovider.Instance{Name: n, Status: cloudprovider.StatusRunning}
	}
	if in, err := Get(t.Context(), "a1", read, convert); err != nil || in.Name != "web-a" {
		t.Fatalf("Get(a1) = %+v, %v; want web-a", in, err)
	}
	if in, err := Get(t.Context(), "zz", read, convert); !errors.Is(err, boom) || in != (cloudprovider.Instance{}) {
		t.Fatalf("Get(zz) = %+v, %v; want the read error as it is and a zero instance", in, err)
	}
	all := func(context.Context) ([]string, error) { return []string{"web-a", "db-b", "web-c"}, nil }
	self := func(n string) string { return n }
	if got, err := List(t.Context(), "web-", all, self, convert); err != nil || len(got) != 2 || got[0].Name != "web-a" || got[1].Name != "web-c" {
		t.Fatalf("List(web-) = %+v, %v; want web-a and web-c", got, err)
	}
	fail := func(context.Context) ([]string, error) { return nil, boom }
	if got, err := List(t.Context(), "web-", fail, self, convert); !errors.Is(err, boom) || got != nil {
		t.Fatalf("List with a failing read = %+v, %v; want nil and the read error", got, err)
	}
}

func TestListClusters(t *testing.T) {
	boom := cloudprovider.NewError(cloudprovider.ErrOther, "cloud", "listing clusters", errors.New("503"))
	all := func(context.Context) ([]string, error) {
		return []string{"train-a", "infer-b", "train-gone", "train-c"}, nil
	}
	self := func(n string) string { return n }
	convert := func(n string) cloudprovider.Cluster {
		c := cloudprovider.Cluster{Name: n, Status: cloudprovider.StatusRunning}
		if n == "train-gone" {
			c.Status = cloudprovider.StatusTerminated
		}
		return c
	}
	if got, err := ListClusters(t.Context(), "train-", all, self, convert); err != nil || len(got) != 2 || got[0].Name != "train-a" || got[1].Name != "train-c" {
		t.Fatalf("ListClusters(train-) = %+v, %v; want train-a and train-c, not the terminated one", got, err)
	}
	if got, err := ListClusters(t.Context(), "none-", all, self, convert); err != nil || got != nil {
		t.Fatalf("ListClusters(none-) = %+v, %v; want nil", got, err)
	}
	fail := func(context.Context) ([]string, error) { return nil, boom }
	if got, err := ListClusters(t.Context(), "train-", fail, self, convert); !errors.Is(err, boom) || got != nil {
		t.Fatalf("ListClusters with a failing read = %+v, %v; want nil and the read error", got, err)
	}
}

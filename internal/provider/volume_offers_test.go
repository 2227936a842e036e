package provider

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// volume_type keeps only the offers in a cloud and region with that volume type, and says why each
// cloud without one lost.
func TestVolumePlaces(t *testing.T) {
	p := volumePlaces{typ: cloudprovider.VolumeSharedFS, regions: map[string][]string{"a": {"r1", "r2"}, "b": {"r9"}}}
	offer := func(cloud, region string) cloudprovider.Offer {
		return cloudprovider.Offer{Cloud: cloud, Region: region}
	}
	for _, tc := range []struct {
		name      string
		asked     []string
		keep      []string
		lacking   map[string]string
		offers    []cloudprovider.Offer
		kept      []cloudprovider.Offer
		droppedBy map[string]string
	}{{
		name: "every cloud", keep: []string{"a", "b"}, lacking: map[string]string{},
		offers:    []cloudprovider.Offer{offer("a", "r1"), offer("a", "r3"), offer("b", "r1")},
		kept:      []cloudprovider.Offer{offer("a", "r1")},
		droppedBy: map[string]string{"b": "no offer in a region with shared_fs volumes (r9)"},
	}, {
		name: "asked clouds", asked: []string{"c", "a"}, keep: []string{"a"}, lacking: map[string]string{"c": "no shared_fs volumes"},
		offers: []cloudprovider.Offer{offer("a", "r2")}, kept: []cloudprovider.Offer{offer("a", "r2")}, droppedBy: map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			keep, lacking := p.clouds(tc.asked)
			if !reflect.DeepEqual(keep, tc.keep) || !reflect.DeepEqual(lacking, tc.lacking) {
				t.Errorf("clouds(%v) = %v, %v; want %v, %v", tc.asked, keep, lacking, tc.keep, tc.lacking)
			}
			why := map[string]string{}
			if got := p.filter(tc.offers, why); !reflect.DeepEqual(got, tc.kept) || !reflect.DeepEqual(why, tc.droppedBy) {
				t.Errorf("filter = %v, %v; want %v, %v", got, why, tc.kept, tc.droppedBy)
			}
		})
	}
}

// An import ID is <cloud>/<cloud volume id>; anything else is refused saying what is accepted.
func TestVolumeImportIDProblem(t *testing.T) {
	for id, want := range map[string]string{
		"sandbox/sbxv-1":        "",
		"sbxv-1":                `"sbxv-1" is not <cloud>/<cloud volume id>`,
		"sandbox/sbx-eu-1/data": `has more than one "/" (hydra_volume's id`,
		"aws/vol-1":             `starts with "aws", which is not a cloud hydra knows`,
		"/vol-1":                `is not <cloud>/<cloud volume id>`,
	} {
		got := volumeImportID.problem(id)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("volumeImportIDProblem(%q) = %q; want it to say %q", id, got, want)
		}
	}
}

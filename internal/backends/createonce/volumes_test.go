package createonce

import (
	"context"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// TestVolume checks the idempotent volume create: a volume of the name is returned without a create,
// one of another region is ErrInvalid, a create whose answer was lost is recovered by a second look,
// and a refused create is returned as it is.
func TestVolume(t *testing.T) {
	req := cloudprovider.VolumeRequest{Name: "pool-data--abcdefgh", Region: "r1"}
	lost := cloudprovider.Errorf(cloudprovider.ErrOther, "c", "creating volume", "502")
	refused := cloudprovider.Errorf(cloudprovider.ErrQuota, "c", "creating volume", "no quota")
	for _, tc := range []struct {
		name       string
		existing   []cloudprovider.Volume
		createErr  error
		madeAnyway bool
		wantID     string
		wantErr    bool
		wantKind   cloudprovider.ErrorKind
		creates    int
	}{
		{name: "new", wantID: "made", creates: 1},
		{name: "exists", existing: []cloudprovider.Volume{{ID: "old", Name: req.Name, Region: "r1"}}, wantID: "old"},
		{name: "a longer name is another volume", existing: []cloudprovider.Volume{{ID: "x", Name: req.Name + "-2", Region: "r1"}}, wantID: "made", creates: 1},
		{name: "exists in another region", existing: []cloudprovider.Volume{{ID: "old", Name: req.Name, Region: "r2"}}, wantErr: true, wantKind: cloudprovider.ErrInvalid},
		{name: "lost answer", createErr: lost, madeAnyway: true, wantID: "made", creates: 1},
		{name: "lost answer, nothing made", createErr: lost, wantErr: true, wantKind: cloudprovider.ErrOther, creates: 1},
		{name: "refused", createErr: refused, madeAnyway: true, wantErr: true, wantKind: cloudprovider.ErrQuota, creates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vols := append([]cloudprovider.Volume{}, tc.existing...)
			creates := 0
			list := func(_ context.Context, prefix string) ([]cloudprovider.Volume, error) {
				var out []cloudprovider.Volume
				for _, v := range vols {
					if strings.HasPrefix(v.Name, prefix) {
						out = append(out, v)
					}
				}
				return out, nil
			}
			create := func(context.Context) (cloudprovider.Volume, error) {
				creates++
				v := cloudprovider.Volume{ID: "made", Name: req.Name, Region: req.Region}
				if tc.createErr == nil || tc.madeAnyway {
					vols = append(vols, v)
				}
				if tc.createErr != nil {
					return cloudprovider.Volume{}, tc.createErr
				}
				return v, nil
			}
			var g Group
			v, err := g.Volume(context.Background(), "c", req, list, create)
			switch {
			case tc.wantErr && (err == nil || cloudprovider.KindOf(err) != tc.wantKind):
				t.Errorf("error %v, want kind %v", err, tc.wantKind)
			case !tc.wantErr && (err != nil || v.ID != tc.wantID):
				t.Errorf("volume %+v, %v; want %s", v, err, tc.wantID)
			}
			if creates != tc.creates {
				t.Errorf("%d creates, want %d", creates, tc.creates)
			}
		})
	}
}

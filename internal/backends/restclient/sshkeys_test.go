package restclient

import (
	"context"
	"errors"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func TestEnsureSSHKeys(t *testing.T) {
	const a = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3dlYcKyiFqR4SxlGQbfJEX5RzzyLcn6X9UGBJ4U2rG alice"
	const aOtherComment = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3dlYcKyiFqR4SxlGQbfJEX5RzzyLcn6X9UGBJ4U2rG laptop"
	const b = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0 bob"
	tests := []struct {
		name      string
		have      []AccountKey
		keys      []string
		loseAdd   bool
		wantIDs   []string
		wantAdds  int
		wantErrIs controlplane.ErrorKind
	}{
		{name: "registers missing keys once", keys: []string{a, b, aOtherComment}, wantIDs: []string{"k1", "k2"}, wantAdds: 2},
		{name: "reuses a key with another comment", have: []AccountKey{{ID: "old", PublicKey: aOtherComment}}, keys: []string{a}, wantIDs: []string{"old"}},
		{name: "a lost add answer is found again", keys: []string{a}, loseAdd: true, wantIDs: []string{"k1"}, wantAdds: 1},
		{name: "no keys, no calls", keys: nil, wantIDs: []string{}},
		{name: "garbage is invalid", keys: []string{"not a key"}, wantErrIs: controlplane.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := append([]AccountKey(nil), tc.have...)
			adds := 0
			r := KeyRegistry{Cloud: "test",
				List: func(context.Context) ([]AccountKey, error) { return append([]AccountKey(nil), have...), nil },
				Add: func(_ context.Context, name, pk string) (string, error) {
					adds++
					id := "k" + string(rune('0'+adds))
					if name != KeyName(pk) {
						t.Errorf("key added as %q, want %q", name, KeyName(pk))
					}
					have = append(have, AccountKey{ID: id, PublicKey: pk})
					if tc.loseAdd {
						return "", errors.New("connection reset")
					}
					return id, nil
				}}
			ids, err := EnsureSSHKeys(context.Background(), r, tc.keys)
			if tc.wantErrIs != controlplane.ErrOther {
				if controlplane.KindOf(err) != tc.wantErrIs {
					t.Fatalf("error %v, want kind %v", err, tc.wantErrIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != len(tc.wantIDs) {
				t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
			}
			for i := range ids {
				if ids[i] != tc.wantIDs[i] {
					t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
				}
			}
			if adds != tc.wantAdds {
				t.Errorf("%d adds, want %d", adds, tc.wantAdds)
			}
		})
	}
	if KeyName(a) != KeyName(aOtherComment) {
		t.Error("the comment changed the key's name")
	}
}

package sshkeys

import (
	"context"
	"errors"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestEnsureSSHKeys(t *testing.T) {
	const a = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3dlYcKyiFqR4SxlGQbfJEX5RzzyLcn6X9UGBJ4U2rG alice"
	const aOtherComment = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH3dlYcKyiFqR4SxlGQbfJEX5RzzyLcn6X9UGBJ4U2rG laptop"
	const b = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0 bob"
	tests := []struct {
		name    string
		have    []AccountKey
		keys    []string
		loseAdd bool
		// failAdds fails that many adds with failKind (ErrOther when 0), storing nothing.
		failAdds  int
		failKind  cloudprovider.ErrorKind
		addAgain  bool
		wantIDs   []string
		wantAdds  int
		wantErrIs cloudprovider.ErrorKind
	}{
		{name: "registers missing keys once", keys: []string{a, b, aOtherComment}, wantIDs: []string{"k1", "k2"}, wantAdds: 2},
		{name: "reuses a key with another comment", have: []AccountKey{{ID: "old", PublicKey: aOtherComment}}, keys: []string{a}, wantIDs: []string{"old"}},
		{name: "a lost add answer is found again", keys: []string{a}, loseAdd: true, wantIDs: []string{"k1"}, wantAdds: 1},
		{name: "no keys, no calls", keys: nil, wantIDs: []string{}},
		{name: "garbage is invalid", keys: []string{"not a key"}, wantErrIs: cloudprovider.ErrInvalid},
		{name: "a failed add is not repeated by default", keys: []string{a}, failAdds: 1, wantErrIs: cloudprovider.ErrOther, wantAdds: 1},
		{name: "AddAgain adds a missing key once more", keys: []string{a}, failAdds: 1, addAgain: true, wantIDs: []string{"k2"}, wantAdds: 2},
		{name: "AddAgain adds once more only", keys: []string{a}, failAdds: 2, addAgain: true, wantErrIs: cloudprovider.ErrOther, wantAdds: 2},
		{name: "AddAgain does not repeat a refused add", keys: []string{a}, failAdds: 1, failKind: cloudprovider.ErrInvalid, addAgain: true,
			wantErrIs: cloudprovider.ErrInvalid, wantAdds: 1},
		{name: "AddAgain finds a lost add answer", keys: []string{a}, loseAdd: true, addAgain: true, wantIDs: []string{"k1"}, wantAdds: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := append([]AccountKey(nil), tc.have...)
			adds := 0
			r := Registry{Cloud: "test", AddAgain: tc.addAgain,
				List: func(context.Context) ([]AccountKey, error) { return append([]AccountKey(nil), have...), nil },
				Add: func(_ context.Context, name, pk string) (string, error) {
					adds++
					id := "k" + string(rune('0'+adds))
					if name != Name(pk) {
						t.Errorf("key added as %q, want %q", name, Name(pk))
					}
					if adds <= tc.failAdds {
						return "", cloudprovider.Errorf(tc.failKind, "test", "adding key", "HTTP 5xx or 4xx")
					}
					have = append(have, AccountKey{ID: id, PublicKey: pk})
					if tc.loseAdd {
						return "", errors.New("connection reset")
					}
					return id, nil
				}}
			ids, err := Ensure(context.Background(), r, tc.keys)
			if tc.wantErrIs != cloudprovider.ErrOther || (tc.wantIDs == nil && tc.keys != nil) {
				if err == nil || cloudprovider.KindOf(err) != tc.wantErrIs {
					t.Fatalf("error %v, want kind %v", err, tc.wantErrIs)
				}
				if adds != tc.wantAdds {
					t.Errorf("%d adds, want %d", adds, tc.wantAdds)
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
	if Name(a) != Name(aOtherComment) {
		t.Error("the comment changed the key's name")
	}
}

func TestBareKey(t *testing.T) {
	tests := []struct{ in, want, norm string }{
		{"ssh-ed25519 AAAA alice@host", "ssh-ed25519 AAAA alice@host", "ssh-ed25519 AAAA"},
		{`no-pty,command="x" ssh-rsa BBBB  bob laptop `, "ssh-rsa BBBB bob laptop", "ssh-rsa BBBB"},
		{"  ecdsa-sha2-nistp256 CCCC", "ecdsa-sha2-nistp256 CCCC", "ecdsa-sha2-nistp256 CCCC"},
		{" not a key ", "not a key", ""},
		{"ssh-ed25519", "ssh-ed25519", ""},
	}
	for _, tt := range tests {
		if got := Bare(tt.in); got != tt.want {
			t.Errorf("Bare(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Normalize(tt.in); got != tt.norm {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.norm)
		}
	}
}

func TestListKeys(t *testing.T) {
	type cloudKey struct{ name, line string }
	list := Lister(func(context.Context) ([]cloudKey, error) {
		return []cloudKey{{"a", "ssh-ed25519 AAAA"}, {"b", "ssh-rsa BBBB"}}, nil
	}, func(k cloudKey) AccountKey { return AccountKey{ID: k.name, PublicKey: k.line} })
	got, err := list(context.Background())
	if err != nil || len(got) != 2 || got[1] != (AccountKey{ID: "b", PublicKey: "ssh-rsa BBBB"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	boom := errors.New("boom")
	failing := Lister(func(context.Context) ([]cloudKey, error) { return nil, boom },
		func(k cloudKey) AccountKey { return AccountKey{} })
	if _, err := failing(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the listing's", err)
	}
}

func TestSerialHoldsOffOthers(t *testing.T) {
	var s Serial
	held := func() bool {
		if s.mu.TryLock() {
			s.mu.Unlock()
			return false
		}
		return true
	}
	var during []bool
	r := Registry{Cloud: "test",
		List: func(context.Context) ([]AccountKey, error) { during = append(during, held()); return nil, nil },
		Add: func(context.Context, string, string) (string, error) {
			during = append(during, held())
			return "k1", nil
		}}
	if ids, err := s.Ensure(context.Background(), r, []string{"ssh-ed25519 AAAA"}); err != nil || len(ids) != 1 || ids[0] != "k1" {
		t.Fatalf("Ensure = %v, %v; want [k1]", ids, err)
	}
	if len(during) != 2 || !during[0] || !during[1] {
		t.Errorf("others held off during the list and the add: %v, want [true true]", during)
	}
	if held() {
		t.Error("others still held off after Ensure")
	}
	unlock := s.Lock()
	if !held() {
		t.Error("Lock does not hold others off")
	}
	unlock()
	if held() {
		t.Error("others still held off after unlock")
	}
}

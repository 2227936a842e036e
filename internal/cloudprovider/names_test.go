package cloudprovider

import (
	"context"
	"errors"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

func TestCloudNameRoundTrip(t *testing.T) {
	pool := inventory.Pool{Name: "sandbox-vm-pool", Prefix: "sbx-vm-"}
	for _, tc := range []struct {
		full, name, token string
		ok                bool
	}{
		{"sbx-vm-trainer--abcd2345", "trainer", "abcd2345", true},
		{"sbx-vm-trainer", "trainer", "", true},
		{"sbx-vm-a-b--abcd2345", "a-b", "abcd2345", true},
		{"sbx-vm-trainer--short", "trainer--short", "", true}, // not a token: part of a legacy name
		{"sbx-vm-trainer--ABCD2345", "trainer--ABCD2345", "", true},
		{"other-trainer--abcd2345", "", "", false},
		{"sbx-vm-", "", "", false},
	} {
		name, token, ok := ParseCloudName(pool, tc.full)
		if name != tc.name || token != tc.token || ok != tc.ok {
			t.Errorf("ParseCloudName(%q) = %q, %q, %v; want %q, %q, %v", tc.full, name, token, ok, tc.name, tc.token, tc.ok)
		}
		if tc.ok && tc.token != "" && CloudName(pool, name, token) != tc.full {
			t.Errorf("CloudName(%q, %q) = %q, want %q", name, token, CloudName(pool, name, token), tc.full)
		}
	}
}

func TestNewOwnerToken(t *testing.T) {
	pool := inventory.Pool{Prefix: "p-"}
	seen := map[string]bool{}
	for range 1000 {
		tok := NewOwnerToken()
		if len(tok) != tokenLen {
			t.Fatalf("token %q has length %d", tok, len(tok))
		}
		if _, got, _ := ParseCloudName(pool, CloudName(pool, "x", tok)); got != tok {
			t.Fatalf("token %q does not survive a round trip (got %q)", tok, got)
		}
		if seen[tok] {
			t.Fatalf("token %q repeated", tok)
		}
		seen[tok] = true
	}
}

func TestOwnerLabelsRoundTrip(t *testing.T) {
	o := Ownership{Resource: "trainer", Token: "abcd2345", Confirmed: true}
	got, ok := OwnerFromDescription("created by hydra " + OwnerDescription(o))
	if !ok || got != o {
		t.Fatalf("OwnerFromDescription = %+v, %v; want %+v", got, ok, o)
	}
	if _, ok := OwnerFromDescription("some other machine"); ok {
		t.Fatal("a description without a record parsed as one")
	}
}

func TestOwnerToken(t *testing.T) {
	if first, again := OwnerToken("a", 0), OwnerToken("a", 0); first != again {
		t.Fatal("OwnerToken is not deterministic")
	}
	seen := map[string]bool{}
	for _, name := range []string{"a", "b", "pipe-0", "pipe-1"} {
		for gen := 0; gen < OwnerGenerations; gen++ {
			tok := OwnerToken(name, gen)
			if seen[tok] || len(tok) != tokenLen {
				t.Fatalf("OwnerToken(%q, %d) = %q: repeated or not %d characters", name, gen, tok, tokenLen)
			}
			seen[tok] = true
			if !DerivedToken(name, tok) || DerivedToken(name+"x", tok) {
				t.Fatalf("DerivedToken does not recognise exactly %q's token %q", name, tok)
			}
		}
	}
	if DerivedToken("a", "") || DerivedToken("a", OwnerToken("a", OwnerGenerations)) {
		t.Fatal("DerivedToken accepts the empty token or one beyond the generations")
	}
}

func TestFindNamed(t *testing.T) {
	type v struct{ name, id string }
	listed := []v{{"web-1", "3"}, {"web-10", "1"}, {"web-1", "2"}, {"web-1", "4"}, {"web-1", "2b"}}
	is := func(x v) bool { return x.name == "web-1" }
	byLen := func(a, b v) bool { return len(a.id) < len(b.id) } // ties: "3", "2", "4"
	for _, tc := range []struct {
		name   string
		is     func(v) bool
		less   func(a, b v) bool
		wantID string
	}{
		{"first listed", is, nil, "3"},
		{"first by less, ties in list order", is, byLen, "3"},
		{"least by less", is, func(a, b v) bool { return a.id < b.id }, "2"},
		{"none", func(v) bool { return false }, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prefix string
			list := func(_ context.Context, p string) ([]v, error) { prefix = p; return listed, nil }
			got, ok, err := FindNamed(context.Background(), "web-1", list, tc.is, tc.less)
			if err != nil || ok != (tc.wantID != "") || got.id != tc.wantID || prefix != "web-1" {
				t.Errorf("got %+v %v %v (listed %q), want id %q", got, ok, err, prefix, tc.wantID)
			}
		})
	}
	boom := errors.New("boom")
	if _, ok, err := FindNamed(context.Background(), "x", func(context.Context, string) ([]v, error) { return listed, boom }, func(v) bool { return true }, nil); ok || !errors.Is(err, boom) {
		t.Errorf("got %v %v, want the listing's error", ok, err)
	}
}

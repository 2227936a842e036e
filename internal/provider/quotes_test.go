package provider

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestQuoteStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "quotes")
	s := &quoteStore{dir: dir, ttl: time.Hour}
	k := quoteKey("trainer", "h100", 1)
	if k == quoteKey("trainer", "h100", 2) {
		t.Fatal("different inputs share a key")
	}
	if _, ok, err := s.get(k); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	want := quote{OfferID: "sandbox-vm-pool/sbx-eu-1/sbx.h100.1x/ondemand@2.49", Estimate: 2_490_000, WhyNot: map[string]string{"verda": "x"}}
	if err := s.put(k, want); err != nil {
		t.Fatal(err)
	}
	// Another process (a new store on the same directory) sees it.
	got, ok, err := (&quoteStore{dir: dir, ttl: time.Hour}).get(k)
	if err != nil || !ok || got.OfferID != want.OfferID || got.Estimate != want.Estimate || got.WhyNot["verda"] != "x" {
		t.Fatalf("get = %+v, %v, %v", got, ok, err)
	}
	if err := s.remove(k); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.get(k); ok {
		t.Fatal("removed quote still there")
	}
	if err := s.remove(k); err != nil {
		t.Fatalf("removing twice: %v", err)
	}

	// Expired and damaged quotes are not used.
	expired := &quoteStore{dir: dir, ttl: -time.Second}
	if err := expired.put(k, want); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.get(k); ok {
		t.Fatal("an expired quote was used")
	}
	if err := os.WriteFile(filepath.Join(dir, k+".json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.get(k); ok || err != nil {
		t.Fatalf("damaged quote: ok=%v err=%v", ok, err)
	}
}

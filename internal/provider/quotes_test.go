package provider

import (
	"archive/zip"
	"bytes"
	"encoding/json"
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

// TestSavedPlanQuote: a quote put in private plan data is found again in a plan file (a zip whose
// tfplan entry holds the framework's private-data JSON), by its key only.
func TestSavedPlanQuote(t *testing.T) {
	mine := quote{OfferID: "sandbox-vm-pool/sbx-eu-1/sbx.l4.1x/ondemand@0.49"}
	other := quote{OfferID: "sandbox-vm-pool/sbx-us-1/sbx.h100.1x/ondemand@2.49"}
	private := func(key string, q quote) []byte {
		b, _ := json.Marshal(map[string][]byte{planQuoteKey: encodePlanned(key, q), "other": []byte(`{}`)})
		return b
	}
	var tfplan bytes.Buffer
	tfplan.WriteString("\x0a\x10proto bytes")
	tfplan.Write(private("k-other", other))
	tfplan.WriteString("\x12\x03more")
	tfplan.Write(private("k-mine", mine))
	dir := t.TempDir()
	file := filepath.Join(dir, "job.tfplan")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("tfplan")
	_, _ = w.Write(tfplan.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	for _, tc := range []struct {
		name string
		args []string
		key  string
		want string
	}{
		{"saved plan", []string{"terraform", "apply", "-input=false", file}, "k-mine", mine.OfferID},
		{"the other resource's key", []string{"terraform", "apply", file}, "k-other", other.OfferID},
		{"a flag's value apart", []string{"terraform", "-chdir=x", "apply", "-lock-timeout", "5m", file}, "k-mine", mine.OfferID},
		{"unknown key", []string{"terraform", "apply", file}, "k-none", ""},
		{"plain apply", []string{"terraform", "apply", "-auto-approve"}, "k-mine", ""},
		{"not apply", []string{"terraform", "plan", file}, "k-mine", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, ok := savedQuote[quote](tc.args, planQuoteKey, tc.key)
			if ok != (tc.want != "") || q.OfferID != tc.want {
				t.Errorf("savedQuote = %q, %v; want %q", q.OfferID, ok, tc.want)
			}
		})
	}
}

package provider

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// quoteStore pins plan-time choices so the apply-time re-plan agrees with the plan.
//
// Terraform calls the provider's plan twice: once for `terraform plan` and again during apply, and any
// value shown as known in the first must come out identical in the second. Prices move between the two,
// so the first plan records the offer it chose here (keyed by the resource's inputs), and the second
// reuses it instead of asking the clouds again. Quotes expire after a TTL and are removed when the
// instance is created. Each quote is one small file in a directory next to Terraform's working data by
// default (written atomically, so concurrent plans need no lock); CI jobs that share a workspace can
// share it through plan_quote_dir.
type quoteStore struct {
	dir   string
	ttl   time.Duration
	sweep sync.Once
}

// quote is a plan's choice for one new machine (see controlplane.Quote).
type quote = controlplane.Quote

func defaultQuoteDir() string {
	dir := os.Getenv("TF_DATA_DIR")
	if dir == "" {
		dir = ".terraform"
	}
	return filepath.Join(dir, "hydra-plan-quotes")
}

// quoteKey hashes the inputs that decide the choice.
func quoteKey(parts ...any) string {
	data, _ := json.Marshal(parts)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

func (s *quoteStore) path(key string) string { return filepath.Join(s.dir, key+".json") }

// get returns a live quote for key.
func (s *quoteStore) get(key string) (quote, bool, error) {
	return readQuote(s, key, func(q quote) time.Time { return q.Expires })
}

// readQuote returns the live value kept under key (expires tells when one expires).
func readQuote[T any](s *quoteStore, key string, expires func(T) time.Time) (T, bool, error) {
	var q, none T
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return none, false, nil
	}
	if err != nil {
		return none, false, fmt.Errorf("plan quote: %w", err)
	}
	if err := json.Unmarshal(data, &q); err != nil || time.Now().After(expires(q)) {
		// A damaged or expired quote only costs a fresh one.
		return none, false, nil //nolint:nilerr // deliberate, explained above
	}
	return q, true, nil
}

// put records a quote for key.
func (s *quoteStore) put(key string, q quote) error {
	q.Expires = s.expiry()
	return writeQuote(s, key, q)
}

// expiry is when a quote recorded now expires.
func (s *quoteStore) expiry() time.Time { return time.Now().Add(s.ttl).UTC().Truncate(time.Second) }

// writeQuote records v (a quote with its expiry set) under key.
func writeQuote[T any](s *quoteStore, key string, v T) error {
	s.sweep.Do(s.removeExpired)
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("plan quote: %w", err)
	}
	if err := atomicfile.Write(s.path(key), data, 0o600); err != nil {
		return fmt.Errorf("plan quote: %w", err)
	}
	return nil
}

// remove forgets key (the instance exists now).
func (s *quoteStore) remove(key string) error {
	err := os.Remove(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// removeExpired deletes stale quotes, once per process.
func (s *quoteStore) removeExpired() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		key := strings.TrimSuffix(e.Name(), ".json")
		if _, ok, _ := s.get(key); !ok {
			_ = os.Remove(s.path(key))
		}
	}
}

// planQuoteKey is the key of a create's quote in its private plan data.
const planQuoteKey = "hydra_plan_quote"

// plannedQuote is a create's quote as it travels in the plan's private data: with its key, so that the
// apply finds the quote of its own inputs.
type plannedQuote[T any] struct {
	Key   string `json:"key"`
	Quote T      `json:"quote"`
}

// fromPrivate returns the quote of key from private plan data (Terraform hands a replacement's own plan
// data back to its second planning call).
func fromPrivate(ctx context.Context, p privateGetter, key string) (quote, bool) {
	return privateQuote[quote](ctx, p, planQuoteKey, key)
}

// privateQuote returns the quote of key kept under the private data key privKey.
func privateQuote[T any](ctx context.Context, p privateGetter, privKey, key string) (T, bool) {
	var none T
	if p == nil {
		return none, false
	}
	data, diags := p.GetKey(ctx, privKey)
	if diags.HasError() || len(data) == 0 {
		return none, false
	}
	var pq plannedQuote[T]
	if json.Unmarshal(data, &pq) != nil || pq.Key != key {
		return none, false
	}
	return pq.Quote, true
}

// encodePlanned is a quote as private plan data.
func encodePlanned[T any](key string, q T) []byte {
	data, _ := json.Marshal(plannedQuote[T]{Key: key, Quote: q})
	return data
}

// savedQuote finds the quote of key, kept under the private data key privKey, in the saved plan that
// the running `terraform apply <planfile>` (args: its command line) applies. Terraform's apply-time
// re-plan of a create is not handed the plan's private data, but the plan file carries it (hydra's
// quote, as plannedQuote JSON, base64 in the framework's private-data JSON): so a saved plan applies as
// planned on any runner, with nothing of the planning runner's disk. Found is false when no plan file
// is being applied or it has no quote of key.
func savedQuote[T any](args []string, privKey, key string) (T, bool) {
	// A flag's value may stand apart from it (-lock-timeout 5m): every argument after apply is tried.
	for _, file := range planFileArgs(args) {
		if q, ok := fileQuote[T](file, privKey, key); ok {
			return q, true
		}
	}
	var none T
	return none, false
}

// fileQuote reads key's quote from the plan file file (a zip with a tfplan entry).
func fileQuote[T any](file, privKey, key string) (T, bool) {
	var none T
	zr, err := zip.OpenReader(file)
	if err != nil {
		return none, false
	}
	defer func() { _ = zr.Close() }()
	for _, f := range zr.File {
		if f.Name != "tfplan" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return none, false
		}
		data, err := io.ReadAll(io.LimitReader(rc, 256<<20))
		_ = rc.Close()
		if err != nil {
			return none, false
		}
		return quoteInPlan[T](data, privKey, key)
	}
	return none, false
}

// quoteInPlan scans a plan's bytes for the private-data entries (privKey) of hydra's quotes and
// returns key's.
func quoteInPlan[T any](data []byte, privKey, key string) (T, bool) {
	var none T
	marker := []byte(`"` + privKey + `":"`)
	for {
		i := bytes.Index(data, marker)
		if i < 0 {
			return none, false
		}
		data = data[i+len(marker):]
		end := bytes.IndexByte(data, '"')
		if end < 0 {
			return none, false
		}
		raw, err := base64.StdEncoding.DecodeString(string(data[:end]))
		data = data[end:]
		if err != nil {
			continue
		}
		var pq plannedQuote[T]
		if json.Unmarshal(raw, &pq) == nil && pq.Key == key {
			return pq.Quote, true
		}
	}
}

// planFileArgs are the arguments of `terraform apply` (args: terraform's command line) that may name
// its plan file: those that are not flags; none for any other command.
func planFileArgs(args []string) []string {
	sub := ""
	var out []string
	for i, a := range args {
		switch {
		case i == 0, strings.HasPrefix(a, "-"):
		case sub == "":
			sub = a
			if sub != "apply" {
				return nil
			}
		default:
			out = append(out, a)
		}
	}
	return out
}

// earlierQuote is the quote of an earlier plan of a create (key): in the plan's own private data under
// privKey (a replacement's second planning call), in the saved plan being applied (any runner), or in
// this runner's quote directory (a plain `terraform apply`, planned and applied here; path is then its
// file). A quote directory that cannot be read is a warning: the choice is then not pinned.
func earlierQuote[T any](ctx context.Context, p privateGetter, s *quoteStore, privKey, key string, expires func(T) time.Time, diags *diag.Diagnostics) (q T, path string, found bool) {
	if q, found = privateQuote[T](ctx, p, privKey, key); found {
		return q, "", true
	}
	if q, found = savedQuote[T](currentArgs(), privKey, key); found {
		return q, "", true
	}
	q, found, err := readQuote(s, key, expires)
	if err != nil {
		diags.AddWarning("Plan quote unavailable", err.Error()+"\nThe choice below is not pinned; if prices move before apply, apply may fail.")
	}
	if found {
		path = s.path(key)
	}
	return q, path, found
}

// pinQuote keeps the quote a plan shows (key; isNew: chosen now, its expiry set) in this runner's quote
// directory when it is new (a failure is a warning), and in the plan's private data under privKey: the
// quote travels inside the plan, so a saved plan applies as planned on any runner.
func pinQuote[T any](ctx context.Context, s *quoteStore, p privateSetter, privKey, key string, q T, isNew bool, diags *diag.Diagnostics) {
	if isNew {
		if err := writeQuote(s, key, q); err != nil {
			diags.AddWarning("Plan quote unavailable", err.Error())
		}
	}
	diags.Append(p.SetKey(ctx, privKey, encodePlanned(key, q))...)
}

// quote is the quote a create was planned with: in the plan's private data, else in this runner's
// quote directory.
func (r *gpuInstanceResource) quote(ctx context.Context, p privateGetter, key string) (quote, bool) {
	q, found := fromPrivate(ctx, p, key)
	if !found {
		q, found, _ = r.data.quotes.get(key)
	}
	return q, found
}

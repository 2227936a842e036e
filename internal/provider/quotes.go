package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	var q quote
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return q, false, nil
	}
	if err != nil {
		return q, false, fmt.Errorf("plan quote: %w", err)
	}
	if err := json.Unmarshal(data, &q); err != nil || time.Now().After(q.Expires) {
		// A damaged or expired quote only costs a fresh one.
		return quote{}, false, nil //nolint:nilerr // deliberate, explained above
	}
	return q, true, nil
}

// put records a quote for key.
func (s *quoteStore) put(key string, q quote) error {
	s.sweep.Do(s.removeExpired)
	q.Expires = time.Now().Add(s.ttl).UTC().Truncate(time.Second)
	data, err := json.Marshal(q)
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

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
	"syscall"
	"time"
)

// quoteStore pins plan-time choices so the apply-time re-plan agrees with the plan.
//
// Terraform calls the provider's plan twice: once for `terraform plan` and again during apply, and any
// value shown as known in the first must come out identical in the second. Prices move between the two,
// so the first plan records the offer it chose here (keyed by the resource's inputs), and the second
// reuses it instead of asking the clouds again. Entries expire after a TTL and are removed when the
// instance is created. The file lives next to Terraform's working data by default; CI jobs that share
// a workspace can share it through plan_quote_file.
type quoteStore struct {
	path string
	ttl  time.Duration
}

type quote struct {
	// OfferID is the chosen offer (it carries the quoted price).
	OfferID string `json:"offer_id"`
	// Estimate is the price shown when the offer itself is left to apply (allow_fallback).
	Estimate float64   `json:"estimate"`
	Expires  time.Time `json:"expires"`
}

func defaultQuotePath() string {
	dir := os.Getenv("TF_DATA_DIR")
	if dir == "" {
		dir = ".terraform"
	}
	return filepath.Join(dir, "hydra-plan-quotes.json")
}

// quoteKey hashes the inputs that decide the choice.
func quoteKey(parts ...any) string {
	data, _ := json.Marshal(parts)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// get returns a live quote for key.
func (s *quoteStore) get(key string) (quote, bool, error) {
	var q quote
	var ok bool
	err := s.locked(func(m map[string]quote) (bool, error) {
		q, ok = m[key]
		if ok && time.Now().After(q.Expires) {
			ok = false
		}
		return false, nil
	})
	return q, ok, err
}

// put records a quote for key.
func (s *quoteStore) put(key string, q quote) error {
	q.Expires = time.Now().Add(s.ttl).UTC()
	return s.locked(func(m map[string]quote) (bool, error) {
		m[key] = q
		return true, nil
	})
}

// remove forgets key (the instance exists now) and every expired quote.
func (s *quoteStore) remove(key string) error {
	return s.locked(func(m map[string]quote) (bool, error) {
		delete(m, key)
		return true, nil
	})
}

// locked runs fn on the file's contents under an exclusive lock; fn says whether to write them back.
func (s *quoteStore) locked(fn func(map[string]quote) (bool, error)) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("plan quote file: %w", err)
	}
	lock, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("plan quote file: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("plan quote file: locking: %w", err)
	}
	m := map[string]quote{}
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("plan quote file: %w", err)
	default:
		if err := json.Unmarshal(data, &m); err != nil {
			// A damaged file only costs a fresh quote.
			m = map[string]quote{}
		}
	}
	write, err := fn(m)
	if err != nil || !write {
		return err
	}
	now := time.Now()
	for k, q := range m {
		if now.After(q.Expires) {
			delete(m, k)
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("plan quote file: %w", err)
	}
	return os.Rename(tmp, s.path)
}

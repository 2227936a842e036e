package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
)

// Intent is one create in flight, journaled before the create is sent and removed once the resource's
// create has returned to Terraform (which then holds the machine in state). An intent that outlives
// its create is the proof that a machine was left by this working directory's interrupted create of
// this resource: the only machine hydra ever adopts.
type Intent struct {
	// Resource is the resource's name; one working directory has at most one resource of a name.
	Resource string `json:"resource"`
	// Token is the ownership token the machine carries.
	Token string `json:"token"`
	// Pool and CloudName say where the machine was asked for.
	Pool      string `json:"pool"`
	CloudName string `json:"cloud_name"`
	// OfferID is the offer the create asked for.
	OfferID   string    `json:"offer_id"`
	StartedAt time.Time `json:"started_at"`
}

// Journal keeps Intents as one small JSON file per resource in Dir. A zero Dir keeps nothing.
type Journal struct {
	Dir string
}

func (j Journal) path(resource string) string { return filepath.Join(j.Dir, resource+".json") }

// sub is the journal in j's folder name, for another kind of resource (a zero j keeps nothing there
// either). j reads no folder, so two kinds' resources of one name do not share an intent.
func (j Journal) sub(name string) Journal {
	if j.Dir == "" {
		return Journal{}
	}
	return Journal{Dir: filepath.Join(j.Dir, name)}
}

// Put records an intent (replacing the resource's earlier one), atomically.
func (j Journal) Put(in Intent) error {
	if j.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(j.Dir, 0o700); err != nil {
		return fmt.Errorf("journal of creates in flight: %w", err)
	}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(j.path(in.Resource), data, 0o600); err != nil {
		return fmt.Errorf("journal of creates in flight: %w", err)
	}
	return nil
}

// Get returns the resource's intent, if one is journaled.
func (j Journal) Get(resource string) (Intent, bool, error) {
	if j.Dir == "" {
		return Intent{}, false, nil
	}
	data, err := os.ReadFile(j.path(resource))
	if errors.Is(err, fs.ErrNotExist) {
		return Intent{}, false, nil
	}
	if err != nil {
		return Intent{}, false, err
	}
	var in Intent
	if err := json.Unmarshal(data, &in); err != nil {
		return Intent{}, false, fmt.Errorf("journal entry %s: %w", j.path(resource), err)
	}
	return in, true, nil
}

// Remove forgets the resource's intent; a missing one is fine.
func (j Journal) Remove(resource string) error {
	if j.Dir == "" {
		return nil
	}
	if err := os.Remove(j.path(resource)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// All returns every journaled intent, by resource name.
func (j Journal) All() ([]Intent, error) {
	if j.Dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(j.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Intent
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		in, found, err := j.Get(name)
		if err != nil || !found {
			continue
		}
		out = append(out, in)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Resource < out[b].Resource })
	return out, nil
}

// Package sandbox is hydra's simulated cloud: a backend that behaves like a real one on this machine,
// with no credentials. It has several regions and a catalog of priced offers, instances that take a
// while to boot, and faults that can be switched on. Its whole state lives in a directory, so separate
// provider processes (terraform plan, apply, destroy) see the same instances.
//
// Files in the directory (all JSON, all optional except what the sandbox writes itself):
//
//	catalog.json   the offers (written with DefaultCatalog on first use; edit it to change prices)
//	faults.json    faults to inject (see Faults)
//	state.json     the instances (the sandbox's own)
//	stats.json     counters: how many offer requests the sandbox has answered (benchmarks read it)
package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// CloudName is the sandbox's cloud name in pools.yml and api_names.
const CloudName = "sandbox"

// File names in the sandbox directory.
const (
	CatalogFile = "catalog.json"
	FaultsFile  = "faults.json"
	StateFile   = "state.json"
	StatsFile   = "stats.json"
	lockFile    = ".lock"
)

// CatalogEntry is one offer of the sandbox catalog.
type CatalogEntry struct {
	Region       string `json:"region"`
	InstanceType string `json:"instance_type"`
	// GPU is the sandbox's own GPU name (api_names.sandbox in supported_gpus.yml).
	GPU          string  `json:"gpu"`
	GPUCount     int     `json:"gpu_count"`
	PricePerHour float64 `json:"price_per_hour"`
	Spot         bool    `json:"spot,omitempty"`
	// Available is how many more instances of this offer can start; -1 means unlimited.
	Available int `json:"available"`
}

// Faults switch on misbehaviour, read from faults.json on every call.
type Faults struct {
	// OutOfStock lists "region/instance_type" offers that are still listed but fail at create with a
	// capacity error (capacity gone between plan and apply).
	OutOfStock []string `json:"out_of_stock,omitempty"`
	// APIErrors makes the next N calls fail with a server error (each failure uses one up).
	APIErrors int `json:"api_errors,omitempty"`
	// OffersDelay slows the offer listing down ("5s"), to exercise per-cloud timeouts.
	OffersDelay string `json:"offers_delay,omitempty"`
	// BootTime overrides the configured boot time for new instances (slow boots), e.g. "10m".
	BootTime string `json:"boot_time,omitempty"`
	// FailBoot makes new instances end in the error status instead of running.
	FailBoot bool `json:"fail_boot,omitempty"`
	// LoseCreateResponses makes the next N creates succeed at the cloud but answer with an error, as
	// when a response is lost on the way back.
	LoseCreateResponses int `json:"lose_create_responses,omitempty"`
}

// Record is one sandbox instance as stored in state.json.
type Record struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Region       string    `json:"region"`
	InstanceType string    `json:"instance_type"`
	GPUType      string    `json:"gpu_type"`
	GPU          string    `json:"gpu"`
	GPUCount     int       `json:"gpu_count"`
	Spot         bool      `json:"spot"`
	PricePerHour float64   `json:"price_per_hour"`
	CreatedAt    time.Time `json:"created_at"`
	RunningAt    time.Time `json:"running_at"`
	FailBoot     bool      `json:"fail_boot,omitempty"`
	DeletedAt    time.Time `json:"deleted_at,omitzero"`
	GoneAt       time.Time `json:"gone_at,omitzero"`
	// SSHKeys are the authorized keys the instance was created with.
	SSHKeys []string `json:"ssh_keys,omitempty"`
}

type state struct {
	Instances []*Record `json:"instances"`
	// Created counts every instance ever created (tests check "exactly one machine").
	Created int `json:"created"`
}

// Machines runs the simulated machines behind sandbox instances (real sshd processes), when the
// sandbox is asked to make its instances reachable over SSH.
type Machines interface {
	// Start makes the machine in dir reachable and returns its endpoint (idempotent).
	Start(dir string, rec Record) (controlplane.SSHEndpoint, error)
	// Stop ends the machine in dir (idempotent).
	Stop(dir string) error
}

// Config configures the sandbox.
type Config struct {
	// Dir holds the sandbox's files; it is created when missing.
	Dir string
	// BootTime is how long a new instance stays pending (default 2s).
	BootTime time.Duration
	// DeleteTime is how long a deleted instance takes to terminate (default 1s).
	DeleteTime time.Duration
	// Machines, when set, makes running instances reachable over SSH.
	Machines Machines
}

// Backend is the sandbox's InstanceManagerBackend.
type Backend struct {
	cfg Config
	inv *inventory.Inventory
	log hclog.Logger
}

var _ controlplane.InstanceManagerBackend = (*Backend)(nil)

// New opens (and if needed creates) a sandbox directory.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	if cfg.Dir == "" {
		return nil, errors.New("sandbox: no directory")
	}
	if cfg.BootTime == 0 {
		cfg.BootTime = 2 * time.Second
	}
	if cfg.DeleteTime == 0 {
		cfg.DeleteTime = time.Second
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: creating %s: %w", cfg.Dir, err)
	}
	b := &Backend{cfg: cfg, inv: inv, log: logger.Named("sandbox")}
	err := b.locked(func() error {
		p := filepath.Join(cfg.Dir, CatalogFile)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return writeJSON(p, DefaultCatalog())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Cloud is "sandbox".
func (b *Backend) Cloud() string { return CloudName }

// Dir returns the sandbox directory.
func (b *Backend) Dir() string { return b.cfg.Dir }

// DefaultCatalog is the catalog a new sandbox starts with: realistic shapes and prices in three regions.
func DefaultCatalog() []CatalogEntry {
	var out []CatalogEntry
	type shape struct {
		gpu    string
		counts []int
		price  float64 // per GPU per hour in the cheapest region
	}
	shapes := []shape{
		{"H100", []int{1, 2, 4, 8}, 2.49},
		{"H200", []int{1, 8}, 3.59},
		{"A100-80GB", []int{1, 2, 4, 8}, 1.39},
		{"L40S", []int{1, 2, 4}, 0.99},
		{"L4", []int{1, 2, 4}, 0.49},
		{"B200", []int{1, 8}, 5.29},
		{"RTX6000ADA", []int{1, 2}, 0.89},
		{"RTXPRO6000", []int{1, 2}, 1.79},
	}
	regions := []struct {
		name   string
		factor float64
	}{{"sbx-eu-1", 1.00}, {"sbx-us-1", 1.06}, {"sbx-ap-1", 1.12}}
	for _, s := range shapes {
		for _, n := range s.counts {
			for _, r := range regions {
				price := roundCents(s.price * float64(n) * r.factor)
				it := fmt.Sprintf("sbx.%s.%dx", strings.ToLower(s.gpu), n)
				out = append(out, CatalogEntry{Region: r.name, InstanceType: it, GPU: s.gpu, GPUCount: n, PricePerHour: price, Available: -1})
				if n == 1 {
					out = append(out, CatalogEntry{Region: r.name, InstanceType: it, GPU: s.gpu, GPUCount: n, PricePerHour: roundCents(price * 0.45), Spot: true, Available: -1})
				}
			}
		}
	}
	return out
}

func roundCents(p float64) float64 { return float64(int64(p*100+0.5)) / 100 }

// Stats are the sandbox's counters.
type Stats struct {
	OfferRequests int `json:"offer_requests"`
}

// Stats reads stats.json.
func (b *Backend) Stats() (Stats, error) {
	var st Stats
	err := readJSON(filepath.Join(b.cfg.Dir, StatsFile), &st)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return st, err
}

// Offers lists the catalog, mapped to hydra's GPU types.
func (b *Backend) Offers(ctx context.Context) ([]controlplane.Offer, error) {
	if err := b.locked(func() error {
		st, err := b.Stats()
		if err != nil {
			return err
		}
		st.OfferRequests++
		return writeJSON(filepath.Join(b.cfg.Dir, StatsFile), st)
	}); err != nil {
		return nil, err
	}
	faults, err := b.faults()
	if err != nil {
		return nil, err
	}
	if faults.OffersDelay != "" {
		d, err := time.ParseDuration(faults.OffersDelay)
		if err != nil {
			return nil, fmt.Errorf("sandbox: faults.json offers_delay: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, controlplane.NewError(controlplane.ErrOther, CloudName, "listing offers", ctx.Err())
		case <-time.After(d):
		}
	}
	if err := b.apiFault("listing offers"); err != nil {
		return nil, err
	}
	catalog, err := b.Catalog()
	if err != nil {
		return nil, err
	}
	var out []controlplane.Offer
	for _, e := range catalog {
		t := b.inv.TypeForAPIName(CloudName, e.GPU)
		if t == "" || e.GPUCount > b.inv.GPUs[t].MaxCount {
			continue
		}
		out = append(out, controlplane.Offer{
			Cloud: CloudName, Region: e.Region, InstanceType: e.InstanceType, GPUType: t, GPUCount: e.GPUCount,
			PricePerHour: e.PricePerHour, Spot: e.Spot, Available: e.Available,
			Details: map[string]string{"gpu": e.GPU},
		})
	}
	return out, nil
}

// Catalog reads catalog.json.
func (b *Backend) Catalog() ([]CatalogEntry, error) {
	var c []CatalogEntry
	if err := readJSON(filepath.Join(b.cfg.Dir, CatalogFile), &c); err != nil {
		return nil, fmt.Errorf("sandbox: %s: %w", CatalogFile, err)
	}
	return c, nil
}

// SetCatalog replaces catalog.json.
func (b *Backend) SetCatalog(c []CatalogEntry) error {
	return b.locked(func() error { return writeJSON(filepath.Join(b.cfg.Dir, CatalogFile), c) })
}

// SetFaults replaces faults.json.
func (b *Backend) SetFaults(f Faults) error {
	return b.locked(func() error { return writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f) })
}

func (b *Backend) faults() (Faults, error) {
	var f Faults
	err := readJSON(filepath.Join(b.cfg.Dir, FaultsFile), &f)
	if errors.Is(err, fs.ErrNotExist) {
		return Faults{}, nil
	}
	if err != nil {
		return f, fmt.Errorf("sandbox: %s: %w", FaultsFile, err)
	}
	return f, nil
}

// apiFault uses up one injected API error, if any.
func (b *Backend) apiFault(op string) error {
	var hit bool
	err := b.locked(func() error {
		f, err := b.faults()
		if err != nil || f.APIErrors <= 0 {
			return err
		}
		f.APIErrors--
		hit = true
		return writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f)
	})
	if err != nil {
		return err
	}
	if hit {
		return controlplane.Errorf(controlplane.ErrOther, CloudName, op, "injected API error (HTTP 503)")
	}
	return nil
}

// Create starts an instance.
func (b *Backend) Create(ctx context.Context, req controlplane.CreateRequest) (controlplane.Instance, error) {
	if err := b.apiFault("creating instance"); err != nil {
		return controlplane.Instance{}, err
	}
	var rec *Record
	var lost bool
	err := b.update(func(st *state, f *Faults) error {
		for _, r := range st.Instances {
			if r.Name == req.Name && r.DeletedAt.IsZero() {
				return controlplane.Errorf(controlplane.ErrInvalid, CloudName, "creating instance", "an instance named %q already exists (id %s)", req.Name, r.ID)
			}
		}
		catalog, err := b.Catalog()
		if err != nil {
			return err
		}
		var entry *CatalogEntry
		for i, e := range catalog {
			if e.Region == req.Offer.Region && e.InstanceType == req.Offer.InstanceType && e.Spot == req.Offer.Spot {
				entry = &catalog[i]
			}
		}
		if entry == nil {
			return controlplane.Errorf(controlplane.ErrCapacity, CloudName, "creating instance", "offer %s/%s is no longer in the catalog", req.Offer.Region, req.Offer.InstanceType)
		}
		for _, oos := range f.OutOfStock {
			if oos == entry.Region+"/"+entry.InstanceType {
				return controlplane.Errorf(controlplane.ErrCapacity, CloudName, "creating instance", "no capacity left for %s in %s", entry.InstanceType, entry.Region)
			}
		}
		if entry.Available == 0 {
			return controlplane.Errorf(controlplane.ErrCapacity, CloudName, "creating instance", "no capacity left for %s in %s", entry.InstanceType, entry.Region)
		}
		if req.MaxPricePerHour > 0 && entry.PricePerHour > req.MaxPricePerHour+1e-9 {
			return controlplane.Errorf(controlplane.ErrInvalid, CloudName, "creating instance", "price $%.2f/h is above the maximum $%.2f/h", entry.PricePerHour, req.MaxPricePerHour)
		}
		if entry.Available > 0 {
			entry.Available--
			if err := writeJSON(filepath.Join(b.cfg.Dir, CatalogFile), catalog); err != nil {
				return err
			}
		}
		boot := b.cfg.BootTime
		if f.BootTime != "" {
			d, err := time.ParseDuration(f.BootTime)
			if err != nil {
				return fmt.Errorf("sandbox: faults.json boot_time: %w", err)
			}
			boot = d
		}
		now := time.Now().UTC()
		rec = &Record{
			ID: "sbx-" + randomHex(6), Name: req.Name, Region: entry.Region, InstanceType: entry.InstanceType,
			GPUType: b.inv.TypeForAPIName(CloudName, entry.GPU), GPU: entry.GPU, GPUCount: entry.GPUCount, Spot: entry.Spot,
			PricePerHour: entry.PricePerHour, CreatedAt: now, RunningAt: now.Add(boot), FailBoot: f.FailBoot,
			SSHKeys: req.SSHPublicKeys,
		}
		st.Instances = append(st.Instances, rec)
		st.Created++
		if f.LoseCreateResponses > 0 {
			f.LoseCreateResponses--
			lost = true
		}
		return nil
	})
	if err != nil {
		return controlplane.Instance{}, err
	}
	if lost {
		return controlplane.Instance{}, controlplane.Errorf(controlplane.ErrOther, CloudName, "creating instance", "injected fault: the response was lost (HTTP 502)")
	}
	b.log.Info("instance created", "id", rec.ID, "name", rec.Name, "region", rec.Region, "instance_type", rec.InstanceType)
	return b.toInstance(rec, time.Now())
}

// Get returns one instance.
func (b *Backend) Get(ctx context.Context, id string) (controlplane.Instance, error) {
	if err := b.apiFault("reading instance"); err != nil {
		return controlplane.Instance{}, err
	}
	st, err := b.load()
	if err != nil {
		return controlplane.Instance{}, err
	}
	for _, r := range st.Instances {
		if r.ID == id {
			return b.toInstance(r, time.Now())
		}
	}
	return controlplane.Instance{}, controlplane.Errorf(controlplane.ErrNotFound, CloudName, "reading instance", "instance %s not found", id)
}

// List returns the live instances whose names start with prefix.
func (b *Backend) List(ctx context.Context, prefix string) ([]controlplane.Instance, error) {
	if err := b.apiFault("listing instances"); err != nil {
		return nil, err
	}
	st, err := b.load()
	if err != nil {
		return nil, err
	}
	var out []controlplane.Instance
	now := time.Now()
	for _, r := range st.Instances {
		if !strings.HasPrefix(r.Name, prefix) || (!r.GoneAt.IsZero() && now.After(r.GoneAt)) {
			continue
		}
		inst, err := b.toInstance(r, now)
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete starts termination.
func (b *Backend) Delete(ctx context.Context, id string) error {
	if err := b.apiFault("deleting instance"); err != nil {
		return err
	}
	var found *Record
	err := b.update(func(st *state, _ *Faults) error {
		now := time.Now().UTC()
		for _, r := range st.Instances {
			if r.ID != id {
				continue
			}
			if !r.GoneAt.IsZero() && now.After(r.GoneAt) {
				return controlplane.Errorf(controlplane.ErrNotFound, CloudName, "deleting instance", "instance %s is already terminated", id)
			}
			if r.DeletedAt.IsZero() {
				r.DeletedAt = now
				r.GoneAt = now.Add(b.cfg.DeleteTime)
			}
			found = r
			return nil
		}
		return controlplane.Errorf(controlplane.ErrNotFound, CloudName, "deleting instance", "instance %s not found", id)
	})
	if err != nil {
		return err
	}
	if b.cfg.Machines != nil {
		if err := b.cfg.Machines.Stop(b.machineDir(found.ID)); err != nil {
			b.log.Warn("stopping the simulated machine failed", "id", found.ID, "error", err)
		}
	}
	b.log.Info("instance deleted", "id", found.ID, "name", found.Name)
	return nil
}

// Instances returns every record, terminated ones included (tests and the CLI).
func (b *Backend) Instances() ([]Record, error) {
	st, err := b.load()
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(st.Instances))
	for i, r := range st.Instances {
		out[i] = *r
	}
	return out, nil
}

// Live returns the instances not deleted.
func (b *Backend) Live() ([]Record, error) {
	all, err := b.Instances()
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range all {
		if r.DeletedAt.IsZero() {
			out = append(out, r)
		}
	}
	return out, nil
}

// CreatedCount returns how many instances were ever created.
func (b *Backend) CreatedCount() (int, error) {
	st, err := b.load()
	return st.Created, err
}

// Vanish removes an instance as if someone deleted it outside Terraform.
func (b *Backend) Vanish(id string) error {
	if b.cfg.Machines != nil {
		if err := b.cfg.Machines.Stop(b.machineDir(id)); err != nil {
			return err
		}
	}
	return b.update(func(st *state, _ *Faults) error {
		for _, r := range st.Instances {
			if r.ID == id {
				now := time.Now().UTC()
				r.DeletedAt, r.GoneAt = now, now
				return nil
			}
		}
		return fmt.Errorf("sandbox: no instance %s", id)
	})
}

func (b *Backend) machineDir(id string) string { return filepath.Join(b.cfg.Dir, "machines", id) }

// MachineDir returns the directory of an instance's simulated machine.
func (b *Backend) MachineDir(id string) string { return b.machineDir(id) }

func (b *Backend) toInstance(r *Record, now time.Time) (controlplane.Instance, error) {
	inst := controlplane.Instance{
		ID: r.ID, Name: r.Name, Cloud: CloudName, Region: r.Region, InstanceType: r.InstanceType,
		GPUType: r.GPUType, GPUCount: r.GPUCount, Spot: r.Spot, PricePerHour: r.PricePerHour, CreatedAt: r.CreatedAt,
	}
	switch {
	case !r.GoneAt.IsZero() && now.After(r.GoneAt):
		inst.Status, inst.CloudStatus = controlplane.StatusTerminated, "terminated"
	case !r.DeletedAt.IsZero():
		inst.Status, inst.CloudStatus = controlplane.StatusRunning, "stopping"
	case now.Before(r.RunningAt):
		inst.Status, inst.CloudStatus = controlplane.StatusPending, "booting"
	case r.FailBoot:
		inst.Status, inst.CloudStatus, inst.Message = controlplane.StatusError, "failed", "injected fault: the machine failed to boot"
	default:
		inst.Status, inst.CloudStatus = controlplane.StatusRunning, "running"
		if b.cfg.Machines != nil {
			ep, err := b.cfg.Machines.Start(b.machineDir(r.ID), *r)
			if err != nil {
				return inst, controlplane.NewError(controlplane.ErrOther, CloudName, "starting the simulated machine", err)
			}
			inst.SSH = &ep
		} else {
			inst.SSH = &controlplane.SSHEndpoint{Host: "127.0.0.1", Port: 22, User: "root"}
		}
	}
	return inst, nil
}

func (b *Backend) load() (*state, error) {
	st := &state{}
	err := b.locked(func() error {
		err := readJSON(filepath.Join(b.cfg.Dir, StateFile), st)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
	return st, err
}

func (b *Backend) update(fn func(*state, *Faults) error) error {
	return b.locked(func() error {
		st := &state{}
		if err := readJSON(filepath.Join(b.cfg.Dir, StateFile), st); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		f, err := b.faults()
		if err != nil {
			return err
		}
		before := f
		if err := fn(st, &f); err != nil {
			return err
		}
		if f.LoseCreateResponses != before.LoseCreateResponses {
			if err := writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f); err != nil {
				return err
			}
		}
		return writeJSON(filepath.Join(b.cfg.Dir, StateFile), st)
	})
}

// locked runs fn holding an exclusive lock on the sandbox directory (across processes).
func (b *Backend) locked(fn func() error) error {
	f, err := os.OpenFile(filepath.Join(b.cfg.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("sandbox: locking %s: %w", b.cfg.Dir, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	return fn()
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// writeJSON replaces a file atomically.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Package sandbox is hydra's simulated cloud: a backend that behaves like a real one on this machine,
// with no credentials. It has several regions and a catalog of priced offers, instances that take a
// while to boot, and faults that can be switched on. Its whole state lives in a directory, so separate
// provider processes (terraform plan, apply, destroy) see the same instances.
//
// The sandbox is not an HTTP API: it is the cloud and its client in one, in process. It keeps the
// backend contract (cloudprovider.InstanceManagerBackend) like every other cloud, keeps the ownership
// record with each instance (cloudprovider.OwnershipConfirmer), and offers the admin surface every
// emulator offers (simulation.Admin) over the same directory.
//
// Files in the directory (all JSON, all optional except what the sandbox writes itself):
//
//	catalog.json   the offers (written with DefaultCatalog on first use; edit it to change prices)
//	faults.json    faults to inject (see Faults)
//	state.json     the instances, clusters and volumes (the sandbox's own; see clusters.go, volumes.go)
//	volumes/<id>/  a volume's store: its files (data/) and a block volume's file system (see volumes.go)
//	stats.json     counters: offer requests, instance Gets and Lists the sandbox has answered (benchmarks read them)
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
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
	Hardware
	// Machine is the kind of machine the offer rents: "" or "vm" (a virtual machine with systemd), or
	// "container" (a container without systemd, whose systemctl refuses to work).
	Machine string `json:"machine,omitempty"`
	// Fabric is the high-speed fabric the entry's machines share in their region ("infiniband"; ""
	// none): the sandbox offers fabric clusters of the entry only where it is set.
	Fabric string `json:"fabric,omitempty"`
	// MaxClusterNodes is the most nodes one cluster of the entry may have (0: DefaultMaxClusterNodes).
	MaxClusterNodes int `json:"max_cluster_nodes,omitempty"`
	// VolumeType makes the entry a volume entry (no GPU): its region has volumes of this type
	// ("block" or "shared_fs") at PricePerGBMonth (0: unpriced), or none at all ("none"). A region
	// without volume entries has both types, unpriced (see VolumeTypes).
	VolumeType      string  `json:"volume_type,omitempty"`
	PricePerGBMonth float64 `json:"price_per_gb_month,omitempty"`
}

// Hardware is what a catalog entry says of its machines, and what an instance record keeps of its
// entry's (all optional: zero when the catalog does not say).
type Hardware struct {
	// FormFactor is "sxm" or "pcie".
	FormFactor string `json:"form_factor,omitempty"`
	// GPUMemoryGB is the memory of one GPU, VCPUs and MemoryGB the whole machine's.
	GPUMemoryGB int `json:"gpu_memory_gb,omitempty"`
	VCPUs       int `json:"vcpus,omitempty"`
	MemoryGB    int `json:"memory_gb,omitempty"`
}

// hardware is the contract's reading of h. A form factor other than sxm or pcie (say "SXM5") is read
// the way the clouds' names are; one it cannot read is left out.
func (h Hardware) hardware() cloudprovider.Hardware {
	return cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(h.FormFactor),
		GPUMemoryGB: max(h.GPUMemoryGB, 0),
		VCPUs:       max(h.VCPUs, 0),
		MemoryGB:    max(h.MemoryGB, 0),
	}
}

// Faults switch on misbehaviour, read from faults.json on every call: the shared vocabulary every
// emulator understands (simulation.Faults: rate_limited, retry_after_seconds, server_errors,
// lose_create_responses, boot_failures, sold_out, latency) and the sandbox's own. Counters run down as
// faults fire, in faults.json, so every process sharing the directory sees them.
//
// The sandbox has no HTTP between cloud and client, so the shared faults act on its calls (Offers,
// Create, Get, List, Delete, ConfirmOwnership) as they would reach a cloud's HTTP client, and the calls
// are retried under the same policy (restclient.Retry: the backoff and attempts of restclient's
// defaults, or Config.Tuning): Latency delays every attempt; RateLimited refuses an attempt (429),
// which is waited out for RetryAfterSeconds (default 1) and tried again; ServerErrors fail an attempt
// (503) before it does anything, which is retried after the client's backoff. Every call is retried
// like a read, creates included: a sandbox create is idempotent by name and a server error fails it
// before it acts. A call whose retries run out fails with an unclassified error ("injected API
// error"). LoseCreateResponses, BootFailures and SoldOut act on creates, of machines and of clusters
// (a boot failure on one node).
type Faults struct {
	simulation.Faults
	// OutOfStock lists "region/instance_type" offers that are still listed but fail at create with a
	// capacity error (capacity gone between plan and apply for one offer; SoldOut is every offer).
	OutOfStock []string `json:"out_of_stock,omitempty"`
	// OffersDelay slows the offer listing down ("5s"), to exercise per-cloud timeouts.
	OffersDelay string `json:"offers_delay,omitempty"`
	// BootTime overrides the configured boot time for new instances (slow boots), e.g. "10m".
	BootTime string `json:"boot_time,omitempty"`
	// PartialClusters makes the next N cluster creates run out of stock before their last node, after
	// the others started: the cloud delivered all but one (the create terminates them; see CreateCluster).
	PartialClusters int `json:"partial_clusters,omitempty"`
	// Preempt preempts the named spot machines or cluster nodes with notice on the next call (see
	// PreemptFault); each entry is used up once it fires.
	Preempt []PreemptFault `json:"preempt,omitempty"`
}

// Ownership is the ownership record the sandbox keeps with an instance (cloudprovider.Ownership).
type Ownership struct {
	Token     string `json:"token,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Confirmed bool   `json:"confirmed,omitempty"`
}

// ownerAtCreate is the record kept of a create's ownership record: never confirmed yet.
func ownerAtCreate(o cloudprovider.Ownership) Ownership {
	return Ownership{Token: o.Token, Resource: o.Resource}
}

// contract is the contract's form of the record.
func (o Ownership) contract() cloudprovider.Ownership {
	return cloudprovider.Ownership{Resource: o.Resource, Token: o.Token, Confirmed: o.Confirmed}
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
	// Owner is the ownership record given at create (empty for instances created without one);
	// ConfirmOwnership sets Confirmed.
	Owner Ownership `json:"owner,omitzero"`
	// Hardware is the catalog entry's the instance was created from, as read (zero in records older
	// than these fields).
	Hardware
	// Machine is the catalog entry's kind of machine ("" or "vm", or "container").
	Machine string `json:"machine,omitempty"`
	// Cluster is the ID of the cluster the instance is a node of ("" for a machine of its own);
	// PrivateAddr its address on the cluster's private network, Fabric whether it is on the cluster's
	// fabric.
	Cluster     string `json:"cluster,omitempty"`
	PrivateAddr string `json:"private_addr,omitempty"`
	Fabric      bool   `json:"fabric,omitempty"`
	// PreemptNoticeAt and PreemptEndsAt are a preemption's notice and end (see Preempt).
	PreemptNoticeAt time.Time `json:"preempt_notice_at,omitzero"`
	PreemptEndsAt   time.Time `json:"preempt_ends_at,omitzero"`
	// Volumes are the volumes the instance got at create (see volumes.go).
	Volumes []InstanceVolume `json:"volumes,omitempty"`
}

type state struct {
	Instances []*Record `json:"instances"`
	// Created counts every instance ever created, cluster nodes included (tests check "exactly one
	// machine").
	Created int `json:"created"`
	// Clusters are the clusters ever ordered; their nodes are in Instances.
	Clusters []*ClusterRecord `json:"clusters,omitempty"`
	// Volumes are the volumes not deleted (see volumes.go).
	Volumes []*VolumeRecord `json:"volumes,omitempty"`
}

// Machines runs the simulated machines behind sandbox instances (real sshd processes), when the
// sandbox is asked to make its instances reachable over SSH.
type Machines interface {
	// Start makes the machine in dir reachable and returns its endpoint (idempotent).
	Start(dir string, rec Record) (cloudprovider.SSHEndpoint, error)
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
	// Tuning sets the retries of calls that meet injected faults (RetryMax, RetryWaitMin and
	// RetryWaitMax; zero fields take restclient's defaults, the policy of every cloud's client). Its
	// other fields do not apply.
	Tuning restclient.Tuning
}

// Backend is the sandbox's InstanceManagerBackend.
type Backend struct {
	cfg Config
	inv *inventory.Inventory
	log hclog.Logger
	// bootSlots bounds how many machines the creates bring up at the same time; booting counts them.
	bootSlots chan struct{}
	booting   sync.WaitGroup
	// onPlaced, when set (by tests), is called after CreateCluster has placed a node.
	onPlaced func(Record)
}

var (
	_ cloudprovider.InstanceManagerBackend = (*Backend)(nil)
	_ cloudprovider.OwnershipConfirmer     = (*Backend)(nil)
	_ cloudprovider.ClusterBackend         = (*Backend)(nil)
	_ simulation.Admin                     = (*Backend)(nil)
)

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
	b := &Backend{cfg: cfg, inv: inv, log: logger.Named("sandbox"), bootSlots: make(chan struct{}, bringUpAtOnce)}
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

// DefaultCatalog is the catalog a new sandbox starts with: realistic shapes, hardware and prices in
// three regions, of which sbx-eu-1 has an InfiniBand fabric (its fabric clusters; the others rent
// clusters of any interconnect only). Machines grow with their GPUs: vCPUs and RAM are per GPU times the count, at the
// levels the real clouds sell (H100 SXM 26 vCPUs and 225 GB a GPU as at Lambda, L40S 8 and 64 as at
// UpCloud, RTX PRO 6000 30 and 120 as at Verda). It has no volume entries: every region has both
// volume types, unpriced (see VolumeTypes).
func DefaultCatalog() []CatalogEntry {
	var out []CatalogEntry
	type shape struct {
		gpu    string
		counts []int
		price  float64 // per GPU per hour in the cheapest region
		form   string
		vram   int // GB, one GPU
		vcpus  int // per GPU
		ram    int // GB per GPU
	}
	const sxm, pcie = cloudprovider.FormFactorSXM, cloudprovider.FormFactorPCIe
	shapes := []shape{
		{"H100", []int{1, 2, 4, 8}, 2.49, sxm, 80, 26, 225},
		{"H200", []int{1, 8}, 3.59, sxm, 141, 24, 200},
		{"A100-80GB", []int{1, 2, 4, 8}, 1.39, sxm, 80, 30, 225},
		{"L40S", []int{1, 2, 4}, 0.99, pcie, 48, 8, 64},
		{"L4", []int{1, 2, 4}, 0.49, pcie, 24, 8, 32},
		{"B200", []int{1, 8}, 5.29, sxm, 180, 26, 360},
		{"RTX6000ADA", []int{1, 2}, 0.89, pcie, 48, 10, 60},
		{"RTXPRO6000", []int{1, 2}, 1.79, pcie, 96, 30, 120},
	}
	regions := []struct {
		name   string
		factor float64
		fabric string
	}{{"sbx-eu-1", 1.00, FabricInfiniBand}, {"sbx-us-1", 1.06, ""}, {"sbx-ap-1", 1.12, ""}}
	for _, s := range shapes {
		for _, n := range s.counts {
			for _, r := range regions {
				price := roundCents(s.price * float64(n) * r.factor)
				it := fmt.Sprintf("sbx.%s.%dx", strings.ToLower(s.gpu), n)
				e := CatalogEntry{Region: r.name, InstanceType: it, GPU: s.gpu, GPUCount: n, PricePerHour: price, Available: -1,
					Hardware: Hardware{FormFactor: s.form, GPUMemoryGB: s.vram, VCPUs: s.vcpus * n, MemoryGB: s.ram * n}, Fabric: r.fabric}
				out = append(out, e)
				if n == 1 {
					e.PricePerHour, e.Spot = roundCents(price*0.45), true
					out = append(out, e)
				}
			}
		}
	}
	return out
}

func roundCents(p float64) float64 { return float64(int64(p*100+0.5)) / 100 }

// Counters are the sandbox's counters in stats.json.
type Counters struct {
	OfferRequests int `json:"offer_requests"`
	// InstanceGets and InstanceLists count the instance reads asked of the sandbox (Get and List calls).
	InstanceGets  int `json:"instance_gets"`
	InstanceLists int `json:"instance_lists"`
}

// count adds one to a counter of stats.json.
func (b *Backend) count(add func(*Counters)) error {
	return b.locked(func() error {
		c, err := b.Counters()
		if err != nil {
			return err
		}
		add(&c)
		return writeJSON(filepath.Join(b.cfg.Dir, StatsFile), c)
	})
}

// Counters reads stats.json.
func (b *Backend) Counters() (Counters, error) {
	var c Counters
	err := readJSON(filepath.Join(b.cfg.Dir, StatsFile), &c)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return c, err
}

// Stats counts the instances ever created and lists the live ones, those not deleted (simulation.Admin).
func (b *Backend) Stats() (simulation.Stats, error) {
	out := simulation.Stats{Live: []simulation.Machine{}}
	st, err := b.load()
	if err != nil {
		return out, err
	}
	out.Created = st.Created
	for _, r := range st.Instances {
		if r.DeletedAt.IsZero() {
			out.Live = append(out.Live, simulation.Machine{ID: r.ID, Name: r.Name})
		}
	}
	return out, nil
}

// Offers lists the catalog, mapped to hydra's GPU types through api_names.sandbox. Every offer carries
// the catalog's GPU name as CloudGPU; a GPU the inventory does not map is offered with GPUType "" (the
// control plane reports it and never ranks it), and entries without a GPU are left out, as are counts
// above the type's max_count.
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	offers, _, err := b.offers(ctx)
	return offers, err
}

// offers answers one offer request (Offers, ClusterOffers): it counts it, lets the faults act on it,
// and returns the offers with the catalog entry of each.
func (b *Backend) offers(ctx context.Context) ([]cloudprovider.Offer, []CatalogEntry, error) {
	if err := b.locked(func() error {
		c, err := b.Counters()
		if err != nil {
			return err
		}
		c.OfferRequests++
		return writeJSON(filepath.Join(b.cfg.Dir, StatsFile), c)
	}); err != nil {
		return nil, nil, err
	}
	faults, err := b.faults()
	if err != nil {
		return nil, nil, err
	}
	if faults.OffersDelay != "" {
		d, err := time.ParseDuration(faults.OffersDelay)
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox: faults.json offers_delay: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, "listing offers", ctx.Err())
		case <-time.After(d):
		}
	}
	if err := b.call(ctx, "listing offers"); err != nil {
		return nil, nil, err
	}
	catalog, err := b.Catalog()
	if err != nil {
		return nil, nil, err
	}
	var (
		out     []cloudprovider.Offer
		entries []CatalogEntry
	)
	for _, e := range catalog {
		if strings.TrimSpace(e.GPU) == "" || e.GPUCount < 1 {
			continue // no GPU product
		}
		// A GPU the inventory does not map is offered with GPUType "" (reported, never ranked).
		t := b.inv.GPUType(CloudName, e.GPU)
		if t != "" && e.GPUCount > b.inv.GPUs[t].MaxCount {
			continue
		}
		price, err := money.FromFloat(e.PricePerHour)
		if err != nil {
			continue // a price no cloud would ask: not an offer
		}
		out = append(out, cloudprovider.Offer{
			Cloud: CloudName, Region: e.Region, InstanceType: e.InstanceType, GPUType: t, CloudGPU: e.GPU, GPUCount: e.GPUCount,
			Hardware:     e.hardware(),
			PricePerHour: price, Spot: e.Spot, Available: e.Available,
			Details: map[string]string{"gpu": e.GPU},
		})
		entries = append(entries, e)
	}
	return out, entries, nil
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

// SetAllFaults replaces faults.json: every fault, the sandbox's own included.
func (b *Backend) SetAllFaults(f Faults) error {
	return b.locked(func() error { return writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f) })
}

// AllFaults reads faults.json: every armed fault, the sandbox's own included.
func (b *Backend) AllFaults() (Faults, error) {
	var f Faults
	err := b.locked(func() error {
		var err error
		f, err = b.faults()
		return err
	})
	return f, err
}

// SetFaults replaces the armed faults of the shared vocabulary (simulation.Admin); the sandbox's own
// (out_of_stock, offers_delay, boot_time) stay as they are.
func (b *Backend) SetFaults(shared simulation.Faults) error {
	return b.locked(func() error {
		f, err := b.faults()
		if err != nil {
			return err
		}
		f.Faults = shared
		return writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f)
	})
}

// Faults returns the armed faults of the shared vocabulary, counters as far as they have run down
// (simulation.Admin).
func (b *Backend) Faults() (simulation.Faults, error) {
	f, err := b.AllFaults()
	return f.Faults, err
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

// call passes one call through the armed request faults (see Faults) under the retry policy of a
// cloud's HTTP client (restclient.Retry with Config.Tuning): it returns nil when the call may go ahead,
// after waiting out rate limits and retrying server errors, or the error the call ends with.
func (b *Backend) call(ctx context.Context, op string) error {
	attempts := 0
	err := restclient.Retry(ctx, b.cfg.Tuning, false, func(ctx context.Context) error {
		attempts++
		var (
			status     int
			latency    time.Duration
			retryAfter time.Duration
		)
		err := b.locked(func() error {
			f, err := b.faults()
			if err != nil {
				return err
			}
			latency = time.Duration(f.Latency)
			retryAfter = time.Duration(max(f.RetryAfterSeconds, 1)) * time.Second
			fired, err := b.firePreemptFaults(&f)
			if err != nil {
				return err
			}
			if status, _ = f.Take(http.StatusServiceUnavailable); status == 0 && !fired {
				return nil
			}
			return writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f)
		})
		if err != nil {
			return err
		}
		if !simulation.Delay(ctx, latency) {
			return ctx.Err()
		}
		if status == 0 {
			return nil
		}
		b.log.Debug("injected fault", "op", op, "status", status, "attempt", attempts)
		return &restclient.HTTPError{Method: "CALL", Path: op, Status: status, RetryAfter: retryAfter}
	})
	var he *restclient.HTTPError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &he) && he.Status == http.StatusTooManyRequests:
		return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "injected rate limit (HTTP 429), %d attempts", attempts)
	case errors.As(err, &he):
		return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "injected API error (HTTP %d), %d attempts", he.Status, attempts)
	case ctx.Err() != nil:
		return cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, err)
	}
	return err
}

// Create starts an instance carrying req.Name and the ownership record req.Owner. It is idempotent by
// name: while an instance of that name is not deleted, Create returns it and starts nothing. A price
// above req.MaxPricePerHour is a capacity error, as is an offer sold out, out of stock or gone from the
// catalog; nothing is created then.
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create, the new machine given the volumes of mounts (CreateWithVolumes).
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "creating instance"
	if req.MaxPricePerHour < 0 {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "max price %s must not be negative", req.MaxPricePerHour)
	}
	if err := b.call(ctx, op); err != nil {
		return cloudprovider.Instance{}, err
	}
	var (
		inst     cloudprovider.Instance
		rec      *Record
		existing bool
		lost     bool
	)
	err := b.update(func(st *state, f *Faults) error {
		now := time.Now()
		for _, r := range st.Instances {
			if r.Name == req.Name && r.DeletedAt.IsZero() {
				existing = true
				var err error
				inst, err = b.toInstance(r, now)
				return err
			}
		}
		catalog, entry, err := b.catalogEntry(op, req.Offer.Region, req.Offer.InstanceType, req.Offer.Spot)
		if err != nil {
			return err
		}
		if f.outOfStock(entry) {
			return cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "no capacity left for %s in %s", entry.InstanceType, entry.Region)
		}
		price, err := entryPrice(op, entry)
		if err != nil {
			return err
		}
		if err := cloudprovider.CheckPriceCap(CloudName, op, entry.InstanceType+" in "+entry.Region, price, req.MaxPricePerHour); err != nil {
			return err
		}
		vols, err := instanceVolumes(op, st, entry.Region, 1, mounts, now)
		if err != nil {
			return err
		}
		rec, err = b.place(st, f, catalog, entry, Record{Name: req.Name, SSHKeys: req.SSHPublicKeys, Owner: ownerAtCreate(req.Owner), Volumes: vols})
		if err != nil {
			return err
		}
		lost = f.TakeLostCreate()
		inst, err = b.toInstance(rec, now)
		return err
	})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	if existing {
		b.log.Debug("an instance with this name already exists; returning it", "name", req.Name, "id", inst.ID)
		return inst, nil
	}
	if lost {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "injected fault: the response was lost (HTTP 502)")
	}
	b.log.Info("instance created", "id", rec.ID, "name", rec.Name, "region", rec.Region, "instance_type", rec.InstanceType)
	b.startBooting(rec)
	return inst, nil
}

// catalogEntry reads the catalog and finds the entry of an offer, or fails with a capacity error when
// the catalog no longer has it.
func (b *Backend) catalogEntry(op, region, instanceType string, spot bool) ([]CatalogEntry, *CatalogEntry, error) {
	catalog, err := b.Catalog()
	if err != nil {
		return nil, nil, err
	}
	var entry *CatalogEntry
	for i, e := range catalog {
		if e.Region == region && e.InstanceType == instanceType && e.Spot == spot {
			entry = &catalog[i]
		}
	}
	if entry == nil {
		return nil, nil, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "offer %s/%s is no longer in the catalog", region, instanceType)
	}
	return catalog, entry, nil
}

// outOfStock reports whether the faults or the entry's stock leave no machine of the entry to start.
func (f *Faults) outOfStock(e *CatalogEntry) bool {
	return f.SoldOut || e.Available == 0 || slices.Contains(f.OutOfStock, e.Region+"/"+e.InstanceType)
}

// entryPrice reads a catalog entry's price; one that is not valid money is a capacity error.
func entryPrice(op string, e *CatalogEntry) (money.USD, error) {
	price, err := money.FromFloat(e.PricePerHour)
	if err != nil {
		return 0, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "offer %s/%s has no valid price: %v", e.Region, e.InstanceType, err)
	}
	return price, nil
}

// place starts one instance of entry in st: it takes a unit of the entry's stock (writing the catalog
// back), fills rec (which carries the name, keys, owner and cluster fields) from the entry, the boot
// time and the armed boot failures, and records it. The caller holds the lock and brings its machine
// up with startBooting once the state is written.
func (b *Backend) place(st *state, f *Faults, catalog []CatalogEntry, entry *CatalogEntry, rec Record) (*Record, error) {
	boot := b.cfg.BootTime
	if f.BootTime != "" {
		d, err := time.ParseDuration(f.BootTime)
		if err != nil {
			return nil, fmt.Errorf("sandbox: faults.json boot_time: %w", err)
		}
		boot = d
	}
	if entry.Available > 0 {
		entry.Available--
		if err := writeJSON(filepath.Join(b.cfg.Dir, CatalogFile), catalog); err != nil {
			return nil, err
		}
	}
	created := time.Now().UTC()
	rec.ID, rec.Region, rec.InstanceType = "sbx-"+simulation.RandomHex(6), entry.Region, entry.InstanceType
	rec.GPUType, rec.GPU, rec.GPUCount, rec.Spot = b.inv.GPUType(CloudName, entry.GPU), entry.GPU, entry.GPUCount, entry.Spot
	rec.PricePerHour, rec.CreatedAt, rec.RunningAt, rec.FailBoot = entry.PricePerHour, created, created.Add(boot), f.TakeBootFailure()
	rec.Hardware = Hardware(entry.hardware())
	rec.Machine = entry.Machine
	st.Instances = append(st.Instances, &rec)
	st.Created++
	return &rec, nil
}

// startBooting brings up the machine of an instance just placed in the background (see bootMachine),
// when the sandbox runs machines and the instance is not to fail its boot.
func (b *Backend) startBooting(rec *Record) {
	if b.cfg.Machines == nil || rec.FailBoot {
		return
	}
	b.booting.Add(1)
	go func(r Record) {
		defer b.booting.Done()
		b.bootMachine(r)
	}(*rec)
}

// Get returns one instance. It changes nothing at the cloud: it only reports what time has made of the
// instance (see toInstance).
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	const op = "reading instance"
	if err := b.count(func(c *Counters) { c.InstanceGets++ }); err != nil {
		return cloudprovider.Instance{}, err
	}
	return readOne(ctx, b, op, "instance", id, (*state).instance, func(_ *state, r *Record, now time.Time) (cloudprovider.Instance, error) {
		return b.toInstance(r, now)
	})
}

// readOne reads one record for a get (op, e.g. "reading volume"): the call's injected failures first,
// then find's record of id on the state, reported by to; a record find does not find is ErrNotFound
// ("<what> <id> not found"). It changes nothing.
func readOne[R, T any](ctx context.Context, b *Backend, op, what, id string, find func(st *state, id string) *R,
	to func(st *state, r *R, now time.Time) (T, error)) (T, error) {
	var out T
	if err := b.call(ctx, op); err != nil {
		return out, err
	}
	err := b.read(func(st *state, now time.Time) error {
		r := find(st, id)
		if r == nil {
			return cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, op, "%s %s not found", what, id)
		}
		var err error
		out, err = to(st, r, now)
		return err
	})
	return out, err
}

// instance returns the instance (a cluster's node too) of an ID, or nil.
func (st *state) instance(id string) *Record {
	for _, r := range st.Instances {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// List returns the instances whose names start with prefix, terminated ones left out. Like Get it
// changes nothing at the cloud.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	if err := b.count(func(c *Counters) { c.InstanceLists++ }); err != nil {
		return nil, err
	}
	return readAll(ctx, b, "listing instances", func(st *state, now time.Time) ([]cloudprovider.Instance, error) {
		return b.toInstances(st.Instances, now, func(r *Record) bool { return strings.HasPrefix(r.Name, prefix) && !r.gone(now) })
	}, func(in cloudprovider.Instance) string { return in.Name })
}

// readAll lists records for a list (op, e.g. "listing volumes"): the call's injected failures first,
// then list on the state, ordered by name (name gives a record's). It changes nothing.
func readAll[T any](ctx context.Context, b *Backend, op string, list func(st *state, now time.Time) ([]T, error), name func(T) string) ([]T, error) {
	if err := b.call(ctx, op); err != nil {
		return nil, err
	}
	var out []T
	err := b.read(func(st *state, now time.Time) error {
		var err error
		out, err = list(st, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return name(out[i]) < name(out[j]) })
	return out, nil
}

// toInstances reports the records keep selects, in their order, with toInstance. The machines that
// have finished booting since the last read come up side by side, as a cloud's do: one after
// another, twenty machines took ten seconds to answer SSH.
func (b *Backend) toInstances(recs []*Record, now time.Time, keep func(*Record) bool) ([]cloudprovider.Instance, error) {
	var g errgroup.Group
	g.SetLimit(bringUpAtOnce)
	insts := make([]*cloudprovider.Instance, len(recs))
	for i, r := range recs {
		if !keep(r) {
			continue
		}
		g.Go(func() error {
			inst, err := b.toInstance(r, now)
			insts[i] = &inst
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []cloudprovider.Instance
	for _, inst := range insts {
		if inst != nil {
			out = append(out, *inst)
		}
	}
	return out, nil
}

// Delete starts termination. An instance already deleted, terminated or unknown is gone: success. A
// node of a cluster is deleted with its cluster only (ErrInvalid).
func (b *Backend) Delete(ctx context.Context, id string) error {
	const op = "deleting instance"
	if err := b.call(ctx, op); err != nil {
		return err
	}
	var deleted *Record
	err := b.update(func(st *state, _ *Faults) error {
		now := time.Now().UTC()
		for _, r := range st.Instances {
			if r.ID != id || !r.DeletedAt.IsZero() {
				continue
			}
			if r.Cluster != "" {
				return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "%s is a node of cluster %s: destroy the cluster", r.Name, r.Cluster)
			}
			b.terminate(r, now)
			deleted = r
		}
		return nil
	})
	if err != nil {
		return err
	}
	if deleted == nil {
		b.log.Debug("instance already gone", "id", id)
		return nil
	}
	b.log.Info("instance deleted", "id", deleted.ID, "name", deleted.Name)
	return nil
}

// terminate marks an instance deleted now and gone after the delete time, and stops its machine; the
// caller holds the lock, so no concurrent read sees the instance still running.
func (b *Backend) terminate(r *Record, now time.Time) {
	r.DeletedAt = now
	r.GoneAt = now.Add(b.cfg.DeleteTime)
	b.stopMachine(r.ID)
}

// ConfirmOwnership records that a Terraform state holds the instance, the cluster and every node of
// it, or the volume: Get, List, the cluster and volume reads report Owner.Confirmed from then on. It
// is idempotent; an unknown or terminated instance or cluster, or an unknown volume, is ErrNotFound.
func (b *Backend) ConfirmOwnership(ctx context.Context, id string) error {
	const op = "confirming ownership"
	if err := b.call(ctx, op); err != nil {
		return err
	}
	return b.update(func(st *state, _ *Faults) error {
		now := time.Now()
		if c := st.cluster(id); c != nil && !c.gone(now) {
			c.Owner.Confirmed = true
			for _, r := range st.nodes(c.ID) {
				r.Owner.Confirmed = true
			}
			return nil
		}
		if r := st.instance(id); r != nil && !r.gone(now) {
			r.Owner.Confirmed = true
			return nil
		}
		if v := st.volume(id); v != nil {
			v.Owner.Confirmed = true
			return nil
		}
		return cloudprovider.Errorf(cloudprovider.ErrNotFound, CloudName, op, "instance %s not found", id)
	})
}

// bootMachine brings up the simulated machine of an instance just created (in the background of
// Create), in the second half of its boot (at most a second into it: a machine's services start once
// its kernel has): a real machine's sshd and exporters start during its boot too, and a fleet's
// machines come up while they boot instead of after it, when the reads would find them all running at
// once. Not sooner: the creates of a fleet, still going on, would wait for the CPU the machines take to
// come up, and a fleet created over a longer time is running over a longer time. The sandbox is not
// locked meanwhile (the machine's directory is), so the creates of a fleet go on. The read that finds
// the instance running waits for this, and brings the machine up itself when this could not (the
// error is then that read's); an instance deleted while its machine came up has it stopped here. A
// process killed meanwhile can leave processes its state does not record: the machine's Stop finds
// them by their command lines.
func (b *Backend) bootMachine(r Record) {
	time.Sleep(min(r.RunningAt.Sub(r.CreatedAt)/2, time.Second))
	b.bootSlots <- struct{}{}
	_, err := b.cfg.Machines.Start(b.machineDir(r.ID), r)
	<-b.bootSlots
	if err != nil {
		b.log.Warn("bringing up the simulated machine failed; the first read of the running instance tries again", "id", r.ID, "error", err)
		return
	}
	deleted := false
	if err := b.read(func(st *state, _ time.Time) error {
		for _, x := range st.Instances {
			if x.ID == r.ID && !x.DeletedAt.IsZero() {
				deleted = true
			}
		}
		return nil
	}); err != nil {
		b.log.Warn("reading the sandbox after bringing up a machine failed", "id", r.ID, "error", err)
	}
	if deleted {
		b.stopMachine(r.ID)
	}
}

// WaitBooting waits until the machines that creates are bringing up in the background are up (or
// failed to come up).
func (b *Backend) WaitBooting() { b.booting.Wait() }

// stopMachine stops the simulated machine of an instance, if the sandbox runs machines.
func (b *Backend) stopMachine(id string) {
	if b.cfg.Machines == nil {
		return
	}
	if err := b.cfg.Machines.Stop(b.machineDir(id)); err != nil {
		b.log.Warn("stopping the simulated machine failed", "id", id, "error", err)
	}
}

// gone reports whether the instance has terminated by now.
func (r *Record) gone(now time.Time) bool { return !r.GoneAt.IsZero() && now.After(r.GoneAt) }

// Instances returns every record, terminated ones included (tests and the CLI).
func (b *Backend) Instances() ([]Record, error) {
	st, err := b.load()
	if err != nil {
		return nil, err
	}
	return values(st.Instances), nil
}

// values copies the records ptrs points to.
func values[T any](ptrs []*T) []T {
	out := make([]T, len(ptrs))
	for i, p := range ptrs {
		out[i] = *p
	}
	return out
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

// Vanish removes an instance, or a cluster with every node of it, as if someone deleted it outside
// Terraform.
func (b *Backend) Vanish(id string) error {
	return b.update(func(st *state, _ *Faults) error {
		now := time.Now().UTC()
		gone := func(r *Record) error {
			if b.cfg.Machines != nil {
				if err := b.cfg.Machines.Stop(b.machineDir(r.ID)); err != nil {
					return err
				}
			}
			r.DeletedAt, r.GoneAt = now, now
			return nil
		}
		if c := st.cluster(id); c != nil {
			for _, r := range st.nodes(id) {
				if err := gone(r); err != nil {
					return err
				}
			}
			c.DeletedAt, c.GoneAt = now, now
			return nil
		}
		if r := st.instance(id); r != nil {
			return gone(r)
		}
		return fmt.Errorf("sandbox: no instance or cluster %s", id)
	})
}

// bringUpAtOnce bounds how many simulated machines one read brings up at the same time.
const bringUpAtOnce = 16

func (b *Backend) machineDir(id string) string { return filepath.Join(b.cfg.Dir, "machines", id) }

// MachineDir returns the directory of an instance's simulated machine.
func (b *Backend) MachineDir(id string) string { return b.machineDir(id) }

// toInstance reports what time has made of an instance: booting until RunningAt, then running (or
// failed), stopping once deleted and terminated from GoneAt. A running instance's simulated machine is
// made sure of here, when the sandbox runs machines (Create brought it up; see bootMachine), and it is
// the only thing a read does at the cloud. Callers hold the sandbox lock, so a machine is never
// brought up for an instance a concurrent Delete has just stopped.
func (b *Backend) toInstance(r *Record, now time.Time) (cloudprovider.Instance, error) {
	inst := cloudprovider.Instance{
		ID: r.ID, Name: r.Name, Cloud: CloudName, Region: r.Region, InstanceType: r.InstanceType,
		GPUType: r.GPUType, GPUCount: r.GPUCount, Spot: r.Spot, PricePerHour: recordPrice(r.PricePerHour), CreatedAt: r.CreatedAt,
		Owner:    r.Owner.contract(),
		Hardware: cloudprovider.Hardware(r.Hardware), Cluster: r.Cluster,
	}
	it, ended := r.interruption(now)
	inst.Interruption = it
	switch {
	case ended && r.DeletedAt.IsZero():
		// Taken back at the end of its notice: its machine is stopped (idempotent).
		inst.Status, inst.CloudStatus = cloudprovider.StatusTerminated, "preempted"
		b.stopMachine(r.ID)
	case r.gone(now):
		inst.Status, inst.CloudStatus = cloudprovider.StatusTerminated, "terminated"
	case !r.DeletedAt.IsZero():
		inst.Status, inst.CloudStatus = cloudprovider.StatusRunning, "stopping"
	case now.Before(r.RunningAt):
		inst.Status, inst.CloudStatus = cloudprovider.StatusPending, "booting"
	case r.FailBoot:
		inst.Status, inst.CloudStatus, inst.Message = cloudprovider.StatusError, "failed", "injected fault: the machine failed to boot"
	default:
		inst.Status, inst.CloudStatus = cloudprovider.StatusRunning, "running"
		if it != nil {
			inst.CloudStatus = "preempting"
		}
		if b.cfg.Machines != nil {
			ep, err := b.cfg.Machines.Start(b.machineDir(r.ID), *r)
			if err != nil {
				return inst, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, "starting the simulated machine", err)
			}
			inst.SSH = &ep
		} else {
			inst.SSH = &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 22, User: "root"}
		}
	}
	return inst, nil
}

// readState reads state.json; the caller holds the lock.
func (b *Backend) readState() (*state, error) {
	st := &state{}
	if err := readJSON(filepath.Join(b.cfg.Dir, StateFile), st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sandbox: %s: %w", StateFile, err)
	}
	return st, nil
}

func (b *Backend) load() (*state, error) {
	var st *state
	err := b.locked(func() error {
		var err error
		st, err = b.readState()
		return err
	})
	if st == nil {
		st = &state{}
	}
	return st, err
}

// read runs fn on the state under the lock and writes nothing back.
func (b *Backend) read(fn func(st *state, now time.Time) error) error {
	return b.locked(func() error {
		st, err := b.readState()
		if err != nil {
			return err
		}
		return fn(st, time.Now())
	})
}

// update runs fn on the state and the faults under the lock and writes both back when fn succeeds
// (the faults only when fn used some up).
func (b *Backend) update(fn func(*state, *Faults) error) error {
	return b.locked(func() error {
		st, err := b.readState()
		if err != nil {
			return err
		}
		f, err := b.faults()
		if err != nil {
			return err
		}
		before := f
		before.OutOfStock = slices.Clone(f.OutOfStock)
		if err := fn(st, &f); err != nil {
			return err
		}
		if !reflect.DeepEqual(f, before) {
			if err := writeJSON(filepath.Join(b.cfg.Dir, FaultsFile), f); err != nil {
				return err
			}
		}
		return writeJSON(filepath.Join(b.cfg.Dir, StateFile), st)
	})
}

// locked runs fn holding an exclusive lock on the sandbox directory (across processes).
func (b *Backend) locked(fn func() error) error {
	unlock, err := filelock.Lock(filepath.Join(b.cfg.Dir, lockFile), 0o644)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer unlock()
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
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// recordPrice reads a machine record's price; a value no create writes (a hand-edited file) reads as 0.
func recordPrice(f float64) money.USD {
	u, err := money.FromFloat(f)
	if err != nil {
		return 0
	}
	return u
}

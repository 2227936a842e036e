package lambda

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/createonce"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// Defaults of Config.
const (
	DefaultSSHUser = "ubuntu"
	DefaultSSHPort = 22
	// DefaultLaunchInterval is Lambda's documented launch limit: requests to
	// /instance-operations/launch are limited to five a minute, one every 12 seconds (older documents
	// said one every 10 s). It is kept per process; a 429 from another process's launch is waited out
	// (Config.RateLimitRetries).
	DefaultLaunchInterval = 12 * time.Second
	// DefaultRateLimitRetries is how many times a launch Lambda refused with 429 is tried again, each
	// after a full launch interval (or the server's Retry-After when longer): about a minute in all.
	DefaultRateLimitRetries = 4
	// DefaultUnhealthyGrace is how long an instance Lambda reports as unhealthy is still taken as not
	// yet up (pending) before it is an error. Other clients of the API (SkyPilot's maps unhealthy to
	// its INIT state) keep waiting on unhealthy: a machine may report it briefly while it boots.
	DefaultUnhealthyGrace = 5 * time.Minute
)

// MaxNameLength is the longest instance name Lambda accepts: "Must be 64 characters or fewer" (the
// launch request's name in the OpenAPI document). With the pool prefix "lambda-vm-" and the ownership
// token ("--" and 8 characters) that leaves 44 characters for the resource's name.
const MaxNameLength = 64

// NoLoginKeyName is the account key hydra launches with when a create asks for no SSH key: Lambda
// requires exactly one key per launch, so hydra has Lambda generate a key pair once under this name and
// throws the private half away. Nobody can log in with it, which is what a create without keys asks for.
const NoLoginKeyName = "hydra-no-login"

// Keys of Offer.Details set by Offers and read by Create.
const (
	DetailRegionName        = "region_name"
	DetailInstanceTypeName  = "instance_type_name"
	DetailPriceCentsPerHour = "price_cents_per_hour"
)

// Config configures the Lambda backend. Only APIKey is required.
type Config struct {
	// APIKey is the Cloud API key (LAMBDA_API_KEY).
	APIKey string
	// BaseURL is the API root including /api/v1 (default DefaultBaseURL).
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (default DefaultTuning: 1 request
	// per second, Lambda's documented limit).
	restclient.Tuning
	// LaunchInterval spaces launches in this process (default DefaultLaunchInterval; negative: none).
	LaunchInterval time.Duration
	// RateLimitRetries is how many times a launch refused with 429 (Lambda's edge answers a plain-text
	// "error code: 1015" page) is tried again after waiting a launch interval (default
	// DefaultRateLimitRetries; negative: never).
	RateLimitRetries int
	// UnhealthyGrace is how long an unhealthy instance is still pending, counted from when this
	// process first saw it unhealthy (default DefaultUnhealthyGrace; negative: unhealthy is an error at
	// once).
	UnhealthyGrace time.Duration
	// Now and Sleep are the clock and the wait the launch pacing and the unhealthy grace use (default
	// time.Now and a timer bounded by the context); tests inject a fake clock so nobody waits 12 s.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Regions limits offers to these regions (default: every region).
	Regions []string
	// SSHUser and SSHPort describe how to reach a running instance (default ubuntu, 22: Lambda's images
	// log in as ubuntu).
	SSHUser string
	SSHPort int
}

// Backend is the Lambda InstanceManagerBackend.
//
// The ownership record is the cloud-side name alone (cloudprovider.CloudName): Get and List leave
// Instance.Owner empty and the pool manager reads it from the name. The backend does not implement
// cloudprovider.OwnershipConfirmer. (The v1.4.0 API has no labels at all; the newest OpenAPI document adds
// "tags" to the launch request, which could carry cloudprovider.OwnerLabels too. Not used: not confirmed
// that instances answer their tags back, or that tags can be changed after launch.)
type Backend struct {
	cfg      Config
	client   *Client
	inv      *inventory.Inventory
	log      hclog.Logger
	launches *rate.Limiter

	unhealthyMu    sync.Mutex
	unhealthySince map[string]time.Time // instance id -> when this process first saw it unhealthy

	creates createonce.Group // serialises creates of one name in this process
	sshKeys sshkeys.Serial   // serialises SSH key registration, so two creates never add one key twice
}

var _ cloudprovider.InstanceManagerBackend = (*Backend)(nil)

// New builds the Lambda backend. inv maps Lambda's GPU names onto hydra's types.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	cfg.SSHUser = cmp.Or(cfg.SSHUser, DefaultSSHUser)
	cfg.SSHPort = cmp.Or(cfg.SSHPort, DefaultSSHPort)
	cfg.LaunchInterval = cmp.Or(cfg.LaunchInterval, DefaultLaunchInterval)
	cfg.RateLimitRetries = cmp.Or(cfg.RateLimitRetries, DefaultRateLimitRetries)
	cfg.UnhealthyGrace = cmp.Or(cfg.UnhealthyGrace, DefaultUnhealthyGrace)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = wait.Sleep
	}
	limit := rate.Inf
	if cfg.LaunchInterval > 0 {
		limit = rate.Every(cfg.LaunchInterval)
	}
	client, err := NewClient(ClientConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Tuning: cfg.Tuning, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &Backend{cfg: cfg, client: client, inv: inv, log: logger.Named(CloudName),
		launches: rate.NewLimiter(limit, 1), unhealthySince: map[string]time.Time{}}, nil
}

// waitLaunchTurn waits until this process may launch again: one launch per LaunchInterval.
func (b *Backend) waitLaunchTurn(ctx context.Context) error {
	r := b.launches.ReserveN(b.cfg.Now(), 1)
	if d := r.DelayFrom(b.cfg.Now()); d > 0 {
		if err := b.cfg.Sleep(ctx, d); err != nil {
			r.CancelAt(b.cfg.Now())
			return err
		}
	}
	return nil
}

// rateLimitWait is how long to wait after Lambda refused a launch with 429: the launch interval (the
// documented one when pacing is off here), or the server's Retry-After when longer.
func (b *Backend) rateLimitWait(retryAfter time.Duration) time.Duration {
	wait := b.cfg.LaunchInterval
	if wait <= 0 {
		wait = DefaultLaunchInterval
	}
	return max(wait, retryAfter)
}

// Cloud returns "lambda".
func (b *Backend) Cloud() string { return CloudName }

// Client returns the backend's API client.
func (b *Backend) Client() *Client { return b.client }

var (
	typeCount = regexp.MustCompile(`^[a-z]+_(\d+)x_`)  // "gpu_8x_h100_sxm5"
	descCount = regexp.MustCompile(`^\s*(\d+)\s*x\s+`) // "8x H100 (80 GB SXM5)"
)

// gpuTypeFor maps an instance type onto hydra's GPU type (inventory.GPUType), trying each of its GPU
// names (gpuNames) in turn; "" when none maps.
func (b *Backend) gpuTypeFor(t InstanceType) string {
	return b.inv.GPUType(CloudName, gpuNames(t)...)
}

// gpuNames are Lambda's names for an instance type's GPU, best first: its gpu_description
// ("H100 (80 GB SXM5)"), its description without the count ("1x H100 (80 GB SXM5)" -> "H100 (80 GB
// SXM5)"; older API versions have no gpu_description) and its name without the "gpu_<n>x_" count
// ("gpu_8x_h100_sxm5" -> "h100_sxm5"); empty ones left out.
func gpuNames(t InstanceType) []string {
	family := ""
	if m := typeCount.FindStringIndex(t.Name); m != nil {
		family = t.Name[m[1]:]
	}
	var out []string
	for _, n := range []string{t.GPUDescription, descCount.ReplaceAllString(t.Description, ""), family} {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cloudGPU is Lambda's name for an instance type's GPU, the one api_names.lambda would list: the first
// of gpuNames. It is "" for a type that is no GPU type: one without specs.gpus, gpu_description or a
// "gpu_" name (a CPU type's "4x CPU" names no GPU).
func cloudGPU(t InstanceType) string {
	if cpuOnly(t) || (t.Specs.GPUs <= 0 && strings.TrimSpace(t.GPUDescription) == "" && !strings.HasPrefix(t.Name, "gpu_")) {
		return ""
	}
	if names := gpuNames(t); len(names) > 0 {
		return names[0]
	}
	return ""
}

// cpuOnly reports whether an instance type has no GPU although its name or description counts
// something: Lambda's CPU types ("cpu_4x_general") have gpu_description "N/A" and specs.gpus 0, and the
// "4x" of their name counts CPUs. They are never offers of GPUs.
func cpuOnly(t InstanceType) bool {
	desc := strings.TrimSpace(t.GPUDescription)
	return strings.HasPrefix(t.Name, "cpu_") || strings.EqualFold(desc, "N/A") || strings.EqualFold(desc, "none")
}

// gpuCount is the number of GPUs of an instance type: specs.gpus, else the count in its name or its
// description; 0 for CPU-only types.
func gpuCount(t InstanceType) int {
	if cpuOnly(t) {
		return 0
	}
	if t.Specs.GPUs > 0 {
		return t.Specs.GPUs
	}
	for _, m := range [][]string{typeCount.FindStringSubmatch(t.Name), descCount.FindStringSubmatch(t.Description)} {
		if len(m) == 2 {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// hardware is what an instance type says of its machine: the form factor and the memory of one GPU as
// its gpu_description states them ("H100 (80 GB SXM5)"), else its description without the count
// ("1x H100 (80 GB SXM5)"; older API versions), else its name ("gpu_1x_h100_sxm5", form factor only);
// vCPUs from specs.vcpus and RAM from specs.memory_gib.
func hardware(t InstanceType) cloudprovider.Hardware {
	desc := descCount.ReplaceAllString(t.Description, "")
	family := ""
	if m := typeCount.FindStringIndex(t.Name); m != nil {
		family = t.Name[m[1]:]
	}
	hw := cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(t.GPUDescription, desc, family),
		GPUMemoryGB: gpuname.MemoryGB(t.GPUDescription),
		VCPUs:       max(t.Specs.VCPUs, 0),
		MemoryGB:    max(t.Specs.MemoryGiB, 0),
	}
	if hw.GPUMemoryGB == 0 {
		hw.GPUMemoryGB = gpuname.MemoryGB(desc)
	}
	return hw
}

// usd converts Lambda's price in US cents per hour (for the whole machine) into dollars per hour.
func usd(cents int64) money.USD {
	return money.USD(min(max(cents, 0), int64(money.Max/money.Cent))) * money.Cent
}

// Offers lists what Lambda can launch now: one offer per instance type and region with capacity
// (GET /instance-types, regions_with_capacity_available). Every offer carries Lambda's name for its GPU
// as CloudGPU (cloudGPU); a GPU the inventory does not map is offered with GPUType "" (the control plane
// reports it and never ranks it). CPU-only types, types with more GPUs than the inventory allows and
// types without a price are left out. Lambda only says whether a region has capacity, not how much, so
// Available is -1. Lambda sells no spot capacity.
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	items, err := b.client.InstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	offers := []cloudprovider.Offer{}
	for name, it := range items {
		t := it.InstanceType
		if t.Name == "" {
			t.Name = name
		}
		gt := b.gpuTypeFor(t)
		n := gpuCount(t)
		cloud := cloudGPU(t)
		if cloud == "" || n < 1 || (gt != "" && n > b.inv.GPUs[gt].MaxCount) || t.PriceCentsPerHour <= 0 {
			continue
		}
		seen := map[string]bool{}
		for _, r := range it.RegionsWithCapacityAvailable {
			if r.Name == "" || seen[r.Name] || !backendkit.Allowed(b.cfg.Regions, r.Name) {
				continue
			}
			seen[r.Name] = true
			offers = append(offers, cloudprovider.Offer{
				Cloud:        CloudName,
				Region:       r.Name,
				InstanceType: name,
				GPUType:      gt,
				CloudGPU:     cloud,
				GPUCount:     n,
				Hardware:     hardware(t),
				PricePerHour: usd(t.PriceCentsPerHour),
				Available:    -1,
				Details: map[string]string{
					DetailRegionName:        r.Name,
					DetailInstanceTypeName:  name,
					DetailPriceCentsPerHour: strconv.FormatInt(t.PriceCentsPerHour, 10),
				},
			})
		}
	}
	backendkit.SortOffers(offers)
	return offers, nil
}

// Create launches one instance from an offer with req.Name as its name, which carries the ownership
// record (Lambda has no labels).
//
// Create is idempotent by name: creates of one name in this process run one at a time, and each first
// looks for a live instance with that name and returns it. Before launching it reads the catalog again:
// an instance type whose price (as planned, or now) is above req.MaxPricePerHour, or whose region has
// lost its capacity, is ErrCapacity and nothing is launched (Lambda allows one launch per 12 seconds, so
// a launch is not spent on a region the catalog already says is full). Lambda takes exactly one SSH key
// per launch: the first public key is registered as a Lambda SSH key (sshkeys.Ensure) and named
// in the launch, the others are installed by cloud-init user data; without any key the machine gets
// NoLoginKeyName. Launches in this process are spaced LaunchInterval (12 s) apart; a launch Lambda
// refuses with 429 (its edge's plain-text "error code: 1015" page: nothing was launched) is tried again
// after a launch interval, or the server's Retry-After when longer, up to RateLimitRetries times, so a
// second launch in one apply succeeds. The launch is not retried after a 5xx or a lost answer; Create
// then looks for the instance by name once and returns it if Lambda did launch it, else the
// unknown-outcome error (ErrOther). Create returns as soon as Lambda has accepted the launch (booting: pending).
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create with file systems mounted at launch (volumes.go).
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, mounts []FileSystemMount) (cloudprovider.Instance, error) {
	const op = "creating instance"
	if err := checkName(op, "instance", req.Name); err != nil {
		return cloudprovider.Instance{}, err
	}
	if req.Offer.Spot {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "Lambda sells no spot capacity")
	}
	instanceType := cmp.Or(req.Offer.Details[DetailInstanceTypeName], req.Offer.InstanceType)
	region := cmp.Or(req.Offer.Details[DetailRegionName], req.Offer.Region)
	if instanceType == "" || region == "" {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "the offer names no instance type or region")
	}
	keys, err := publicKeys(req.SSHPublicKeys)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	var keyName, userData string
	inst, _, err := b.creates.Do(ctx, createonce.Steps{
		Cloud: CloudName, Op: op, Name: req.Name, Log: b.log,
		Find: func(ctx context.Context) (cloudprovider.Instance, bool, error) { return b.findByName(ctx, req.Name) },
		Prepare: func(ctx context.Context) (err error) {
			if err := b.checkOffer(ctx, req, instanceType, region); err != nil {
				return err
			}
			if keyName, userData, err = b.sshAccess(ctx, keys); err != nil {
				return err
			}
			if err := b.waitLaunchTurn(ctx); err != nil {
				return cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, err)
			}
			return nil
		},
		Create: func(ctx context.Context) (cloudprovider.Instance, error) {
			return b.launch(ctx, req, instanceType, region, keyName, userData, mounts)
		},
	})
	return inst, err
}

// checkName refuses (ErrInvalid) a subject's ("instance", "volume") name that is empty or longer than
// Lambda accepts (MaxNameLength).
func checkName(op, subject, name string) error {
	switch {
	case name == "":
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no %s name", subject)
	case len(name) > MaxNameLength:
		return cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"%s name %q is %d characters long; Lambda allows at most %d (shorten the resource's name)", subject, name, len(name), MaxNameLength)
	}
	return nil
}

// launch launches the instance and returns it as Lambda answers it, or as launched when the read fails.
func (b *Backend) launch(ctx context.Context, req cloudprovider.CreateRequest, instanceType, region, keyName, userData string, mounts []FileSystemMount) (cloudprovider.Instance, error) {
	const op = "creating instance"
	var (
		ids []string
		err error
	)
	for attempt := 0; ; attempt++ {
		ids, err = b.client.Launch(ctx, LaunchRequest{
			RegionName:       region,
			InstanceTypeName: instanceType,
			SSHKeyNames:      []string{keyName},
			Quantity:         1,
			Name:             req.Name,
			UserData:         userData,
			FileSystemMounts: mounts,
		})
		re, ok := asResponseError(err)
		if !ok || !re.RateLimited() || attempt >= b.cfg.RateLimitRetries {
			break
		}
		// 429: Lambda did not act on the launch. Wait a whole launch interval (the client's own retries
		// are short) and launch again.
		pause := b.rateLimitWait(re.RetryAfter)
		b.log.Warn("Lambda rate-limited the launch; waiting before launching again", "name", req.Name,
			"wait", pause.String(), "attempt", attempt+1, "of", b.cfg.RateLimitRetries)
		if serr := b.cfg.Sleep(ctx, pause); serr != nil {
			return cloudprovider.Instance{}, cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op,
				fmt.Errorf("waiting out Lambda's launch rate limit (nothing was launched): %w", serr))
		}
		b.launches.ReserveN(b.cfg.Now(), 1) // this process's next launch comes a full interval after this one
	}
	if cloudprovider.IsNotFound(err) {
		// On a launch, object-does-not-exist names a missing SSH key, image or file system: the
		// request is wrong, no instance is gone.
		return cloudprovider.Instance{}, cloudprovider.NewError(cloudprovider.ErrInvalid, CloudName, op, errors.Unwrap(err))
	}
	if err != nil {
		// An unknown outcome (a 5xx or a lost answer) is looked for by name: Lambda may have launched it.
		return cloudprovider.Instance{}, err
	}
	if len(ids) == 0 {
		// Lambda may launch fewer instances than asked; none means nothing was created.
		if inst, ok, ferr := b.findByName(ctx, req.Name); ferr == nil && ok {
			return inst, nil
		}
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op,
			"Lambda accepted the launch of %s in %s but started no instance", instanceType, region)
	}
	if len(ids) > 1 {
		b.log.Warn("Lambda launched more than one instance for a launch of one", "name", req.Name, "ids", strings.Join(ids, ","))
	}
	b.log.Info("instance launched", "name", req.Name, "id", ids[0], "instance_type", instanceType, "region", region)
	if in, err := b.client.Instance(ctx, ids[0]); err == nil {
		return b.toInstance(in), nil
	}
	return cloudprovider.Instance{
		ID:           ids[0],
		Name:         req.Name,
		Cloud:        CloudName,
		Region:       region,
		InstanceType: instanceType,
		GPUType:      req.Offer.GPUType,
		GPUCount:     req.Offer.GPUCount,
		Hardware:     req.Offer.Hardware,
		PricePerHour: req.Offer.PricePerHour,
		Status:       cloudprovider.StatusPending,
		CloudStatus:  StatusBooting,
	}, nil
}

// checkOffer refuses (ErrCapacity) an offer whose price the catalog now says is above
// req.MaxPricePerHour (cloudprovider.CheckPriceCap), an instance type Lambda no longer offers, and a region that has no capacity for
// the type now.
func (b *Backend) checkOffer(ctx context.Context, req cloudprovider.CreateRequest, instanceType, region string) error {
	const op = "creating instance"
	items, err := b.client.InstanceTypes(ctx)
	if err != nil {
		return err
	}
	it, ok := items[instanceType]
	if !ok {
		return cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "Lambda no longer offers instance type %s", instanceType)
	}
	if err := cloudprovider.CheckPriceCap(CloudName, op, instanceType, usd(it.InstanceType.PriceCentsPerHour), req.MaxPricePerHour); err != nil {
		return err
	}
	for _, r := range it.RegionsWithCapacityAvailable {
		if r.Name == region {
			return nil
		}
	}
	return cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "Lambda has no capacity for %s in %s now", instanceType, region)
}

// findByName returns the live (not terminating or terminated) instance named name, if there is one. When
// several are (made outside hydra), the one with the smallest id is returned: Lambda reports no creation
// time to order them by.
func (b *Backend) findByName(ctx context.Context, name string) (cloudprovider.Instance, bool, error) {
	return createonce.FindByName(ctx, name, b.List, nil, func(a, c cloudprovider.Instance) bool { return a.ID < c.ID })
}

// publicKeys checks the request's authorized_keys lines and returns them without options, blanks and
// duplicates, in order. A line that holds no key is ErrInvalid.
func publicKeys(lines []string) ([]string, error) {
	var keys []string
	seen := map[string]bool{}
	for _, k := range lines {
		if strings.TrimSpace(k) == "" {
			continue
		}
		norm := sshkeys.Normalize(k)
		if norm == "" {
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "registering SSH key", "not an authorized_keys line: %.40q", k)
		}
		if !seen[norm] {
			seen[norm] = true
			keys = append(keys, sshkeys.Bare(k))
		}
	}
	return keys, nil
}

// sshAccess returns the Lambda SSH key name to launch with and the cloud-init user data that installs the
// other public keys ("" when there are none). keys come from publicKeys.
func (b *Backend) sshAccess(ctx context.Context, keys []string) (keyName, userData string, err error) {
	if len(keys) == 0 {
		defer b.sshKeys.Lock()()
		name, err := b.noLoginKey(ctx)
		return name, "", err
	}
	names, err := b.sshKeys.Ensure(ctx, sshkeys.Registry{Cloud: CloudName, List: b.accountKeys, Add: b.addKey, AddAgain: true}, keys[:1])
	if err != nil {
		return "", "", err
	}
	if len(names) != 1 {
		return "", "", cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, "registering SSH key", "no Lambda key for %.40q", keys[0])
	}
	return names[0], cloudInitKeys(keys[1:]), nil
}

// cloudInitKeys is cloud-init user data adding public keys to the default user's authorized_keys ("" for
// none). Each key is a JSON string, which is a valid YAML double-quoted scalar. Not confirmed: that
// Lambda's images run cloud-init's ssh_authorized_keys module for the ubuntu user (Lambda documents
// user_data as cloud-init user data; the module is standard in Ubuntu cloud images).
func cloudInitKeys(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("#cloud-config\nssh_authorized_keys:\n")
	for _, k := range keys {
		q, _ := json.Marshal(k)
		sb.WriteString("  - ")
		sb.Write(q)
		sb.WriteString("\n")
	}
	return sb.String()
}

// accountKeys lists the account's keys for EnsureSSHKeys, with the key's name as its id: launches name
// their keys.
func (b *Backend) accountKeys(ctx context.Context) ([]sshkeys.AccountKey, error) {
	return sshkeys.Lister(b.client.SSHKeys, func(k SSHKey) sshkeys.AccountKey {
		return sshkeys.AccountKey{ID: k.Name, PublicKey: k.PublicKey}
	})(ctx)
}

// addKey registers one public key and returns its name. POST /ssh-keys is not retried by the HTTP client
// (a lost answer may hide a stored key); EnsureSSHKeys looks for the key after an unknown outcome and
// adds it once more only when Lambda does not have it (AddAgain): a single 5xx never fails a create.
func (b *Backend) addKey(ctx context.Context, name, publicKey string) (string, error) {
	k, err := b.client.AddSSHKey(ctx, name, publicKey)
	if err != nil {
		return "", err
	}
	if k.Name == "" {
		k.Name = name
	}
	return k.Name, nil
}

// noLoginKey returns NoLoginKeyName, having Lambda generate that key pair first when the account lacks
// it. The private key Lambda answers is dropped at once and never logged. Like a user's key
// (sshkeys.AddOrFind, again), it looks for the key after a failed generation (a lost answer, or a
// concurrent process that added it first: global/duplicate) and, when the outcome was unknown
// (ErrOther) and the key is still missing, asks once more: a single 5xx never fails a create.
func (b *Backend) noLoginKey(ctx context.Context) (string, error) {
	find := func() (string, error) {
		keys, err := b.client.SSHKeys(ctx)
		if err != nil {
			return "", err
		}
		for _, k := range keys {
			if k.Name == NoLoginKeyName {
				return NoLoginKeyName, nil
			}
		}
		return "", nil
	}
	if name, err := find(); err != nil || name != "" {
		return NoLoginKeyName, err
	}
	return sshkeys.AddOrFind(ctx, func() (string, error) {
		if _, err := b.client.AddSSHKey(ctx, NoLoginKeyName, ""); err != nil {
			return "", err
		}
		b.log.Info("registered a key pair nobody holds, for launches without SSH keys", "name", NoLoginKeyName)
		return NoLoginKeyName, nil
	}, find, true)
}

// Get reads one instance. An unknown id is ErrNotFound; a terminating or terminated one that Lambda still
// reports is returned with status terminated.
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	return backendkit.Get(ctx, id, b.client.Instance, b.toInstance)
}

// List returns the instances whose name starts with prefix. Terminating and terminated ones are left out.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	live, err := backendkit.List(ctx, prefix, b.client.Instances, Instance.name, b.toInstance)
	if err != nil {
		return nil, err
	}
	return append([]cloudprovider.Instance{}, live...), nil
}

// Delete terminates an instance (POST /instance-operations/terminate). An instance that is already gone
// is success: one Lambda does not know (global/object-does-not-exist), and one Lambda refuses to
// terminate or leaves out of its answer while reporting it terminating or terminated (not confirmed what
// Lambda answers to terminating a terminated instance; Delete reads the instance to decide).
func (b *Backend) Delete(ctx context.Context, id string) error {
	const op = "deleting instance"
	done, err := b.client.Terminate(ctx, id)
	switch {
	case cloudprovider.IsNotFound(err):
		b.log.Debug("instance already gone", "id", id)
		return nil
	case err != nil && cloudprovider.KindOf(err) != cloudprovider.ErrInvalid:
		return err
	case err == nil:
		for _, in := range done {
			if in.ID == id {
				b.log.Info("instance terminating", "id", id)
				return nil
			}
		}
	}
	in, gerr := b.client.Instance(ctx, id)
	switch {
	case cloudprovider.IsNotFound(gerr):
		return nil
	case gerr == nil:
		if s, _ := mapStatus(in.Status, in.ip() != ""); s == cloudprovider.StatusTerminated {
			b.log.Debug("instance already terminating", "id", id, "status", in.Status)
			return nil
		}
	}
	if err != nil {
		return err
	}
	return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "Lambda did not terminate instance %s", id)
}

// toInstance maps Lambda's instance object onto hydra's.
func (b *Backend) toInstance(in Instance) cloudprovider.Instance {
	ip := strings.TrimSpace(in.ip())
	status, msg := b.graceUnhealthy(in.ID, in.Status, ip != "")
	out := cloudprovider.Instance{
		ID:           in.ID,
		Name:         in.name(),
		Cloud:        CloudName,
		Region:       in.Region.Name,
		InstanceType: in.InstanceType.Name,
		GPUType:      b.gpuTypeFor(in.InstanceType),
		GPUCount:     gpuCount(in.InstanceType),
		Hardware:     hardware(in.InstanceType),
		PricePerHour: usd(in.InstanceType.PriceCentsPerHour),
		Status:       status,
		CloudStatus:  in.Status,
		Message:      msg,
	}
	if ip != "" && status == cloudprovider.StatusRunning {
		out.SSH = &cloudprovider.SSHEndpoint{Host: ip, Port: b.cfg.SSHPort, User: b.cfg.SSHUser}
	}
	return out
}

// graceUnhealthy maps a status like mapStatus, except that an instance Lambda reports as unhealthy is
// pending (not yet up) for UnhealthyGrace from when this process first saw it so, as other clients of
// the API treat it; only then is it an error. An instance seen in any other status starts afresh.
func (b *Backend) graceUnhealthy(id, cloudStatus string, hasIP bool) (cloudprovider.Status, string) {
	status, msg := mapStatus(cloudStatus, hasIP)
	unhealthy := strings.EqualFold(strings.TrimSpace(cloudStatus), StatusUnhealthy)
	b.unhealthyMu.Lock()
	defer b.unhealthyMu.Unlock()
	if !unhealthy || id == "" {
		delete(b.unhealthySince, id)
		return status, msg
	}
	if b.cfg.UnhealthyGrace < 0 {
		return status, msg
	}
	now := b.cfg.Now()
	since, seen := b.unhealthySince[id]
	if !seen {
		since = now
		b.unhealthySince[id] = now
	}
	if left := b.cfg.UnhealthyGrace - now.Sub(since); left > 0 {
		return cloudprovider.StatusPending, fmt.Sprintf("Lambda reports the instance as unhealthy; taken as not yet up for %s more (grace %s)",
			left.Round(time.Second), b.cfg.UnhealthyGrace)
	}
	return status, fmt.Sprintf("%s; still unhealthy after %s", msg, b.cfg.UnhealthyGrace)
}

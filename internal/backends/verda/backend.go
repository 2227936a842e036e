package verda

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

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
	DefaultCurrency        = "usd"
	DefaultEURToUSD        = 1.08
	DefaultImage           = "ubuntu-24.04-cuda-12.8-open-docker"
	DefaultFallbackImage   = "2088da25-bb0d-41cc-a191-dccae45d96fd" // Ubuntu 22.04 + CUDA 12.0 + Docker
	DefaultOSVolumeSizeGiB = 100
	DefaultSSHUser         = "root"
	DefaultDeleteRetryWait = 10 * time.Second
	DefaultDeleteRetryMax  = 18
)

// Keys of Offer.Details set by Offers and read by Create.
const (
	DetailLocationCode    = "location_code"
	DetailInstanceType    = "instance_type"
	DetailCatalogCurrency = "catalog_currency"
	DetailCatalogPrice    = "catalog_price"
)

// Config configures the Verda backend. Only ClientID and ClientSecret are required.
type Config struct {
	// ClientID and ClientSecret are the OAuth2 client credentials (VERDA_CLIENT_ID/VERDA_CLIENT_SECRET).
	ClientID     string
	ClientSecret string
	// BaseURL is the API root including /v1 (default https://api.verda.com/v1).
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// Currency is the catalog currency asked for (default "usd"). Some accounts are answered in EUR
	// whatever is asked; every entry's own currency field decides the conversion.
	Currency string
	// EURToUSD converts catalog prices Verda answers in EUR into US dollars (default 1.08 USD per EUR),
	// rounded up once to the cent (money.Exchange). It is a fixed rate, not
	// a live one: set it when the exchange rate moves.
	EURToUSD float64
	// Image is the OS image for new instances (an image_type or image id; default
	// "ubuntu-24.04-cuda-12.8-open-docker").
	Image string
	// FallbackImage is used when Verda says Image is not valid for the instance type (older GPUs such as
	// V100 and A6000; default the Ubuntu 22.04 + CUDA 12.0 + Docker image id). "-" disables the fallback.
	FallbackImage string
	// OSVolumeSizeGiB sizes the boot volume (default 100).
	OSVolumeSizeGiB int
	// Locations limits offers to these location codes (default: every location).
	Locations []string
	// SSHKeyIDs are ids of SSH keys already registered at Verda that every new instance also gets
	// (besides the keys of each request, which Create registers itself).
	SSHKeyIDs []string
	// DisableSpot leaves spot capacity out of the offers.
	DisableSpot bool
	// SSHUser and SSHPort describe how to reach a running instance (default root, 22).
	SSHUser string
	SSHPort int
	// DeleteRetryWait and DeleteRetryMax bound how long Delete waits for an instance that Verda will not
	// delete while it is still provisioning (default every 10s, 18 times).
	DeleteRetryWait time.Duration
	DeleteRetryMax  int
	// Now is the clock for token expiry (default time.Now).
	Now func() time.Time
	// ClusterImage is the image of new clusters' nodes (default DefaultClusterImage).
	ClusterImage string
	// ClusterSharedVolumeGB sizes the shared /home volume of a new cluster (default
	// DefaultClusterSharedVolumeGB); Verda detaches it, not deletes it, with the cluster.
	ClusterSharedVolumeGB int
}

// Backend is the Verda InstanceManagerBackend.
type Backend struct {
	cfg    Config
	client *Client
	inv    *inventory.Inventory
	log    hclog.Logger

	mu       sync.Mutex
	typeGPU  map[string]string // instance_type -> hydra GPU type, from the last catalog read
	typeCurr map[string]string // instance_type -> catalog currency, from the last catalog read
	// clusterCurr maps cluster_type -> currency, from the last cluster-types read.
	clusterCurr map[string]string

	creates createonce.Group // serialises creates of one name in this process
	sshKeys sshkeys.Serial   // serialises SSH key registration, so two creates never add one key twice
}

// The Verda backend does not implement cloudprovider.OwnershipConfirmer: Verda's API has no documented
// call that changes an instance's description or tags after creation, so the ownership record is
// written once at create (description and tags, Owner.Confirmed false) and the cloud-side name carries
// it as well.
var _ cloudprovider.InstanceManagerBackend = (*Backend)(nil)

// New builds the Verda backend. inv maps Verda's GPU names onto hydra's types.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	cfg.Currency = cmp.Or(cfg.Currency, DefaultCurrency)
	cfg.Currency = strings.ToLower(cfg.Currency)
	cfg.EURToUSD = cmp.Or(cfg.EURToUSD, DefaultEURToUSD)
	if cfg.EURToUSD < 0 {
		return nil, fmt.Errorf("verda: eur_to_usd must be positive, got %v", cfg.EURToUSD)
	}
	cfg.Image = cmp.Or(cfg.Image, DefaultImage)
	switch cfg.FallbackImage {
	case "":
		cfg.FallbackImage = DefaultFallbackImage
	case "-":
		cfg.FallbackImage = ""
	}
	cfg.OSVolumeSizeGiB = cmp.Or(cfg.OSVolumeSizeGiB, DefaultOSVolumeSizeGiB)
	cfg.SSHUser = cmp.Or(cfg.SSHUser, DefaultSSHUser)
	cfg.SSHPort = cmp.Or(cfg.SSHPort, 22)
	cfg.DeleteRetryWait = cmp.Or(cfg.DeleteRetryWait, DefaultDeleteRetryWait)
	cfg.DeleteRetryMax = cmp.Or(cfg.DeleteRetryMax, DefaultDeleteRetryMax)
	log := logger.Named(CloudName)
	client, err := NewClient(ClientConfig{
		BaseURL:      cfg.BaseURL,
		ClientID:     cfg.ClientID,
		ClientSecret: cfg.ClientSecret,
		Tuning:       cfg.Tuning,
		Logger:       logger,
		Now:          cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{cfg: cfg, client: client, inv: inv, log: log,
		typeGPU: map[string]string{}, typeCurr: map[string]string{}}, nil
}

// Cloud returns "verda".
func (b *Backend) Cloud() string { return CloudName }

// Client returns the backend's API client.
func (b *Backend) Client() *Client { return b.client }

var countPrefix = regexp.MustCompile(`^\s*\d+\s*x\s*`)

// gpuTypeFor maps Verda's names for a GPU (the instance type's name, the gpu description, the model;
// each without its "<n>x " count) onto hydra's GPU type (inventory.GPUType), or "".
func (b *Backend) gpuTypeFor(names ...string) string {
	for i, n := range names {
		names[i] = countPrefix.ReplaceAllString(n, "")
	}
	return b.inv.GPUType(CloudName, names...)
}

// cloudGPU is Verda's name for an instance type's GPU, the one api_names.verda lists: the type's name
// ("H100 SXM5 80GB"), else its gpu description without the count ("1x H100 SXM5 80GB"), else its model.
func cloudGPU(t InstanceType) string {
	for _, n := range []string{t.Name, countPrefix.ReplaceAllString(t.GPU.Description, ""), t.Model} {
		if n = strings.TrimSpace(n); n != "" {
			return n
		}
	}
	return ""
}

// hardware reads what Verda says of a machine: the form factor from the gpu description ("1x H100
// SXM5 80GB"), else the type's name ("H100 SXM5 80GB") or model; the memory of one GPU as
// gpu_memory.size_in_gigabytes (Verda's total for all GPUs) divided by gpu.number_of_gpus, else as the
// gpu description or name states it; vCPUs from cpu.number_of_cores and RAM from
// memory.size_in_gigabytes. An instance object has no name or model (pass ""): its gpu description says it.
func hardware(name, model string, gpu GPU, gpuMemory Size, cpu CPU, memory Size) cloudprovider.Hardware {
	desc := countPrefix.ReplaceAllString(gpu.Description, "")
	hw := cloudprovider.Hardware{
		FormFactor: gpuname.FormFactor(desc, name, model),
		VCPUs:      max(cpu.NumberOfCores, 0),
		MemoryGB:   max(memory.SizeInGigabytes, 0),
	}
	if gpu.NumberOfGPUs > 0 {
		if gpuMemory.SizeInGigabytes > 0 {
			hw.GPUMemoryGB = gpuMemory.SizeInGigabytes / gpu.NumberOfGPUs
		} else if hw.GPUMemoryGB = gpuname.MemoryGB(desc); hw.GPUMemoryGB == 0 {
			hw.GPUMemoryGB = gpuname.MemoryGB(name)
		}
	}
	return hw
}

// toUSD converts a catalog price into US dollars (money.Exchange: dollars as written, euros converted
// at EURToUSD and rounded up once to the cent, so a euro offer converting to 2.925 is 2.93). An entry
// without a currency is in the currency asked. ok is false for an unknown currency or a price no cloud
// would ask.
func (b *Backend) toUSD(price float64, currency string) (money.USD, bool) {
	if strings.TrimSpace(currency) == "" {
		currency = b.cfg.Currency
	}
	u, err := money.Exchange{EURToUSD: b.cfg.EURToUSD}.ToUSD(price, currency, false)
	return u, err == nil
}

// Offers lists what Verda can deploy now: the catalog (GET /instance-types) joined on instance_type
// with the on-demand and the spot availability lists, which Verda answers separately. Every offer
// carries the type's name as CloudGPU (cloudGPU); a GPU type the inventory does not map is offered with
// GPUType "" (the control plane reports it and never ranks it). CPU-only types, types missing from the
// catalog, types with more GPUs than the inventory allows and types without a price are left out.
// Verda only says yes or no, so Available is -1.
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	var (
		types          []InstanceType
		onDemand, spot []LocationAvailability
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { types, err = b.client.InstanceTypes(gctx, b.cfg.Currency); return })
	g.Go(func() (err error) { onDemand, err = b.client.Availability(gctx, false, ""); return })
	if !b.cfg.DisableSpot {
		g.Go(func() (err error) { spot, err = b.client.Availability(gctx, true, ""); return })
	}
	if err := g.Wait(); err != nil {
		return nil, classify("listing offers", err)
	}

	catalog := map[string]InstanceType{}
	gpuOf := map[string]string{}
	currOf := map[string]string{}
	for _, t := range types {
		catalog[t.InstanceType] = t
		currOf[t.InstanceType] = t.Currency
		if t.GPU.NumberOfGPUs > 0 {
			if gt := b.gpuTypeFor(t.Name, t.GPU.Description, t.Model); gt != "" {
				gpuOf[t.InstanceType] = gt
			}
		}
	}
	b.mu.Lock()
	b.typeGPU, b.typeCurr = gpuOf, currOf
	b.mu.Unlock()

	var offers []cloudprovider.Offer
	seen := map[string]bool{}
	add := func(list []LocationAvailability, isSpot bool) {
		for _, loc := range list {
			if !backendkit.Allowed(b.cfg.Locations, loc.LocationCode) {
				continue
			}
			for _, name := range loc.Availabilities {
				t, ok := catalog[name]
				if !ok || t.GPU.NumberOfGPUs < 1 {
					continue // not in the catalog (no price), or a CPU node
				}
				gt := gpuOf[name]
				if gt != "" && t.GPU.NumberOfGPUs > b.inv.GPUs[gt].MaxCount {
					continue
				}
				price := float64(t.PricePerHour)
				if isSpot {
					price = float64(t.SpotPrice)
				}
				usd, ok := b.toUSD(price, t.Currency)
				if !ok || usd <= 0 {
					continue
				}
				key := fmt.Sprintf("%s/%s/%v", loc.LocationCode, name, isSpot)
				if seen[key] {
					continue
				}
				seen[key] = true
				currency := t.Currency
				if currency == "" {
					currency = b.cfg.Currency
				}
				offers = append(offers, cloudprovider.Offer{
					Cloud:        CloudName,
					Region:       loc.LocationCode,
					InstanceType: name,
					GPUType:      gt,
					CloudGPU:     cloudGPU(t),
					GPUCount:     t.GPU.NumberOfGPUs,
					Hardware:     hardware(t.Name, t.Model, t.GPU, t.GPUMemory, t.CPU, t.Memory),
					PricePerHour: usd,
					Spot:         isSpot,
					Available:    -1,
					Details: map[string]string{
						DetailLocationCode:    loc.LocationCode,
						DetailInstanceType:    name,
						DetailCatalogCurrency: strings.ToLower(currency),
						DetailCatalogPrice:    strconv.FormatFloat(price, 'f', -1, 64),
					},
				})
			}
		}
	}
	add(onDemand, false)
	add(spot, true)
	backendkit.SortOffers(offers)
	return offers, nil
}

// Create deploys one instance from an offer, with req.Name as its hostname so List finds it again,
// and the ownership record as its description (cloudprovider.OwnerDescription; Verda requires a
// non-empty one) and its tags (cloudprovider.OwnerLabels as {key, value}).
//
// Create is idempotent by name (createonce): creates of one name in this process run one at a time,
// and each first looks for a live instance with that hostname and returns it. An offer whose price (as planned, or as
// the catalog says now) is above req.MaxPricePerHour is ErrCapacity and creates nothing. The public keys
// are registered as Verda SSH keys first (sshkeys.Ensure). The create call is not retried
// after a 5xx or a timeout; Create then looks for the instance by name once and returns it if Verda did
// create it, else the unknown-outcome error (ErrOther). Create returns as soon as Verda has accepted the
// order (status ordered: pending).
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create with existing volumes attached at the create (volumes.go).
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, volumeIDs []string) (cloudprovider.Instance, error) {
	const op = "creating instance"
	if req.Name == "" {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no instance name")
	}
	instanceType := cmp.Or(req.Offer.Details[DetailInstanceType], req.Offer.InstanceType)
	location := cmp.Or(req.Offer.Details[DetailLocationCode], req.Offer.Region)
	if instanceType == "" || location == "" {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"the offer names no instance type or location code")
	}
	var keyIDs []string
	inst, _, err := b.creates.Do(ctx, createonce.Steps{
		Cloud: CloudName, Op: op, Name: req.Name, Log: b.log,
		Find: func(ctx context.Context) (cloudprovider.Instance, bool, error) { return b.findByName(ctx, req.Name) },
		Prepare: func(ctx context.Context) (err error) {
			if err := b.checkPrice(ctx, req, instanceType); err != nil {
				return err
			}
			keyIDs, err = b.ensureSSHKeys(ctx, req.SSHPublicKeys)
			return err
		},
		Create: func(ctx context.Context) (cloudprovider.Instance, error) {
			return b.createInstance(ctx, req, instanceType, location, keyIDs, volumeIDs)
		},
	})
	return inst, err
}

// createInstance orders the instance (once more with the fallback image when Verda refuses the image
// for the instance type) and returns it as Verda answers it, or as ordered when the read fails.
func (b *Backend) createInstance(ctx context.Context, req cloudprovider.CreateRequest, instanceType, location string, keyIDs, volumeIDs []string) (cloudprovider.Instance, error) {
	body := CreateInstanceRequest{
		InstanceType: instanceType,
		Image:        b.cfg.Image,
		Hostname:     req.Name,
		Description:  cloudprovider.OwnerDescription(req.Owner),
		LocationCode: location,
		SSHKeyIDs:    keyIDs,
		OSVolume:     &OSVolume{Name: "OS volume", Size: b.cfg.OSVolumeSizeGiB},
		IsSpot:       req.Offer.Spot,
		Contract:     "PAY_AS_YOU_GO",
		Pricing:      "FIXED_PRICE",
		Tags:         ownerTags(req.Owner),
		// ExistingVolumes are attached at the create; Delete detaches them (volumes.go).
		ExistingVolumes: volumeIDs,
	}
	if req.Offer.Spot {
		body.Contract = "SPOT"
	}
	id, err := b.client.CreateInstance(ctx, body)
	if re, ok := asResponseError(err); ok && re.MessageHas(msgOSNotValid) && b.cfg.FallbackImage != "" && body.Image != b.cfg.FallbackImage {
		// A refused request created nothing, so trying again with the older image is safe.
		b.log.Info("image not valid for this instance type; using the fallback image", "instance_type", instanceType)
		body.Image = b.cfg.FallbackImage
		id, err = b.client.CreateInstance(ctx, body)
	}
	if err != nil {
		// An unknown outcome (a 5xx or a lost answer) is looked for by name: Verda may have created it.
		return cloudprovider.Instance{}, err
	}
	b.log.Info("instance ordered", "name", req.Name, "id", id, "instance_type", instanceType, "location", location, "spot", req.Offer.Spot)
	if in, err := b.client.Instance(ctx, id); err == nil {
		return b.toInstance(in), nil
	}
	return cloudprovider.Instance{
		ID:           id,
		Name:         req.Name,
		Cloud:        CloudName,
		Region:       location,
		InstanceType: instanceType,
		GPUType:      req.Offer.GPUType,
		GPUCount:     req.Offer.GPUCount,
		Hardware:     req.Offer.Hardware,
		Spot:         req.Offer.Spot,
		PricePerHour: req.Offer.PricePerHour,
		Status:       cloudprovider.StatusPending,
		CloudStatus:  StatusOrdered,
		Owner:        req.Owner,
	}, nil
}

// maxTags is how many tags Verda keeps on one instance.
const maxTags = 10

// ownerTags is the ownership record as Verda tags. Labels without a value (a request without an
// ownership record) are left out.
func ownerTags(o cloudprovider.Ownership) []Tag {
	var tags []Tag
	for _, kv := range cloudprovider.OwnerLabels(o) {
		if kv[1] != "" && len(tags) < maxTags {
			tags = append(tags, Tag{Key: kv[0], Value: kv[1]})
		}
	}
	return tags
}

// ownerOf reads the ownership record back: from the tags, else from the description.
func ownerOf(in Instance) cloudprovider.Ownership {
	if o, ok := cloudprovider.OwnerFromLabels(func(key string) (string, bool) {
		for _, t := range in.Tags {
			if t.Key == key {
				return t.Value, true
			}
		}
		return "", false
	}); ok {
		return o
	}
	o, _ := cloudprovider.OwnerFromDescription(in.Description)
	return o
}

// findByName returns the live (not terminated) instance whose hostname is name, if there is one. When
// several are (made outside hydra), the oldest is returned.
func (b *Backend) findByName(ctx context.Context, name string) (cloudprovider.Instance, bool, error) {
	return createonce.FindByName(ctx, name, b.List, nil, nil)
}

// checkPrice refuses (ErrCapacity) an offer whose price in the catalog now, which Verda may have
// changed since the plan, is above req.MaxPricePerHour (cloudprovider.CheckPriceCap).
func (b *Backend) checkPrice(ctx context.Context, req cloudprovider.CreateRequest, instanceType string) error {
	return checkListedPrice(ctx, b, "creating instance", instanceType, instanceType, req.MaxPricePerHour, b.client.InstanceTypes,
		func(t InstanceType) (string, FlexFloat, string) {
			if req.Offer.Spot {
				return t.InstanceType, t.SpotPrice, t.Currency
			}
			return t.InstanceType, t.PricePerHour, t.Currency
		})
}

// checkListedPrice refuses (ErrCapacity, cloudprovider.CheckPriceCap naming what) each entry named name
// of the catalog list reads now whose price (listed gives its name, price and currency), in US dollars,
// is above ceiling. No ceiling reads nothing; a price in an unknown currency is not checked.
func checkListedPrice[T any, P ~float64](ctx context.Context, b *Backend, op, name, what string, ceiling money.USD,
	list func(ctx context.Context, currency string) ([]T, error), listed func(T) (name string, price P, currency string)) error {
	if ceiling <= 0 {
		return nil
	}
	entries, err := list(ctx, b.cfg.Currency)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n, price, currency := listed(e)
		if n != name {
			continue
		}
		if usd, ok := b.toUSD(float64(price), currency); ok {
			if err := cloudprovider.CheckPriceCap(CloudName, op, what, usd, ceiling); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureSSHKeys returns the Verda SSH key ids for a new instance: the configured SSHKeyIDs, then the
// ids of the request's public keys, registering the ones the account lacks (sshkeys.Ensure).
func (b *Backend) ensureSSHKeys(ctx context.Context, keys []string) ([]string, error) {
	ids := append([]string{}, b.cfg.SSHKeyIDs...)
	if len(keys) == 0 {
		return ids, nil
	}
	got, err := b.sshKeys.Ensure(ctx, sshkeys.Registry{Cloud: CloudName, List: b.accountKeys, Add: b.addKey, AddAgain: true}, keys)
	if err != nil {
		return nil, err
	}
	for _, id := range got {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func (b *Backend) accountKeys(ctx context.Context) ([]sshkeys.AccountKey, error) {
	return sshkeys.Lister(b.client.SSHKeys, func(k SSHKey) sshkeys.AccountKey {
		return sshkeys.AccountKey{ID: k.ID, PublicKey: k.Key}
	})(ctx)
}

// addKey registers one public key without authorized_keys options, which Verda refuses. POST /ssh-keys
// is not retried by the HTTP client (a lost answer may hide a stored key); EnsureSSHKeys looks for the
// key after an unknown outcome and adds it once more only when Verda does not have it (AddAgain): a
// single 5xx never fails a create.
func (b *Backend) addKey(ctx context.Context, name, publicKey string) (string, error) {
	return b.client.CreateSSHKey(ctx, name, sshkeys.Bare(publicKey))
}

// Get reads one instance. An unknown id is an ErrNotFound error; a deleted one is returned with status
// terminated (Verda keeps discontinued instances readable).
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	return backendkit.Get(ctx, id, b.client.Instance, b.toInstance)
}

// List returns the instances whose hostname starts with prefix. Terminated ones (deleting,
// discontinued) are left out.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	read := func(ctx context.Context) ([]Instance, error) { return b.client.Instances(ctx, "") }
	return backendkit.List(ctx, prefix, read, func(in Instance) string { return in.Hostname }, b.toInstance)
}

// Delete starts deleting an instance through the action endpoint (PUT /instances, action "delete";
// the OS volume goes with it). An instance that is already gone is success: one Verda has
// discontinued ("Can't discontinue a discontinued instance") or does not know ("Invalid instance id").
// Verda refuses to delete an instance while it is provisioning; Delete then waits DeleteRetryWait and
// tries again, up to DeleteRetryMax times or until ctx ends.
func (b *Backend) Delete(ctx context.Context, id string) error {
	const op = "deleting instance"
	retry := wait.Backoff{First: b.cfg.DeleteRetryWait, Attempts: max(b.cfg.DeleteRetryMax, 0) + 1}
	attempt := 0
	err := wait.Until(ctx, "Verda to delete instance "+id, retry, func(ctx context.Context) (bool, error) {
		attempt++
		err := b.deleteOnce(ctx, id)
		if cloudprovider.IsNotFound(err) {
			b.log.Debug("instance already gone", "id", id)
			return true, nil
		}
		re, ok := asResponseError(err)
		if err == nil || !ok {
			return err == nil, err
		}
		switch {
		case re.MessageHas(msgAlreadyDiscontinued):
			b.log.Debug("instance already discontinued", "id", id)
			return true, nil
		case re.MessageHas(msgProvisioning):
			b.log.Debug("instance is provisioning; waiting before deleting it", "id", id, "attempt", attempt)
			return false, wait.Transient(re)
		}
		return false, err
	})
	var we *wait.Error
	switch {
	case !errors.As(err, &we):
		return err
	case errors.Is(we.Err, wait.ErrExhausted):
		return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op,
			"instance %s is still provisioning after %d attempts: %w", id, we.Polls, we.Last)
	}
	return cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, err)
}

func (b *Backend) deleteOnce(ctx context.Context, id string) error {
	const op = "deleting instance"
	results, err := b.client.InstanceAction(ctx, InstanceActionRequest{ID: []string{id}, Action: "delete"})
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.InstanceID != "" && r.InstanceID != id {
			continue
		}
		if r.Error == "" && (r.StatusCode == 0 || r.StatusCode < 300) {
			continue
		}
		status := r.StatusCode
		if status == 0 {
			status = http.StatusBadRequest
		}
		msg := r.Error
		if msg == "" {
			msg = r.Status
		}
		re := &ResponseError{Method: http.MethodPut, Path: "/instances", Status: status, Message: msg}
		if re.MessageHas(msgAlreadyDiscontinued) || re.MessageHas(msgProvisioning) {
			re.Code = CodeForbiddenAction
		}
		return cloudprovider.NewError(kindOf(re), CloudName, op, re)
	}
	return nil
}

// toInstance maps Verda's instance object onto hydra's.
func (b *Backend) toInstance(in Instance) cloudprovider.Instance {
	ip := ""
	if in.IP != nil {
		ip = strings.TrimSpace(*in.IP)
	}
	status, msg := mapStatus(in.Status, ip != "")
	b.mu.Lock()
	gt := b.gpuTypeFor(in.GPU.Description)
	if gt == "" {
		gt = b.typeGPU[in.InstanceType]
	}
	currency := b.typeCurr[in.InstanceType]
	b.mu.Unlock()
	price, ok := b.toUSD(float64(in.PricePerHour), currency)
	if !ok {
		price, _ = b.toUSD(float64(in.PricePerHour), "usd")
	}
	region := in.Location
	if region == "" {
		region = in.LocationCode
	}
	out := cloudprovider.Instance{
		ID:           in.ID,
		Name:         in.Hostname,
		Cloud:        CloudName,
		Region:       region,
		InstanceType: in.InstanceType,
		GPUType:      gt,
		GPUCount:     in.GPU.NumberOfGPUs,
		Hardware:     hardware("", "", in.GPU, in.GPUMemory, in.CPU, in.Memory),
		Spot:         in.IsSpot,
		PricePerHour: price,
		Status:       status,
		CloudStatus:  in.Status,
		Message:      msg,
		Owner:        ownerOf(in),
	}
	if ip != "" && status == cloudprovider.StatusRunning {
		out.SSH = &cloudprovider.SSHEndpoint{Host: ip, Port: b.cfg.SSHPort, User: b.cfg.SSHUser}
	}
	if t, err := time.Parse(time.RFC3339Nano, in.CreatedAt); err == nil {
		out.CreatedAt = t
	}
	out.Interruption = interruptionOf(in)
	return out
}

// interruptionOf is a spot instance's interruption: Verda reports a spot machine it took back as
// discontinued, with no advance notice (nil for anything else).
func interruptionOf(in Instance) *cloudprovider.Interruption {
	if !in.IsSpot || !strings.EqualFold(in.Status, StatusDiscontinued) {
		return nil
	}
	return &cloudprovider.Interruption{Reason: "Verda discontinued the spot machine (status discontinued); Verda gives no advance notice"}
}

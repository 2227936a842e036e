package verda

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
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
	// EURToUSD converts catalog prices Verda answers in EUR into US dollars (default 1.08 USD per EUR).
	// It is a fixed rate, not a live one: set it when the exchange rate moves.
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
}

var _ controlplane.InstanceManagerBackend = (*Backend)(nil)

// New builds the Verda backend. inv maps Verda's GPU names onto hydra's types.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	if inv == nil {
		return nil, errors.New("verda: no inventory")
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if cfg.Currency == "" {
		cfg.Currency = DefaultCurrency
	}
	cfg.Currency = strings.ToLower(cfg.Currency)
	if cfg.EURToUSD == 0 {
		cfg.EURToUSD = DefaultEURToUSD
	}
	if cfg.EURToUSD < 0 {
		return nil, fmt.Errorf("verda: eur_to_usd must be positive, got %v", cfg.EURToUSD)
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.FallbackImage == "" {
		cfg.FallbackImage = DefaultFallbackImage
	} else if cfg.FallbackImage == "-" {
		cfg.FallbackImage = ""
	}
	if cfg.OSVolumeSizeGiB == 0 {
		cfg.OSVolumeSizeGiB = DefaultOSVolumeSizeGiB
	}
	if cfg.SSHUser == "" {
		cfg.SSHUser = DefaultSSHUser
	}
	if cfg.SSHPort == 0 {
		cfg.SSHPort = 22
	}
	if cfg.DeleteRetryWait == 0 {
		cfg.DeleteRetryWait = DefaultDeleteRetryWait
	}
	if cfg.DeleteRetryMax == 0 {
		cfg.DeleteRetryMax = DefaultDeleteRetryMax
	}
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

// gpuTypeFor maps Verda's names for a GPU (the instance type's name, the gpu description without its
// "<n>x " count, the model) onto hydra's GPU type, or "".
func (b *Backend) gpuTypeFor(names ...string) string {
	for _, n := range names {
		n = strings.TrimSpace(countPrefix.ReplaceAllString(n, ""))
		if n == "" {
			continue
		}
		if t := b.inv.TypeForAPIName(CloudName, n); t != "" {
			return t
		}
	}
	return ""
}

// toUSD converts a catalog price into US dollars. An entry without a currency is in the currency asked.
func (b *Backend) toUSD(price float64, currency string) (float64, bool) {
	switch strings.ToLower(strings.TrimSpace(currency)) {
	case "":
		return b.toUSD(price, b.cfg.Currency)
	case "usd":
		return price, true
	case "eur":
		return math.Round(price*b.cfg.EURToUSD*10000) / 10000, true
	}
	return 0, false
}

func (b *Backend) locationAllowed(code string) bool {
	if len(b.cfg.Locations) == 0 {
		return true
	}
	for _, l := range b.cfg.Locations {
		if strings.EqualFold(l, code) {
			return true
		}
	}
	return false
}

// Offers lists what Verda can deploy now: the catalog (GET /instance-types) joined on instance_type
// with the on-demand and the spot availability lists, which Verda answers separately. Types the
// inventory does not map, CPU-only types, types with more GPUs than the inventory allows and types
// without a price are left out. Verda only says yes or no, so Available is -1.
func (b *Backend) Offers(ctx context.Context) ([]controlplane.Offer, error) {
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

	var offers []controlplane.Offer
	seen := map[string]bool{}
	add := func(list []LocationAvailability, isSpot bool) {
		for _, loc := range list {
			if !b.locationAllowed(loc.LocationCode) {
				continue
			}
			for _, name := range loc.Availabilities {
				t, ok := catalog[name]
				gt := gpuOf[name]
				if !ok || gt == "" {
					continue
				}
				if n := t.GPU.NumberOfGPUs; n < 1 || n > b.inv.GPUs[gt].MaxCount {
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
				offers = append(offers, controlplane.Offer{
					Cloud:        CloudName,
					Region:       loc.LocationCode,
					InstanceType: name,
					GPUType:      gt,
					GPUCount:     t.GPU.NumberOfGPUs,
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
	sort.SliceStable(offers, func(i, j int) bool {
		a, c := offers[i], offers[j]
		if a.Region != c.Region {
			return a.Region < c.Region
		}
		if a.InstanceType != c.InstanceType {
			return a.InstanceType < c.InstanceType
		}
		return !a.Spot && c.Spot
	})
	return offers, nil
}

// Create deploys one instance from an offer, with req.Name as its hostname (and description) so List
// finds it again. The public keys are registered as Verda SSH keys first (an existing key with the same
// public key is reused). The create call is not retried after a 5xx or a timeout: the instance may
// exist, and the caller must look for it by name before trying again. Create returns as soon as Verda
// has accepted the order (status ordered: pending).
func (b *Backend) Create(ctx context.Context, req controlplane.CreateRequest) (controlplane.Instance, error) {
	const op = "creating instance"
	if req.Name == "" {
		return controlplane.Instance{}, controlplane.Errorf(controlplane.ErrInvalid, CloudName, op, "no instance name")
	}
	instanceType := req.Offer.Details[DetailInstanceType]
	if instanceType == "" {
		instanceType = req.Offer.InstanceType
	}
	location := req.Offer.Details[DetailLocationCode]
	if location == "" {
		location = req.Offer.Region
	}
	if instanceType == "" || location == "" {
		return controlplane.Instance{}, controlplane.Errorf(controlplane.ErrInvalid, CloudName, op,
			"the offer names no instance type or location code")
	}
	if req.MaxPricePerHour > 0 && req.Offer.PricePerHour > req.MaxPricePerHour {
		return controlplane.Instance{}, controlplane.Errorf(controlplane.ErrInvalid, CloudName, op,
			"offer price %.4f USD/h is above the maximum %.4f USD/h", req.Offer.PricePerHour, req.MaxPricePerHour)
	}
	keyIDs, err := b.ensureSSHKeys(ctx, req.Name, req.SSHPublicKeys)
	if err != nil {
		return controlplane.Instance{}, err
	}
	body := CreateInstanceRequest{
		InstanceType: instanceType,
		Image:        b.cfg.Image,
		Hostname:     req.Name,
		Description:  req.Name,
		LocationCode: location,
		SSHKeyIDs:    keyIDs,
		OSVolume:     &OSVolume{Name: "OS volume", Size: b.cfg.OSVolumeSizeGiB},
		IsSpot:       req.Offer.Spot,
		Contract:     "PAY_AS_YOU_GO",
		Pricing:      "FIXED_PRICE",
	}
	if req.Offer.Spot {
		body.Contract = "SPOT"
	}
	id, err := b.client.CreateInstance(ctx, body)
	if re, ok := asResponseError(err); ok && re.has(msgOSNotValid) && b.cfg.FallbackImage != "" && body.Image != b.cfg.FallbackImage {
		// A refused request created nothing, so trying again with the older image is safe.
		b.log.Info("image not valid for this instance type; using the fallback image", "instance_type", instanceType)
		body.Image = b.cfg.FallbackImage
		id, err = b.client.CreateInstance(ctx, body)
	}
	if err != nil {
		return controlplane.Instance{}, err
	}
	b.log.Info("instance ordered", "name", req.Name, "id", id, "instance_type", instanceType, "location", location, "spot", req.Offer.Spot)
	if in, err := b.client.Instance(ctx, id); err == nil {
		return b.toInstance(in), nil
	}
	return controlplane.Instance{
		ID:           id,
		Name:         req.Name,
		Cloud:        CloudName,
		Region:       location,
		InstanceType: instanceType,
		GPUType:      req.Offer.GPUType,
		GPUCount:     req.Offer.GPUCount,
		Spot:         req.Offer.Spot,
		PricePerHour: req.Offer.PricePerHour,
		Status:       controlplane.StatusPending,
		CloudStatus:  StatusOrdered,
	}, nil
}

// normalizeKey reduces an authorized_keys line to "<type> <base64>" (options and comment dropped) and
// returns it with the key as it should be registered ("<type> <base64> [comment]").
func normalizeKey(line string) (norm, register string, ok bool) {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		t := f[i]
		if strings.HasPrefix(t, "ssh-") || strings.HasPrefix(t, "ecdsa-") || strings.HasPrefix(t, "sk-") {
			return t + " " + f[i+1], strings.Join(f[i:], " "), true
		}
	}
	return "", "", false
}

// ensureSSHKeys returns Verda SSH key ids for the public keys, registering the ones Verda does not
// have yet.
func (b *Backend) ensureSSHKeys(ctx context.Context, name string, keys []string) ([]string, error) {
	ids := append([]string{}, b.cfg.SSHKeyIDs...)
	if len(keys) == 0 {
		return ids, nil
	}
	existing, err := b.client.SSHKeys(ctx)
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	for _, k := range existing {
		if n, _, ok := normalizeKey(k.Key); ok {
			have[n] = k.ID
		}
	}
	added := map[string]bool{}
	for _, line := range keys {
		norm, register, ok := normalizeKey(line)
		if !ok {
			return nil, controlplane.Errorf(controlplane.ErrInvalid, CloudName, "adding SSH key", "not an SSH public key: %q", truncate(strings.TrimSpace(line), 40))
		}
		if added[norm] {
			continue
		}
		added[norm] = true
		if id, ok := have[norm]; ok {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
			continue
		}
		sum := sha256.Sum256([]byte(norm))
		id, err := b.client.CreateSSHKey(ctx, "hydra-"+hex.EncodeToString(sum[:6]), register)
		if err != nil {
			return nil, err
		}
		b.log.Debug("registered SSH key", "id", id, "for", name)
		ids = append(ids, id)
	}
	return ids, nil
}

// Get reads one instance. An unknown id is an ErrNotFound error; a deleted one is returned with status
// terminated (Verda keeps discontinued instances readable).
func (b *Backend) Get(ctx context.Context, id string) (controlplane.Instance, error) {
	in, err := b.client.Instance(ctx, id)
	if err != nil {
		return controlplane.Instance{}, err
	}
	return b.toInstance(in), nil
}

// List returns the instances whose hostname starts with prefix. Terminated ones (deleting,
// discontinued) are left out.
func (b *Backend) List(ctx context.Context, prefix string) ([]controlplane.Instance, error) {
	all, err := b.client.Instances(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []controlplane.Instance
	for _, in := range all {
		if !strings.HasPrefix(in.Hostname, prefix) {
			continue
		}
		inst := b.toInstance(in)
		if inst.Status == controlplane.StatusTerminated {
			continue
		}
		out = append(out, inst)
	}
	return out, nil
}

// Delete starts deleting an instance through the action endpoint (PUT /instances, action "delete";
// the OS volume goes with it). An unknown instance, or one Verda has already discontinued ("Can't
// discontinue a discontinued instance"), yields an ErrNotFound error, which callers treat as done.
// Verda refuses to delete an instance while it is provisioning; Delete then waits DeleteRetryWait and
// tries again, up to DeleteRetryMax times or until ctx ends.
func (b *Backend) Delete(ctx context.Context, id string) error {
	const op = "deleting instance"
	for attempt := 0; ; attempt++ {
		err := b.deleteOnce(ctx, id)
		re, ok := asResponseError(err)
		if err == nil || !ok {
			return err
		}
		switch {
		case re.has(msgAlreadyDiscontinued):
			return controlplane.NewError(controlplane.ErrNotFound, CloudName, op, re)
		case re.has(msgProvisioning):
			if attempt >= b.cfg.DeleteRetryMax {
				return controlplane.Errorf(controlplane.ErrOther, CloudName, op,
					"instance %s is still provisioning after %d attempts: %w", id, attempt+1, re)
			}
			b.log.Debug("instance is provisioning; waiting before deleting it", "id", id, "attempt", attempt+1)
			t := time.NewTimer(b.cfg.DeleteRetryWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return controlplane.NewError(controlplane.ErrOther, CloudName, op, fmt.Errorf("%w (last answer: %v)", ctx.Err(), re))
			case <-t.C:
			}
		default:
			return err
		}
	}
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
		if re.has(msgAlreadyDiscontinued) || re.has(msgProvisioning) {
			re.Code = CodeForbiddenAction
		}
		return controlplane.NewError(kindOf(re), CloudName, op, re)
	}
	return nil
}

// toInstance maps Verda's instance object onto hydra's.
func (b *Backend) toInstance(in Instance) controlplane.Instance {
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
		price = float64(in.PricePerHour)
	}
	region := in.Location
	if region == "" {
		region = in.LocationCode
	}
	out := controlplane.Instance{
		ID:           in.ID,
		Name:         in.Hostname,
		Cloud:        CloudName,
		Region:       region,
		InstanceType: in.InstanceType,
		GPUType:      gt,
		GPUCount:     in.GPU.NumberOfGPUs,
		Spot:         in.IsSpot,
		PricePerHour: price,
		Status:       status,
		CloudStatus:  in.Status,
		Message:      msg,
	}
	if ip != "" && status == controlplane.StatusRunning {
		out.SSH = &controlplane.SSHEndpoint{Host: ip, Port: b.cfg.SSHPort, User: b.cfg.SSHUser}
	}
	if t, err := time.Parse(time.RFC3339Nano, in.CreatedAt); err == nil {
		out.CreatedAt = t
	}
	return out
}

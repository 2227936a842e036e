package atlas

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// DefaultPriceFactor is applied to Atlas list prices so in-house capacity wins the normal ranking.
const DefaultPriceFactor = 0.5

// Config configures the Atlas backend.
type Config struct {
	// BaseURL is the Atlas API root (required).
	BaseURL string
	// Token is the Atlas API token (Bearer).
	Token string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// PriceFactor multiplies the list price the API returns (default 0.5; must be > 0).
	PriceFactor float64
}

// Details keys an offer carries.
const (
	DetailRankPrice = "ranking_price_per_hour"
	DetailGPUModel  = "gpu_model"
	DetailDiskGB    = "disk_gb"
)

// Backend is the Atlas InstanceManagerBackend.
type Backend struct {
	client *Client
	inv    *inventory.Inventory
	log    hclog.Logger
	factor float64

	mu       sync.Mutex
	hardware map[string]cloudprovider.Hardware // "region/instance type" -> hardware, from the last Offers
}

var (
	_ cloudprovider.InstanceManagerBackend = (*Backend)(nil)
	_ cloudprovider.OwnershipConfirmer     = (*Backend)(nil)
)

// New builds the backend.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	cfg.PriceFactor = cmp.Or(cfg.PriceFactor, DefaultPriceFactor)
	if cfg.PriceFactor < 0 {
		return nil, fmt.Errorf("%s: price factor %v must be positive", CloudName, cfg.PriceFactor)
	}
	c, err := NewClient(ClientConfig{
		BaseURL: cfg.BaseURL, Token: cfg.Token, Tuning: cfg.Tuning, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{client: c, inv: inv, log: logger.Named(CloudName), factor: cfg.PriceFactor, hardware: map[string]cloudprovider.Hardware{}}, nil
}

// Client returns the backend's REST client.
func (b *Backend) Client() *Client { return b.client }

// Cloud names the backend.
func (b *Backend) Cloud() string { return CloudName }

// Offers lists Atlas capacity at its list price, the price Atlas bills, ranked by the list price times
// PriceFactor (RankPrice: the in-house preference, never a discount). Every offer carries the entry's
// gpu_model as CloudGPU; a GPU the inventory does not map is offered with GPUType "" (the control plane
// reports it and never ranks it). A sold-out entry (available 0) is listed with Available 0: the control
// plane shows it as not eligible, with its price. Entries without a GPU and counts above the type's
// maximum are dropped.
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	entries, err := b.client.Offers(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloudprovider.Offer
	hw := map[string]cloudprovider.Hardware{}
	for _, e := range entries {
		hw[e.Region+"/"+e.InstanceType] = offerHardware(e.Spec)
		gpuType, price, ok := b.listPrice(e.GPUModel, e.GPUCount, e.PricePerHour, e.Currency)
		if !ok || e.Available < 0 || e.InstanceType == "" || e.Region == "" {
			continue
		}
		rank := price.Times(b.factor)
		out = append(out, cloudprovider.Offer{
			Cloud:        CloudName,
			Region:       e.Region,
			InstanceType: e.InstanceType,
			GPUType:      gpuType,
			CloudGPU:     e.GPUModel,
			GPUCount:     e.GPUCount,
			Hardware:     offerHardware(e.Spec),
			PricePerHour: price,
			RankPrice:    rank,
			Available:    e.Available,
			Details: map[string]string{
				DetailRankPrice: rank.String(),
				DetailGPUModel:  e.GPUModel,
				DetailDiskGB:    strconv.Itoa(e.DiskGB),
			},
		})
	}
	b.mu.Lock()
	maps.Copy(b.hardware, hw)
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].RankPrice != out[j].RankPrice {
			return out[i].RankPrice < out[j].RankPrice
		}
		if out[i].Region != out[j].Region {
			return out[i].Region < out[j].Region
		}
		return out[i].InstanceType < out[j].InstanceType
	})
	return out, nil
}

// listPrice is an offer entry's GPU type (as the inventory maps gpu_model; "" when it does not) and list
// price per hour; not ok for an entry hydra does not offer: no GPU, more GPUs than its type allows, no
// price, or a price in another currency than USD.
func (b *Backend) listPrice(gpuModel string, gpuCount int, pricePerHour float64, currency string) (gpuType string, price money.USD, ok bool) {
	gpuType = b.inv.GPUType(CloudName, gpuModel)
	if strings.TrimSpace(gpuModel) == "" || gpuCount < 1 || pricePerHour <= 0 || (gpuType != "" && gpuCount > b.inv.GPUs[gpuType].MaxCount) {
		return "", 0, false
	}
	if cur := strings.ToUpper(currency); cur != "" && cur != "USD" {
		return "", 0, false
	}
	price, err := money.FromFloat(pricePerHour)
	return gpuType, price, err == nil
}

// offerHardware is what an offer (or a cluster offer) says of its machines: gpu_memory_gb (one GPU; else as gpu_model names
// it), vcpus and memory_gb, and the form factor as gpu_model, nvidia-smi's name, states it ("NVIDIA
// L40S" is a PCIe card, "NVIDIA H100 80GB HBM3" the SXM5 module; "NVIDIA A100 80GB" does not say).
func offerHardware(e atlasapi.Spec) cloudprovider.Hardware {
	hw := cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(e.GPUModel),
		GPUMemoryGB: max(e.GPUMemoryGB, 0),
		VCPUs:       max(e.VCPUs, 0),
		MemoryGB:    max(e.MemoryGB, 0),
	}
	if hw.GPUMemoryGB == 0 {
		hw.GPUMemoryGB = gpuname.MemoryGB(e.GPUModel)
	}
	return hw
}

// Create starts an instance named req.Name carrying the ownership record as labels. Atlas create is
// idempotent by name: when an instance with that name already exists, Atlas answers 409 with it and
// Create returns it.
//
// A cap (req.MaxPricePerHour) is sent with the create and enforced by Atlas against the list price at
// that moment, the price Atlas bills: PriceFactor only ranks offers and never discounts the cap. Above
// it Atlas answers 422 price_above_max, creates nothing, and Create returns ErrCapacity.
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	const op = "creating instance"
	if req.Name == "" || req.Offer.InstanceType == "" || req.Offer.Region == "" {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "name, instance type and region are required")
	}
	if req.MaxPricePerHour < 0 {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "max price %v must not be negative", req.MaxPricePerHour)
	}
	var keys []string
	for _, k := range req.SSHPublicKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	var labels map[string]string
	if req.Owner.Token != "" {
		labels = map[string]string{}
		for _, kv := range cloudprovider.OwnerLabels(req.Owner) {
			labels[kv[0]] = kv[1]
		}
	}
	inst, existed, err := b.client.CreateInstance(ctx, atlasapi.CreateRequest{
		Name: req.Name, InstanceType: req.Offer.InstanceType, Region: req.Offer.Region, SSHPublicKeys: keys,
		Labels: labels, MaxPricePerHour: req.MaxPricePerHour.Float64(),
	})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	if existed {
		b.log.Debug("an instance with this name already existed; returning it", "name", req.Name, "id", inst.ID)
	}
	out := b.toInstance(inst)
	if out.InstanceType == req.Offer.InstanceType && out.Region == req.Offer.Region {
		out.Hardware = backendkit.FillHardware(out.Hardware, req.Offer.Hardware)
	}
	return out, nil
}

func (b *Backend) toInstance(i Instance) cloudprovider.Instance {
	var ssh *cloudprovider.SSHEndpoint
	if i.SSH != nil && i.SSH.Host != "" {
		ssh = &cloudprovider.SSHEndpoint{Host: i.SSH.Host, Port: i.SSH.Port, User: i.SSH.User}
		if ssh.Port == 0 {
			ssh.Port = 22
		}
		if ssh.User == "" {
			ssh.User = "ubuntu"
		}
	}
	st := mapStatus(i.Status, ssh)
	inst := cloudprovider.Instance{
		ID: i.ID, Name: i.Name, Cloud: CloudName, Region: i.Region, InstanceType: i.InstanceType,
		GPUType: b.inv.GPUType(CloudName, i.GPUModel), GPUCount: i.GPUCount,
		Hardware:     b.instanceHardware(i),
		PricePerHour: usd(i.PricePerHour),
		Status:       st, CloudStatus: i.Status, SSH: ssh, HostKey: strings.TrimSpace(i.HostKey), CreatedAt: i.CreatedAt,
		Cluster: i.ClusterID,
	}
	if st == cloudprovider.StatusError {
		inst.Message = i.StatusMessage
		if inst.Message == "" {
			inst.Message = "the instance failed"
		}
	}
	if o, ok := cloudprovider.OwnerFromLabels(func(k string) (string, bool) { v, ok := i.Labels[k]; return v, ok }); ok {
		inst.Owner = o
	}
	return inst
}

// instanceHardware is what Atlas says of an instance's machine. The instance answer names only its
// gpu_model (form factor, and GPU memory where the name states it); the rest comes from the offer of
// its instance type and region as the last Offers listed it (zero when Offers has not seen it).
func (b *Backend) instanceHardware(i Instance) cloudprovider.Hardware {
	hw := cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(i.GPUModel),
		GPUMemoryGB: gpuname.MemoryGB(i.GPUModel),
	}
	b.mu.Lock()
	from, ok := b.hardware[i.Region+"/"+i.InstanceType]
	b.mu.Unlock()
	if ok {
		hw = backendkit.FillHardware(from, hw)
	}
	return hw
}

// Get returns one instance.
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	return backendkit.Get(ctx, id, b.client.Instance, b.toInstance)
}

// List returns the live instances whose name starts with prefix.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	// The server filters too; check again rather than trust it.
	read := func(ctx context.Context) ([]Instance, error) { return b.client.Instances(ctx, prefix) }
	return backendkit.List(ctx, prefix, read, func(i Instance) string { return i.Name }, b.toInstance)
}

// Delete starts termination. An instance that is already terminating succeeds again (Atlas answers
// 202); one that is terminated or unknown (Atlas answers 404) is gone, which is success too.
func (b *Backend) Delete(ctx context.Context, id string) error {
	_, err := b.client.DeleteInstance(ctx, id)
	if cloudprovider.IsNotFound(err) {
		b.log.Debug("instance already gone", "id", id)
		return nil
	}
	return err
}

// ConfirmOwnership records at Atlas that a Terraform state holds the instance: it sets the label
// hydra-confirmed=true, leaving the others as they are. It is idempotent; an unknown or terminated
// instance is ErrNotFound.
func (b *Backend) ConfirmOwnership(ctx context.Context, id string) error {
	confirmed := "true"
	_, err := b.client.UpdateLabels(ctx, id, map[string]*string{cloudprovider.LabelConfirmed: &confirmed})
	return err
}

// usd reads a price Atlas reported; a value no cloud would bill (negative, not a number) reads as 0.
func usd(f float64) money.USD {
	u, err := money.FromFloat(f)
	if err != nil {
		return 0
	}
	return u
}

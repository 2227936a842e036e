package primeintellect

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/createonce"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Config configures the Prime Intellect backend.
type Config struct {
	// APIKey is the Prime Intellect API key (Bearer). Needs Availability read and Instances read/write.
	APIKey string
	// BaseURL defaults to https://api.primeintellect.ai.
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// PageSize is the availability page size (default and maximum 100).
	PageSize int
	// EmptyAvailabilityRetries is how often an empty availability answer is asked again (default 3;
	// negative: never); EmptyAvailabilityWait is the first wait, doubled each time (default 1s).
	EmptyAvailabilityRetries int
	EmptyAvailabilityWait    time.Duration
	// MaxPriceMarginPercent is added to the quoted price to form the maxPrice sent on create when the
	// user set no ceiling (default 10; negative: no margin).
	MaxPriceMarginPercent float64
	// TeamID, when set, creates pods in that team.
	TeamID string
	// Image is the pod image (default "ubuntu_22_cuda_12").
	Image string
	// ResaleClouds maps an upstream provider name (lower case) to the hydra cloud that sells the same
	// hardware directly; such offers get Offer.ResaleOf. Default: datacrunch and verda → "verda",
	// upcloud → "upcloud".
	ResaleClouds map[string]string
}

// DefaultImage is the pod image hydra asks for.
const DefaultImage = "ubuntu_22_cuda_12"

// DefaultResaleClouds are the upstream providers hydra also talks to directly.
var DefaultResaleClouds = map[string]string{"datacrunch": "verda", "verda": "verda", "upcloud": "upcloud"}

// Details keys an offer carries for Create.
const (
	DetailCloudID    = "cloud_id"
	DetailProvider   = "provider"
	DetailGPUType    = "gpu_type"
	DetailSocket     = "socket"
	DetailDataCenter = "data_center"
	DetailCountry    = "country"
	DetailRegion     = "region"
	DetailSecurity   = "security"
	DetailDiskGB     = "disk_gb"
	DetailStock      = "stock_status"
	DetailGPUPrice   = "gpu_price_per_hour"
	DetailDiskPrice  = "disk_price_per_hour"
	DetailPrepaid    = "prepaid_hours"
)

// Backend is the Prime Intellect InstanceManagerBackend.
//
// Ownership: a Prime pod keeps only its name. The API has no labels, tags or description, and a pod's
// metadata cannot be changed after creation, so the ownership record is the cloud-side name alone
// ("<pool prefix><resource>--<token>", read back by cloudprovider.WithOwner). The backend therefore
// leaves Instance.Owner empty and does not implement cloudprovider.OwnershipConfirmer.
type Backend struct {
	client *Client
	inv    *inventory.Inventory
	log    hclog.Logger
	cfg    Config
	margin float64
	resale map[string]string
	// creates serialises the creates of one name within the process, so that concurrent creates of
	// a name look for each other's pod instead of racing (Prime does not promise unique pod names).
	creates createonce.Group
	sshKeys sshkeys.Serial // serialises SSH key registration, so two creates never add one key twice
}

var _ cloudprovider.InstanceManagerBackend = (*Backend)(nil)

// New builds the backend.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	cfg.Image = cmp.Or(cfg.Image, DefaultImage)
	margin := cfg.MaxPriceMarginPercent
	switch {
	case margin == 0:
		margin = 10
	case margin < 0:
		margin = 0
	}
	resale := map[string]string{}
	src := cfg.ResaleClouds
	if src == nil {
		src = DefaultResaleClouds
	}
	for k, v := range src {
		resale[strings.ToLower(k)] = v
	}
	c, err := NewClient(ClientConfig{
		APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, Tuning: cfg.Tuning,
		PageSize: cfg.PageSize, EmptyRetries: cfg.EmptyAvailabilityRetries, EmptyRetryWait: cfg.EmptyAvailabilityWait,
		Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	return &Backend{client: c, inv: inv, log: logger.Named(CloudName), cfg: cfg, margin: margin / 100, resale: resale}, nil
}

// Client returns the backend's REST client.
func (b *Backend) Client() *Client { return b.client }

// Cloud names the backend.
func (b *Backend) Cloud() string { return CloudName }

// instanceType is hydra's stable name for an offer's shape: upstream provider, GPU type, socket and
// count, e.g. "runpod.H100_80GB.SXM5.1x". The cloudId is not used (it changes within minutes), and
// everything in the name can be read back from a pod, so an instance found by name matches its offer.
func instanceType(provider, gpuType, socket string, count int) string {
	return strings.ReplaceAll(fmt.Sprintf("%s.%s.%s.%dx", provider, gpuType, socket, count), "/", "_")
}

// shape is what an instance type names.
type shape struct {
	provider, gpuType, socket string
	count                     int
}

// parseInstanceType reads back a name built by instanceType.
func parseInstanceType(s string) (shape, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 4 {
		return shape{}, false
	}
	n := len(parts)
	count, err := strconv.Atoi(strings.TrimSuffix(parts[n-1], "x"))
	if err != nil || count < 1 || !strings.HasSuffix(parts[n-1], "x") {
		return shape{}, false
	}
	// The provider is the first part; the GPU type may itself hold dots, the socket never does.
	return shape{provider: parts[0], gpuType: strings.Join(parts[1:n-2], "."), socket: parts[n-2], count: count}, true
}

// regionOf picks the most precise location an item names.
func regionOf(a GPUAvailability) string {
	for _, s := range []string{a.DataCenter, a.Region, a.Country} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return "global"
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// itemHardware is what an availability item says of its machine: the form factor from socket ("SXM5",
// "PCIe"), else as gpuType states it; the memory of one GPU (perGPUMemory); vCPUs and RAM (GB) from the
// defaultCount of vcpu and memory, the amounts a pod is created with.
func itemHardware(a GPUAvailability) cloudprovider.Hardware {
	return cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(a.Socket, a.GPUType),
		GPUMemoryGB: perGPUMemory(a.GPUType, a.GPUMemory, a.GPUCount.Int()),
		VCPUs:       max(a.VCPU.DefaultCount.Int(), 0),
		MemoryGB:    max(a.Memory.DefaultCount.Int(), 0),
	}
}

// perGPUMemory is the memory of one GPU of an item. The spec calls gpuMemory per GPU, but Prime's
// recorded answers send the box total (gpuMemory 160 for 2x A100_80GB, 640 for 8); the GPU type names
// the memory of one GPU ("A100_80GB"). So a gpuMemory equal to the named memory is per GPU, another
// that is a multiple of the count is a total and is divided, and a null one leaves the name to say it.
func perGPUMemory(gpuType string, gpuMemory Number, count int) int {
	named := namedGPUMemory(gpuType)
	total := gpuMemory.Int()
	switch {
	case !gpuMemory.Set || total <= 0:
		return named
	case named != 0 && total == named:
		return total
	case count > 1 && total%count == 0:
		return total / count
	default:
		return total
	}
}

// namedGPUMemory is the memory of one GPU as Prime's GPU type names it ("H100_80GB": 80), or 0. The
// Grace Hopper types (GH200_96GB, GH200_480GB, GH200_624GB) name the superchip's memory, CPU memory
// included, so they say nothing of the GPU's.
func namedGPUMemory(gpuType string) int {
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(gpuType)), "GH200") {
		return 0
	}
	return gpuname.MemoryGB(gpuType)
}

// available is an item's stock as hydra counts it: 0 for stockStatus "Unavailable" (sold out: the offer
// is listed, priced, and the control plane shows it as not eligible, as for every cloud that can tell),
// else -1 (Prime's "Low", "Medium", "High" and "Available" say there is some, not how many).
func available(a GPUAvailability) int {
	if strings.EqualFold(strings.TrimSpace(a.StockStatus), "Unavailable") {
		return 0
	}
	return -1
}

// toOffer maps one availability item; ok is false when it is no offer (why says what it lacks). A GPU
// type the inventory does not map is an offer with GPUType "" (reported, never ranked); every offer
// carries the item's gpuType as CloudGPU, the name api_names.primeintellect lists.
func (b *Backend) toOffer(a GPUAvailability) (o cloudprovider.Offer, why string, ok bool) {
	if strings.TrimSpace(a.GPUType) == "" {
		return cloudprovider.Offer{}, "no GPU type", false
	}
	gpuType := b.inv.GPUType(CloudName, a.GPUType)
	count := a.GPUCount.Int()
	if count < 1 || (gpuType != "" && count > b.inv.GPUs[gpuType].MaxCount) {
		return cloudprovider.Offer{}, "GPU count outside the inventory's limits", false
	}
	if a.CloudID == "" || a.Provider == "" || a.Socket == "" {
		return cloudprovider.Offer{}, "no cloudId, provider or socket", false
	}
	if cur := strings.ToUpper(strings.TrimSpace(a.Prices.Currency)); cur != "" && cur != "USD" {
		return cloudprovider.Offer{}, "priced in " + cur, false
	}
	total, ok := a.TotalPrice()
	price, err := money.FromFloat(total)
	if !ok || err != nil || price <= 0 {
		return cloudprovider.Offer{}, "no price", false
	}
	base, _ := a.BasePrice()
	d := map[string]string{
		DetailCloudID:    a.CloudID,
		DetailProvider:   a.Provider,
		DetailGPUType:    a.GPUType,
		DetailSocket:     a.Socket,
		DetailDataCenter: a.DataCenter,
		DetailCountry:    a.Country,
		DetailRegion:     a.Region,
		DetailSecurity:   a.Security,
		DetailStock:      a.StockStatus,
		DetailGPUPrice:   fmtFloat(base),
		DetailDiskPrice:  fmtFloat(a.DiskPrice()),
	}
	if n := a.DiskSize(); n > 0 {
		d[DetailDiskGB] = strconv.Itoa(n)
	}
	if a.PrepaidTime.Set && a.PrepaidTime.V > 0 {
		d[DetailPrepaid] = fmtFloat(a.PrepaidTime.V)
	}
	return cloudprovider.Offer{
		Cloud:        CloudName,
		Region:       regionOf(a),
		InstanceType: instanceType(a.Provider, a.GPUType, a.Socket, count),
		GPUType:      gpuType,
		CloudGPU:     a.GPUType,
		GPUCount:     count,
		Hardware:     itemHardware(a),
		PricePerHour: price,
		Spot:         a.Spot(),
		Available:    available(a),
		ResaleOf:     b.resale[strings.ToLower(a.Provider)],
		Details:      d,
	}, "", true
}

// Offers lists what Prime can rent now. Every offer carries Prime's gpuType as CloudGPU; GPU types the
// inventory does not map are offered with GPUType "" (the control plane reports them and never ranks
// them). A sold-out item (stockStatus "Unavailable") is listed with Available 0, so the plan shows it
// as not eligible with its price. Unpriced items, non-USD prices and counts above the inventory's
// limit are skipped; when two items share region, shape and spot-ness, one in stock beats a sold-out
// one, then the cheaper one wins. Spot offers are
// returned with Spot set (the control plane filters them).
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	items, err := b.client.Availability(ctx, AvailabilityFilter{})
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		b.crossCheckEmpty(ctx)
	}
	best := map[string]cloudprovider.Offer{}
	skipped := map[string]int{}
	for _, it := range items {
		o, why, ok := b.toOffer(it)
		if !ok {
			skipped[why]++
			continue
		}
		k := o.Region + "|" + o.InstanceType + "|" + strconv.FormatBool(o.Spot)
		prev, dup := best[k]
		switch {
		case !dup,
			prev.Available == 0 && o.Available != 0, // an item in stock beats a sold-out one
			(prev.Available == 0) == (o.Available == 0) && o.PricePerHour < prev.PricePerHour:
			best[k] = o
		}
	}
	if len(skipped) > 0 {
		b.log.Debug("availability items skipped", "reasons", skipped)
	}
	out := make([]cloudprovider.Offer, 0, len(best))
	for _, o := range best {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PricePerHour != out[j].PricePerHour {
			return out[i].PricePerHour < out[j].PricePerHour
		}
		if out[i].Region != out[j].Region {
			return out[i].Region < out[j].Region
		}
		if out[i].InstanceType != out[j].InstanceType {
			return out[i].InstanceType < out[j].InstanceType
		}
		return !out[i].Spot && out[j].Spot
	})
	return out, nil
}

// crossCheckEmpty logs when the GPU summary lists capacity that the availability answer did not.
func (b *Backend) crossCheckEmpty(ctx context.Context) {
	sum, err := b.client.GPUSummary(ctx)
	if err != nil {
		b.log.Debug("availability was empty; the GPU summary could not be read", "error", err)
		return
	}
	if len(sum) > 0 {
		b.log.Warn("availability answered empty after retries although the GPU summary lists GPU types; Prime's availability may be flaky", "summary_types", len(sum))
	}
}

// resolve finds the availability item for an offer again, just before creating: cloudIds change
// within minutes. It matches provider, GPU type, socket, count, place, security and spot-ness, prefers
// items priced within limit (when positive), then the same cloudId, then the cheapest. The offer may
// carry no Details (an offer rebuilt from its ID on another machine): then the instance type and
// region say what to look for. An offer without dataCenter (null in many real answers) is matched by
// its region or country, and the create leaves the placement to the upstream.
//
// With disks, only the GPUs co-located with them are asked for (availability's disks=).
func (b *Backend) resolve(ctx context.Context, o cloudprovider.Offer, limit money.USD, disks []string) (GPUAvailability, error) {
	const op = "creating pod"
	d := o.Details
	if d == nil {
		d = map[string]string{}
	}
	want := shape{provider: d[DetailProvider], gpuType: d[DetailGPUType], socket: d[DetailSocket], count: o.GPUCount}
	if parsed, ok := parseInstanceType(o.InstanceType); ok {
		if want.provider == "" {
			want.provider = parsed.provider
		}
		if want.gpuType == "" {
			want.gpuType = parsed.gpuType
		}
		if want.socket == "" {
			want.socket = parsed.socket
		}
		if want.count == 0 {
			want.count = parsed.count
		}
	}
	if want.gpuType == "" {
		if names := b.inv.GPUs[o.GPUType].APINames[CloudName]; len(names) > 0 {
			want.gpuType = names[0]
		}
	}
	if want.gpuType == "" || want.count < 1 {
		return GPUAvailability{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "offer %q names no Prime GPU type or count", o.InstanceType)
	}
	items, err := b.client.Availability(ctx, AvailabilityFilter{GPUType: want.gpuType, GPUCount: want.count, DataCenter: d[DetailDataCenter], Disks: disks})
	if err != nil {
		return GPUAvailability{}, err
	}
	var cands []GPUAvailability
	for _, it := range items {
		switch {
		case want.provider != "" && !strings.EqualFold(it.Provider, want.provider),
			want.socket != "" && !strings.EqualFold(it.Socket, want.socket),
			d[DetailSecurity] != "" && it.Security != d[DetailSecurity],
			d[DetailDataCenter] == "" && o.Region != "" && regionOf(it) != o.Region,
			it.Spot() != o.Spot, it.CloudID == "", strings.EqualFold(it.StockStatus, "Unavailable"):
			continue
		}
		if _, ok := it.TotalPrice(); !ok {
			continue
		}
		cands = append(cands, it)
	}
	if len(cands) == 0 {
		return GPUAvailability{}, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op,
			"offer %s in %s is no longer available", o.InstanceType, o.Region)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		pi, pj := totalUSD(cands[i]), totalUSD(cands[j])
		if limit > 0 {
			if wi, wj := !cloudprovider.AboveCap(pi, limit), !cloudprovider.AboveCap(pj, limit); wi != wj {
				return wi
			}
		}
		si, sj := cands[i].CloudID == d[DetailCloudID], cands[j].CloudID == d[DetailCloudID]
		if si != sj {
			return si
		}
		return pi < pj
	})
	return cands[0], nil
}

// maxPrice is the numeric maxPrice sent on create: the user's ceiling, or the quote plus the margin.
func (b *Backend) maxPrice(req cloudprovider.CreateRequest, current money.USD) money.USD {
	if req.MaxPricePerHour > 0 {
		return req.MaxPricePerHour
	}
	quote := req.Offer.PricePerHour
	if quote <= 0 {
		quote = current
	}
	// Round up to a hundredth of a cent so the API sees a clean number at least the quote plus margin.
	const step = money.Cent / 100
	return (quote.Times(1+b.margin) + step - 1) / step * step
}

// totalUSD is an item's total price per hour; a missing or invalid price reads as money.Max, which
// no limit admits and which sorts last.
func totalUSD(a GPUAvailability) money.USD {
	f, ok := a.TotalPrice()
	u, err := money.FromFloat(f)
	if !ok || err != nil {
		return money.Max
	}
	return u
}

// Create creates the pod named req.Name from the offer and returns at once with it pending.
//
// It is idempotent by name: a live pod of that name (a retried create, or a concurrent one in this
// process) is returned instead of creating another. Otherwise it re-resolves the offer (cloudIds
// change within minutes), refuses with ErrCapacity, before creating anything, an offer now priced
// above the user's ceiling (or above the quote plus the margin when there is none), registers the SSH
// keys on the account and creates the pod with a numeric maxPrice, so the API refuses a price that
// moved up meanwhile. A create whose answer is lost is looked for by name before giving up.
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create, with the disks of ids attached to a new pod.
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, disks []string) (cloudprovider.Instance, error) {
	const op = "creating pod"
	if req.Name == "" {
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no instance name")
	}
	var (
		item              GPUAvailability
		current, maxPrice money.USD
		keyIDs            []string
	)
	inst, how, err := b.creates.Do(ctx, createonce.Steps{
		Cloud: CloudName, Op: op, Name: req.Name, Log: b.log,
		Find: func(ctx context.Context) (cloudprovider.Instance, bool, error) { return b.findByName(ctx, req.Name) },
		Prepare: func(ctx context.Context) (err error) {
			limit := req.MaxPricePerHour
			if limit <= 0 && req.Offer.PricePerHour > 0 {
				limit = b.maxPrice(req, 0)
			}
			if item, err = b.resolve(ctx, req.Offer, limit, disks); err != nil {
				return err
			}
			current = totalUSD(item)
			maxPrice = b.maxPrice(req, current)
			if err := cloudprovider.CheckPriceCap(CloudName, op, "offer "+req.Offer.InstanceType, current, maxPrice); err != nil {
				return err
			}
			keyIDs, err = b.ensureSSHKeys(ctx, req.SSHPublicKeys)
			return err
		},
		Create: func(ctx context.Context) (cloudprovider.Instance, error) {
			return b.createPod(ctx, req, item, maxPrice, keyIDs, disks)
		},
	})
	switch {
	case err != nil:
		return cloudprovider.Instance{}, err
	case how == createonce.Existed:
		return b.fillFromOffer(inst, req), nil
	}
	// A pod just created, or found after its create's answer was lost.
	return b.fromOffer(inst, req, current), nil
}

// createPod creates the pod of a resolved offer with a numeric maxPrice.
func (b *Backend) createPod(ctx context.Context, req cloudprovider.CreateRequest, item GPUAvailability, maxPrice money.USD, keyIDs, disks []string) (cloudprovider.Instance, error) {
	spec := PodSpec{
		Name:         req.Name,
		CloudID:      item.CloudID,
		GPUType:      item.GPUType,
		Socket:       item.Socket,
		GPUCount:     item.GPUCount.Int(),
		DiskSize:     item.DiskSize(),
		MaxPrice:     maxPrice.Float64(),
		Image:        b.cfg.Image,
		DataCenterID: item.DataCenter,
		Country:      item.Country,
		Security:     item.Security,
	}
	// Prime installs every key of the account in a new pod; the create body names one of them.
	if len(keyIDs) > 0 {
		spec.SSHKeyID = keyIDs[0]
	}
	if item.VCPU.DefaultCount.Set {
		spec.VCPUs = item.VCPU.DefaultCount.Int()
	}
	if item.Memory.DefaultCount.Set {
		spec.Memory = item.Memory.DefaultCount.Int()
	}
	body := CreatePodRequest{Pod: spec, Provider: ProviderRef{Type: item.Provider}, Disks: disks}
	if b.cfg.TeamID != "" {
		body.Team = &TeamRef{TeamID: b.cfg.TeamID}
	}
	if item.CloudID != req.Offer.Details[DetailCloudID] {
		b.log.Debug("offer re-resolved to a new cloudId", "instance_type", req.Offer.InstanceType, "region", req.Offer.Region)
	}
	pod, err := b.client.CreatePod(ctx, body)
	if err != nil {
		// The outcome may be unknown: the pod may exist although the answer was lost.
		return cloudprovider.Instance{}, err
	}
	inst := b.toInstance(pod)
	inst.Name = cmp.Or(inst.Name, req.Name)
	// What was ordered, where the pod's answer does not say it yet.
	inst.Hardware = backendkit.FillHardware(inst.Hardware, itemHardware(item))
	return inst, nil
}

// fromOffer completes a just-created pod with what the offer described, whatever the pod's fields
// say this early.
func (b *Backend) fromOffer(inst cloudprovider.Instance, req cloudprovider.CreateRequest, price money.USD) cloudprovider.Instance {
	if inst.Region == "" {
		inst.Region = req.Offer.Region
	}
	inst.InstanceType, inst.GPUType, inst.GPUCount = req.Offer.InstanceType, req.Offer.GPUType, req.Offer.GPUCount
	if inst.PricePerHour == 0 {
		inst.PricePerHour = price
	}
	if inst.PricePerHour == 0 {
		inst.PricePerHour = req.Offer.PricePerHour
	}
	inst.Spot = inst.Spot || req.Offer.Spot
	inst.Hardware = backendkit.FillHardware(inst.Hardware, req.Offer.Hardware)
	return inst
}

// fillFromOffer fills what an existing pod does not report from the offer.
func (b *Backend) fillFromOffer(inst cloudprovider.Instance, req cloudprovider.CreateRequest) cloudprovider.Instance {
	if inst.Region == "" {
		inst.Region = req.Offer.Region
	}
	if inst.InstanceType == "" {
		inst.InstanceType = req.Offer.InstanceType
	}
	if inst.GPUType == "" {
		inst.GPUType = req.Offer.GPUType
	}
	if inst.GPUCount == 0 {
		inst.GPUCount = req.Offer.GPUCount
	}
	if inst.PricePerHour == 0 {
		inst.PricePerHour = req.Offer.PricePerHour
	}
	inst.Hardware = backendkit.FillHardware(inst.Hardware, req.Offer.Hardware)
	return inst
}

// findByName returns the live pod named exactly name: neither terminated nor being deleted. When
// there are several (made outside hydra), the oldest wins.
func (b *Backend) findByName(ctx context.Context, name string) (cloudprovider.Instance, bool, error) {
	return createonce.FindByName(ctx, name, b.List, func(in cloudprovider.Instance) bool { return !strings.EqualFold(in.CloudStatus, "DELETING") }, nil)
}

// accountKeys and addKey are the SSH key API as sshkeys.Ensure uses it.
func (b *Backend) accountKeys(ctx context.Context) ([]sshkeys.AccountKey, error) {
	return sshkeys.Lister(b.client.SSHKeys, func(k SSHKey) sshkeys.AccountKey {
		return sshkeys.AccountKey{ID: k.ID, PublicKey: k.PublicKey}
	})(ctx)
}

// ensureSSHKeys registers the public keys the account lacks and returns the ids of all
// (sshkeys.Ensure), one registration at a time in this process. POST /api/v1/ssh_keys/ is
// not retried by the HTTP client (a lost answer may hide a stored key); after an unknown outcome
// EnsureSSHKeys lists the keys again and adds a key still missing once more (AddAgain), so a single
// 5xx never fails a create.
func (b *Backend) ensureSSHKeys(ctx context.Context, keys []string) ([]string, error) {
	return b.sshKeys.Ensure(ctx, sshkeys.Registry{Cloud: CloudName, List: b.accountKeys, Add: b.addKey, AddAgain: true}, keys)
}

func (b *Backend) addKey(ctx context.Context, name, publicKey string) (string, error) {
	k, err := b.client.CreateSSHKey(ctx, name, publicKey)
	return k.ID, err
}

// toInstance maps a pod.
func (b *Backend) toInstance(p Pod) cloudprovider.Instance {
	ssh := parseSSH(p.SSHConnection)
	st, msg := mapStatus(p.Status, p.InstallationStatus, p.InstallationFailure, p.InstallationProgress, ssh)
	inst := cloudprovider.Instance{
		ID:          p.ID,
		Name:        p.Name,
		Cloud:       CloudName,
		Region:      p.DataCenterID,
		GPUCount:    p.GPUCount.Int(),
		Spot:        p.IsSpot != nil && *p.IsSpot,
		Status:      st,
		CloudStatus: p.Status,
		Message:     msg,
		SSH:         ssh,
		CreatedAt:   parseTime(p.CreatedAt),
	}
	if p.PriceHr.Set {
		inst.PricePerHour, _ = money.FromFloat(p.PriceHr.V)
	}
	if p.InstallationStatus != "" && strings.EqualFold(p.Status, "ACTIVE") && !strings.EqualFold(p.InstallationStatus, "FINISHED") {
		inst.CloudStatus = p.Status + "/" + p.InstallationStatus
	}
	inst.Hardware = podHardware(p)
	if p.GPUName != "" {
		inst.GPUType = b.inv.GPUType(CloudName, p.GPUName)
		if p.ProviderType != "" && p.Socket != "" && inst.GPUCount > 0 {
			inst.InstanceType = instanceType(p.ProviderType, p.GPUName, p.Socket, inst.GPUCount)
		}
	}
	return inst
}

// podHardware is what a pod says of its machine: the form factor from socket, else as gpuName states
// it; the memory of one GPU as gpuName states it ("H100_80GB"; a pod has no gpuMemory; see
// namedGPUMemory); vCPUs and RAM (GB) from resources.vcpus and resources.memory.
func podHardware(p Pod) cloudprovider.Hardware {
	return cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(p.Socket, p.GPUName),
		GPUMemoryGB: namedGPUMemory(p.GPUName),
		VCPUs:       max(p.Resources.VCPUs.Int(), 0),
		MemoryGB:    max(p.Resources.Memory.Int(), 0),
	}
}

// Get returns one pod.
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	return backendkit.Get(ctx, id, b.client.Pod, b.toInstance)
}

// List returns the pods whose name starts with prefix; terminated pods are left out.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	out, err := backendkit.List(ctx, prefix, b.client.Pods, func(p Pod) string { return p.Name }, b.toInstance)
	return byNameThenID(out, err, func(i cloudprovider.Instance) (string, string) { return i.Name, i.ID })
}

// byNameThenID orders what a list call returned by name, then id; an error passes through.
func byNameThenID[T any](items []T, err error, key func(T) (name, id string)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool {
		ni, ii := key(items[i])
		nj, ij := key(items[j])
		return ni < nj || (ni == nj && ii < ij)
	})
	return items, nil
}

// Delete terminates a pod. A pod that is already gone, terminated or being deleted is success: the
// API answers 404 for it, and any other refusal is checked against the pod's status.
func (b *Backend) Delete(ctx context.Context, id string) error {
	_, err := b.client.DeletePod(ctx, id)
	switch kind := cloudprovider.KindOf(err); {
	case err == nil, kind == cloudprovider.ErrNotFound:
		return nil
	case kind == cloudprovider.ErrAuth || kind == cloudprovider.ErrQuota || ctx.Err() != nil:
		return err
	}
	p, gerr := b.client.Pod(ctx, id)
	switch {
	case cloudprovider.IsNotFound(gerr):
		return nil
	case gerr == nil && (strings.EqualFold(p.Status, "TERMINATED") || strings.EqualFold(p.Status, "DELETING")):
		return nil
	}
	return err
}

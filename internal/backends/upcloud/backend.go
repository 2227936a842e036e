package upcloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/createonce"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
	"github.com/hydragpu/terraform-provider-hydra/internal/wait"
)

// NameLabel is the label hydra puts on every server it creates; its value is the instance name (the
// full cloud-side name, "<pool prefix><resource>--<token>"). Beside it every server carries the
// ownership record as labels (cloudprovider.OwnerLabels: hydra-managed-by, hydra-owner, hydra-resource,
// hydra-confirmed).
const NameLabel = "hydra-name"

// Defaults of Config.
const (
	DefaultEURToUSD      = 1.08
	DefaultDiskSizeGB    = 100
	DefaultStorageTier   = "maxiops"
	DefaultLoginUser     = "root"
	DefaultPollInterval  = 3 * time.Second
	DefaultDeleteTimeout = 10 * time.Minute
)

// Config configures the UpCloud backend. Zero values take the defaults named on each field.
type Config struct {
	// Username and Password are an API-enabled UpCloud account or sub-account (HTTP Basic), or Token is an
	// API token (Bearer). Exactly one of the two must be given (env: UPCLOUD_USERNAME/UPCLOUD_PASSWORD or
	// UPCLOUD_TOKEN; reading the environment is the provider's job).
	Username string
	Password string
	Token    string
	// BaseURL is the API root (default DefaultBaseURL, "https://api.upcloud.com/1.3").
	BaseURL string
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning

	// EURToUSD converts UpCloud's euro prices to US dollars: GET /price quotes euro cents per hour, and
	// an offer's PricePerHour is cents / 100 * EURToUSD, rounded up once to the cent (money.Exchange).
	// Default DefaultEURToUSD (1.08). A price list that states a currency of "USD" is taken as written.
	EURToUSD float64
	// AllowSpotPlans offers the spot GPU plans ("GPU-SPOT-...", Offer.Spot = true) of every GPU type.
	// Off by default: spot plans are offered only for the types whose `spot` in supported_gpus.yml lists
	// upcloud.
	AllowSpotPlans bool
	// Zones limits offers to these zones ("fi-hel2", ...); empty means every zone with a price.
	Zones []string

	// Template picks the OS template to clone, by uuid or exact title. Empty: the newest public Ubuntu
	// template whose title names GPU, NVIDIA or CUDA (cloud-init first); if none exists, the newest
	// Ubuntu Server template (the provisioning playbook installs the driver stack anyway).
	Template string
	// DiskSizeGB is the boot disk size (default 100). GPU plans include no storage, so it is always sent;
	// it is raised to the template's size when smaller.
	DiskSizeGB int
	// StorageTier is the boot disk tier: maxiops, standard or hdd (default maxiops).
	StorageTier string
	// LoginUser is the user that receives the SSH keys and that provisioning logs in as (default root).
	LoginUser string
	// SSHPort is the port reported in Instance.SSH (default 22; other values only make sense against an
	// emulator whose addresses forward elsewhere).
	SSHPort int

	// PollInterval is how often Delete re-reads a server while waiting for it to stop (default 3s).
	PollInterval time.Duration
	// DeleteTimeout bounds Delete's stop-and-wait (default 10m). The caller's context bounds it too.
	DeleteTimeout time.Duration

	// UserAgent is sent with every request.
	UserAgent string
}

// Backend is hydra's InstanceManagerBackend for UpCloud.
type Backend struct {
	cfg    Config
	client *Client
	inv    *inventory.Inventory
	log    hclog.Logger

	mu     sync.Mutex
	tmpl   *Storage
	plans  map[string]Plan      // by plan name, from the last Offers
	prices map[string]money.USD // "zone/plan" -> USD per hour, from the last Offers (or a capped Create)

	creates createonce.Group // serialises the creates of one name in this process
}

var (
	_ cloudprovider.InstanceManagerBackend = (*Backend)(nil)
	_ cloudprovider.OwnershipConfirmer     = (*Backend)(nil)
	_ cloudprovider.PerMachineLister       = (*Backend)(nil)
)

// New builds the backend. It checks the configuration but calls no API.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	cfg.EURToUSD = cmp.Or(cfg.EURToUSD, DefaultEURToUSD)
	if cfg.EURToUSD < 0 || math.IsNaN(cfg.EURToUSD) || math.IsInf(cfg.EURToUSD, 0) {
		return nil, fmt.Errorf("upcloud: invalid EUR->USD rate %v", cfg.EURToUSD)
	}
	cfg.DiskSizeGB = cmp.Or(cfg.DiskSizeGB, DefaultDiskSizeGB)
	if cfg.DiskSizeGB < 0 {
		return nil, fmt.Errorf("upcloud: invalid disk size %d GB", cfg.DiskSizeGB)
	}
	cfg.StorageTier = cmp.Or(cfg.StorageTier, DefaultStorageTier)
	cfg.LoginUser = cmp.Or(cfg.LoginUser, DefaultLoginUser)
	if cfg.SSHPort <= 0 {
		cfg.SSHPort = 22
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.DeleteTimeout <= 0 {
		cfg.DeleteTimeout = DefaultDeleteTimeout
	}
	client, err := NewClient(ClientConfig{
		Username:  cfg.Username,
		Password:  cfg.Password,
		Token:     cfg.Token,
		BaseURL:   cfg.BaseURL,
		Tuning:    cfg.Tuning,
		Logger:    logger,
		UserAgent: cfg.UserAgent,
	})
	if err != nil {
		return nil, cloudprovider.NewError(cloudprovider.ErrAuth, CloudName, "configuring", err)
	}
	return &Backend{cfg: cfg, client: client, inv: inv, log: logger.Named(CloudName),
		plans: map[string]Plan{}, prices: map[string]money.USD{}}, nil
}

// Cloud returns "upcloud".
func (b *Backend) Cloud() string { return CloudName }

// Client returns the backend's API client.
func (b *Backend) Client() *Client { return b.client }

// IsSpotPlan reports whether a plan name is a spot plan ("GPU-SPOT-...": the name is the only marker).
func IsSpotPlan(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "GPU-SPOT-")
}

var planGPUSuffix = regexp.MustCompile(`-(\d+)x([A-Za-z0-9]+)$`)

// gpuOfPlan returns the GPU model and count of a plan: from gpu_model/gpu_amount, or (older answers, or
// a plan known only by name) from the "<n>x<MODEL>" suffix of a GPU plan's name, as "NVIDIA <MODEL>".
func gpuOfPlan(p Plan) (string, int) {
	if p.GPUModel != "" && p.GPUAmount > 0 {
		return p.GPUModel, int(p.GPUAmount)
	}
	if !strings.HasPrefix(strings.ToUpper(p.Name), "GPU-") {
		return "", 0
	}
	m := planGPUSuffix.FindStringSubmatch(p.Name)
	if m == nil {
		return "", 0
	}
	n, _ := strconv.Atoi(m[1])
	model := p.GPUModel
	if model == "" {
		model = "NVIDIA " + m[2]
	}
	return model, n
}

// planHardware is what a plan says of its machines: vCPUs from core_number, RAM from memory_amount
// (MiB), and the form factor as the GPU model states it ("NVIDIA L40S" and "NVIDIA L4" are PCIe cards;
// "NVIDIA H100" does not say, and neither does the plan). /plan gives no GPU memory, and UpCloud's
// gpu_model names none, so GPUMemoryGB stays 0 unless the model names it.
func planHardware(p Plan, model string) cloudprovider.Hardware {
	return cloudprovider.Hardware{
		FormFactor:  gpuname.FormFactor(model),
		GPUMemoryGB: gpuname.MemoryGB(model),
		VCPUs:       int(max(p.CoreNumber, 0)),
		MemoryGB:    mibToGB(p.MemoryAmount),
	}
}

// mibToGB converts UpCloud's memory_amount (MiB) into whole GB (GiB, as UpCloud's plan names count
// them: 65536 MiB is the "64GB" of GPU-8xCPU-64GB-1xL4), rounded.
func mibToGB(mib FlexInt) int {
	if mib <= 0 {
		return 0
	}
	return int((mib + 512) / 1024)
}

// gpuType maps UpCloud's name for a GPU (a plan's gpu_model, a device's model) to hydra's GPU type
// (inventory.GPUType), "" when it maps none.
func (b *Backend) gpuType(model string) string {
	return b.inv.GPUType(CloudName, model)
}

// Offers lists the GPU plans UpCloud sells now, one offer per plan and zone with a price, mapped to
// hydra's GPU types through api_names (the plan's gpu_model). Every offer carries the GPU's name as
// UpCloud wrote it in CloudGPU (gpu_model; "NVIDIA <MODEL>" from the plan name when an older answer
// has none). Nothing is dropped silently:
//   - a plan whose GPU the inventory does not map is returned with GPUType "" (the control plane
//     reports its name and never ranks it), spot plans included;
//   - a plan with more GPUs than the type's max_count is returned Ineligible, saying so;
//   - a plan priced in a zone but out of stock there is returned with Available 0 and Ineligible set.
//
// Retired plans (current_offering "no") are not sold and are left out, as are spot plans of a mapped
// type whose spot the inventory does not enable. Stock comes from /device/availability.
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	var (
		wg                       sync.WaitGroup
		plans                    []Plan
		prices                   *PriceList
		avail                    DeviceAvailability
		planErr, priceErr, avErr error
	)
	wg.Add(3)
	go func() { defer wg.Done(); plans, planErr = b.client.ListPlans(ctx) }()
	go func() { defer wg.Done(); prices, priceErr = b.client.ListPrices(ctx) }()
	go func() { defer wg.Done(); avail, avErr = b.client.DeviceAvailability(ctx) }()
	wg.Wait()
	if planErr != nil {
		return nil, planErr
	}
	if priceErr != nil {
		return nil, priceErr
	}
	if avErr != nil {
		if ctx.Err() != nil {
			return nil, avErr
		}
		b.log.Warn("GPU stock unknown; offering with availability -1", "error", avErr)
		avail = nil
	}
	cur := currency(prices)

	newPlans := map[string]Plan{}
	newPrices := map[string]money.USD{}
	var offers []cloudprovider.Offer
	for _, p := range plans {
		model, count := gpuOfPlan(p)
		if model == "" || count <= 0 {
			continue
		}
		newPlans[p.Name] = p
		if p.CurrentOffering != nil && !bool(*p.CurrentOffering) {
			continue
		}
		spot := IsSpotPlan(p.Name)
		gpuType := b.gpuType(model)
		if gpuType != "" && spot && !b.spotAllowed(gpuType) {
			continue
		}
		tooMany := ""
		if maxCount := b.inv.GPUs[gpuType].MaxCount; gpuType != "" && maxCount > 0 && count > maxCount {
			tooMany = fmt.Sprintf("%s has %d GPUs; supported_gpus.yml allows at most %d of %s (max_count)", p.Name, count, maxCount, gpuType)
		}
		for _, z := range prices.Prices.Zone {
			item, ok := z.Items[PlanPriceKey(p.Name)]
			if !ok || !backendkit.Allowed(b.cfg.Zones, z.Name) {
				continue
			}
			usd := b.centsToUSD(item.Price, cur)
			newPrices[z.Name+"/"+p.Name] = usd
			o := cloudprovider.Offer{
				Cloud:        CloudName,
				Region:       z.Name,
				InstanceType: p.Name,
				GPUType:      gpuType,
				CloudGPU:     model,
				GPUCount:     count,
				Hardware:     planHardware(p, model),
				PricePerHour: usd,
				Spot:         spot,
				Available:    -1,
				Details: map[string]string{
					"plan":                     p.Name,
					"zone":                     z.Name,
					"gpu_model":                model,
					"price_eur_cents_per_hour": strconv.FormatFloat(float64(item.Price), 'f', -1, 64),
				},
			}
			if strings.EqualFold(cur, "EUR") {
				o.Details["eur_to_usd"] = strconv.FormatFloat(b.cfg.EURToUSD, 'f', -1, 64)
			}
			if avail == nil {
				o.StockUnknown = true
				o.Details["stock"] = "unknown: UpCloud's device availability could not be read"
			}
			if avail != nil {
				amount := 0
				if zd, ok := avail[z.Name]; ok {
					if a, ok := zd.GPUPlans[p.Name]; ok {
						amount = int(a.Amount)
					}
				}
				o.Available = amount
				if amount <= 0 {
					o.Available = 0
					o.Ineligible = fmt.Sprintf("no stock of %s in %s (device availability 0)", p.Name, z.Name)
				}
			}
			if tooMany != "" {
				o.Ineligible = tooMany
			}
			offers = append(offers, o)
		}
	}
	sort.Slice(offers, func(i, j int) bool {
		if offers[i].Region != offers[j].Region {
			return offers[i].Region < offers[j].Region
		}
		return offers[i].InstanceType < offers[j].InstanceType
	})
	b.mu.Lock()
	for k, v := range newPlans {
		b.plans[k] = v
	}
	for k, v := range newPrices {
		b.prices[k] = v
	}
	b.mu.Unlock()
	return offers, nil
}

// currency is the price list's currency: the one it states, else euros, UpCloud's.
func currency(prices *PriceList) string {
	return cmp.Or(prices.Prices.Currency, "EUR")
}

// centsToUSD turns a price list's cents per hour into US dollars per hour (money.Exchange: dollars as
// written, euros converted and rounded up once to the cent). A price no cloud would ask (negative, not
// a number) or in another currency reads as 0, which is no offer.
func (b *Backend) centsToUSD(cents FlexFloat, currency string) money.USD {
	u, err := money.Exchange{EURToUSD: b.cfg.EURToUSD}.ToUSD(float64(cents), currency, true)
	if err != nil {
		return 0
	}
	return u
}

// planPrice returns the price of a plan in a zone in US dollars per hour; ok is false when the zone
// does not sell the plan (no server_plan_<plan> item there).
func (b *Backend) planPrice(prices *PriceList, zone, plan string) (usd money.USD, ok bool) {
	for _, z := range prices.Prices.Zone {
		if z.Name != zone {
			continue
		}
		if item, ok := z.Items[PlanPriceKey(plan)]; ok {
			return b.centsToUSD(item.Price, currency(prices)), true
		}
	}
	return 0, false
}

// template returns the template servers are cloned from (looked up once, then cached).
func (b *Backend) template(ctx context.Context) (Storage, error) {
	b.mu.Lock()
	if b.tmpl != nil {
		t := *b.tmpl
		b.mu.Unlock()
		return t, nil
	}
	b.mu.Unlock()
	list, err := b.client.ListTemplates(ctx)
	if err != nil {
		return Storage{}, err
	}
	t, err := pickTemplate(list, b.cfg.Template)
	if err != nil {
		return Storage{}, cloudprovider.NewError(cloudprovider.ErrInvalid, CloudName, "choosing template", err)
	}
	if !templateIsGPU(t) && b.cfg.Template == "" {
		b.log.Warn("no GPU-ready Ubuntu template found; cloning a plain Ubuntu template", "template", t.Title, "uuid", t.UUID)
	}
	b.mu.Lock()
	b.tmpl = &t
	b.mu.Unlock()
	return t, nil
}

func templateIsGPU(t Storage) bool {
	title := strings.ToLower(t.Title)
	return strings.Contains(title, "ubuntu") &&
		(strings.Contains(title, "gpu") || strings.Contains(title, "nvidia") || strings.Contains(title, "cuda"))
}

// pickTemplate chooses the template: the configured uuid or title, else the newest GPU-ready Ubuntu
// template (cloud-init, public, then title order), else the newest plain Ubuntu Server template.
func pickTemplate(list []Storage, want string) (Storage, error) {
	usable := func(t Storage) bool {
		return (t.Type == "" || t.Type == "template") && (t.State == "" || t.State == "online")
	}
	if want != "" {
		for _, t := range list {
			if t.UUID == want || strings.EqualFold(t.Title, want) {
				return t, nil
			}
		}
		return Storage{}, fmt.Errorf("template %q not found in the template list", want)
	}
	rank := func(cands []Storage) {
		sort.SliceStable(cands, func(i, j int) bool {
			a, b := cands[i], cands[j]
			if (a.TemplateType == "cloud-init") != (b.TemplateType == "cloud-init") {
				return a.TemplateType == "cloud-init"
			}
			if (a.Access == "public") != (b.Access == "public") {
				return a.Access == "public"
			}
			return a.Title > b.Title
		})
	}
	var gpu, plain []Storage
	for _, t := range list {
		if !usable(t) {
			continue
		}
		switch {
		case templateIsGPU(t):
			gpu = append(gpu, t)
		case strings.HasPrefix(strings.ToLower(t.Title), "ubuntu server"):
			plain = append(plain, t)
		}
	}
	rank(gpu)
	rank(plain)
	if len(gpu) > 0 {
		return gpu[0], nil
	}
	if len(plain) > 0 {
		return plain[0], nil
	}
	return Storage{}, errors.New("no GPU-ready (or plain) Ubuntu template in the template list; set the template explicitly")
}

// Create clones the template onto a new server of the offer's plan in the offer's zone, with req.Name as
// its title, hostname and hydra-name label, the ownership record req.Owner as labels
// (cloudprovider.OwnerLabels), and req.SSHPublicKeys for the login user (UpCloud takes the keys in the
// create request; it needs no key registration). It returns at once with the server pending (state
// maintenance).
//
//   - Idempotent by name: while it holds this process's lock on the name, it looks for a server
//     labelled hydra-name=<name> (GET /server?label=...) and returns that one if there is one.
//   - With req.MaxPricePerHour set it reads the price list again: a plan that now costs more than the
//     cap in the zone, or that the zone no longer sells, is ErrCapacity and nothing is created.
//   - POST /server is retried on 429 only. After a 5xx or a lost answer Create looks for the name once
//     more and returns the server if the cloud made it; otherwise the ErrOther stands, and List(req.Name)
//     finds the server if it appears later.
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create, with the storages of mounts attached at the create (CreateWithVolumes, storage.go):
// they are checked before anything is created, after the lookup by name.
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, mounts []cloudprovider.VolumeMount) (cloudprovider.Instance, error) {
	const op = "creating server"
	plan := req.Offer.InstanceType
	if plan == "" {
		plan = req.Offer.Details["plan"]
	}
	zone := req.Offer.Region
	if zone == "" {
		zone = req.Offer.Details["zone"]
	}
	switch {
	case req.Name == "":
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no instance name")
	case plan == "" || zone == "":
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "the offer names no plan or zone")
	case IsSpotPlan(plan) && !b.spotAllowed(req.Offer.GPUType):
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"spot plan %s is not enabled for %s (spot: [upcloud] in supported_gpus.yml)", plan, req.Offer.GPUType)
	case len(req.SSHPublicKeys) == 0:
		return cloudprovider.Instance{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no SSH public key to install")
	}
	var (
		tmpl    Storage
		volumes []string
	)
	inst, _, err := b.creates.Do(ctx, createonce.Steps{
		Cloud: CloudName, Op: op, Name: req.Name, Log: b.log,
		Find: func(ctx context.Context) (cloudprovider.Instance, bool, error) { return b.findByName(ctx, req.Name) },
		Prepare: func(ctx context.Context) (err error) {
			if volumes, err = b.volumesFor(ctx, zone, mounts); err != nil {
				return err
			}
			if req.MaxPricePerHour > 0 {
				if err := b.checkPrice(ctx, zone, plan, req.MaxPricePerHour); err != nil {
					return err
				}
			}
			tmpl, err = b.template(ctx)
			return err
		},
		Create: func(ctx context.Context) (cloudprovider.Instance, error) {
			return b.createServer(ctx, req, zone, plan, tmpl, volumes)
		},
	})
	return inst, err
}

// createServer clones the template onto a new server, with the storages volumes attached on the virtio
// bus, and returns it.
func (b *Backend) createServer(ctx context.Context, req cloudprovider.CreateRequest, zone, plan string, tmpl Storage, volumes []string) (cloudprovider.Instance, error) {
	size := b.cfg.DiskSizeGB
	if int(tmpl.Size) > size {
		size = int(tmpl.Size)
	}
	labels := Labels{{Key: NameLabel, Value: req.Name}}
	if req.Owner.Token != "" {
		for _, kv := range cloudprovider.OwnerLabels(req.Owner) {
			labels = append(labels, Label{Key: kv[0], Value: kv[1]})
		}
	}
	cs := CreateServer{
		Zone:                zone,
		Title:               req.Name,
		Hostname:            req.Name,
		Plan:                plan,
		Metadata:            true, // required for cloud-init templates, harmless otherwise
		PasswordDelivery:    "none",
		RemoteAccessEnabled: false,
		Labels:              labels,
		LoginUser:           &LoginUser{Username: b.cfg.LoginUser, CreatePassword: false},
		Networking:          &CreateNetworking{},
	}
	cs.StorageDevices.StorageDevice = []CreateStorageDevice{{
		Action: "clone", Storage: tmpl.UUID, Title: osDiskTitle(req.Name), Size: size, Tier: b.cfg.StorageTier,
	}}
	for _, id := range volumes {
		cs.StorageDevices.StorageDevice = append(cs.StorageDevices.StorageDevice, attachDevice(id))
	}
	for _, k := range req.SSHPublicKeys {
		if k = strings.TrimSpace(k); k != "" {
			cs.LoginUser.SSHKeys.SSHKey = append(cs.LoginUser.SSHKeys.SSHKey, k)
		}
	}
	for _, itf := range []struct{ typ, fam string }{{"utility", "IPv4"}, {"public", "IPv4"}, {"public", "IPv6"}} {
		ci := CreateInterface{Type: itf.typ}
		ci.IPAddresses.IPAddress = []CreateIP{{Family: itf.fam}}
		cs.Networking.Interfaces.Interface = append(cs.Networking.Interfaces.Interface, ci)
	}
	b.log.Info("creating server", "name", req.Name, "plan", plan, "zone", zone, "template", tmpl.UUID, "disk_gb", size, "volumes", volumes)
	srv, err := b.client.CreateServerRequest(ctx, cs)
	if err != nil {
		// The answer may be lost after the cloud made the server: Create looks once more.
		return cloudprovider.Instance{}, err
	}
	inst := b.instance(srv)
	inst.Name = cmp.Or(inst.Name, req.Name)
	if inst.Owner.Token == "" && req.Owner.Token != "" {
		inst.Owner = req.Owner
		inst.Owner.Confirmed = false
	}
	if inst.PricePerHour == 0 {
		inst.PricePerHour = req.Offer.PricePerHour
	}
	if inst.GPUType == "" {
		inst.GPUType, inst.GPUCount = req.Offer.GPUType, req.Offer.GPUCount
	}
	inst.Hardware = backendkit.FillHardware(inst.Hardware, req.Offer.Hardware)
	return inst, nil
}

// findByName returns the server labelled hydra-name=<name> (the oldest, should there be several),
// with its details; ok is false when there is none.
func (b *Backend) findByName(ctx context.Context, name string) (cloudprovider.Instance, bool, error) {
	list, err := b.client.ListServers(ctx, NameLabel+"="+name)
	if err != nil {
		return cloudprovider.Instance{}, false, err
	}
	var found *Server
	for i := range list {
		s := &list[i]
		if v, _ := s.Labels.Get(NameLabel); v != name {
			continue
		}
		if found == nil || s.Created < found.Created || (s.Created == found.Created && s.UUID < found.UUID) {
			found = s
		}
	}
	if found == nil {
		return cloudprovider.Instance{}, false, nil
	}
	d, err := b.client.GetServer(ctx, found.UUID)
	if cloudprovider.IsNotFound(err) {
		return cloudprovider.Instance{}, false, nil
	}
	if err != nil {
		return cloudprovider.Instance{}, false, err
	}
	return b.instance(d), true, nil
}

// checkPrice reads the price list and returns ErrCapacity when the plan now costs more than maxUSD per
// hour in the zone, or the zone no longer sells it.
func (b *Backend) checkPrice(ctx context.Context, zone, plan string, maxUSD money.USD) error {
	const op = "creating server"
	prices, err := b.client.ListPrices(ctx)
	if err != nil {
		return err
	}
	usd, ok := b.planPrice(prices, zone, plan)
	if !ok {
		return cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op, "zone %s no longer sells plan %s", zone, plan)
	}
	b.mu.Lock()
	b.prices[zone+"/"+plan] = usd
	b.mu.Unlock()
	return cloudprovider.CheckPriceCap(CloudName, op, "plan "+plan+" in "+zone, usd, maxUSD)
}

// instance maps a server onto hydra's Instance.
func (b *Backend) instance(s *Server) cloudprovider.Instance {
	name, ok := s.Labels.Get(NameLabel)
	if !ok || name == "" {
		name = s.Title
	}
	if name == "" {
		name = s.Hostname
	}
	ip := s.PublicIPv4()
	status, msg := mapState(s.State, ip)
	inst := cloudprovider.Instance{
		ID:           s.UUID,
		Name:         name,
		Cloud:        CloudName,
		Region:       s.Zone,
		InstanceType: s.Plan,
		Spot:         IsSpotPlan(s.Plan),
		Status:       status,
		CloudStatus:  s.State,
		Message:      msg,
	}
	if s.Created > 0 {
		inst.CreatedAt = time.Unix(int64(s.Created), 0).UTC()
	}
	if o, ok := cloudprovider.OwnerFromLabels(s.Labels.Get); ok {
		inst.Owner = o
	} else if v, _ := s.Labels.Get(cloudprovider.LabelConfirmed); v == "true" {
		// A machine without a token (made before ownership records, or imported) that a state holds.
		inst.Owner.Confirmed = true
	}
	if ip != "" {
		inst.SSH = &cloudprovider.SSHEndpoint{Host: ip, Port: b.cfg.SSHPort, User: b.cfg.LoginUser}
	}
	b.mu.Lock()
	p, known := b.plans[s.Plan]
	inst.PricePerHour = b.prices[s.Zone+"/"+s.Plan]
	b.mu.Unlock()
	if !known {
		p = Plan{Name: s.Plan}
	}
	model, count := gpuOfPlan(p)
	if model == "" || (!known && len(s.Devices.Device) > 0) {
		var gpus []Device
		for _, d := range s.Devices.Device {
			if strings.EqualFold(d.Type, "gpu") {
				gpus = append(gpus, d)
			}
		}
		if len(gpus) > 0 {
			model, count = gpus[0].Model, len(gpus)
		}
	}
	if model != "" {
		inst.GPUType = b.gpuType(model)
		inst.GPUCount = count
	}
	inst.Hardware = serverHardware(s, p, model)
	return inst
}

// serverHardware is what a server's details say of its machine: vCPUs from core_number, RAM from
// memory_amount (MiB), the memory of one GPU from its devices' metadata.memory (GB), and the form
// factor as the GPU model states it. A server answer without cores or memory (a summary) falls back
// on its plan's.
func serverHardware(s *Server, p Plan, model string) cloudprovider.Hardware {
	hw := planHardware(p, model)
	if s.CoreNumber > 0 {
		hw.VCPUs = int(s.CoreNumber)
	}
	if s.MemoryAmount > 0 {
		hw.MemoryGB = mibToGB(s.MemoryAmount)
	}
	for _, d := range s.Devices.Device {
		if !strings.EqualFold(d.Type, "gpu") {
			continue
		}
		if d.Metadata.Memory > 0 {
			hw.GPUMemoryGB = int(d.Metadata.Memory)
		}
		if hw.FormFactor == "" {
			hw.FormFactor = gpuname.FormFactor(d.Model)
		}
		break
	}
	return hw
}

// Get returns the server with that uuid; a missing one is an ErrNotFound error.
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	s, err := b.getServer(ctx, id)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	return b.instance(s), nil
}

// getServer reads a server's details. UpCloud answers an id that is no uuid at all with 400
// SERVER_INVALID; no server has such an id, so for hydra that is ErrNotFound too.
func (b *Backend) getServer(ctx context.Context, id string) (*Server, error) {
	s, err := b.client.GetServer(ctx, id)
	var ae *APIError
	if err != nil && errors.As(err, &ae) && ae.Code == "SERVER_INVALID" {
		return nil, cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading server", err)
	}
	return s, err
}

// ConfirmOwnership records that a Terraform state holds the server: it sets the label
// hydra-confirmed=true with PUT /server/{uuid}, resending the server's other labels unchanged (labels
// given to a modify replace the whole list). A server that says so already is left alone; a gone
// server is ErrNotFound.
func (b *Backend) ConfirmOwnership(ctx context.Context, id string) error {
	const op = "confirming ownership"
	s, err := b.getServer(ctx, id)
	if err != nil {
		return err
	}
	if v, _ := s.Labels.Get(cloudprovider.LabelConfirmed); v == "true" {
		return nil
	}
	labels := make(Labels, 0, len(s.Labels)+1)
	set := false
	for _, l := range s.Labels {
		if l.Key == cloudprovider.LabelConfirmed {
			l.Value, set = "true", true
		}
		labels = append(labels, l)
	}
	if !set {
		labels = append(labels, Label{Key: cloudprovider.LabelConfirmed, Value: "true"})
	}
	_, err = b.client.ModifyServer(ctx, id, ModifyServer{Labels: &labels})
	var ae *APIError
	switch {
	case err == nil:
		b.log.Debug("ownership confirmed", "id", id)
		return nil
	case errors.As(err, &ae) && ae.Code == "SERVER_STATE_ILLEGAL":
		// The server's state does not allow a change now; a later refresh confirms again.
		return cloudprovider.NewError(cloudprovider.ErrOther, CloudName, op, err)
	}
	return err
}

// List returns the servers whose name (hydra-name label, title or hostname) starts with prefix, then
// reads each match's details for its address and state. It lists only servers that carry the
// hydra-name label (GET /server/?label=hydra-name: UpCloud filters, so an account with many other
// servers costs one page), which every server hydra creates has from its create request on; a server
// whose hydra-name label was removed by hand is not found.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	all, err := b.client.ListServers(ctx, NameLabel)
	if err != nil {
		return nil, err
	}
	var out []cloudprovider.Instance
	for _, s := range all {
		label, _ := s.Labels.Get(NameLabel)
		if (!strings.HasPrefix(label, prefix) || label == "") && !strings.HasPrefix(s.Title, prefix) && !strings.HasPrefix(s.Hostname, prefix) {
			continue
		}
		d, err := b.client.GetServer(ctx, s.UUID)
		if cloudprovider.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, b.instance(d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes the server and its own disk, never a volume. UpCloud deletes only stopped servers, so
// Delete hard-stops a started server, waits (bounded by DeleteTimeout and ctx) until it is stopped,
// detaches every storage but the server's own disk (storages=1 would delete them all; storage.go), and
// once a fresh read shows none left sends DELETE /server/{uuid}/?storages=1. A server that is already
// gone, or disappears while Delete waits, counts as deleted: Delete returns nil.
func (b *Backend) Delete(ctx context.Context, id string) error {
	const op = "deleting server"
	s, err := b.getServer(ctx, id)
	if cloudprovider.IsNotFound(err) {
		b.log.Debug("server already gone", "id", id)
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.DeleteTimeout)
	defer cancel()
	// stuck reports a wait that ran out (DeleteTimeout or the caller's context), whichever call it hit.
	stuck := func(err error) error {
		if ctx.Err() == nil {
			return err
		}
		return cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op,
			"server %s did not stop and delete in time (last state %q): %v", id, s.State, ctx.Err())
	}
	var lastStop time.Time
	polled := false // the first poll acts on s as read above
	err = wait.Until(ctx, "server "+id+" to stop and be deleted", wait.Backoff{First: b.cfg.PollInterval}, func(ctx context.Context) (bool, error) {
		if polled {
			next, err := b.client.GetServer(ctx, id)
			if cloudprovider.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, stuck(err)
			}
			s = next
		}
		polled = true
		switch strings.ToLower(s.State) {
		case "stopped", "error":
			if busy, err := b.detachVolumes(ctx, s); err != nil {
				return false, stuck(err)
			} else if busy {
				return false, nil // read the server again: storages=1 goes only after a read without volumes
			}
			err := b.client.DeleteServer(ctx, id)
			if err == nil || cloudprovider.IsNotFound(err) {
				b.log.Info("server deleted", "id", id)
				return true, nil
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != "SERVER_STATE_ILLEGAL" {
				return false, stuck(err)
			}
			// The state moved under us (started again, or in maintenance): look again.
		case "started":
			if lastStop.IsZero() || time.Since(lastStop) > 30*time.Second {
				_, err := b.client.StopServer(ctx, id, "hard", time.Minute)
				lastStop = time.Now()
				if cloudprovider.IsNotFound(err) {
					return true, nil
				}
				var ae *APIError
				if err != nil && (!errors.As(err, &ae) || ae.Code != "SERVER_STATE_ILLEGAL") {
					return false, stuck(err)
				}
			}
		}
		return false, nil
	})
	var we *wait.Error
	if errors.As(err, &we) {
		return stuck(we.Err)
	}
	return err
}

// spotAllowed reports whether UpCloud's spot plans of gpuType may be offered: on-demand only unless the
// inventory lists upcloud under the type's spot (or AllowSpotPlans opens every type, for tests).
func (b *Backend) spotAllowed(gpuType string) bool {
	return b.cfg.AllowSpotPlans || b.inv.SpotEnabled(gpuType, CloudName)
}

// ListReadsEachMachine is true: List reads each listed server's details, one call per machine
// (cloudprovider.PerMachineLister), so the control plane polls waiting machines with a Get each.
func (b *Backend) ListReadsEachMachine() bool { return true }

// Facts: UpCloud documents hourly billing, capped at the monthly price (672 hours a month), which
// hydra's accrued figures do not apply.
var Facts = cloudprovider.Facts{
	BillingUnit: time.Hour,
	Billing:     "UpCloud bills by the started hour (its monthly cap, 672 hours a month, is not applied)",
}

// Facts states UpCloud's billing (cloudprovider.FactStater).
func (b *Backend) Facts() cloudprovider.Facts { return Facts }

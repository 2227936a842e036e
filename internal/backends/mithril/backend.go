package mithril

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/errgroup"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/createonce"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/sshkeys"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

var _ cloudprovider.AuctionBackend = (*Backend)(nil)

// Config configures the Mithril backend.
type Config struct {
	// APIKey is the console API key ("fkey_..."; MITHRIL_API_KEY). Never logged.
	APIKey string
	// Project is the project FID ("proj_...") or its name (MITHRIL_PROJECT). When empty and the key
	// sees exactly one project, that one is used.
	Project string
	// BaseURL is the API root (default https://api.mithril.ai).
	BaseURL string
	// WinMarginPercent is how far above the recent winning price a bid must be for hydra to place it
	// (nil: DefaultWinMarginPercent, 10). It must not be negative.
	WinMarginPercent *float64
	// Tuning sets timeouts, the rate limit, retries and the transport (restclient defaults when zero).
	restclient.Tuning
	// PricingConcurrency bounds the parallel /v2/pricing/current calls of Offers (default 4).
	PricingConcurrency int
}

// Backend is the cloudprovider.AuctionBackend of Mithril. Instance.ID is the bid FID, the stable handle
// of a spot machine: one bid for one instance, named with the cloud-side name.
//
// Ownership: a bid keeps a name and nothing else hydra could write (no labels, tags or description),
// and the name cannot change after the bid is placed. The ownership record is therefore the name alone
// ("<pool prefix><resource>--<token>"): the backend leaves Instance.Owner empty for the pool manager to
// read from the name (cloudprovider.WithOwner), and it does not implement
// cloudprovider.OwnershipConfirmer, since there is nothing at Mithril to record a confirmation in.
type Backend struct {
	client      *Client
	inv         *inventory.Inventory
	log         hclog.Logger
	margin      float64
	concurrency int
	projectCfg  string
	patterns    []apiPattern

	mu      sync.Mutex
	project string
	types   map[string]InstanceType // by FID

	// creates serialises Creates of one name in this process, so concurrent creates of a name place one
	// bid (Mithril itself accepts any number of bids of one name).
	creates createonce.Group
}

// New builds the backend. It does not call the API.
func New(cfg Config, inv *inventory.Inventory, logger hclog.Logger) (*Backend, error) {
	logger, err := backendkit.Check(CloudName, inv, logger)
	if err != nil {
		return nil, err
	}
	margin := DefaultWinMarginPercent
	if cfg.WinMarginPercent != nil {
		margin = *cfg.WinMarginPercent
	}
	if margin < 0 || math.IsNaN(margin) || math.IsInf(margin, 0) {
		return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "configuring backend", "win_margin_percent must be zero or more, got %v", margin)
	}
	client, err := NewClient(ClientConfig{
		APIKey:  cfg.APIKey,
		BaseURL: cfg.BaseURL,
		Tuning:  cfg.Tuning,
		Logger:  logger,
	})
	if err != nil {
		return nil, err
	}
	conc := cfg.PricingConcurrency
	if conc <= 0 {
		conc = 4
	}
	b := &Backend{client: client, inv: inv, log: logger.Named(CloudName), margin: margin, concurrency: conc,
		projectCfg: strings.TrimSpace(cfg.Project), types: map[string]InstanceType{}, patterns: apiPatterns(inv)}
	if strings.HasPrefix(b.projectCfg, "proj_") {
		b.project = b.projectCfg
	}
	return b, nil
}

// Cloud returns "mithril".
func (b *Backend) Cloud() string { return CloudName }

// Client returns the backend's REST client.
func (b *Backend) Client() *Client { return b.client }

// WinMarginPercent returns the margin PriceBids demands above the recent winning price.
func (b *Backend) WinMarginPercent() float64 { return b.margin }

// projectFID resolves the configured project (a FID, a name, or the only project) once.
func (b *Backend) projectFID(ctx context.Context) (string, error) {
	b.mu.Lock()
	p := b.project
	b.mu.Unlock()
	if p != "" {
		return p, nil
	}
	projects, err := b.client.Projects(ctx)
	if err != nil {
		return "", err
	}
	var found []Project
	for _, pr := range projects {
		if b.projectCfg == "" || pr.Name == b.projectCfg || pr.FID == b.projectCfg {
			found = append(found, pr)
		}
	}
	switch {
	case len(found) == 1:
		p = found[0].FID
	case b.projectCfg == "":
		return "", cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "choosing project", "the API key sees %d projects: set project (or MITHRIL_PROJECT)", len(projects))
	default:
		return "", cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, "choosing project", "no project named %q (or it is ambiguous) among %d projects", b.projectCfg, len(projects))
	}
	b.mu.Lock()
	b.project = p
	b.mu.Unlock()
	return p, nil
}

// catalog returns the instance types by FID; refresh forces a new read.
func (b *Backend) catalog(ctx context.Context, refresh bool) (map[string]InstanceType, error) {
	b.mu.Lock()
	if len(b.types) > 0 && !refresh {
		t := b.types
		b.mu.Unlock()
		return t, nil
	}
	b.mu.Unlock()
	list, err := b.client.InstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]InstanceType, len(list))
	for _, it := range list {
		m[it.FID] = it
	}
	b.mu.Lock()
	b.types = m
	b.mu.Unlock()
	return m, nil
}

// instanceType looks an FID up, re-reading the catalog once when it is unknown (best effort).
func (b *Backend) instanceType(ctx context.Context, fid string) (InstanceType, bool) {
	cat, err := b.catalog(ctx, false)
	if err == nil {
		if it, ok := cat[fid]; ok {
			return it, true
		}
	}
	if cat, err = b.catalog(ctx, true); err == nil {
		it, ok := cat[fid]
		return it, ok
	}
	return InstanceType{}, false
}

var countSuffix = regexp.MustCompile(`^(.+)\.(\d+)x$`)

// apiPattern is one of the inventory's mithril api_names, read as a name pattern.
type apiPattern struct {
	gpu  string
	name TypeName
}

// apiPatterns reads the inventory's mithril api_names, in the inventory's order of GPU types; names
// ParseTypeName cannot read are left to the literal comparison of mapType.
func apiPatterns(inv *inventory.Inventory) []apiPattern {
	var out []apiPattern
	for _, t := range inv.GPUTypes() {
		for _, n := range inv.GPUs[t].APINames[CloudName] {
			if p, ok := ParseTypeName(n); ok {
				out = append(out, apiPattern{gpu: t, name: p})
			}
		}
	}
	return out
}

// mapType maps a Mithril instance type onto hydra's GPU type ("" when the inventory does not map it)
// and count. The instance type is read as its structured fields and its name say (see describe and
// ParseTypeName), and each mithril api_names entry as a pattern of the same form: "h100-80gb.sxm"
// covers every instance type whose GPU is an H100 with 80 GB in SXM form, whatever the name's style
// ("h100-80gb.sxm.8x", "h100.80gb.sxm"); "b200" covers every B200. The most specific pattern wins
// (model, memory and form factor before model alone), the fields' reading before the name's. A name
// listed verbatim (with or without its ".<n>x" suffix) maps too. The count is num_gpus, or the
// name's "<n>x" when num_gpus is missing.
func (b *Backend) mapType(it InstanceType) (string, int) {
	reads := describe(it)
	count := reads[0].Count
	for _, r := range reads {
		gpu, best := "", 0
		for _, p := range b.patterns {
			if score, ok := matches(p.name, r); ok && score > best {
				gpu, best = p.gpu, score
			}
		}
		if gpu != "" {
			return gpu, count
		}
	}
	name := strings.TrimSpace(it.Name)
	if m := countSuffix.FindStringSubmatch(name); m != nil {
		if count <= 0 {
			count, _ = strconv.Atoi(m[2])
		}
		return b.inv.GPUType(CloudName, m[1], name), count
	}
	return b.inv.GPUType(CloudName, name), count
}

// Offers lists the spot auctions, one offer per region and instance type, priced at the last clearing
// price (PriceBids sets the bid later). The auction signals are in Details (see the Detail* keys). An
// auction without capacity now is listed too, never dropped: Available 0 and Ineligible "auction has no
// capacity now (last clearing price $X/h, lowest winning bid $Y/h)", both prices also in Details
// (last_clearing_price, lowest_allocated_price).
//
// Every offer's CloudGPU is the instance type's name exactly as the API wrote it, and its Hardware is
// what the catalog says (see hardwareOf). An instance type the inventory does not map (see mapType),
// or whose GPU count is unknown, is not dropped either: it is listed with GPUType "", priced at its last
// clearing price only (no /v2/pricing/current call), for the control plane to report; PriceBids marks
// it ineligible. Only counts above the GPU type's max_count, and auctions of an instance type missing
// from the catalog, are left out (logged).
func (b *Backend) Offers(ctx context.Context) ([]cloudprovider.Offer, error) {
	var cat map[string]InstanceType
	var auctions []Auction
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		cat, err = b.catalog(gctx, true)
		return err
	})
	g.Go(func() error {
		var err error
		auctions, err = b.client.SpotAvailability(gctx)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	type item struct {
		a       Auction
		it      InstanceType
		gpu     string
		count   int
		pricing CurrentPrices
		ok      bool
	}
	var items []*item
	for _, a := range auctions {
		it, ok := cat[a.InstanceType]
		if !ok {
			b.log.Warn("skipping auction of an instance type missing from the catalog", "auction", a.FID, "instance_type", a.InstanceType)
			continue
		}
		gpu, count := b.mapType(it)
		if count <= 0 {
			gpu = ""
		}
		if gpu != "" && count > b.inv.GPUs[gpu].MaxCount {
			b.log.Debug("skipping auction of more GPUs than max_count", "auction", a.FID, "instance_type", it.Name, "gpu_type", gpu, "count", count)
			continue
		}
		items = append(items, &item{a: a, it: it, gpu: gpu, count: count})
	}
	pg, pctx := errgroup.WithContext(ctx)
	pg.SetLimit(b.concurrency)
	for _, x := range items {
		if x.gpu == "" {
			continue // unmapped: reported, never bid on, so not worth a pricing call
		}
		pg.Go(func() error {
			p, err := b.client.CurrentPricing(pctx, x.a.InstanceType, x.a.Region)
			if err != nil {
				if k := cloudprovider.KindOf(err); k == cloudprovider.ErrAuth || pctx.Err() != nil {
					return err
				}
				b.log.Warn("no current prices for an auction; using availability only", "auction", x.a.FID, "error", err)
				return nil
			}
			x.pricing, x.ok = p, true
			return nil
		})
	}
	if err := pg.Wait(); err != nil {
		return nil, err
	}
	offers := make([]cloudprovider.Offer, 0, len(items))
	for _, x := range items {
		d := map[string]string{DetailInstanceTypeFID: x.a.InstanceType}
		if x.a.FID != "" {
			d[DetailAuctionFID] = x.a.FID
		}
		last := x.a.LastInstancePrice.Cents
		lowest := x.a.LowestAllocatedPrice.Cents
		capacity := x.a.Capacity
		if x.ok {
			if p := x.pricing.SpotPriceCents.Cents; p.Valid {
				d[DetailSpotPrice] = formatPlain(p.Amount)
				if !last.Valid {
					last = p
				}
			}
			if p := x.pricing.LowestAllocatedBidCents.Cents; p.Valid && (!lowest.Valid || p.Amount > lowest.Amount) {
				lowest = p
			}
			if p := x.pricing.DynamicWinPriceCents.Cents; p.Valid {
				d[DetailWinPrice] = formatPlain(p.Amount)
			}
			if p := x.pricing.MinimumPriceCents.Cents; p.Valid {
				d[DetailMinimumPrice] = formatPlain(p.Amount)
			}
			if c := x.pricing.AvailableCapacity; c.Valid && (!capacity.Valid || c.Value < capacity.Value) {
				capacity = c
			}
		}
		if last.Valid {
			d[DetailLastClearing] = formatPlain(last.Amount)
		}
		if lowest.Valid {
			d[DetailLowestAllocated] = formatPlain(lowest.Amount)
		}
		avail, why := -1, ""
		if capacity.Valid {
			avail = int(max(capacity.Value, 0))
			d[DetailAvailableCapacity] = strconv.Itoa(avail)
			if avail == 0 {
				why = reasonNoCapacity(last, lowest)
			}
		}
		offers = append(offers, cloudprovider.Offer{
			Cloud:        CloudName,
			Region:       x.a.Region,
			InstanceType: x.it.Name,
			GPUType:      x.gpu,
			CloudGPU:     x.it.Name,
			GPUCount:     x.count,
			Hardware:     hardwareOf(x.it),
			PricePerHour: last.USD(),
			Spot:         true,
			Available:    avail,
			Ineligible:   why,
			Details:      d,
		})
	}
	backendkit.SortOffers(offers)
	return offers, nil
}

// Create places a bid for one instance at the offer's price (set by PriceBids) and returns at once,
// pending. The bid's name is req.Name, the cloud-side name: it is all Mithril keeps of hydra's
// ownership record (see the Backend doc). In order:
//
//  1. Requests that cannot become a bid are refused before any call: no name, an ineligible offer or
//     no bid price (ErrInvalid), a bid above req.MaxPricePerHour (ErrCapacity, as a sold-out offer:
//     nothing is placed). Bids are whole cents: the offer's price rounded down to a cent (PriceBids
//     sets whole cents already), and it must not exceed the max rounded down to a cent, so a cap of
//     $2.999999 accepts a bid of at most $2.99.
//  2. The bid is placed once by name (placeOnce): creates of one name wait for each other (in this
//     process), so a storm of them places one bid.
//  3. Housekeeping (reapGoneBids): earlier bids of the same resource whose machine is gone for good
//     are cancelled.
//  4. Idempotency: a live bid named req.Name is returned as it is; nothing new is placed.
//  5. The SSH keys are registered (sshkeys.Ensure) and the bid placed. Its create is never
//     retried after a 5xx; when the outcome is unknown (a 5xx, a lost answer, a timeout) Create looks
//     for the name once more and returns the bid it finds, else the error (ErrOther: List(req.Name)
//     finds the bid if it was placed after all).
func (b *Backend) Create(ctx context.Context, req cloudprovider.CreateRequest) (cloudprovider.Instance, error) {
	return b.create(ctx, req, nil)
}

// create is Create with volumes in the bid's launch specification (volumes.go).
func (b *Backend) create(ctx context.Context, req cloudprovider.CreateRequest, volumes []string) (cloudprovider.Instance, error) {
	const op = "placing bid"
	o := req.Offer
	price, err := checkBid(op, req.Name, o, o.PricePerHour, 1, req.MaxPricePerHour)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	bid, insts, err := b.placeOnce(ctx, order{op: op, name: req.Name, pool: req.Pool, owner: req.Owner, offer: o,
		publicKeys: req.SSHPublicKeys, quantity: 1, price: price, kind: isMachineBid, volumes: volumes})
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	inst, _ := b.evaluate(ctx, bid, insts)
	if inst.InstanceType == "" {
		inst.InstanceType = o.InstanceType
	}
	if inst.GPUType == "" {
		inst.GPUType, inst.GPUCount = o.GPUType, o.GPUCount
	}
	inst.Hardware = backendkit.FillHardware(inst.Hardware, o.Hardware)
	if inst.Status == cloudprovider.StatusTerminated {
		inst.Status = cloudprovider.StatusPending
	}
	return inst, nil
}

// order is one bid to place once by name: quantity instances of the offer's type at price cents each.
// kind says which bids are of the same sort (a machine's or a cluster's), for housekeeping and
// idempotency.
type order struct {
	op, name   string
	pool       inventory.Pool
	owner      cloudprovider.Ownership
	offer      cloudprovider.Offer
	publicKeys []string
	quantity   int
	price      int64
	kind       func(Bid) bool
	// whole refuses a bid for more instances than the auction can allocate now (ErrCapacity), before
	// it is placed (a cluster's: see fillable).
	whole bool
	// volumes are the volume FIDs of the bid's launch specification (volumes.go).
	volumes []string
}

// placeOnce places the order's bid unless a live bid of its name and kind exists, and returns the bid
// with its instances (none when just placed). Creates of one name wait for each other in this process;
// earlier bids of the resource whose machines are gone for good are cancelled first (reapGoneBids);
// the SSH keys are registered just before the bid is placed. The create is never retried after a
// 5xx: when its outcome is unknown (a 5xx, a lost answer, a timeout) the name is looked up once more
// and the bid found returned, else the error (ErrOther: a List finds the bid if it was placed after
// all).
func (b *Backend) placeOnce(ctx context.Context, ord order) (Bid, []Instance, error) {
	project, err := b.projectFID(ctx)
	if err != nil {
		return Bid{}, nil, err
	}
	var fid string
	var keys []string
	got, _, err := createonce.Run(ctx, &b.creates, createonce.StepsOf[scanned]{
		Cloud: CloudName, Op: ord.op, Name: ord.name, Log: b.log,
		ID: func(s scanned) string { return s.bid.FID },
		Find: func(ctx context.Context) (scanned, bool, error) {
			return b.reapGoneBids(ctx, project, ord.pool, ord.owner, ord.name, ord.kind)
		},
		Prepare: func(ctx context.Context) (err error) {
			if fid, keys, err = b.bidInputs(ctx, project, ord.offer, ord.publicKeys); err != nil || !ord.whole {
				return err
			}
			return b.fillable(ctx, ord.op, fid, ord.offer, ord.quantity)
		},
		Create: func(ctx context.Context) (scanned, error) {
			placed, err := b.submitBid(ctx, project, fid, ord.price, ord.quantity, keys, ord.volumes, ord.name, ord.offer.Region)
			return scanned{bid: placed}, err
		},
		// The bid may have been placed when the answer is lost, also when ctx ended meanwhile.
		Unknown: func(_ context.Context, err error) bool {
			return cloudprovider.KindOf(err) == cloudprovider.ErrOther || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		},
		// Under the name lock nobody else placed it: look for it, even when ctx has ended.
		Refind: func(ctx context.Context) (scanned, bool, error) {
			lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			return b.findLive(lookCtx, project, ord.name, ord.kind)
		},
	})
	return got.bid, got.insts, err
}

// checkBid refuses, before any call, a request that cannot become a bid for quantity instances at
// perInstance each: no name, an ineligible offer, an unmapped GPU or no bid price (ErrInvalid), a bid
// above maxPrice for all of them (ErrCapacity, as a sold-out offer: nothing is placed). It returns the
// bid per instance in whole cents, rounded down.
func checkBid(op, name string, o cloudprovider.Offer, perInstance money.USD, quantity int, maxPrice money.USD) (int64, error) {
	if name == "" {
		return 0, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no name")
	}
	if o.Ineligible != "" {
		return 0, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "offer %s/%s is not eligible: %s", o.Region, o.InstanceType, o.Ineligible)
	}
	if o.GPUType == "" {
		return 0, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "offer %s/%s: %s", o.Region, o.InstanceType, reasonUnmapped(o))
	}
	price := usdToCentsFloor(perInstance)
	if price <= 0 {
		return 0, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "no bid price for offer %s/%s", o.Region, o.InstanceType)
	}
	what := "a bid for " + o.InstanceType + " in " + o.Region
	if quantity > 1 {
		what = fmt.Sprintf("a bid for %d x %s in %s", quantity, o.InstanceType, o.Region)
	}
	if err := cloudprovider.CheckPriceCap(CloudName, op, what, centsToUSD(price)*money.USD(quantity), maxPrice); err != nil {
		return 0, err
	}
	return price, nil
}

// bidInputs resolves what a bid needs before it is placed: the region's FID of the offer's instance
// type (from the offer, else the auctions) and the SSH keys' FIDs (registered when new).
func (b *Backend) bidInputs(ctx context.Context, project string, o cloudprovider.Offer, publicKeys []string) (fid string, keys []string, err error) {
	fid = o.Details[DetailInstanceTypeFID]
	if fid == "" {
		if fid, err = b.resolveFID(ctx, o.Region, o.InstanceType); err != nil {
			return "", nil, err
		}
	}
	keys, err = sshkeys.Ensure(ctx, b.keyRegistry(project), publicKeys)
	return fid, keys, err
}

// submitBid places a bid for quantity instances of the instance type fid at price cents each, with
// nothing but SSH keys and volumes in its launch specification, and returns it as Mithril answered (its
// name and region filled in when the answer leaves them out).
func (b *Backend) submitBid(ctx context.Context, project, fid string, price int64, quantity int, keys, volumes []string, name, region string) (Bid, error) {
	bid, err := b.client.CreateBid(ctx, CreateBidRequest{
		Project:          project,
		Region:           region,
		InstanceType:     fid,
		LimitPrice:       FormatDollars(price),
		InstanceQuantity: quantity,
		Name:             name,
		LaunchSpecification: LaunchSpecification{
			Volumes: append([]string{}, volumes...),
			SSHKeys: keys,
		},
	})
	if err != nil {
		return Bid{}, err
	}
	bid.Name = cmp.Or(bid.Name, name)
	bid.Region = cmp.Or(bid.Region, region)
	return bid, nil
}

// keyRegistry is the project's SSH key API as sshkeys.Ensure uses it.
func (b *Backend) keyRegistry(project string) sshkeys.Registry {
	return sshkeys.Registry{
		Cloud: CloudName,
		List: sshkeys.Lister(func(ctx context.Context) ([]SSHKey, error) { return b.client.SSHKeys(ctx, project) },
			func(k SSHKey) sshkeys.AccountKey { return sshkeys.AccountKey{ID: k.FID, PublicKey: k.PublicKey} }),
		Add: func(ctx context.Context, name, publicKey string) (string, error) {
			k, err := b.client.CreateSSHKey(ctx, CreateSSHKeyRequest{Project: project, Name: name, PublicKey: publicKey})
			return k.FID, err
		},
	}
}

// resolveFID finds the region's FID of an instance type name through the spot auctions (FIDs differ
// per region).
func (b *Backend) resolveFID(ctx context.Context, region, name string) (string, error) {
	cat, err := b.catalog(ctx, false)
	if err != nil {
		return "", err
	}
	auctions, err := b.client.SpotAvailability(ctx)
	if err != nil {
		return "", err
	}
	for _, a := range auctions {
		if a.Region == region && cat[a.InstanceType].Name == name {
			return a.InstanceType, nil
		}
	}
	return "", cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, "placing bid", "no spot auction for %s in %s", name, region)
}

// Facts: Mithril writes its preemption notice inside the machine too (reference section 7.3).
var Facts = cloudprovider.Facts{Signal: cloudprovider.InterruptionSignal{Path: "/opt/mithril/MITHRIL_SIGNAL.yml", Format: cloudprovider.SignalStatusYAML}}

// Facts states Mithril's in-machine interruption signal (cloudprovider.FactStater).
func (b *Backend) Facts() cloudprovider.Facts { return Facts }

// Get reads the bid with that FID and its instances (a cluster node's id, its instance FID, reads the
// node: see clusters.go). It has no side effects: a bid whose machine is
// gone for good (preempted) is reported as an error and left as it is; Delete cancels it (see
// housekeeping.go).
func (b *Backend) Get(ctx context.Context, id string) (cloudprovider.Instance, error) {
	if strings.HasPrefix(id, nodeIDPrefix) {
		return b.getNode(ctx, id)
	}
	bid, insts, err := b.bidWithInstances(ctx, id)
	if err != nil {
		return cloudprovider.Instance{}, err
	}
	inst, _ := b.evaluate(ctx, bid, insts)
	if inst.Interruption != nil {
		// The end of the notice is on the instance's status alone: a failed read leaves it unknown.
		if in := preemptedInstance(insts); in != nil {
			if st, err := b.client.InstanceStatus(ctx, in.FID); err == nil && st.EndTime != nil {
				inst.Interruption.EndsAt = st.EndTime.Time
			}
		}
	}
	return inst, nil
}

// interruptionReason says what Mithril's statuses mean for a preempted bid's machine.
func interruptionReason(bidStatus string, insts []Instance) string {
	if in := preemptedInstance(insts); in != nil && strings.EqualFold(in.Status, InstPreempted) {
		return "Mithril preempted the machine (" + InstPreempted + "): outbid in the spot auction"
	}
	return "Mithril is preempting the machine (bid " + bidStatus + ", " + InstPreempting + "): outbid in the spot auction, " +
		"it stops at the end of the 5-minute notice unless the bid wins its capacity back"
}

// preemptedInstance is the newest of the bid's instances that is preempting or preempted (nil: none).
func preemptedInstance(insts []Instance) *Instance {
	var found *Instance
	for i := range insts {
		switch strings.ToUpper(insts[i].Status) {
		case InstPreempting, InstPreempted:
			if found == nil || insts[i].CreatedAt.After(found.CreatedAt.Time) {
				found = &insts[i]
			}
		}
	}
	return found
}

// cancelBid cancels a bid; a bid already gone (404) is fine.
func (b *Backend) cancelBid(ctx context.Context, fid string) error {
	err := b.client.CancelBid(ctx, fid)
	if err != nil && cloudprovider.IsNotFound(err) {
		return nil
	}
	return err
}

// evaluate maps a bid and its instances onto a hydra instance, and says whether the bid's machine is
// gone for good while the bid is not cancelled (gone). A bid still Open without any machine (it has
// not won: its limit is below the lowest winning bid, or the auction has no capacity) is pending with
// AwaitingAllocation set.
//
// hydra's machine is the bid's first: once the bid has been preempted (the bid Preempting, or any of
// its instances STATUS_PREEMPTING or STATUS_PREEMPTED), the machine is gone for good, even when Mithril
// has since allocated the open bid a new one; so is a machine terminated or replaced while its bid is
// open. Such an instance is reported as an error, not terminated: the machine is gone but the bid is
// still at Mithril and may be allocated a replacement, billed to the account, that no resource knows.
// Terminated would make the provider drop the instance from state on refresh, leaving the bid behind;
// an error keeps it in state, so the next apply replaces it (or destroy deletes it), and that Delete
// cancels the bid. Get and List never cancel it themselves (see housekeeping.go).
func (b *Backend) evaluate(ctx context.Context, bid Bid, insts []Instance) (cloudprovider.Instance, bool) {
	out := cloudprovider.Instance{
		ID:           bid.FID,
		Name:         bid.Name,
		Cloud:        CloudName,
		Region:       bid.Region,
		Spot:         true,
		PricePerHour: bid.LimitPrice.USD(),
		CreatedAt:    bid.CreatedAt.Time,
	}
	if it, ok := b.instanceType(ctx, bid.InstanceType); ok {
		out.InstanceType = it.Name
		out.GPUType, out.GPUCount = b.mapType(it)
		out.Hardware = hardwareOf(it)
	}
	cur := currentInstance(bid, insts)
	bidStatus := canonicalBidStatus(bid.Status)
	out.CloudStatus = bidStatus
	if cur != nil {
		out.CloudStatus = bidStatus + "/" + cur.Status
		if out.Region == "" {
			out.Region = cur.Region
		}
	}
	preempted := bidStatus == BidPreempting || wasPreempted(bid, insts)
	switch {
	case bidStatus == BidTerminated:
		if !preempted && cur != nil && instanceAlive(cur.Status) && !strings.EqualFold(cur.Status, InstError) {
			out.Status, out.Message = cloudprovider.StatusPending, "bid cancelled: instance stopping"
			return out, false
		}
		out.Status, out.Message = cloudprovider.StatusTerminated, "bid cancelled"
		return out, false
	case preempted:
		out.Status, out.Message = cloudprovider.StatusError, "preempted: outbid in the spot auction"+reasonBidOpen
		out.Interruption = &cloudprovider.Interruption{Reason: interruptionReason(bidStatus, insts)}
		return out, true
	case cur != nil:
		m, ok := instanceStatuses[strings.ToUpper(cur.Status)]
		if !ok {
			out.Status, out.Message = cloudprovider.StatusPending, "unknown instance status "+cur.Status
			return out, false
		}
		out.Status, out.Message = m.status, m.note
		if m.gone {
			out.Message += reasonBidOpen
			return out, true
		}
		if m.status == cloudprovider.StatusRunning {
			out.SSH = parseSSHDestination(cur.SSHDestination)
			if out.SSH == nil {
				out.Status, out.Message = cloudprovider.StatusPending, "running: waiting for ssh_destination"
			}
		}
		return out, m.gone
	default:
		m, ok := bidStatuses[bidStatus]
		if !ok {
			out.Status, out.Message = cloudprovider.StatusPending, "unknown bid status "+bid.Status
			return out, false
		}
		out.Status, out.Message = m.status, m.note
		// An open bid without a machine has not won yet: nothing is billed, and Launch may cancel it
		// after bid_timeout.
		out.AwaitingAllocation = bidStatus == BidOpen
		return out, false
	}
}

// reasonBidOpen ends the message of an instance whose machine is gone while its bid is open.
const reasonBidOpen = "; the machine is gone but its bid is still open at Mithril, which may allocate it a new machine: replace or destroy this instance to cancel the bid"

// wasPreempted says whether any of the bid's instances has been preempted.
func wasPreempted(bid Bid, insts []Instance) bool {
	for _, in := range insts {
		if in.Bid != "" && in.Bid != bid.FID {
			continue
		}
		switch strings.ToUpper(in.Status) {
		case InstPreempting, InstPreempted:
			return true
		}
	}
	return false
}

func canonicalBidStatus(s string) string {
	for _, k := range []string{BidOpen, BidAllocated, BidPreempting, BidPaused, BidTerminated, BidRelocating} {
		if strings.EqualFold(s, k) {
			return k
		}
	}
	return s
}

// currentInstance picks the bid's machine: the newest live one, else the newest of all.
func currentInstance(bid Bid, insts []Instance) *Instance {
	var best *Instance
	better := func(a, b *Instance) bool {
		if instanceAlive(a.Status) != instanceAlive(b.Status) {
			return instanceAlive(a.Status)
		}
		return a.CreatedAt.After(b.CreatedAt.Time)
	}
	for i := range insts {
		in := &insts[i]
		if in.Bid != "" && in.Bid != bid.FID {
			continue
		}
		if best == nil || better(in, best) {
			best = in
		}
	}
	return best
}

// List returns the bids whose name starts with prefix, cancelled ones left out, reading every page. It
// has no side effects: a bid whose machine is gone for good is listed as an error and left as it is.
// A cluster's bid (clusters.go) is listed as its nodes, each with Instance.Cluster set to the bid; an
// open one has no nodes yet and is left to ListClusters.
func (b *Backend) List(ctx context.Context, prefix string) ([]cloudprovider.Instance, error) {
	project, err := b.projectFID(ctx)
	if err != nil {
		return nil, err
	}
	bids, err := b.scan(ctx, project, BidFilter{}, func(bd Bid) bool { return strings.HasPrefix(bd.Name, prefix) })
	if err != nil {
		return nil, err
	}
	out := make([]cloudprovider.Instance, 0, len(bids))
	for _, s := range bids {
		if isClusterBid(s.bid) {
			out = append(out, b.nodesOf(ctx, s)...)
			continue
		}
		out = append(out, s.inst)
	}
	return out, nil
}

// Delete cancels the bid, which terminates its instance (a cluster node's id is refused: ErrInvalid); the control plane then polls Get until the
// instance is terminated. A bid Mithril no longer knows (404) or one already cancelled is gone: Delete
// returns nil. Delete cancels a bid whatever its state, so it is also the housekeeping of a bid whose
// machine was preempted.
func (b *Backend) Delete(ctx context.Context, id string) error {
	if strings.HasPrefix(id, nodeIDPrefix) {
		return refuseNodeDelete(id)
	}
	err := b.client.CancelBid(ctx, id)
	if err == nil || cloudprovider.IsNotFound(err) {
		return nil
	}
	if s := StatusOf(err); s == http.StatusConflict || s == http.StatusBadRequest {
		bid, gerr := b.client.GetBid(ctx, id)
		if cloudprovider.IsNotFound(gerr) || (gerr == nil && canonicalBidStatus(bid.Status) == BidTerminated) {
			return nil
		}
	}
	return err
}

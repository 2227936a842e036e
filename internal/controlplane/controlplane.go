// Package controlplane owns hydra's machines from the first offer to the last delete. It gathers
// offers from every eligible pool (each cloud once per process), validates and ranks them, and makes
// the plan's decisions with their reasons: which offer a new machine takes (PlanNew: a pinned offer, an
// earlier plan's quote, or a fresh choice the fleet shares out), whether a name is already taken
// (CheckName), and whether an existing machine is kept, provisioned again or replaced (PlanChange). It
// runs the lifecycle: Launch (with the journal and adoption), BringUp and Resume (boot wait,
// provisioning with retries, health), Refresh, Import, Drain and Terminate, keeping each machine's
// Record. It imports no Terraform package: internal/provider maps its records and decisions to schema
// values and diagnostics; its messages use the resource's attribute names.
package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/singleflight"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Options tune a ControlPlane.
type Options struct {
	// OfferTimeout bounds each cloud's offer request (default 20s), so one slow cloud cannot stall a plan.
	OfferTimeout time.Duration
	// Provisioner runs provisioning (default: NoProvisioning).
	Provisioner cloudprovider.Provisioner
	// MaxProvisionAttempts is how many provisioning attempts a machine gets (default 3).
	MaxProvisionAttempts int
	// ProvisionBackoff is the wait before the second attempt; it doubles after that (default 5s).
	ProvisionBackoff time.Duration
	// PollInterval is the first pause between status polls of a waiting machine (default 1s); it grows
	// to at most BootPollMax while the cloud answers (see PollSchedule).
	PollInterval time.Duration
	// PollMax (default 15s) caps the pause after failed status polls, and the pause between the polls
	// of Terminate's wait; below BootPollMax it also caps the pause while the cloud answers.
	PollMax time.Duration
	// Logger is used when the context carries none (hclog.WithContext).
	Logger hclog.Logger
	// Journal records creates in flight (a zero Journal records nothing, and nothing is ever adopted).
	Journal Journal
	// OrphanGrace is how old an unconfirmed machine must be before Orphans names it (default 10m).
	OrphanGrace time.Duration
	// Inspector reads provisioned machines (health, provisioning marker) and drains execlets; nil with
	// provisioning off.
	Inspector Inspector
	// FleetQuiet is how long instances planned together that compete for limited stock gather before
	// they are served in name order (default 300ms; see Fleet).
	FleetQuiet time.Duration
	// MaxTotalPricePerHour caps what the machines of one plan cost per hour together (0: no budget;
	// see Budget and CountBudget).
	MaxTotalPricePerHour money.USD
	// Now is the clock of cost figures and the capacity memory (default time.Now); tests inject one.
	Now func() time.Time
	// CapacityMemory is how long an offer that failed for lack of capacity is skipped by plans (0: not
	// at all; see CapacityMemory).
	CapacityMemory time.Duration
}

// ControlPlane gathers offers across pools and drives instances through their lifecycle.
type ControlPlane struct {
	inv      *inventory.Inventory
	backends map[string]cloudprovider.InstanceManagerBackend
	manager  *MultiPoolInstManager
	opts     Options
	// fleet shares the known stock among the instances planned by this control plane (one walk).
	fleet *Fleet
	// budget adds up the hourly prices of the instances planned by this control plane (one walk).
	budget *Budget
	// capacity holds the offers that recently failed for lack of capacity (RememberCapacity).
	capacity capacityMemory

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]cloudOffers
	// listings holds each pool's machines as listed once in this walk (see listPool).
	listings map[string][]cloudprovider.Instance
	// volTypes holds each cloud's volume types as answered once (see volumeTypes).
	volTypes map[string]volumeTypesAnswer
	// offerRequests counts the offer requests sent to each cloud (benchmarks and tests read it).
	offerRequests map[string]int
}

type cloudOffers struct {
	offers []cloudprovider.Offer
	err    error
}

// New builds a control plane over the configured backends. Pools of clouds with no backend are left
// out: a cloud whose configuration is absent is simply not asked.
func New(inv *inventory.Inventory, backends []cloudprovider.InstanceManagerBackend, opts Options) *ControlPlane {
	if opts.OfferTimeout == 0 {
		opts.OfferTimeout = 20 * time.Second
	}
	if opts.Provisioner == nil {
		opts.Provisioner = cloudprovider.NoProvisioning{}
	}
	if opts.MaxProvisionAttempts == 0 {
		opts.MaxProvisionAttempts = 3
	}
	if opts.ProvisionBackoff == 0 {
		opts.ProvisionBackoff = 5 * time.Second
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	if opts.PollMax == 0 {
		opts.PollMax = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.OrphanGrace == 0 {
		opts.OrphanGrace = 10 * time.Minute
	}
	if opts.FleetQuiet == 0 {
		opts.FleetQuiet = 300 * time.Millisecond
	}
	cp := &ControlPlane{inv: inv, backends: map[string]cloudprovider.InstanceManagerBackend{}, opts: opts, fleet: NewFleet(opts.FleetQuiet), budget: NewBudget(opts.MaxTotalPricePerHour),
		cache: map[string]cloudOffers{}, offerRequests: map[string]int{}, listings: map[string][]cloudprovider.Instance{}}
	var pools []*SinglePoolInstManager
	for _, b := range backends {
		cp.backends[b.Cloud()] = b
	}
	for _, p := range inv.Pools {
		if b, ok := cp.backends[p.Cloud]; ok {
			pools = append(pools, &SinglePoolInstManager{Pool: p, Backend: b})
		}
	}
	cp.manager = NewMultiPoolInstManager(pools)
	return cp
}

// Inventory returns the inventory the control plane uses.
func (cp *ControlPlane) Inventory() *inventory.Inventory { return cp.inv }

// Clouds returns the configured clouds, sorted.
func (cp *ControlPlane) Clouds() []string { return slices.Sorted(maps.Keys(cp.backends)) }

// OfferRequests returns how many offer requests each cloud has been sent by this process.
func (cp *ControlPlane) OfferRequests() map[string]int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	out := make(map[string]int, len(cp.offerRequests))
	for k, v := range cp.offerRequests {
		out[k] = v
	}
	return out
}

func (cp *ControlPlane) logger(ctx context.Context) hclog.Logger {
	if l := hclog.FromContext(ctx); l != nil && l != hclog.L() {
		return l
	}
	return cp.opts.Logger
}

// RequestError is an impossible request, found before any cloud is asked.
type RequestError struct {
	// Field names the input that is wrong ("gpu_type", "gpu_count", "kind", "clouds", ...).
	Field string
	Msg   string
}

func (e *RequestError) Error() string { return e.Msg }

// UnconfiguredError is a request that names, in clouds, a cloud the provider has no block for.
type UnconfiguredError struct {
	Cloud      string
	Configured []string
}

func (e *UnconfiguredError) Error() string {
	return fmt.Sprintf("cloud %q is not configured in the provider; configured clouds: %s", e.Cloud, quoteList(e.Configured, ", "))
}

// Validate checks a request against the inventory and the configured clouds, touching no cloud.
func (cp *ControlPlane) Validate(req OfferRequest) error {
	gpu, ok := cp.inv.GPUs[req.GPUType]
	if !ok {
		msg := fmt.Sprintf("unknown GPU type %q in gpu_type", req.GPUType)
		if s := cp.inv.Suggest(req.GPUType); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", quoteList(s, " or "))
		} else {
			msg += "."
		}
		msg += fmt.Sprintf(" Known types (the inventory's %s): %s.", inventory.GPUsFile, quoteList(cp.inv.GPUTypes(), ", "))
		return &RequestError{Field: "gpu_type", Msg: msg}
	}
	if req.GPUCount < 1 {
		return &RequestError{Field: "gpu_count", Msg: fmt.Sprintf("gpu_count must be at least 1, got %d", req.GPUCount)}
	}
	if req.GPUCount > gpu.MaxCount {
		return &RequestError{Field: "gpu_count", Msg: fmt.Sprintf("gpu_count %d is more than any %s instance may have: at most %d %s GPUs per instance", req.GPUCount, req.GPUType, gpu.MaxCount, req.GPUType)}
	}
	if !slices.Contains(inventory.Kinds, req.Kind) {
		return &RequestError{Field: "kind", Msg: fmt.Sprintf("unknown kind %q; expected one of %s", req.Kind, quoteList(inventory.Kinds, ", "))}
	}
	for _, c := range req.Clouds {
		if !slices.Contains(cp.inv.KnownClouds(), c) {
			return &RequestError{Field: "clouds", Msg: fmt.Sprintf("unknown cloud %q; expected any of %s", c, quoteList(cp.inv.KnownClouds(), ", "))}
		}
		if _, ok := cp.backends[c]; !ok {
			return &UnconfiguredError{Cloud: c, Configured: cp.Clouds()}
		}
	}
	if req.FormFactor != "" && !slices.Contains(cloudprovider.FormFactors, req.FormFactor) {
		return &RequestError{Field: "form_factor", Msg: fmt.Sprintf("unknown form factor %q; expected one of %s", req.FormFactor, quoteList(cloudprovider.FormFactors, ", "))}
	}
	if req.MaxPricePerHour != 0 {
		if err := checkMaxPrice(req.MaxPricePerHour); err != nil {
			return &RequestError{Field: "max_price_per_hour", Msg: err.Error()}
		}
	}
	if p, ok, err := placeVolumes(req.Volumes); err != nil {
		return err
	} else if _, configured := cp.backends[p.cloud]; ok && !configured {
		return &RequestError{Field: "volumes", Msg: fmt.Sprintf("volume %s is in %s, and %s is not configured; configured clouds: %s", p.name, p, p.cloud, quoteList(cp.Clouds(), ", "))}
	} else if err := cp.checkVolumeMountPaths(p, req.Volumes); ok && err != nil {
		return err
	}
	var kindPools, typePools []string
	for _, p := range cp.manager.Pools() {
		if p.Pool.Kind != req.Kind || !cloudAllowed(req.Clouds, p.Pool.Cloud) {
			continue
		}
		kindPools = append(kindPools, p.Pool.Name)
		if len(gpu.APINames[p.Pool.Cloud]) > 0 {
			typePools = append(typePools, p.Pool.Name)
		}
	}
	if len(kindPools) == 0 {
		return &RequestError{Field: "kind", Msg: fmt.Sprintf("no configured pool serves kind %q%s; configured clouds: %s", req.Kind, cloudsSuffix(req.Clouds), quoteList(cp.Clouds(), ", "))}
	}
	if len(typePools) == 0 {
		var offering []string
		for c := range gpu.APINames {
			offering = append(offering, c)
		}
		sort.Strings(offering)
		return &RequestError{Field: "gpu_type", Msg: fmt.Sprintf("no configured %s pool%s offers %s; clouds that name %s in supported_gpus.yml: %s", req.Kind, cloudsSuffix(req.Clouds), req.GPUType, req.GPUType, quoteList(offering, ", "))}
	}
	return nil
}

func cloudsSuffix(clouds []string) string {
	if len(clouds) == 0 {
		return ""
	}
	return " among clouds " + quoteList(clouds, ", ")
}

// Offers answers a request from every eligible pool. Each cloud is asked at most once per process
// (concurrent askers share one request) and bounded by OfferTimeout; a cloud that fails or times out is
// named in Rejections and the others still answer. Set fresh to ask the clouds again (apply-time
// fallback).
func (cp *ControlPlane) Offers(ctx context.Context, req OfferRequest, fresh bool) (OfferResult, error) {
	if err := cp.Validate(req); err != nil {
		return OfferResult{}, err
	}
	gpu := cp.inv.GPUs[req.GPUType]
	var res OfferResult
	// Clouds asked: those the request allows, and, when an auction is among them, every other
	// configured cloud too: an auction's bid is priced against every comparable offer, wherever the
	// request buys (clouds says where to buy, not what to compare with).
	var clouds []string
	auctionAsked := false
	// A machine with volumes can be only where they are (volumeRejection): other clouds are not asked.
	volumeRejected := map[string]string{}
	if p, ok, _ := placeVolumes(req.Volumes); ok {
		for _, c := range cp.Clouds() {
			if why := cp.volumeRejection(c, p, false); why != "" {
				volumeRejected[c] = why
			}
		}
	}
	for _, c := range cp.Clouds() {
		if len(gpu.APINames[c]) == 0 || !cp.hasPool(c, req.Kind) {
			continue
		}
		if why, ok := volumeRejected[c]; ok {
			if cloudAllowed(req.Clouds, c) {
				res.Rejections = append(res.Rejections, Rejection{Cloud: c, Reason: why})
			}
			continue
		}
		if _, ok := cp.backends[c].(cloudprovider.AuctionBackend); ok && cloudAllowed(req.Clouds, c) {
			auctionAsked = true
		}
		clouds = append(clouds, c)
	}
	answers := make([]cloudOffers, len(clouds))
	var wg sync.WaitGroup
	for i, c := range clouds {
		if !cloudAllowed(req.Clouds, c) && !auctionAsked {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = cp.cloudOffers(ctx, c, fresh)
		}()
	}
	wg.Wait()

	var auctions []string
	perCloud := map[string][]cloudprovider.Offer{}
	matching := map[string][]cloudprovider.Offer{} // every asked cloud's matching offers, for auctions' bids
	hints := map[string]string{}                   // why a cloud whose matching offers are all sold out has no other
	known := map[string]bool{}                     // every region in the asked clouds' catalogs, for UnknownRegions
	for i, c := range clouds {
		allowed := cloudAllowed(req.Clouds, c)
		if !allowed && !auctionAsked {
			continue
		}
		a := answers[i]
		for _, o := range a.offers {
			known[o.Region] = true
		}
		if r, ok := cp.backends[c].(cloudprovider.SSHKeyRequirer); ok && req.WithoutSSHKey && r.RequiresSSHKey() {
			if allowed {
				res.Rejections = append(res.Rejections, Rejection{Cloud: c, Reason: "creates machines only with an SSH public key, and none is " +
					"configured: set ssh_public_keys on the resource, or turn provisioning on (it installs its own key)"})
			}
			continue
		}
		if a.err != nil {
			if allowed {
				res.Rejections = append(res.Rejections, Rejection{Cloud: c, Reason: a.err.Error()})
			}
			continue
		}
		if names := unmappedNames(a.offers); len(names) > 0 && allowed {
			if res.Unmapped == nil {
				res.Unmapped = map[string][]string{}
			}
			res.Unmapped[c] = names
		}
		matched, why := cp.match(c, a.offers, req)
		matching[c] = matched
		if why != "" {
			hints[c] = why
		}
		if !allowed {
			continue
		}
		if len(matched) == 0 {
			res.Rejections = append(res.Rejections, Rejection{Cloud: c, Reason: why})
			continue
		}
		perCloud[c] = matched
		if _, ok := cp.backends[c].(cloudprovider.AuctionBackend); ok {
			auctions = append(auctions, c)
		}
	}
	// Auctions price their bids against every other cloud's offers that could be bought now.
	for _, c := range auctions {
		var others []cloudprovider.Offer
		for oc, os := range matching {
			if oc == c {
				continue
			}
			for _, o := range os {
				if o.Ineligible == "" {
					others = append(others, o)
				}
			}
		}
		Rank(others)
		if ab, ok := cp.backends[c].(cloudprovider.AuctionBackend); ok { // always: auctions holds only auction backends
			perCloud[c] = ab.PriceBids(perCloud[c], others, req.MaxPricePerHour)
		}
	}
	for _, c := range clouds {
		var eligible int
		for _, o := range perCloud[c] {
			if o.Ineligible == "" && cloudprovider.AboveCap(o.PricePerHour, req.MaxPricePerHour) {
				o.Ineligible = fmt.Sprintf("%s is above max_price_per_hour %s", o.PricePerHour.PerHour(), req.MaxPricePerHour.PerHour())
			}
			o.ID = OfferID(o)
			if o.Ineligible != "" {
				res.Ineligible = append(res.Ineligible, o)
				continue
			}
			eligible++
			res.Offers = append(res.Offers, o)
		}
		if eligible == 0 && len(perCloud[c]) > 0 {
			reason := hints[c]
			if reason == "" {
				reason = summarizeIneligible(perCloud[c], req)
			}
			res.Rejections = append(res.Rejections, Rejection{Cloud: c, Reason: reason})
		}
	}
	for _, r := range req.Regions {
		if !known[r] {
			res.UnknownRegions = append(res.UnknownRegions, r)
		}
	}
	if len(res.UnknownRegions) > 0 {
		res.KnownRegions = sortedUnique(slices.Collect(maps.Keys(known)))
	}
	Rank(res.Offers)
	Rank(res.Ineligible)
	sort.SliceStable(res.Rejections, func(i, j int) bool { return res.Rejections[i].Cloud < res.Rejections[j].Cloud })
	cp.logger(ctx).Debug("offers gathered", "gpu_type", req.GPUType, "gpu_count", req.GPUCount, "kind", req.Kind,
		"eligible", len(res.Offers), "ineligible", len(res.Ineligible), "rejections", len(res.Rejections))
	return res, nil
}

func summarizeIneligible(offers []cloudprovider.Offer, req OfferRequest) string {
	cheapest := offers[0]
	for _, o := range offers {
		if o.PricePerHour < cheapest.PricePerHour {
			cheapest = o
		}
	}
	soldOut := true
	for _, o := range offers {
		soldOut = soldOut && o.Available == 0
	}
	if soldOut {
		return fmt.Sprintf("no capacity for %s right now (%d matching %s sold out)", shape(req), len(offers), plural(len(offers), "offer", "offers"))
	}
	if cloudprovider.AboveCap(cheapest.PricePerHour, req.MaxPricePerHour) {
		return fmt.Sprintf("cheapest matching offer costs %s (%s in %s), above max_price_per_hour %s",
			cheapest.PricePerHour.PerHour(), cheapest.InstanceType, cheapest.Region, req.MaxPricePerHour.PerHour())
	}
	return "no eligible offer: " + offers[0].Ineligible
}

func (cp *ControlPlane) hasPool(cloud, kind string) bool {
	for _, p := range cp.manager.Pools() {
		if p.Pool.Cloud == cloud && p.Pool.Kind == kind {
			return true
		}
	}
	return false
}

// match filters one cloud's catalog and expands it into the cloud's pools of the requested kind.
func (cp *ControlPlane) match(cloud string, offers []cloudprovider.Offer, req OfferRequest) ([]cloudprovider.Offer, string) {
	var typeSeen, countSeen, regionSeen, spotOnly, formSeen bool
	var formFactors, regions []string
	var counts []int
	var out []cloudprovider.Offer
	var volumeWhy string
	if req.Regions, volumeWhy = volumeRegions(cloud, req); volumeWhy != "" {
		return nil, volumeWhy
	}
	for _, o := range offers {
		if o.GPUType != req.GPUType {
			continue
		}
		typeSeen = true
		if o.GPUCount != req.GPUCount {
			counts = append(counts, o.GPUCount)
			continue
		}
		countSeen = true
		if len(req.Regions) > 0 && !slices.Contains(req.Regions, o.Region) {
			regions = append(regions, o.Region)
			continue
		}
		regionSeen = true
		if o.Spot && !req.AllowSpot {
			spotOnly = true
			continue
		}
		if req.FormFactor != "" && o.FormFactor != req.FormFactor {
			if o.FormFactor == "" {
				formFactors = append(formFactors, "unknown")
			} else {
				formFactors = append(formFactors, o.FormFactor)
			}
			continue
		}
		formSeen = true
		if o.Available == 0 && o.Ineligible == "" {
			// Listed, not eligible: a sold-out offer still shows what the cloud would charge.
			o.Ineligible = "sold out (the cloud has none to start now)"
		}
		for _, p := range cp.manager.Pools() {
			if p.Pool.Cloud != cloud || p.Pool.Kind != req.Kind {
				continue
			}
			po := o
			po.Cloud = cloud
			po.Pool = p.Pool.Name
			out = append(out, po)
		}
	}
	if len(out) > 0 {
		for _, o := range out {
			if o.Available != 0 {
				return out, ""
			}
		}
		if spotOnly {
			return out, fmt.Sprintf("only spot capacity for %s (set spot = true to allow it); the on-demand offers are sold out", shape(req))
		}
		return out, ""
	}
	switch {
	case !typeSeen:
		return nil, fmt.Sprintf("no %s offers right now", req.GPUType)
	case !countSeen:
		return nil, fmt.Sprintf("no %s offer with %d %s (offered counts: %s)", req.GPUType, req.GPUCount, plural(req.GPUCount, "GPU", "GPUs"), intList(counts))
	case !regionSeen:
		why := fmt.Sprintf("no %dx %s offer in regions %s (it offers %dx %s in %s)", req.GPUCount, req.GPUType, quoteList(req.Regions, ", "),
			req.GPUCount, req.GPUType, quoteList(sortedUnique(regions), ", "))
		if p, ok, _ := placeVolumes(req.Volumes); ok {
			why += fmt.Sprintf("; volume %s is in %s", p.name, p)
		}
		return nil, why
	case spotOnly && !formSeen && len(formFactors) == 0:
		return nil, fmt.Sprintf("only spot capacity for %s (set spot = true to allow it)", shape(req))
	case !formSeen && len(formFactors) > 0:
		return nil, fmt.Sprintf("no %s offer with form_factor %q (offered: %s)", shape(req), req.FormFactor, strings.Join(sortedUnique(formFactors), ", "))
	default:
		return nil, fmt.Sprintf("no capacity for %s right now", shape(req))
	}
}

// cloudOffers returns one cloud's catalog, asking it once per process unless fresh is set.
func (cp *ControlPlane) cloudOffers(ctx context.Context, cloud string, fresh bool) cloudOffers {
	if !fresh {
		cp.mu.Lock()
		c, ok := cp.cache[cloud]
		cp.mu.Unlock()
		if ok {
			return c
		}
	}
	key := cloud
	if fresh {
		key += "#fresh"
	}
	v, _, _ := cp.flight.Do(key, func() (any, error) {
		if !fresh {
			cp.mu.Lock()
			c, ok := cp.cache[cloud]
			cp.mu.Unlock()
			if ok {
				return c, nil
			}
		}
		offers, err := askCloud(ctx, cp, cloud, "offers", cp.backends[cloud].Offers)
		res := cloudOffers{offers: offers, err: err}
		if ctx.Err() == nil {
			cp.mu.Lock()
			cp.cache[cloud] = res
			cp.mu.Unlock()
		}
		return res, nil
	})
	co, _ := v.(cloudOffers) // the function above returns only cloudOffers
	return co
}

// askCloud sends one request of a cloud's catalog (what: "offers", "cluster offers") and counts it. The
// request belongs to no single caller (one caller's cancellation must not fail the others): it has a
// context of its own, bounded by OfferTimeout, and a request cut by that fails saying so.
func askCloud[T any](ctx context.Context, cp *ControlPlane, cloud, what string, ask func(context.Context) ([]T, error)) ([]T, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cp.opts.OfferTimeout)
	defer cancel()
	cp.mu.Lock()
	cp.offerRequests[cloud]++
	cp.mu.Unlock()
	start := time.Now()
	list, err := ask(rctx)
	if err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %s waiting for %s", cp.opts.OfferTimeout, what)
	}
	cp.logger(ctx).Debug(what+" fetched", "cloud", cloud, "count", len(list), "duration", time.Since(start), "error", err)
	return list, err
}

// concurrently calls f on every element of in, each in a goroutine of its own, and returns the answers
// and errors in in's order.
func concurrently[T, R any](in []T, f func(T) (R, error)) ([]R, []error) {
	out := make([]R, len(in))
	errs := make([]error, len(in))
	var wg sync.WaitGroup
	for i, v := range in {
		wg.Go(func() { out[i], errs[i] = f(v) })
	}
	wg.Wait()
	return out, errs
}

func cloudAllowed(allowed []string, cloud string) bool {
	return len(allowed) == 0 || slices.Contains(allowed, cloud)
}

func quoteList(list []string, sep string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, sep)
}

func intList(list []int) string {
	uniq := sortedUnique(list)
	s := make([]string, len(uniq))
	for i, n := range uniq {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// shape words a request's GPUs: "1x h100", "8x h100 SXM".
func shape(req OfferRequest) string {
	s := fmt.Sprintf("%dx %s", req.GPUCount, req.GPUType)
	if req.FormFactor != "" {
		s += " " + strings.ToUpper(req.FormFactor)
	}
	return s
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sortedUnique returns in sorted, each value once.
func sortedUnique[T cmp.Ordered](in []T) []T {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// unmappedNames lists, sorted and once each, the cloud's GPU names that the inventory does not map.
func unmappedNames(offers []cloudprovider.Offer) []string {
	var names []string
	for _, o := range offers {
		if o.GPUType == "" && o.CloudGPU != "" {
			names = append(names, o.CloudGPU)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return sortedUnique(names)
}

// Now is the control plane's clock (Options.Now; time.Now by default), which cost figures are
// computed against.
func (cp *ControlPlane) Now() time.Time {
	if cp.opts.Now != nil {
		return cp.opts.Now()
	}
	return time.Now()
}

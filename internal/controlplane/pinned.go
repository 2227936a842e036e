package controlplane

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"slices"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// MismatchError says how a pinned offer does not fit the request it is pinned to.
type MismatchError struct {
	// OfferID is the pinned offer's ID.
	OfferID string
	// Field names the request's part that disagrees, in the resource's attribute names: "kind",
	// "clouds", "regions", "spot", "max_price_per_hour" (CheckPinned), "gpu_type", "gpu_count",
	// "form_factor" (CheckPinnedHardware, LaunchOffers), or "pool" when the offer's pool is not
	// configured at all.
	Field string
	// Msg says what disagrees, both sides named.
	Msg string
}

func (e *MismatchError) Error() string { return fmt.Sprintf("offer %s: %s", e.OfferID, e.Msg) }

// CheckPinned checks a pinned offer against the request it is pinned to, touching no cloud.
func (cp *ControlPlane) CheckPinned(p ParsedOfferID, req OfferRequest) error {
	id := OfferID(cloudprovider.Offer{Pool: p.Pool, Region: p.Region, InstanceType: p.InstanceType, Spot: p.Spot, PricePerHour: p.PricePerHour})
	pm, ok := cp.manager.Pool(p.Pool)
	if !ok {
		return &MismatchError{id, "pool", fmt.Sprintf("it names pool %q, which is not configured", p.Pool)}
	}
	switch {
	case pm.Pool.Kind != req.Kind:
		return &MismatchError{id, "kind", fmt.Sprintf("it is from pool %s of kind %q, but the request's kind is %q", p.Pool, pm.Pool.Kind, req.Kind)}
	case !cloudAllowed(req.Clouds, pm.Pool.Cloud):
		return &MismatchError{id, "clouds", fmt.Sprintf("it is from cloud %q, which the request's clouds do not allow", pm.Pool.Cloud)}
	case len(req.Regions) > 0 && !slices.Contains(req.Regions, p.Region):
		return &MismatchError{id, "regions", fmt.Sprintf("it is in region %q, which the request's regions do not allow", p.Region)}
	case p.Spot && !req.AllowSpot:
		return &MismatchError{id, "spot", "it is a spot offer, but the request does not allow spot"}
	case cloudprovider.AboveCap(p.PricePerHour, req.MaxPricePerHour):
		return &MismatchError{id, "max_price_per_hour", fmt.Sprintf("it costs %s, above the request's maximum of %s", p.PricePerHour.PerHour(), req.MaxPricePerHour.PerHour())}
	}
	return nil
}

// CheckPinnedHardware checks what a pinned offer's ID does not carry, the GPU type and count and the
// form factor, against the cloud's offers (the process's cached answer), and returns the live offer.
// It returns a *MismatchError on "gpu_type", "gpu_count" or "form_factor" when the instance type holds
// other GPUs, on "price" when the cloud asks more for it than the ID says, on "region" when the cloud
// lists the instance type only in other regions, and found = false when the cloud does not list the instance type now (or could not be
// asked): the create then stands or falls at the cloud.
func (cp *ControlPlane) CheckPinnedHardware(ctx context.Context, p ParsedOfferID, req OfferRequest) (live cloudprovider.Offer, found bool, err error) {
	id := OfferID(cloudprovider.Offer{Pool: p.Pool, Region: p.Region, InstanceType: p.InstanceType, Spot: p.Spot, PricePerHour: p.PricePerHour})
	pm, ok := cp.manager.Pool(p.Pool)
	if !ok {
		return cloudprovider.Offer{}, false, &MismatchError{id, "pool", fmt.Sprintf("it names pool %q, which is not configured", p.Pool)}
	}
	co := cp.cloudOffers(ctx, pm.Pool.Cloud, false)
	if co.err != nil {
		return cloudprovider.Offer{}, false, nil //nolint:nilerr // as documented: the cloud could not be asked, so found = false
	}
	for _, o := range co.offers {
		if o.InstanceType != p.InstanceType || o.Region != p.Region || o.Spot != p.Spot {
			continue
		}
		switch {
		case o.GPUType != req.GPUType:
			return o, true, &MismatchError{id, "gpu_type", fmt.Sprintf("its instance type %s holds %s GPUs, but the request's gpu_type is %q", p.InstanceType, o.GPUType, req.GPUType)}
		case o.GPUCount != req.GPUCount:
			return o, true, &MismatchError{id, "gpu_count", fmt.Sprintf("its instance type %s holds %d GPUs, but the request's gpu_count is %d", p.InstanceType, o.GPUCount, req.GPUCount)}
		case req.FormFactor != "" && o.FormFactor != req.FormFactor:
			has := o.FormFactor
			if has == "" {
				has = "an unknown form factor (the cloud does not say)"
			}
			return o, true, &MismatchError{id, "form_factor", fmt.Sprintf("its instance type %s has %s, but the request's form_factor is %q", p.InstanceType, has, req.FormFactor)}
		case o.PricePerHour > p.PricePerHour:
			// A price below the cloud's (a typo, a made-up or an old price) would fail every apply.
			current := o
			current.Pool = p.Pool
			return o, true, &MismatchError{id, "price", fmt.Sprintf("its price, %s, does not match the cloud's: the cloud asks %s for it now (the current offer is %s)",
				p.PricePerHour.PerHour(), o.PricePerHour.PerHour(), OfferID(current))}
		}
		return o, true, nil
	}
	// Not listed in its region: when the cloud lists the same instance type elsewhere, the region is
	// what differs (a typed or an old offer_id), and the current offers say what to pin instead.
	var elsewhere []string
	for _, o := range co.offers {
		if o.InstanceType == p.InstanceType && o.Spot == p.Spot {
			current := o
			current.Pool = p.Pool
			elsewhere = append(elsewhere, OfferID(current))
		}
	}
	if len(elsewhere) > 0 {
		sort.Strings(elsewhere)
		return cloudprovider.Offer{}, false, &MismatchError{id, "region", fmt.Sprintf("the cloud does not offer %s in region %q now; its current offers of it are %s",
			p.InstanceType, p.Region, strings.Join(elsewhere, ", "))}
	}
	return cloudprovider.Offer{}, false, nil
}

// PriceRoseError says a pinned offer costs more now than when it was planned: hydra never charges
// more than the plan showed.
type PriceRoseError struct {
	OfferID      string
	Planned, Now money.USD
}

func (e *PriceRoseError) Error() string {
	return fmt.Sprintf("offer_id %s says %s, but the cloud asks %s for that offer now, and hydra never pays more than the plan showed",
		e.OfferID, e.Planned.PerHour(), e.Now.PerHour())
}

// NoOfferError says no offer matches a request now: Result says why each cloud said no, Closest what
// would match with one requirement relaxed.
type NoOfferError struct {
	Request OfferRequest
	Result  OfferResult
	Closest []Near
}

func (e *NoOfferError) Error() string { return NoOfferDetail(e.Request, e.Result, e.Closest) }

// FindOffers returns the offers matching req now (listings may be cached), or, when none is eligible,
// the result with a *NoOfferError.
func (cp *ControlPlane) FindOffers(ctx context.Context, req OfferRequest) (OfferResult, error) {
	res, err := cp.Offers(ctx, req, false)
	if err != nil {
		return res, err
	}
	if _, ok := res.Cheapest(); !ok {
		return res, &NoOfferError{Request: req, Result: res, Closest: cp.Closest(ctx, req)}
	}
	return res, nil
}

// LaunchOffers returns the offers a create may launch, best first. With a pinned offer ID: that offer
// alone, with the details the cloud needs again at create (upstream ids, auction ids), or a
// *PriceRoseError when it costs more now than planned. Without one (the choice left to apply): every
// acceptable offer now, or a *NoOfferError.
func (cp *ControlPlane) LaunchOffers(ctx context.Context, req OfferRequest, pinnedID string) ([]cloudprovider.Offer, error) {
	if pinnedID == "" {
		res, err := cp.Offers(ctx, req, true)
		if err != nil {
			return nil, err
		}
		if len(res.Offers) == 0 {
			return nil, &NoOfferError{Request: req, Result: res, Closest: cp.Closest(ctx, req)}
		}
		return res.Offers, nil
	}
	p, err := ParseOfferID(pinnedID)
	if err != nil {
		return nil, err
	}
	pm, ok := cp.manager.Pool(p.Pool)
	if !ok {
		return nil, &MismatchError{pinnedID, "pool", fmt.Sprintf("it names pool %q, which is not configured", p.Pool)}
	}
	planned := cloudprovider.Offer{
		ID: pinnedID, Cloud: pm.Pool.Cloud, Pool: p.Pool, Region: p.Region, InstanceType: p.InstanceType,
		GPUType: req.GPUType, GPUCount: req.GPUCount, PricePerHour: p.PricePerHour, Spot: p.Spot, Available: -1,
	}
	res, err := cp.Offers(ctx, req, true)
	if err != nil {
		// The offers could not be read again: create what was planned; the cloud refuses what it cannot do.
		return []cloudprovider.Offer{planned}, nil //nolint:nilerr // deliberate fallback, explained above
	}
	listed := false
	for _, o := range append(res.Offers, res.Ineligible...) {
		if o.Pool != p.Pool || o.Region != p.Region || o.InstanceType != p.InstanceType || o.Spot != p.Spot {
			continue
		}
		if o.PricePerHour > p.PricePerHour {
			return nil, &PriceRoseError{OfferID: pinnedID, Planned: p.PricePerHour, Now: o.PricePerHour}
		}
		planned.Details, planned.Hardware, listed = o.Details, o.Hardware, true
	}
	if req.FormFactor != "" && !listed {
		// The form factor is not in the ID: buy only what can be seen to have it.
		return nil, &MismatchError{pinnedID, "form_factor", fmt.Sprintf("the cloud does not list it with form factor %q now, so the requirement cannot be checked; nothing was created", req.FormFactor)}
	}
	return []cloudprovider.Offer{planned}, nil
}

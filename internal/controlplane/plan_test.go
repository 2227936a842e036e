package controlplane

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// planCloud is a verda with two H100 offers and a machine another state holds, named "taken".
func planCloud(t *testing.T) (*ControlPlane, *fakeBackend) {
	t.Helper()
	cheap := offer("FIN-01", "1H100", 1, 2.49)
	cheap.Details = map[string]string{"cloud_id": "internal", "note": "shown"}
	b := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{cheap, offer("FIN-02", "1H100", 1, 2.99)}}
	b.put(cloudprovider.Instance{Name: "verda-vm-taken--abcdefgh", Status: cloudprovider.StatusRunning, CreatedAt: time.Now()})
	return New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{}), b
}

func h100Request() OfferRequest { return OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm"} }

// PlanNew decides a new machine's offer, and says why when it cannot.
func TestPlanNew(t *testing.T) {
	quoted := &Quote{OfferID: "verda-vm-pool/FIN-02/1H100/ondemand@2.99", Estimate: usd(2.99), Expires: time.Now().Add(time.Hour)}
	cases := []struct {
		name string
		req  NewPlanRequest
		// wantOffer is the planned offer ID; wantQuote whether a fresh quote is returned to keep.
		wantOffer string
		wantQuote bool
		// wantNotice is part of a notice's summary; wantRefusal of the refusal's summary and field.
		wantNotice, wantRefusal, wantField string
		check                              func(t *testing.T, p NewPlan)
	}{{
		name: "first plan: the cheapest, as a quote to keep", req: NewPlanRequest{Name: "a", Request: h100Request()},
		wantOffer: "verda-vm-pool/FIN-01/1H100/ondemand@2.49", wantQuote: true,
		check: func(t *testing.T, p NewPlan) {
			if p.Cloud != "verda" || p.Details["note"] != "shown" || p.Details["cloud_id"] != "" || !p.HardwareKnown || p.WhyNot == nil {
				t.Errorf("plan %+v", p)
			}
		},
	}, {
		name: "a re-plan reuses the quote and says the market moved", req: NewPlanRequest{Name: "a", Request: h100Request(), Quote: quoted, QuotePath: "/q/a.json"},
		wantOffer: quoted.OfferID, wantNotice: "This plan reuses an earlier quote",
		check: func(t *testing.T, p NewPlan) {
			if d := p.Notices[0].Detail; !strings.Contains(d, "a cheaper offer exists now: verda-vm-pool/FIN-01/1H100/ondemand@2.49 at $2.49/h") || !strings.Contains(d, "/q/a.json") {
				t.Errorf("the notice must give the cheaper offer and the quote to delete: %s", d)
			}
		},
	}, {
		name: "allow_fallback: only an estimate", req: NewPlanRequest{Name: "a", Request: h100Request(), AllowFallback: true},
		wantQuote: true, wantNotice: "GPU offer chosen at apply time",
		check: func(t *testing.T, p NewPlan) {
			if p.Estimate != usd(2.49) || p.HardwareKnown {
				t.Errorf("estimate %s, hardware known %v", p.Estimate, p.HardwareKnown)
			}
		},
	}, {
		name: "pinned: that offer, nothing else shown", req: NewPlanRequest{Name: "a", Request: h100Request(), OfferID: "verda-vm-pool/FIN-02/1H100/ondemand@2.99"},
		wantOffer: "verda-vm-pool/FIN-02/1H100/ondemand@2.99",
		check: func(t *testing.T, p NewPlan) {
			if p.WhyNot != nil || p.Details != nil || p.NewQuote != nil || p.Cloud != "verda" {
				t.Errorf("a pinned plan shows only the pin: %+v", p)
			}
		},
	}, {
		name: "pinned in a pool not configured", req: NewPlanRequest{Name: "a", Request: h100Request(), OfferID: "nowhere-pool/FIN-02/1H100/ondemand@2.99"},
		wantRefusal: "Offer does not match the request", wantField: "offer_id",
	}, {
		name: "pinned, not listed now: a warning on offer_id", req: NewPlanRequest{Name: "a", Request: h100Request(), OfferID: "verda-vm-pool/FIN-09/9H100/ondemand@2.99"},
		wantOffer: "verda-vm-pool/FIN-09/9H100/ondemand@2.99", wantNotice: "Pinned offer not listed now",
	}, {
		name: "pinned in a region the cloud does not offer it in", req: NewPlanRequest{Name: "a", Request: h100Request(), OfferID: "verda-vm-pool/FIN-09/1H100/ondemand@2.99"},
		wantRefusal: "Offer does not match the request", wantField: "offer_id",
	}, {
		name: "nothing under the cap", req: NewPlanRequest{Name: "a", Request: OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", MaxPricePerHour: usd(1)}},
		wantRefusal: "No GPU offer matches hydra_gpu_instance a",
	}, {
		name: "the name is another state's machine", req: NewPlanRequest{Name: "taken", Request: h100Request()},
		wantRefusal: "GPU instance name already in use",
	}, {
		name: "the name is another state's machine, pinned: only a warning", req: NewPlanRequest{Name: "taken", Request: h100Request(), OfferID: "verda-vm-pool/FIN-01/1H100/ondemand@2.49"},
		wantOffer: "verda-vm-pool/FIN-01/1H100/ondemand@2.49", wantNotice: "GPU instance name may already be in use",
	}, {
		name: "the name is this configuration's own machine (a replacement)", req: NewPlanRequest{Name: "taken", Request: h100Request(), Held: func(string) bool { return true }},
		wantOffer: "verda-vm-pool/FIN-01/1H100/ondemand@2.49", wantQuote: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp, _ := planCloud(t)
			p, err := cp.PlanNew(context.Background(), tc.req)
			var rf *Refusal
			if tc.wantRefusal != "" {
				if !errors.As(err, &rf) || !strings.Contains(rf.Summary, tc.wantRefusal) || rf.Field != tc.wantField {
					t.Fatalf("PlanNew = %v, want a refusal %q on %q", err, tc.wantRefusal, tc.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.OfferID != tc.wantOffer || (p.NewQuote != nil) != tc.wantQuote {
				t.Errorf("offer %q (new quote %v), want %q (%v)", p.OfferID, p.NewQuote != nil, tc.wantOffer, tc.wantQuote)
			}
			var summaries []string
			for _, n := range p.Notices {
				summaries = append(summaries, n.Summary)
			}
			if got := strings.Join(summaries, "; "); tc.wantNotice == "" && got != "" || !strings.Contains(got, tc.wantNotice) {
				t.Errorf("notices %q, want %q", got, tc.wantNotice)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
	cp, _ := planCloud(t)
	var re *RequestError
	if _, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "a", Request: OfferRequest{GPUType: "h10", GPUCount: 1, Kind: "vm"}}); !errors.As(err, &re) || re.Field != "gpu_type" {
		t.Errorf("an unknown GPU type: %v, want a RequestError on gpu_type", err)
	}
}

// PlanChange keeps, re-provisions or replaces a machine a state holds, and says why.
func TestPlanChange(t *testing.T) {
	ready := Record{Name: "verda-vm-a--abcdefgh", Status: cloudprovider.StatusReady, ProvisioningDigest: "d1"}
	unhealthy := ready
	unhealthy.Health = Health{Status: HealthUnhealthy, Reason: "Xid 79", CheckedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	with := func(r Record, f func(*Record)) Record { f(&r); return r }
	noticed := with(ready, func(r *Record) {
		r.Interruption = &cloudprovider.Interruption{NoticeAt: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), EndsAt: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), Reason: "outbid"}
	})
	cases := []struct {
		name        string
		req         ChangeRequest
		want        Change
		wantBecause string
		wantNotice  string
	}{
		{"nothing changed", ChangeRequest{Record: ready, Digest: "d1", DigestKnown: true}, Keep, "", ""},
		{"playbooks changed", ChangeRequest{Record: ready, Digest: "d2", DigestKnown: true}, Reprovision, "", ""},
		{"variables not known yet", ChangeRequest{Record: ready}, Reprovision, "", ""},
		{"unhealthy: said, kept", ChangeRequest{Record: unhealthy, Digest: "d1", DigestKnown: true}, Keep, "", "Unhealthy GPU machine"},
		{"unhealthy, replace_when_unhealthy", ChangeRequest{Record: unhealthy, ReplaceWhenUnhealthy: true, Digest: "d1", DigestKnown: true}, Replace, "health", "Replacing an unhealthy GPU machine"},
		{"failed at the cloud", ChangeRequest{Record: with(ready, func(r *Record) { r.Status = cloudprovider.StatusError }), Digest: "d1", DigestKnown: true}, Replace, "status", ""},
		{"provisioning failed: provisioned again", ChangeRequest{Record: with(ready, func(r *Record) { r.Status, r.ProvisioningError = cloudprovider.StatusError, "task x" }), Digest: "d1", DigestKnown: true}, Reprovision, "", ""},
		{"interrupted while booting", ChangeRequest{Record: with(ready, func(r *Record) { r.Status = cloudprovider.StatusPending }), Digest: "d1", DigestKnown: true}, Reprovision, "", "GPU instance will be resumed"},
		{"imported without a marker", ChangeRequest{Record: with(ready, func(r *Record) { r.Status, r.ProvisioningDigest = cloudprovider.StatusRunning, "" }), Digest: "d1", DigestKnown: true}, Reprovision, "", "GPU instance will be provisioned"},
		{"notice given, replace_when_preempted", ChangeRequest{Record: noticed, ReplaceWhenPreempted: true, Digest: "d1", DigestKnown: true}, Replace, "interruption", "Replacing a preempted GPU machine"},
		{"preempted (error at the cloud), replace_when_preempted", ChangeRequest{Record: with(noticed, func(r *Record) { r.Status = cloudprovider.StatusError }), ReplaceWhenPreempted: true, Digest: "d1", DigestKnown: true}, Replace, "interruption", "Replacing a preempted GPU machine"},
		{"preempted, replace_when_preempted off: said, kept", ChangeRequest{Record: with(noticed, func(r *Record) { r.Status = cloudprovider.StatusError }), Digest: "d1", DigestKnown: true}, Keep, "", "Preempted GPU machine"},
		{"preempted and unhealthy: the interruption decides", ChangeRequest{Record: with(unhealthy, func(r *Record) { r.Interruption = noticed.Interruption }), ReplaceWhenUnhealthy: true, ReplaceWhenPreempted: true, Digest: "d1", DigestKnown: true}, Replace, "interruption", "Replacing a preempted GPU machine"},
	}
	cp := New(testInventory(t), nil, Options{Provisioner: &scriptedProvisioner{}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := cp.PlanChange(tc.req)
			var summaries []string
			for _, n := range p.Notices {
				summaries = append(summaries, n.Summary)
			}
			if p.Change != tc.want || p.ReplaceBecause != tc.wantBecause || strings.Join(summaries, "; ") != tc.wantNotice {
				t.Errorf("PlanChange = %+v, want change %d because %q, notice %q", p, tc.want, tc.wantBecause, tc.wantNotice)
			}
		})
	}
}

// Fleet.Choose's promise: a name asked again gets the same answer, ok included, even when nothing
// was left for it.
func TestFleetChooseAskedAgain(t *testing.T) {
	f := NewFleet(time.Millisecond)
	ctx := context.Background()
	only := []cloudprovider.Offer{{ID: "one-left", Cloud: "verda", Region: "FIN-01", InstanceType: "1H100", PricePerHour: usd(2), Available: 1}}
	other := []cloudprovider.Offer{{ID: "elsewhere", Cloud: "verda", Region: "FIN-02", InstanceType: "1H100", PricePerHour: usd(3), Available: -1}}
	for _, name := range []string{"a", "b"} {
		first, ok1, err1 := f.Choose(ctx, name, only)
		again, ok2, err2 := f.Choose(ctx, name, other)
		if err1 != nil || err2 != nil || ok1 != ok2 || first.Offer.ID != again.Offer.ID || len(first.Passed) != len(again.Passed) {
			t.Errorf("%s: first %+v %v, asked again %+v %v; want the same answer", name, first, ok1, again, ok2)
		}
	}
	if _, ok, _ := f.Choose(ctx, "b", only); ok {
		t.Error("b, whose stock a took, was told ok when asked again")
	}
}

// Closest's promise: each cloud is asked at most once per process; relaxing clouds asks a cloud the
// request left out, once.
func TestClosestAsksEachCloudOnce(t *testing.T) {
	verda := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{offer("FIN-01", "1H100", 1, 2.49)}}
	atlas := &fakeBackend{cloud: "atlas", offers: []cloudprovider.Offer{offer("atl-1", "h100.1", 1, 1.20)}}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{verda, atlas}, Options{})
	req := OfferRequest{GPUType: "h100", GPUCount: 1, Kind: "vm", Clouds: []string{"verda"}, MaxPricePerHour: usd(2)}
	if _, err := cp.Offers(context.Background(), req, false); err != nil {
		t.Fatal(err)
	}
	if n := atlas.calls.Load(); n != 0 {
		t.Fatalf("a cloud the request left out was asked %d times", n)
	}
	for range 2 {
		var got []string
		for _, n := range cp.Closest(context.Background(), req) {
			got = append(got, n.String())
		}
		if !strings.Contains(strings.Join(got, "\n"), "on any configured cloud: atlas-vm-pool/atl-1/h100.1/ondemand@1.20") {
			t.Errorf("Closest = %q, want atlas's offer with clouds relaxed", got)
		}
	}
	if v, a := verda.calls.Load(), atlas.calls.Load(); v != 1 || a != 1 {
		t.Errorf("offer requests: verda %d, atlas %d; want one each", v, a)
	}
}

// WaitRunning's promise: the wait ends when the cloud says running, with or without an SSH endpoint.
func TestWaitRunningDoesNotWaitForSSH(t *testing.T) {
	b := &fakeBackend{cloud: "verda"}
	inst := b.put(cloudprovider.Instance{Name: "verda-vm-x--abcdefgh", Status: cloudprovider.StatusRunning, CloudStatus: "running"})
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst.Status = cloudprovider.StatusPending
	got, err := cp.WaitRunning(ctx, inst, nil)
	if err != nil || got.Status != cloudprovider.StatusRunning || got.SSH != nil {
		t.Fatalf("WaitRunning = %+v, %v; want running, no endpoint", got, err)
	}
}

// OfferID's promise: the ID carries everything the plan shows, so it is read back whole; and apply
// asks the cloud once more (LaunchOffers) for what the ID does not carry and for a price rise.
func TestOfferIDIsAQuoteThatApplyChecks(t *testing.T) {
	o := offer("FIN-01", "1H100", 1, 2.49)
	o.Pool, o.Spot = "verda-vm-pool", true
	p, err := ParseOfferID(OfferID(o))
	if err != nil || p.Pool != o.Pool || p.Region != o.Region || p.InstanceType != o.InstanceType || !p.Spot || p.PricePerHour != o.PricePerHour {
		t.Fatalf("ParseOfferID(OfferID) = %+v, %v", p, err)
	}
	listed := offer("FIN-01", "1H100", 1, 2.49)
	listed.Details = map[string]string{"upstream_id": "u-1"}
	b := &fakeBackend{cloud: "verda", offers: []cloudprovider.Offer{listed}}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{})
	req := h100Request()
	if _, err := cp.Offers(context.Background(), req, false); err != nil {
		t.Fatal(err)
	}
	got, err := cp.LaunchOffers(context.Background(), req, "verda-vm-pool/FIN-01/1H100/ondemand@2.49")
	if err != nil || len(got) != 1 || got[0].Details["upstream_id"] != "u-1" {
		t.Fatalf("LaunchOffers = %+v, %v; want the pinned offer with the details the ID lacks", got, err)
	}
	if n := b.calls.Load(); n != 2 {
		t.Errorf("the cloud was asked %d times, want twice (plan, then apply)", n)
	}
}

// Every mismatch of a pinned offer is worded with the attribute it concerns; a pool that is not
// configured gets its own words.
func TestMismatchDetail(t *testing.T) {
	for _, tc := range []struct{ field, want string }{
		{"form_factor", "does not fit this resource's `form_factor`"},
		{"gpu_type", "does not fit this resource's `gpu_type`"},
		{"kind", "does not fit this resource's `kind`"},
		{"pool", "does not fit: it names pool \"x\", which is not configured. Pin an offer of a configured pool"},
	} {
		msg := "it names pool \"x\", which is not configured"
		if got := MismatchDetail(&MismatchError{OfferID: "x/r/t/ondemand@1.00", Field: tc.field, Msg: msg}); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.field, got, tc.want)
		}
	}
	if got := MismatchDetail(errors.New("plain")); got != "plain" {
		t.Errorf("a plain error: %q", got)
	}
}

// max_price_per_hour has one check: ParseMaxPrice for the configuration, the same bounds in Validate.
func TestMaxPriceOneCheck(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want money.USD
		err  string
	}{
		{2.5, usd(2.5), ""},
		{0.01, money.Cent, ""},
		{1_000_000, MaxMaxPrice, ""},
		{0.001, 0, "expected US dollars per hour from 0.01 to 1000000"},
		{1e15, 0, "expected US dollars per hour from 0.01 to 1000000"},
		{-1, 0, "expected US dollars per hour from 0.01 to 1000000"},
		{2.0000001, 0, "more than six digits after the decimal point"},
	} {
		got, err := ParseMaxPrice(tc.f)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseMaxPrice(%v) = %s, %v; want %s, %q", tc.f, got, err, tc.want, tc.err)
		}
	}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda"}}, Options{})
	for _, tc := range []struct {
		cap money.USD
		ok  bool
	}{{0, true}, {money.Cent, true}, {MaxMaxPrice, true}, {money.Cent - 1, false}, {MaxMaxPrice + 1, false}} {
		req := h100Request()
		req.MaxPricePerHour = tc.cap
		var re *RequestError
		if err := cp.Validate(req); tc.ok != (err == nil) || err != nil && (!errors.As(err, &re) || re.Field != "max_price_per_hour") {
			t.Errorf("Validate with a cap of %s: %v", tc.cap, err)
		}
	}
}

// offer_details keeps what a buyer weighs and leaves out what repeats the plan or only the cloud needs.
func TestShownDetails(t *testing.T) {
	o := cloudprovider.Offer{Region: "US-KS-2", InstanceType: "H100_80GB.SXM5.1x", CloudGPU: "H100_80GB", Details: map[string]string{
		"cloud_id": "abc", "auction_fid": "auc_1", "region": "US-KS-2", "gpu_type": "H100_80GB", "provider": "hyperstack",
		"security": "secure_cloud", "disk_price_per_hour": "0.0001", "empty": "",
	}}
	got := ShownDetails(o)
	want := map[string]string{"provider": "hyperstack", "security": "secure_cloud", "disk_price_per_hour": "0.0001"}
	if !maps.Equal(got, want) {
		t.Errorf("ShownDetails = %v, want %v", got, want)
	}
}

// Observe follows the cloud, except that a running machine keeps the status the control plane gave it.
func TestRecordObserve(t *testing.T) {
	ep := &cloudprovider.SSHEndpoint{Host: "10.0.0.1", Port: 22, User: "root"}
	for _, tc := range []struct {
		name   string
		rec    Record
		inst   cloudprovider.Instance
		want   cloudprovider.Status
		wantEP *cloudprovider.SSHEndpoint
	}{
		{"new and booting", Record{}, cloudprovider.Instance{Status: cloudprovider.StatusPending}, cloudprovider.StatusPending, nil},
		{"runs", Record{Status: cloudprovider.StatusPending}, cloudprovider.Instance{Status: cloudprovider.StatusRunning, SSH: ep}, cloudprovider.StatusRunning, ep},
		{"ready stays ready", Record{Status: cloudprovider.StatusReady, SSH: ep}, cloudprovider.Instance{Status: cloudprovider.StatusRunning}, cloudprovider.StatusReady, ep},
		{"provisioning stays provisioning", Record{Status: cloudprovider.StatusProvisioning}, cloudprovider.Instance{Status: cloudprovider.StatusRunning}, cloudprovider.StatusProvisioning, nil},
		{"failed provisioning stays error", Record{Status: cloudprovider.StatusError, ProvisioningError: "task x"}, cloudprovider.Instance{Status: cloudprovider.StatusRunning}, cloudprovider.StatusError, nil},
		{"a cloud error that cleared runs again", Record{Status: cloudprovider.StatusError}, cloudprovider.Instance{Status: cloudprovider.StatusRunning}, cloudprovider.StatusRunning, nil},
		{"ready, then stopped at the cloud", Record{Status: cloudprovider.StatusReady}, cloudprovider.Instance{Status: cloudprovider.StatusPending}, cloudprovider.StatusPending, nil},
		{"ready, then failed at the cloud", Record{Status: cloudprovider.StatusReady}, cloudprovider.Instance{Status: cloudprovider.StatusError}, cloudprovider.StatusError, nil},
		{"terminated", Record{Status: cloudprovider.StatusReady}, cloudprovider.Instance{Status: cloudprovider.StatusTerminated}, cloudprovider.StatusTerminated, nil},
	} {
		r := tc.rec
		r.Observe(tc.inst)
		if r.Status != tc.want || (r.SSH == nil) != (tc.wantEP == nil) || r.SSH != nil && *r.SSH != *tc.wantEP {
			t.Errorf("%s: status %s, SSH %v; want %s, %v", tc.name, r.Status, r.SSH, tc.want, tc.wantEP)
		}
	}
}

// On a cloud that cannot record confirmation, a machine with this name's derived token that the state
// does not hold may be this configuration's cut-short create or another state's: the plan refuses,
// saying so, with the exact import command; a pinned plan only warns.
func TestPlanNewUnrecordedLeftover(t *testing.T) {
	cp, b := planCloud(t)
	name := "verda-vm-mine" + cloudprovider.TokenSeparator + cloudprovider.OwnerToken("mine", 0)
	b.put(cloudprovider.Instance{Name: name, Status: cloudprovider.StatusRunning, CreatedAt: time.Now()})
	_, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "mine", Request: h100Request()})
	var rf *Refusal
	if !errors.As(err, &rf) || !strings.Contains(rf.Detail, "cannot record whether a Terraform state holds it") ||
		!strings.Contains(rf.Detail, `terraform import <address of the hydra_gpu_instance named "mine"> `+name) {
		t.Fatalf("PlanNew = %v, want a refusal naming the import command for %s", err, name)
	}
	p, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "mine", Request: h100Request(), OfferID: "verda-vm-pool/FIN-01/1H100/ondemand@2.49"})
	if err != nil || len(p.Notices) == 0 || !strings.Contains(p.Notices[0].Detail, name) {
		t.Fatalf("a pinned plan must only warn, naming %s: %+v, %v", name, p.Notices, err)
	}
}

// Where the plan must not refuse a name in use (NameRefusedAtApply: it may be a destroy's refresh), it
// warns and its quote carries the refusal to the create, which refuses while the machine is there.
func TestPlanNewNameRefusedAtApply(t *testing.T) {
	cp, b := planCloud(t)
	p, err := cp.PlanNew(context.Background(), NewPlanRequest{Name: "taken", Request: h100Request(), NameRefusedAtApply: true})
	if err != nil {
		t.Fatalf("PlanNew = %v, want a warning only", err)
	}
	if len(p.Notices) == 0 || !strings.Contains(p.Notices[0].Summary, "GPU instance name already in use; apply refuses this create") ||
		!strings.Contains(p.Notices[0].Detail, "verda-vm-taken--abcdefgh") {
		t.Fatalf("notices %+v, want the refusal as a warning naming the machine", p.Notices)
	}
	if p.NewQuote == nil || p.NewQuote.NameInUse == nil {
		t.Fatalf("the quote must carry the refusal: %+v", p.NewQuote)
	}
	in := p.NewQuote.NameInUse
	if len(in.IDs) != 1 || in.Summary != "GPU instance name already in use" {
		t.Fatalf("the quote carries %+v, want the one machine's refusal", in)
	}
	if !cp.NameStillInUse(context.Background(), "taken", "vm", nil, in) {
		t.Fatal("NameStillInUse = false while the machine is there")
	}
	if err := b.Delete(context.Background(), in.IDs[0]); err != nil {
		t.Fatal(err)
	}
	// A later walk (its own control plane: listings are shared within one) sees it gone.
	later := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{})
	if later.NameStillInUse(context.Background(), "taken", "vm", nil, in) {
		t.Fatal("NameStillInUse = true once the machine is gone")
	}
	if cp.NameStillInUse(context.Background(), "a", "vm", nil, nil) {
		t.Fatal("NameStillInUse(nil) = true")
	}
}

// A refresh records the cloud's interruption: an undated notice keeps the time hydra first saw it, a
// dated one the cloud's, and a notice taken back (a bid that won its capacity back) clears it.
func TestObserveInterruption(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var r Record
	r.observeInterruption(&cloudprovider.Interruption{Reason: "discontinued"}, t0)
	r.observeInterruption(&cloudprovider.Interruption{Reason: "discontinued"}, t0.Add(time.Minute))
	if r.Interruption == nil || !r.Interruption.NoticeAt.Equal(t0) || r.Interruption.Reason != "discontinued" {
		t.Errorf("undated notice: %+v", r.Interruption)
	}
	dated := cloudprovider.Interruption{NoticeAt: t0.Add(-time.Hour), EndsAt: t0.Add(5 * time.Minute), Reason: "preempting"}
	r.observeInterruption(&dated, t0.Add(2*time.Minute))
	if *r.Interruption != dated {
		t.Errorf("dated notice: %+v", r.Interruption)
	}
	r.observeInterruption(nil, t0.Add(3*time.Minute))
	if r.Interruption != nil {
		t.Errorf("won back: %+v", r.Interruption)
	}
}

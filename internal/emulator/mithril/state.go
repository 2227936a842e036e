package mithril

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// state is the whole emulated cloud. With a state dir it lives in state.json and every request loads
// and saves it under an exclusive file lock. Every status progression is computed from timestamps
// stored here, never from timers, so it survives process restarts.
type state struct {
	Projects  []*project  `json:"projects"`
	Auctions  []*auction  `json:"auctions"`
	Bids      []*bid      `json:"bids"`
	Instances []*instance `json:"instances"`
	SSHKeys   []*sshKey   `json:"ssh_keys"`
	// Volumes are the projects' volumes, deleted ones too (volumes.go).
	Volumes  []*volume         `json:"volumes"`
	Faults   simulation.Faults `json:"faults"`
	Own      OwnFaults         `json:"mithril_faults"`
	Seq      int64             `json:"seq"`
	Created  int               `json:"bids_created"`
	Hosts    int               `json:"hosts"`
	Settings settings          `json:"settings"`
}

// settings copy the Options that must agree between processes sharing a state dir.
type settings struct {
	BootDuration     time.Duration `json:"boot_duration"`
	StopDuration     time.Duration `json:"stop_duration"`
	PreemptionWindow time.Duration `json:"preemption_window"`
	SSHDestination   string        `json:"ssh_destination,omitempty"`
	PrivateNet       string        `json:"private_net,omitempty"`
}

type project struct {
	FID       string    `json:"fid"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Market    bool      `json:"market,omitempty"`
}

type auction struct {
	FID            string `json:"fid"`
	TypeFID        string `json:"instance_type_fid"`
	Name           string `json:"name"`
	GPUType        string `json:"gpu_type"`
	NumGPUs        int    `json:"num_gpus"`
	GPUMemoryGB    int    `json:"gpu_memory_gb"`
	GPUSocket      string `json:"gpu_socket"`
	NumCPUs        int    `json:"num_cpus"`
	RAMGB          int    `json:"ram_gb"`
	LocalStorageGB int    `json:"local_storage_gb"`
	Region         string `json:"region"`
	Capacity       int    `json:"capacity"`
	MinimumCents   int64  `json:"minimum_cents"`
	LastPriceCents int64  `json:"last_price_cents"`
}

// resource is what a bid and an instance both are: a fid, their place in the order of creation (seq),
// a name, the project and user they were created in and by, and when.
type resource struct {
	FID       string    `json:"fid"`
	Seq       int64     `json:"seq"`
	Name      string    `json:"name"`
	Project   string    `json:"project"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

type bid struct {
	resource
	DeactivatedAt *time.Time `json:"deactivated_at,omitempty"`
	LimitCents    int64      `json:"limit_cents"`
	Quantity      int        `json:"instance_quantity"`
	TypeFID       string     `json:"instance_type"`
	Region        string     `json:"region"`
	Instances     []string   `json:"instances"`
	SSHKeys       []string   `json:"ssh_keys"`
	Volumes       []string   `json:"volumes"`
	StartupScript string     `json:"startup_script,omitempty"`
	ImageVersion  string     `json:"image_version,omitempty"`
	Status        string     `json:"status"`
	PreemptAt     *time.Time `json:"preempt_at,omitempty"`
	// Held marks an open bid placed below the lowest winning bid of its auction: it stays Open, out of
	// the ranking, until its limit price reaches the lowest winning bid (or no bid is allocated).
	Held bool `json:"held,omitempty"`
	// Outbid marks a bid that other customers' bids keep out of the auction (OwnFaults.OutbidOnArrival):
	// it stays Open until cancelled.
	Outbid bool `json:"outbid,omitempty"`
}

type instance struct {
	resource
	Bid          string     `json:"bid"`
	TypeFID      string     `json:"instance_type"`
	Region       string     `json:"region"`
	ReadyAt      time.Time  `json:"ready_at"`
	Fail         bool       `json:"fail,omitempty"`
	SSHDest      string     `json:"ssh_destination"`
	PrivateIP    string     `json:"private_ip"`
	PreemptingAt *time.Time `json:"preempting_at,omitempty"`
	PreemptedAt  *time.Time `json:"preempted_at,omitempty"`
	StoppingAt   *time.Time `json:"stopping_at,omitempty"`
	TerminatedAt *time.Time `json:"terminated_at,omitempty"`
}

type sshKey struct {
	FID       string    `json:"fid"`
	Name      string    `json:"name"`
	Project   string    `json:"project"`
	PublicKey string    `json:"public_key"`
	CreatedAt time.Time `json:"created_at"`
	Required  bool      `json:"required"`
}

// Bid and instance status words.
const (
	bidOpen       = "Open"
	bidAllocated  = "Allocated"
	bidPreempting = "Preempting"
	bidPaused     = "Paused"
	bidTerminated = "Terminated"
)

const marketProject = "proj_market0000000000"

// status computes an instance's status at now from its timestamps.
func (in *instance) status(now time.Time) string {
	switch {
	case in.TerminatedAt != nil && !now.Before(*in.TerminatedAt):
		return "STATUS_TERMINATED"
	case in.StoppingAt != nil:
		return "STATUS_STOPPING"
	case in.PreemptedAt != nil && !now.Before(*in.PreemptedAt):
		return "STATUS_PREEMPTED"
	case in.PreemptingAt != nil:
		return "STATUS_PREEMPTING"
	case now.Before(in.CreatedAt.Add(time.Second)) && now.Before(in.ReadyAt):
		return "STATUS_NEW"
	case now.Before(in.ReadyAt):
		return "STATUS_STARTING"
	case in.Fail:
		return "STATUS_ERROR"
	}
	return "STATUS_RUNNING"
}

// live says whether an instance still holds its machine.
func (in *instance) live(now time.Time) bool {
	switch in.status(now) {
	case "STATUS_TERMINATED", "STATUS_PREEMPTED":
		return false
	}
	return true
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomFID makes an opaque FID with its prefix ("bid_" + 16 letters and digits).
func randomFID(prefix string) string {
	b := make([]byte, 16)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alnum))))
		if err != nil {
			panic(err)
		}
		b[i] = alnum[n.Int64()]
	}
	return prefix + string(b)
}

// stableFID makes a FID that depends only on its seed, so catalogs agree across processes.
func stableFID(prefix, seed string) string {
	sum := sha256.Sum256([]byte(seed))
	b := make([]byte, 16)
	for i := range b {
		b[i] = alnum[int(sum[i])%len(alnum)]
	}
	return prefix + string(b)
}

func newState(o Options, now time.Time) *state {
	st := &state{Settings: settings{BootDuration: o.BootDuration, StopDuration: o.StopDuration, PreemptionWindow: o.PreemptionWindow, SSHDestination: o.SSHDestination, PrivateNet: o.PrivateNet}}
	for _, name := range o.Projects {
		st.Projects = append(st.Projects, &project{FID: stableFID("proj_", "project/"+name), Name: name, CreatedAt: now.Add(-24 * time.Hour)})
	}
	st.Projects = append(st.Projects, &project{FID: marketProject, Name: "other customers", CreatedAt: now.Add(-24 * time.Hour), Market: true})
	for _, off := range o.Catalog {
		a := &auction{
			FID: stableFID("auc_", "auction/"+off.Region+"/"+off.Name), TypeFID: stableFID("it_", "type/"+off.Region+"/"+off.Name),
			Name: off.Name, GPUType: off.GPUType, NumGPUs: off.NumGPUs, GPUMemoryGB: off.GPUMemoryGB, GPUSocket: off.GPUSocket,
			NumCPUs: off.NumCPUs, RAMGB: off.RAMGB, LocalStorageGB: off.LocalStorageGB, Region: off.Region,
			Capacity: off.Capacity, MinimumCents: off.MinimumCents, LastPriceCents: off.LastPriceCents,
		}
		st.Auctions = append(st.Auctions, a)
		// The market's bids are placed together, an hour ago, and the auction cleared once: each wins
		// by its rank alone.
		for i, price := range off.MarketBids {
			st.addBid(marketBid(fmt.Sprintf("market-%s-%d", off.Name, i), a, price, now.Add(-time.Hour)))
		}
		st.clear(a, now.Add(-time.Hour))
		// The market's own allocations do not move the published last price.
		a.LastPriceCents = off.LastPriceCents
	}
	return st
}

func (st *state) nextSeq() int64 {
	st.Seq++
	return st.Seq
}

// first is the first of list that match accepts (nil when none does).
func first[T any](list []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(list, match); i >= 0 {
		return list[i]
	}
	return nil
}

func (st *state) auctionFor(typeFID, region string) *auction {
	return first(st.Auctions, func(a *auction) bool { return a.TypeFID == typeFID && (region == "" || a.Region == region) })
}

func (st *state) bidByFID(fid string) *bid {
	return first(st.Bids, func(b *bid) bool { return b.FID == fid })
}

func (st *state) instanceByFID(fid string) *instance {
	return first(st.Instances, func(in *instance) bool { return in.FID == fid })
}

func (st *state) project(fid string) *project {
	return first(st.Projects, func(p *project) bool { return p.FID == fid })
}

// placeBid adds an open bid and runs its auction. A new bid must beat the lowest winning bid to be
// allocated, as Mithril documents: one placed below it is held Open (bid.Held), even with capacity free.
func (st *state) placeBid(b *bid, now time.Time) {
	a := st.auctionFor(b.TypeFID, b.Region)
	if a != nil {
		if low := st.stats(a).lowestAllocated; low > 0 && b.LimitCents < low {
			b.Held = true
		}
	}
	st.addBid(b)
	if a != nil {
		st.clear(a, now)
	}
}

// addBid adds an open bid without running its auction.
// marketBid is another customer's one-instance bid in auction a, placed at a limit price (cents) at a
// time.
func marketBid(name string, a *auction, limitCents int64, at time.Time) *bid {
	return &bid{resource: resource{Name: name, Project: marketProject, CreatedBy: "user_market", CreatedAt: at},
		LimitCents: limitCents, Quantity: 1, TypeFID: a.TypeFID, Region: a.Region}
}

func (st *state) addBid(b *bid) {
	b.Seq = st.nextSeq()
	if b.FID == "" {
		b.FID = randomFID("bid_")
	}
	b.Status = bidOpen
	if b.Instances == nil {
		b.Instances = []string{}
	}
	st.Bids = append(st.Bids, b)
}

// advance applies every time-driven change up to now: armed preemptions fire, preemption windows that
// ended put their bids back to Open (the instances are preempted), then every auction clears again.
func (st *state) advance(now time.Time) {
	for _, b := range st.Bids {
		if st.Own.Preemptions <= 0 {
			break
		}
		if b.Project != marketProject && b.Status == bidAllocated {
			st.preempt(b, now)
			st.Own.Preemptions--
		}
	}
	for _, b := range st.Bids {
		if b.Status == bidPreempting && b.PreemptAt != nil && !now.Before(*b.PreemptAt) {
			b.Status = bidOpen
			b.Instances = []string{}
			b.PreemptAt = nil
		}
	}
	for _, a := range st.Auctions {
		st.clear(a, now)
	}
}

// held is how many instances the auction's bids in these statuses hold.
func (st *state) held(a *auction, statuses ...string) int {
	n := 0
	for _, b := range st.Bids {
		if b.TypeFID != a.TypeFID || b.Region != a.Region {
			continue
		}
		for _, s := range statuses {
			if b.Status == s {
				n += b.Quantity
			}
		}
	}
	return n
}

// clear runs the sealed second-price auction of one instance type in one region. Open and Allocated
// bids are ranked by limit price (an allocated bid keeps its place against an equal newer one, then
// older first); the top bids that fit the capacity win. Allocated bids that no longer win go
// Preempting for the preemption window; winning open bids are allocated as soon as capacity is free.
// Held bids (placed below the lowest winning bid) are not ranked: they are released once their limit
// reaches the lowest winning bid or no bid is allocated. Bids below the auction's minimum never win, and
// an auction of capacity 0 allocates nothing. Winners pay the highest losing limit price (held bids
// included; or the minimum), which becomes the last clearing price.
func (st *state) clear(a *auction, now time.Time) {
	low := st.stats(a).lowestAllocated
	var active, holding []*bid
	for _, b := range st.Bids {
		if b.TypeFID != a.TypeFID || b.Region != a.Region || (b.Status != bidOpen && b.Status != bidAllocated) {
			continue
		}
		if (b.Held && b.Status == bidOpen && low > 0 && b.LimitCents < low) || (b.Outbid && b.Status == bidOpen) {
			holding = append(holding, b)
			continue
		}
		b.Held = false
		active = append(active, b)
	}
	sort.SliceStable(active, func(i, j int) bool {
		x, y := active[i], active[j]
		if x.LimitCents != y.LimitCents {
			return x.LimitCents > y.LimitCents
		}
		if (x.Status == bidAllocated) != (y.Status == bidAllocated) {
			return x.Status == bidAllocated
		}
		return x.Seq < y.Seq
	})
	// Winners are ranked over the whole capacity: a preempting bid's slot already belongs to the bid
	// that outbid it, so it must not make a further incumbent lose.
	room := a.Capacity
	winners := map[*bid]bool{}
	losers := holding
	for _, b := range active {
		if b.LimitCents >= a.MinimumCents && b.Quantity <= room {
			winners[b] = true
			room -= b.Quantity
		} else {
			losers = append(losers, b)
		}
	}
	for _, b := range active {
		if b.Status == bidAllocated && !winners[b] {
			st.preempt(b, now)
		}
	}
	free := a.Capacity - st.held(a, bidPreempting, bidAllocated)
	clearing := a.MinimumCents
	for _, b := range losers {
		if b.LimitCents > clearing && b.LimitCents >= a.MinimumCents {
			clearing = b.LimitCents
		}
	}
	allocated := false
	for _, b := range active {
		if b.Status != bidOpen || !winners[b] || b.Quantity > free {
			continue
		}
		free -= b.Quantity
		b.Status = bidAllocated
		allocated = true
		for i := 0; i < b.Quantity; i++ {
			st.allocate(a, b, i, now)
		}
	}
	if allocated {
		a.LastPriceCents = clearing
	}
}

// preempt starts the preemption window of an allocated bid: the bid goes Preempting and its live
// instances STATUS_PREEMPTING until the window ends.
func (st *state) preempt(b *bid, now time.Time) { st.preemptFor(b, now, 0) }

// preemptFor is preempt with a window of its own (0: the settings' PreemptionWindow).
func (st *state) preemptFor(b *bid, now time.Time, window time.Duration) {
	end := now.Add(cmp.Or(window, st.Settings.PreemptionWindow))
	b.Status, b.PreemptAt = bidPreempting, &end
	for _, fid := range b.Instances {
		if in := st.instanceByFID(fid); in != nil && in.live(now) {
			start := now
			in.PreemptingAt, in.PreemptedAt = &start, &end
		}
	}
}

// allocate starts one instance of a winning bid.
func (st *state) allocate(a *auction, b *bid, i int, now time.Time) {
	st.Hosts++
	boot := st.Settings.BootDuration
	fail := false
	if b.Project != marketProject {
		boot += time.Duration(st.Own.SlowBoot)
		fail = st.Faults.TakeBootFailure()
	} else {
		boot = 0
	}
	private := fmt.Sprintf("%s.%d.%d", cmp.Or(st.Settings.PrivateNet, "10.0"), (st.Hosts>>8)&255, st.Hosts&255)
	in := &instance{
		resource: resource{FID: randomFID("inst_"), Seq: st.nextSeq(), Name: fmt.Sprintf("%s-%d", b.Name, i), Project: b.Project,
			CreatedBy: b.CreatedBy, CreatedAt: now},
		Bid: b.FID, TypeFID: a.TypeFID, Region: a.Region, ReadyAt: now.Add(boot), Fail: fail,
		SSHDest: st.Settings.sshDestination(st.Hosts, private), PrivateIP: private,
	}
	st.Instances = append(st.Instances, in)
	b.Instances = append(b.Instances, in.FID)
}

// sshDestination is the ssh_destination of the n-th machine, whose private address is private:
// Options.SSHDestination when set (a loopback sshd in tests; "{private_ip}" in it stands for private),
// else an address of TEST-NET-3.
func (s settings) sshDestination(n int, private string) string {
	if s.SSHDestination != "" {
		return strings.ReplaceAll(s.SSHDestination, "{private_ip}", private)
	}
	return fmt.Sprintf("203.0.113.%d", 1+(n-1)%254)
}

// cancel terminates a bid, stops its instances and runs its auction again.
func (st *state) cancel(b *bid, now time.Time) {
	st.terminate(b, now)
	if a := st.auctionFor(b.TypeFID, b.Region); a != nil {
		st.clear(a, now)
	}
}

// terminate cancels a bid and stops its instances, without running its auction.
func (st *state) terminate(b *bid, now time.Time) {
	b.Status, b.Held = bidTerminated, false
	t := now
	b.DeactivatedAt = &t
	b.PreemptAt = nil
	for _, fid := range b.Instances {
		in := st.instanceByFID(fid)
		if in == nil || !in.live(now) {
			continue
		}
		stop := now
		end := now.Add(st.Settings.StopDuration)
		in.StoppingAt, in.TerminatedAt = &stop, &end
	}
}

// stats are an auction's public signals at now. winPrice is the least limit price a new bid needs to
// be allocated now: the minimum, and at least the lowest winning bid (a new bid below it is held), or a
// cent more when the auction is full (it must outrank the lowest winning bid).
type stats struct {
	available       int
	lowestAllocated int64 // 0: none
	winPrice        int64
}

func (st *state) stats(a *auction) stats {
	s := stats{available: max(0, a.Capacity-st.held(a, bidAllocated, bidPreempting))}
	for _, b := range st.Bids {
		if b.TypeFID == a.TypeFID && b.Region == a.Region && b.Status == bidAllocated {
			if s.lowestAllocated == 0 || b.LimitCents < s.lowestAllocated {
				s.lowestAllocated = b.LimitCents
			}
		}
	}
	s.winPrice = a.MinimumCents
	switch {
	case s.lowestAllocated > 0 && s.available == 0:
		s.winPrice = max(a.MinimumCents, s.lowestAllocated+1)
	case s.lowestAllocated > 0:
		s.winPrice = max(a.MinimumCents, s.lowestAllocated)
	}
	return s
}

package mithril

import (
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestEvaluateStatusTable(t *testing.T) {
	inv := backendtest.Inventory(t)
	b := &Backend{inv: inv, types: map[string]InstanceType{"it_a": {FID: "it_a", Name: "h100-80gb.sxm.8x", NumGPUs: OptInt{8, true}}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	inst := func(status, dest string, age time.Duration) Instance {
		return Instance{FID: "inst_" + status, Bid: "bid_x", Status: status, SSHDestination: dest, CreatedAt: APITime{t0.Add(age)}}
	}
	P, R, T, E := cloudprovider.StatusPending, cloudprovider.StatusRunning, cloudprovider.StatusTerminated, cloudprovider.StatusError
	tests := []struct {
		bid    string
		insts  []Instance
		want   cloudprovider.Status
		cancel bool
	}{
		{BidOpen, nil, P, false},
		{"open", nil, P, false},
		{BidAllocated, nil, P, false},
		{BidAllocated, []Instance{inst(InstNew, "", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstConfirmed, "", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstInitializing, "", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstStarting, "", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstRunning, "", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstRunning, "1.2.3.4", 0)}, R, false},
		{BidAllocated, []Instance{inst("status_running", "1.2.3.4", 0)}, R, false},
		{BidAllocated, []Instance{inst(InstRelocating, "1.2.3.4", 0)}, P, false},
		{BidAllocated, []Instance{inst(InstError, "", 0)}, E, false},
		{BidAllocated, []Instance{inst("STATUS_FAILED", "", 0)}, E, false},
		{BidAllocated, []Instance{inst(InstPaused, "", 0)}, E, false},
		{BidAllocated, []Instance{inst("STATUS_SOMETHING_NEW", "", 0)}, P, false},
		// The machine is gone while the bid is open: an error (the bid must be cancelled), never terminated.
		{BidAllocated, []Instance{inst(InstPreempting, "1.2.3.4", 0)}, E, true},
		{BidPreempting, []Instance{inst(InstRunning, "1.2.3.4", 0)}, E, true},
		{BidPreempting, nil, E, true},
		{BidOpen, []Instance{inst(InstPreempted, "", 0)}, E, true},
		{BidOpen, []Instance{inst(InstTerminated, "", 0)}, E, true},
		// Once preempted, a replacement Mithril allocates the open bid is not hydra's machine.
		{BidAllocated, []Instance{inst(InstPreempted, "", 0), inst(InstRunning, "1.2.3.4", time.Minute)}, E, true},
		{BidTerminated, []Instance{inst(InstPreempted, "", 0), inst(InstStopping, "", time.Minute)}, T, false},
		// A replaced instance with a newer live one: the live one counts.
		{BidAllocated, []Instance{inst(InstReplaced, "", 0), inst(InstRunning, "1.2.3.4", time.Minute)}, R, false},
		{BidAllocated, []Instance{inst(InstReplaced, "", 0)}, E, true},
		{BidPaused, nil, E, false},
		{BidTerminated, nil, T, false},
		{BidTerminated, []Instance{inst(InstStopping, "", 0)}, P, false},
		{BidTerminated, []Instance{inst(InstRunning, "1.2.3.4", 0)}, P, false},
		{BidTerminated, []Instance{inst(InstTerminated, "", 0)}, T, false},
		{BidTerminated, []Instance{inst(InstError, "", 0)}, T, false},
		{"Weird", nil, P, false},
	}
	for _, tt := range tests {
		bid := Bid{FID: "bid_x", Name: "n", Status: tt.bid, InstanceType: "it_a", LimitPrice: DollarPrice{CentsOf(100)}}
		got, cancel := b.evaluate(t.Context(), bid, tt.insts)
		var st []string
		for _, i := range tt.insts {
			st = append(st, i.Status)
		}
		if got.Status != tt.want || cancel != tt.cancel {
			t.Errorf("bid %s instances %v: %s cancel=%v (%s), want %s cancel=%v", tt.bid, st, got.Status, cancel, got.Message, tt.want, tt.cancel)
		}
		if got.Status == R && got.SSH == nil {
			t.Errorf("running without SSH")
		}
		if got.ID != "bid_x" || !got.Spot || got.InstanceType != "h100-80gb.sxm.8x" {
			t.Errorf("instance fields: %+v", got)
		}
	}
}

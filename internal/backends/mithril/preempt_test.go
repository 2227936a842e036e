package mithril

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

// The emulator's preemption notice, as the backend reads it: a notice (bid Preempting, the instance
// STATUS_PREEMPTING) is an interruption ending at the instance's end_time; a bid that wins its capacity
// back within the window is running again with none; one whose window ends is preempted for good.
func TestPreemptionNotice(t *testing.T) {
	for _, winBack := range []bool{true, false} {
		name := "notice, then preempted"
		if winBack {
			name = "notice, then won back"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			ctx := t.Context()
			inst := runningBid(t, e, "mithril-vm-spot--aaaaaaaa")
			if got, err := e.backend.Get(ctx, inst.ID); err != nil || got.Status != cloudprovider.StatusRunning || got.Interruption != nil {
				t.Fatalf("before the notice: %+v %v", got, err)
			}
			// The admin endpoint, as a test in another process would call it; the notice is Mithril's 5 minutes.
			post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "preempt"}, http.StatusOK)
			noticeAt := e.clock.Now()
			got, err := e.backend.Get(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Interruption == nil || !got.Interruption.EndsAt.Equal(noticeAt.Add(5*time.Minute)) || !strings.Contains(got.Interruption.Reason, "STATUS_PREEMPTING") {
				t.Fatalf("during the notice: %+v (interruption %+v)", got, got.Interruption)
			}
			if got.Interruption.Ended(e.clock.Now()) {
				t.Error("the notice has ended at once")
			}
			e.clock.Advance(time.Minute)
			if winBack {
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "win_back"}, http.StatusOK)
				e.clock.Advance(5 * time.Minute)
				got, err = e.backend.Get(ctx, inst.ID)
				if err != nil || got.Status != cloudprovider.StatusRunning || got.Interruption != nil || got.SSH == nil {
					t.Fatalf("won back: %+v %v", got, err)
				}
				// Winning back a bid that is not preempting is refused.
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "win_back"}, http.StatusConflict)
				return
			}
			e.clock.Advance(5 * time.Minute)
			got, err = e.backend.Get(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != cloudprovider.StatusError || got.Interruption == nil || !strings.Contains(got.Interruption.Reason, "STATUS_PREEMPTED") ||
				!got.Interruption.EndsAt.Equal(noticeAt.Add(5*time.Minute)) || !got.Interruption.Ended(e.clock.Now()) {
				t.Fatalf("after the window: %+v (interruption %+v)", got, got.Interruption)
			}
		})
	}
}

// A shortened notice, for tests that wait it out, and an unknown bid.
func TestPreemptionNoticeWindow(t *testing.T) {
	e := newEnv(t, emu.Options{})
	ctx := t.Context()
	inst := runningBid(t, e, "mithril-vm-short--aaaaaaaa")
	if err := e.emu.Preempt(inst.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := e.backend.Get(ctx, inst.ID)
	if err != nil || got.Interruption == nil || !got.Interruption.EndsAt.Equal(e.clock.Now().Add(10*time.Second)) {
		t.Fatalf("short notice: %+v %v", got, err)
	}
	post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: "bid_nosuchbid00000000", Action: "preempt"}, http.StatusNotFound)
	post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: inst.ID, Action: "preempt"}, http.StatusConflict)
}

// runningBid is a one-instance bid of that name whose machine has booted.
func runningBid(t *testing.T, e *env, name string) cloudprovider.Instance {
	t.Helper()
	o := pricedOffer(t, e, "us-central1-a", "a100-80gb.sxm.1x", "2.00")
	inst, err := e.backend.Create(t.Context(), cloudprovider.CreateRequest{Name: name, Pool: backendtest.Pool(t, CloudName), Offer: o})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(bootTime)
	return inst
}

func post(t *testing.T, url string, body any, want int) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d, want %d", url, resp.StatusCode, want)
	}
}

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

// A cluster is one bid for all its instances, so the emulator's preemption notice (the admin
// endpoint, Mithril's 5 minutes) reaches every node at once: each instance STATUS_PREEMPTING with the
// bid's end_time, each node's interruption ending then, the cluster in error; a bid that wins its
// capacity back runs every node again with none; one whose notice ends has no node left, and the
// cluster stays in error, preempted.
func TestClusterPreemptionNotice(t *testing.T) {
	for _, winBack := range []bool{true, false} {
		name := map[bool]string{true: "won back", false: "preempted"}[winBack]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, emu.Options{})
			ctx := t.Context()
			c := spotCluster(t, e)
			e.clock.Advance(bootTime)
			if got, err := e.backend.GetCluster(ctx, c.ID); err != nil || got.Status != cloudprovider.StatusRunning || len(got.Nodes) != 3 {
				t.Fatalf("before the notice: %+v %v", got, err)
			}
			post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: c.ID, Action: "preempt"}, http.StatusOK)
			end := e.clock.Now().Add(5 * time.Minute)
			got, err := e.backend.GetCluster(ctx, c.ID)
			if err != nil || got.Status != cloudprovider.StatusError || len(got.Nodes) != 3 {
				t.Fatalf("during the notice: %+v %v", got, err)
			}
			for _, n := range got.Nodes {
				st, err := e.client.InstanceStatus(ctx, n.ID)
				if err != nil || st.Status != InstPreempting || st.EndTime == nil || !st.EndTime.Equal(end) {
					t.Errorf("instance %s: %+v %v", n.ID, st, err)
				}
				if n.Interruption == nil || !n.Interruption.EndsAt.Equal(end) || !strings.Contains(n.Interruption.Reason, InstPreempting) {
					t.Errorf("node %s: interruption %+v", n.Name, n.Interruption)
				}
			}
			e.clock.Advance(time.Minute)
			if winBack {
				post(t, e.srv.URL+emu.PreemptionsPath, emu.PreemptionChange{Bid: c.ID, Action: "win_back"}, http.StatusOK)
				got, err := e.backend.GetCluster(ctx, c.ID)
				if err != nil || got.Status != cloudprovider.StatusRunning || len(got.Nodes) != 3 {
					t.Fatalf("won back: %+v %v", got, err)
				}
				for _, n := range got.Nodes {
					if n.Interruption != nil || n.Status != cloudprovider.StatusRunning {
						t.Errorf("node %s won back: %+v (interruption %+v)", n.Name, n.Status, n.Interruption)
					}
				}
				return
			}
			e.clock.Advance(5 * time.Minute)
			got, err = e.backend.GetCluster(ctx, c.ID)
			if err != nil || got.Status != cloudprovider.StatusError || !strings.Contains(got.Message, "preempted") {
				t.Fatalf("after the notice: %+v %v", got, err)
			}
			for _, n := range got.Nodes {
				if n.Interruption == nil {
					t.Errorf("node %s after the notice without interruption", n.Name)
				}
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

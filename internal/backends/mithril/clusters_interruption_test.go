package mithril

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
)

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

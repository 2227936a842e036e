package mithril

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// A bid for several instances is allocated all or nothing, is never resized, and its cancel
// terminates every instance.
func TestMultiInstanceBids(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{
		Options: simulation.Options{Now: c.Now, BootDuration: 10 * time.Second},
		Catalog: []Offering{{Name: "h100-80gb.sxm.8x", GPUType: "H100", NumGPUs: 8, Region: "r1", Capacity: 5, MinimumCents: 500, LastPriceCents: 900}},
	})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	fid := s.InstanceTypeFID("r1", "h100-80gb.sxm.8x")
	bid := func(name, price string, quantity int) map[string]any {
		t.Helper()
		body := bidBody(name, fid, "r1", price)
		body["instance_quantity"] = quantity
		var out map[string]any
		if code := call(t, srv.URL, "POST", "/v2/spot/bids", body, &out); code != 201 {
			t.Fatalf("create %s: %d %v", name, code, out)
		}
		return out
	}
	get := func(b map[string]any) map[string]any {
		t.Helper()
		var out map[string]any
		if code := call(t, srv.URL, "GET", "/v2/spot/bids/"+b["fid"].(string), nil, &out); code != 200 {
			t.Fatalf("get: %d", code)
		}
		return out
	}
	instances := func(b map[string]any) []map[string]any {
		t.Helper()
		var page struct {
			Data []map[string]any `json:"data"`
		}
		call(t, srv.URL, "GET", "/v2/instances?project="+ProjectFID(DefaultProject)+"&bid_fid_in="+b["fid"].(string), nil, &page)
		return page.Data
	}

	// Four fit the five slots: all four instances at once.
	four := bid("four", "$10.00", 4)
	if four["status"] != "Allocated" || len(four["instances"].([]any)) != 4 || four["instance_quantity"] != 4.0 {
		t.Fatalf("four instances: %v", four)
	}
	// Three more at the same price do not fit the one slot left (the allocated bid keeps its place): Open
	// with none, never one of three.
	three := bid("three", "$10.00", 3)
	if three["status"] != "Open" || len(three["instances"].([]any)) != 0 || len(instances(three)) != 0 {
		t.Errorf("three instances in one slot: %v", three)
	}
	// Meanwhile a one-instance bid that fits wins the slot.
	if one := bid("one", "$10.00", 1); one["status"] != "Allocated" {
		t.Errorf("one instance in one slot: %v", one)
	}
	// Stats counts machines: four ordered and live, three ordered and none live yet, one bid of one.
	if st, err := s.Stats(); err != nil || st.Created != 8 || len(st.Live) != 5 {
		t.Errorf("stats: %+v %v", st, err)
	} else {
		for _, m := range st.Live {
			if !strings.HasPrefix(m.ID, "inst_") && m.Name != "one" || strings.HasPrefix(m.ID, "inst_") && !strings.HasPrefix(m.Name, "four-") {
				t.Errorf("live machine %+v", m)
			}
		}
	}
	// Each instance runs with its own private address, named after the bid.
	c.Advance(10 * time.Second)
	seen := map[string]bool{}
	for _, in := range instances(four) {
		ip, _ := in["private_ip"].(string)
		if in["status"] != "STATUS_RUNNING" || in["ssh_destination"] == nil || !strings.HasPrefix(ip, "10.") || seen[ip] ||
			!strings.HasPrefix(in["name"].(string), "four-") {
			t.Errorf("instance %v", in)
		}
		seen[ip] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct running instances, want 4", len(seen))
	}
	// PATCH has no instance_quantity (Mithril's UpdateBidRequest): the bid keeps its four.
	var patched map[string]any
	if code := call(t, srv.URL, "PATCH", "/v2/spot/bids/"+four["fid"].(string), map[string]any{"instance_quantity": 6}, &patched); code != 200 ||
		patched["instance_quantity"] != 4.0 || len(patched["instances"].([]any)) != 4 {
		t.Errorf("resize: %d %v", code, patched)
	}
	// Capacity for all three: they are allocated together.
	if err := s.SetCapacity("r1", "h100-80gb.sxm.8x", 8); err != nil {
		t.Fatal(err)
	}
	if got := get(three); got["status"] != "Allocated" || len(got["instances"].([]any)) != 3 {
		t.Errorf("three with room: %v", got)
	}
	// Cancelling a bid terminates all its instances.
	if code := call(t, srv.URL, "DELETE", "/v2/spot/bids/"+four["fid"].(string), nil, nil); code != 204 {
		t.Fatalf("cancel: %d", code)
	}
	for _, in := range instances(four) {
		if in["status"] != "STATUS_TERMINATED" {
			t.Errorf("instance of a cancelled bid: %v", in)
		}
	}
	for _, b := range s.Bids() {
		if b.Name == "four" && (b.Quantity != 4 || b.Status != "Terminated") {
			t.Errorf("admin view: %+v", b)
		}
	}
}

// PrivateNet and a "{private_ip}" SSHDestination give each instance a loopback private address and an
// ssh_destination on it, for one local sshd per node.
func TestPrivateNet(t *testing.T) {
	c := backendtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := New(Options{Options: simulation.Options{Now: c.Now, BootDuration: 10 * time.Second}, PrivateNet: "127.103", SSHDestination: "{private_ip}:2222"})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	body := bidBody("net", s.InstanceTypeFID("us-central1-a", "a100-80gb.sxm.1x"), "us-central1-a", "$2.00")
	body["instance_quantity"] = 2
	var b map[string]any
	if code := call(t, srv.URL, "POST", "/v2/spot/bids", body, &b); code != 201 || b["status"] != "Allocated" {
		t.Fatalf("create: %d %v", code, b)
	}
	c.Advance(10 * time.Second)
	var page struct {
		Data []map[string]any `json:"data"`
	}
	call(t, srv.URL, "GET", "/v2/instances?project="+ProjectFID(DefaultProject)+"&bid_fid_in="+b["fid"].(string), nil, &page)
	if len(page.Data) != 2 {
		t.Fatalf("instances: %v", page.Data)
	}
	for _, in := range page.Data {
		ip, _ := in["private_ip"].(string)
		if !strings.HasPrefix(ip, "127.103.") || in["ssh_destination"] != ip+":2222" {
			t.Errorf("instance %v", in)
		}
	}
}

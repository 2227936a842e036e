package verda

import (
	"strings"
	"testing"
	"time"
)

// TestClusterShapes checks the answers Verda's SDKs read: string prices on /cluster-types, the
// availability list and boolean, 400 without location_code, {"id"} on create, ip and the nodes'
// public_ip null while provisioning, nodes named <hostname>-<i>, 503 when the location cannot place the
// whole cluster (nothing placed), and delete through PUT /clusters with discontinue.
func TestClusterShapes(t *testing.T) {
	c, srv, base, tok := started(t)

	var types []map[string]any
	do(t, base, "GET", "/cluster-types?currency=usd", tok, nil).json(t, &types)
	if len(types) == 0 || types[0]["price_per_hour"] != "57.44" || types[0]["node_details"].([]any)[0] != "2x 8 GPU nodes" {
		t.Fatalf("cluster types: %v; want string prices and node details", types)
	}
	if r := do(t, base, "GET", "/cluster-availability/32H200?location_code=FIN-03", tok, nil); string(r.body) != "true" {
		t.Errorf("availability of 32H200 in FIN-03: %s, want true", r.body)
	}
	if r := do(t, base, "GET", "/cluster-availability/16B300", tok, nil); string(r.body) != "false" {
		t.Errorf("availability of 16B300: %s, want false", r.body)
	}

	body := map[string]any{"cluster_type": "32H200", "image": "ubuntu-24.04-cuda-12.8-cluster", "hostname": "train",
		"description": "d", "ssh_key_ids": []string{}, "shared_volume": map[string]any{"name": "home", "size": 100}}
	r := do(t, base, "POST", "/clusters", tok, body)
	if code, msg := errorBody(t, r); r.status != 400 || code != "invalid_request" || !strings.Contains(msg, "location_code") {
		t.Fatalf("create without location_code: %d %s", r.status, r.body)
	}
	body["location_code"] = "FIN-03"
	r = do(t, base, "POST", "/clusters", tok, body)
	var created struct{ ID string }
	r.json(t, &created)
	if r.status != 200 || created.ID == "" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}

	var cl struct {
		IP          *string
		Status      string
		WorkerNodes []struct {
			Hostname  string
			PublicIP  *string `json:"public_ip"`
			PrivateIP *string `json:"private_ip"`
		} `json:"worker_nodes"`
	}
	do(t, base, "GET", "/clusters/"+created.ID, tok, nil).json(t, &cl)
	if cl.Status != "ordered" || cl.IP != nil || len(cl.WorkerNodes) != 4 || cl.WorkerNodes[0].PublicIP != nil {
		t.Fatalf("new cluster: %+v; want ordered, ip null, 4 nodes without public ip", cl)
	}
	c.Advance(40 * time.Second)
	do(t, base, "GET", "/clusters/"+created.ID, tok, nil).json(t, &cl)
	// Workers are reached through the login node (ip) only: no public address, a private one each.
	for i, n := range cl.WorkerNodes {
		if n.Hostname != "train-"+string(rune('1'+i)) || n.PublicIP != nil || n.PrivateIP == nil || !strings.HasPrefix(*n.PrivateIP, "10.1.") {
			t.Errorf("node %d: %+v; want no public address and a private one in 10.1/16", i, n)
		}
	}
	if cl.Status != "running" || cl.IP == nil {
		t.Errorf("booted cluster: %s ip %v", cl.Status, cl.IP)
	}

	body["hostname"] = "second"
	r = do(t, base, "POST", "/clusters", tok, body)
	if code, msg := errorBody(t, r); r.status != 503 || code != "service_unavailable" || !strings.HasPrefix(msg, "Not enough resources") {
		t.Errorf("a second 32H200 in FIN-03 (stock 1): %d %s", r.status, r.body)
	}
	if st, _ := srv.Stats(); st.Created != 4 || len(st.Live) != 4 {
		t.Errorf("stats %+v: want the 4 nodes of the one cluster placed", st)
	}

	if r := do(t, base, "PUT", "/clusters", tok, map[string]any{"actions": []map[string]string{{"action": "discontinue", "id": created.ID}}}); r.status != 202 {
		t.Fatalf("discontinue: %d %s", r.status, r.body)
	}
	var list []any
	do(t, base, "GET", "/clusters", tok, nil).json(t, &list)
	if st, _ := srv.Stats(); len(list) != 0 || len(st.Live) != 0 {
		t.Errorf("after discontinue: list %v, live %v", list, st.Live)
	}
	if r := do(t, base, "PUT", "/clusters", tok, map[string]any{"actions": []map[string]string{{"action": "discontinue", "id": created.ID}}}); r.status != 400 {
		t.Errorf("discontinue again: %d %s, want 400 forbidden_action", r.status, r.body)
	}
	if r := do(t, base, "GET", "/clusters/nope", tok, nil); r.status != 400 {
		t.Errorf("unknown cluster: %d %s", r.status, r.body)
	}
}

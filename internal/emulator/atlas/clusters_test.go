package atlas

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
)

// TestClusterAPI checks the answers API.md "Clusters" defines: 422 no_capacity for a cluster larger than the pod,
// 422 price_above_max against the whole cluster's price, 201 with the nodes, 409 already_exists with
// the cluster, 409 in_cluster for a node deleted alone, 422 no_capacity with nothing placed when the
// pod is taken, and paging of the list.
func TestClusterAPI(t *testing.T) {
	srv := New(Options{})
	auth := []string{"Authorization", "Bearer " + DefaultToken}
	key := []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydra user@host"}
	body := func(name string, nodes int, maxPrice float64) map[string]any {
		return map[string]any{"name": name, "instance_type": "h100.8x", "region": "ams1", "interconnect": "fabric",
			"node_count": nodes, "ssh_public_keys": key, "max_price_per_hour": maxPrice}
	}
	code := func(a emutest.Answer) string {
		var e struct{ Error struct{ Code string } }
		a.Decode(t, &e)
		return e.Error.Code
	}
	cases := []struct {
		name       string
		method     string
		path       string
		body       any
		wantStatus int
		wantCode   string
	}{
		{"larger than the pod", "POST", "/v1/clusters", body("c1", 5, 0), http.StatusUnprocessableEntity, "no_capacity"},
		{"above the cap", "POST", "/v1/clusters", body("c1", 4, 95.99), http.StatusUnprocessableEntity, "price_above_max"},
		{"placed", "POST", "/v1/clusters", body("c1", 4, 96), http.StatusCreated, ""},
		{"same name", "POST", "/v1/clusters", body("c1", 4, 0), http.StatusConflict, "already_exists"},
		{"pod taken", "POST", "/v1/clusters", body("c2", 2, 0), http.StatusUnprocessableEntity, "no_capacity"},
	}
	var clusterID string
	for _, tc := range cases {
		a := emutest.Do(t, srv, tc.method, tc.path, tc.body, auth...)
		if a.Status != tc.wantStatus || code(a) != tc.wantCode {
			t.Errorf("%s: %d %s, want %d %q", tc.name, a.Status, a.Raw, tc.wantStatus, tc.wantCode)
		}
		if tc.name == "placed" {
			var c struct {
				ID    string
				Nodes []struct {
					ID, Name  string
					PrivateIP string `json:"private_ip"`
				}
			}
			a.Decode(t, &c)
			clusterID = c.ID
			if len(c.Nodes) != 4 || c.Nodes[3].Name != "c1-4" || c.Nodes[0].PrivateIP == "" {
				t.Fatalf("cluster %s", a.Raw)
			}
			if d := emutest.Do(t, srv, "DELETE", "/v1/instances/"+c.Nodes[0].ID, nil, auth...); d.Status != http.StatusConflict || code(d) != "in_cluster" {
				t.Errorf("deleting a node alone: %d %s", d.Status, d.Raw)
			}
		}
	}
	if st, _ := srv.Stats(); st.Created != 4 || len(st.Live) != 4 {
		t.Errorf("stats %+v: want the one cluster's 4 nodes", st)
	}
	list := emutest.Do(t, srv, "GET", "/v1/clusters?name_prefix=c&limit=1", nil, auth...)
	if !strings.Contains(string(list.Raw), clusterID) || !strings.Contains(string(list.Raw), `"next_page_token":""`) {
		t.Errorf("list: %s", list.Raw)
	}
	if d := emutest.Do(t, srv, "DELETE", "/v1/clusters/"+clusterID, nil, auth...); d.Status != http.StatusAccepted {
		t.Errorf("delete: %d %s", d.Status, d.Raw)
	}
}

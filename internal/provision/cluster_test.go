package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
)

// clusterNode is one sandbox machine of a test cluster.
type clusterNode struct {
	dir string
	ep  simhost.Endpoint
}

// newCluster starts n sandbox H100 machines with a fabric, node i (from 1) with the private address
// 127.<120+c>.<this process's pid, mod 250>.<i>, all trusting one Runner's key; fault[i], when set,
// is written to node i+1 before it starts (simhost.SetFault: name, content).
func newCluster(t *testing.T, c, n int, faults map[int][2]string) (*Runner, []clusterNode, cloudprovider.ClusterCheckRequest) {
	t.Helper()
	requireTools(t)
	key, pub := clientKey(t)
	r, err := New(Config{PrivateKey: key, TempDir: shortTemp(t)})
	if err != nil {
		t.Fatal(err)
	}
	var req cloudprovider.ClusterCheckRequest
	nodes := make([]clusterNode, n)
	for i := range nodes {
		dir := t.TempDir()
		if f, ok := faults[i]; ok {
			if err := simhost.SetFault(dir, f[0], f[1]); err != nil {
				t.Fatal(err)
			}
		}
		addr := fmt.Sprintf("127.%d.%d.%d", 120+c, os.Getpid()%250, i+1)
		ep, err := simhost.Ensure(dir, simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 8,
			AuthorizedKeys: []string{pub}, PrivateAddr: addr, Fabric: true})
		if err != nil {
			t.Fatalf("simhost.Ensure: %v", err)
		}
		t.Cleanup(func() { _ = simhost.Stop(dir) })
		nodes[i] = clusterNode{dir: dir, ep: ep}
		req.Nodes = append(req.Nodes, cloudprovider.ClusterCheckNode{
			ProvisionRequest: cloudprovider.ProvisionRequest{
				Instance: cloudprovider.Instance{
					Name: fmt.Sprintf("sbx-vm-train--ab12cd34-%d", i+1), Cloud: "sandbox",
					SSH: &cloudprovider.SSHEndpoint{Host: ep.Host, Port: ep.Port, User: ep.User},
				},
				GPUType: "h100", GPUCount: 8, HostKey: ep.HostKey,
			},
			PrivateIP: addr,
		})
	}
	req.Fabric = true
	return r, nodes, req
}

// TestCheckCluster: one ansible-playbook run over every node of a sandbox cluster per case: a healthy
// 4-node cluster passes (in --check, changing nothing), its NCCL all-reduce measured on the first node
// with the cluster's hostfile and nccl_env; a node not listening on its private address fails the
// check, and so do, in one run, a bus bandwidth below the floor on one node and an InfiniBand port down
// on the other, each naming the node and what failed.
func TestCheckCluster(t *testing.T) {
	t.Parallel()
	// A peer that does not listen refuses at once on loopback; wait_for tries again until its timeout.
	clusterConnectTimeoutSeconds = 3
	tests := []struct {
		name    string
		nodes   int
		faults  map[int][2]string
		floor   float64
		busbw   float64
		wantErr []string
		failed  string
	}{
		{name: "healthy", nodes: 4, floor: 50, busbw: 70.742},
		{name: "private address down", nodes: 2, faults: map[int][2]string{1: {simhost.FaultPrivateNetDown, "1"}},
			wantErr: []string{"node sbx-vm-train--ab12cd34-1 cannot reach 127.%d.%d.2:%d (node 2)"}, failed: "sbx-vm-train--ab12cd34-1"},
		// Two nodes failing differently in one run: each failure is named; the first node is the failed one.
		{name: "bus bandwidth below the floor and an InfiniBand port down", nodes: 2,
			faults: map[int][2]string{0: {simhost.FaultNCCLBusBW, "12.3"}, 1: {simhost.FaultIBPortDown, "mlx5_6"}}, floor: 100, busbw: 12.3,
			wantErr: []string{"NCCL all-reduce bus bandwidth 12.3 GB/s is below nccl_check's floor 100 GB/s",
				"node sbx-vm-train--ab12cd34-2 (node 2): ibstat: port 1 of mlx5_6 is Down (physical state Polling)"},
			failed: "sbx-vm-train--ab12cd34-1"},
	}
	for c, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, nodes, req := newCluster(t, c, tc.nodes, tc.faults)
			req.MinBusBandwidthGBps = tc.floor
			req.Env = map[string]string{"NCCL_IB_PKEY": "1"}
			rec := &logRecorder{}
			req.Log = rec.log
			var before [][]string
			if tc.wantErr == nil {
				r.checkMode = true
				for _, n := range nodes {
					before = append(before, tree(t, n.ep.Root))
				}
			}
			res, err := r.CheckCluster(context.Background(), req)
			if res.BusBandwidthGBps != tc.busbw {
				t.Errorf("bus bandwidth %v, want %v", res.BusBandwidthGBps, tc.busbw)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("healthy cluster: %v\nlog:\n%s", err, rec)
				}
				for i, n := range nodes {
					if after := tree(t, n.ep.Root); !slices.Equal(before[i], after) {
						t.Errorf("--check changed node %d:\nbefore %v\nafter  %v", i+1, before[i], after)
					}
				}
				args, _ := os.ReadFile(filepath.Join(nodes[0].dir, "run", "mpirun.args"))
				if !strings.Contains(string(args), "-np\n32\n-x\nNCCL_IB_PKEY=1\nall_reduce_perf\n") {
					t.Errorf("mpirun's arguments:\n%s", args)
				}
				var want strings.Builder
				for _, n := range req.Nodes {
					want.WriteString(n.PrivateIP + " slots=8\n")
				}
				if hf, _ := os.ReadFile(filepath.Join(nodes[0].dir, "run", "mpirun.hostfile")); string(hf) != want.String() {
					t.Errorf("hostfile %q, want %q", hf, want.String())
				}
				if _, err := os.Stat(filepath.Join(nodes[1].dir, "run", "mpirun.args")); err == nil {
					t.Errorf("node 2 ran mpirun too: only the first node runs the all-reduce")
				}
				return
			}
			var ce *ClusterCheckError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ClusterCheckError, got %v\nlog:\n%s", err, rec)
			}
			for _, w := range tc.wantErr {
				if strings.Contains(w, "%d") {
					w = fmt.Sprintf(w, 120+c, os.Getpid()%250, nodes[1].ep.Port)
				}
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if res.FailedNode != tc.failed || res.Message != err.Error() {
				t.Errorf("result %+v, want failed node %s and the error's message", res, tc.failed)
			}
		})
	}
}

// TestCheckClusterRefusesBadNodes: a node without a pinned host key or private address is refused
// before anything runs, naming it.
func TestCheckClusterRefusesBadNodes(t *testing.T) {
	key, _ := clientKey(t)
	r, err := New(Config{PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	node := func(i int, hostKey, ip string) cloudprovider.ClusterCheckNode {
		return cloudprovider.ClusterCheckNode{ProvisionRequest: cloudprovider.ProvisionRequest{
			Instance: cloudprovider.Instance{Name: "n-" + strconv.Itoa(i), SSH: &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 22, User: "root"}},
			HostKey:  hostKey}, PrivateIP: ip}
	}
	_, pub, _ := simhost.NewKeyPair("x")
	for _, tc := range []struct {
		nodes []cloudprovider.ClusterCheckNode
		want  string
	}{
		{nil, "no nodes"},
		{[]cloudprovider.ClusterCheckNode{node(1, pub, "10.0.0.1"), node(2, "", "10.0.0.2")}, "node n-2 (node 2) has no pinned host key"},
		{[]cloudprovider.ClusterCheckNode{node(1, pub, "")}, "node n-1 (node 1) has no private IP address"},
	} {
		_, err := r.CheckCluster(context.Background(), cloudprovider.ClusterCheckRequest{Nodes: tc.nodes})
		var perm *cloudprovider.PermanentError
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want a permanent error naming %q", err, tc.want)
		}
	}
}

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// TestClusterNodeKeepsItsJumpHost: a node the cloud reports behind its cluster's login node (Verda's)
// keeps that jump host through the cluster record, so its provisioning, cluster check, marker and
// health reads go through the login node; a node reached directly has none.
func TestClusterNodeKeepsItsJumpHost(t *testing.T) {
	login := &cloudprovider.SSHEndpoint{Host: "203.0.113.9", Port: 22, User: "root"}
	for _, tc := range []struct {
		name string
		ssh  *cloudprovider.SSHEndpoint
	}{
		{"behind the login node", &cloudprovider.SSHEndpoint{Host: "10.1.1.11", Port: 22, User: "root", Jump: login}},
		{"direct", &cloudprovider.SSHEndpoint{Host: "198.51.100.7", Port: 22, User: "root"}},
	} {
		var rec ClusterRecord
		rec.observe(cloudprovider.Cluster{ID: "c1", Status: cloudprovider.StatusRunning, Nodes: []cloudprovider.ClusterNode{{
			Instance:  cloudprovider.Instance{ID: "n1", Name: "verda-vm-train--ab12cd34-1", Status: cloudprovider.StatusRunning, SSH: tc.ssh},
			PrivateIP: "10.1.1.11",
		}}})
		got := rec.Nodes[0].record().SSH
		if got == nil || got.Host != tc.ssh.Host || (got.Jump == nil) != (tc.ssh.Jump == nil) || got.Jump != nil && *got.Jump != *tc.ssh.Jump {
			t.Errorf("%s: the node's endpoint read back from its record is %+v, want %+v", tc.name, got, tc.ssh)
		}
	}
}

// TestClusterNodeKeepsTheLoginNodeKey: the login node's key a record pinned survives the cloud's
// endpoint read again (which carries none, or another), never written into the cloud's endpoint; a
// record without one takes what the cloud reports.
func TestClusterNodeKeepsTheLoginNodeKey(t *testing.T) {
	for _, tc := range []struct {
		name, pinned, cloud, want string
	}{
		{"pinned, the cloud reports none", "ssh-ed25519 PINNED", "", "ssh-ed25519 PINNED"},
		{"pinned, the cloud reports another", "ssh-ed25519 PINNED", "ssh-ed25519 OTHER", "ssh-ed25519 PINNED"},
		{"none pinned", "", "ssh-ed25519 CLOUD", "ssh-ed25519 CLOUD"},
		{"none at all", "", "", ""},
	} {
		rec := ClusterRecord{Nodes: []ClusterNodeRecord{{ID: "n1", Name: "verda-vm-train--ab12cd34-1", SSHHost: "10.1.1.11", SSHPort: 22, SSHUser: "root",
			SSHJump: &cloudprovider.SSHEndpoint{Host: "203.0.113.9", Port: 22, User: "root", HostKey: tc.pinned}}}}
		cloud := &cloudprovider.SSHEndpoint{Host: "203.0.113.9", Port: 22, User: "root", HostKey: tc.cloud}
		rec.observe(cloudprovider.Cluster{ID: "c1", Status: cloudprovider.StatusRunning, Nodes: []cloudprovider.ClusterNode{{
			Instance: cloudprovider.Instance{ID: "n1", Name: "verda-vm-train--ab12cd34-1", Status: cloudprovider.StatusRunning,
				SSH: &cloudprovider.SSHEndpoint{Host: "10.1.1.11", Port: 22, User: "root", Jump: cloud}},
			PrivateIP: "10.1.1.11",
		}}})
		if got := rec.Nodes[0].SSHJump; got == nil || got.HostKey != tc.want || cloud.HostKey != tc.cloud {
			t.Errorf("%s: the node's jump host %+v (the cloud's now %q); want the key %q", tc.name, got, cloud.HostKey, tc.want)
		}
		if got := pinnedJump(cloudprovider.Instance{SSH: &cloudprovider.SSHEndpoint{Host: "10.1.1.11", Jump: &cloudprovider.SSHEndpoint{Host: "203.0.113.9"}}},
			rec.Nodes[0].record()); got.SSH.Jump.HostKey != tc.want {
			t.Errorf("%s: the endpoint a later connection uses has the login node key %q, want %q", tc.name, got.SSH.Jump.HostKey, tc.want)
		}
	}
}

// jumpedClusters is the sandbox's cluster backend as a cloud without public node addresses reports
// its clusters (Verda's instant clusters): every node's endpoint is its private address (where its
// sshd also listens), through the login node, and no key for the login node.
type jumpedClusters struct {
	*sandbox.Backend
	login cloudprovider.SSHEndpoint
}

func (j jumpedClusters) jumped(c cloudprovider.Cluster) cloudprovider.Cluster {
	c.Nodes = slices.Clone(c.Nodes)
	for i, n := range c.Nodes {
		if n.SSH != nil && n.PrivateIP != "" {
			login := j.login
			c.Nodes[i].SSH = &cloudprovider.SSHEndpoint{Host: n.PrivateIP, Port: n.SSH.Port, User: n.SSH.User, Jump: &login}
		}
	}
	return c
}

func (j jumpedClusters) CreateCluster(ctx context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	c, err := j.Backend.CreateCluster(ctx, req)
	return j.jumped(c), err
}

func (j jumpedClusters) GetCluster(ctx context.Context, id string) (cloudprovider.Cluster, error) {
	c, err := j.Backend.GetCluster(ctx, id)
	return j.jumped(c), err
}

func (j jumpedClusters) ListClusters(ctx context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	cs, err := j.Backend.ListClusters(ctx, prefix)
	for i := range cs {
		cs[i] = j.jumped(cs[i])
	}
	return cs, err
}

// runnerInspector reads markers and health through the real runner (the provider's adapter).
type runnerInspector struct{ r *provision.Runner }

func (ri runnerInspector) ProbeHealth(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (string, error) {
	h, err := ri.r.ProbeHealth(ctx, ep, hostKey)
	if err != nil || h.Healthy {
		return "", err
	}
	return cmpOr(h.Reason(), "the health checks failed"), nil
}

func (ri runnerInspector) ReadMarker(ctx context.Context, ep cloudprovider.SSHEndpoint, hostKey string) (Marker, string, error) {
	m, key, err := ri.r.ReadMarker(ctx, ep, hostKey)
	return Marker{Digest: m.Digest, Playbook: m.Playbook, ProvisionedAt: m.ProvisionedAt}, key, err
}

func (ri runnerInspector) Drain(ctx context.Context, inst cloudprovider.Instance, pool inventory.Pool, gpuType string, gpuCount int, hostKey string) error {
	return ri.r.Drain(ctx, inst, pool, gpuType, gpuCount, hostKey)
}

// loginNodePlaybooks is the embedded playbooks with bare-vm.yml cut to preflight, health checks and
// the marker (testdata/login-node-bare-vm.yml): the cluster check and health probe stay the real ones.
func loginNodePlaybooks(t *testing.T) fstest.MapFS {
	t.Helper()
	cut, err := os.ReadFile(filepath.Join("testdata", "login-node-bare-vm.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return testsupport.PlaybooksWith(t, map[string]string{"bare-vm.yml": string(cut)})
}

// TestClusterPinsTheLoginNodeKey: a sandbox cluster whose nodes the cloud reports only behind a login
// node (a real sshd), provisioned with the real playbooks and cluster check: the login node's key,
// trusted on first use, is kept in every node's record (the cloud reports none) across a refresh
// that reads health through it; once the login node presents another key, a refresh's health reads
// and a re-provisioning are refused with a host key mismatch, and the pinned key stays.
func TestClusterPinsTheLoginNodeKey(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"ansible-playbook", "ssh", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if _, err := simhost.FindSSHD(); err != nil {
		t.Skip("sshd is not installed")
	}
	// Real provisioning and the cluster check through the login node: on a busy 2-core runner (make
	// test at a load of 20) this took over 3 minutes once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key, pub, err := simhost.NewKeyPair("hydra-test")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("/tmp", "hcj") //nolint:usetesting // ssh control sockets need a short path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	runner, err := provision.New(provision.Config{Playbooks: loginNodePlaybooks(t), PrivateKey: key, TempDir: tmp, SSHWaitTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	loginDir := t.TempDir()
	login, err := simhost.Ensure(loginDir, simhost.Spec{AuthorizedKeys: []string{pub}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simhost.Stop(loginDir) })

	sb, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), BootTime: 20 * time.Millisecond, DeleteTime: 10 * time.Millisecond, Machines: sandbox.SSHMachines{}},
		testInventory(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sb.WaitBooting()
		dirs, _ := filepath.Glob(filepath.Join(sb.Dir(), "machines", "*"))
		for _, d := range dirs {
			_ = (sandbox.SSHMachines{}).Stop(d)
		}
	})
	cloud := jumpedClusters{Backend: sb, login: cloudprovider.SSHEndpoint{Host: login.Host, Port: login.Port, User: login.User}}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{cloud}, Options{Provisioner: runner, Inspector: runnerInspector{runner},
		PollInterval: 5 * time.Millisecond, PollMax: 20 * time.Millisecond, ProvisionBackoff: time.Millisecond, MaxProvisionAttempts: 1,
		Journal: Journal{Dir: t.TempDir()}})
	spec := ClusterSpec{Name: "jump", GPUType: "h100", GPUCount: 1, Nodes: 2, Kind: "vm", SSHPublicKeys: []string{pub}}
	rec, err := cp.CreateCluster(ctx, spec, mustPlanCluster(t, cp, spec), nil)
	if err != nil {
		t.Fatalf("create behind the login node: %v", err)
	}
	pinned := func(rec ClusterRecord, want string) {
		t.Helper()
		for _, n := range rec.Nodes {
			if n.SSHJump == nil || n.SSHJump.Host != login.Host || n.SSHJump.Port != login.Port || n.SSHJump.HostKey != want {
				t.Errorf("node %s's jump host %+v; want %s:%d with the login node's key %q", n.Name, n.SSHJump, login.Host, login.Port, want)
			}
		}
	}
	if rec.Status != "ready" || len(rec.Nodes) != 2 || rec.Nodes[0].SSHHost != rec.Nodes[0].PrivateIP {
		t.Fatalf("record = %+v", rec)
	}
	pinned(rec, login.HostKey)

	// refresh refreshes rec: every node keeps the login node's key pinned and has health want.
	refresh := func(when, want string) {
		t.Helper()
		if found, err := cp.RefreshCluster(ctx, &rec); !found || err != nil {
			t.Fatalf("refresh %s: %v %v", when, found, err)
		}
		pinned(rec, login.HostKey)
		for _, n := range rec.Nodes {
			if n.Health != want {
				t.Errorf("node %s's health %s: %q, want %q", n.Name, when, n.Health, want)
			}
		}
	}
	// A refresh reads the cloud's endpoint again (no key for the login node) and each node's health
	// through the login node with its key pinned.
	refresh("through the login node", HealthHealthy)

	// The login node now presents another key: refused, never re-pinned.
	if err := simhost.RotateHostKey(loginDir); err != nil {
		t.Fatal(err)
	}
	refresh("after the login node's key changed", HealthUnknown)
	err = cp.ResumeCluster(ctx, spec, &rec, nil)
	var mm *provision.HostKeyMismatchError
	if !errors.As(err, &mm) || mm.Address != fmt.Sprintf("%s:%d", login.Host, login.Port) {
		t.Fatalf("re-provisioning with the login node's key changed: %v; want its host key mismatch", err)
	}
	pinned(rec, login.HostKey)
}

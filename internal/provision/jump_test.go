package provision

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	verdaemu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport"
)

// jumpPlaybook is what TestProvisionThroughJumpHost provisions: bare-vm.yml's roles that the marker and
// the health probe read (the machine, its exporters, its health criteria), some 15 tasks over the one
// connection through the login node; the driver's and the customer's roles prove nothing about the jump.
var jumpPlaybook = markedPlaybook("Provision a machine behind a login node", "jump-test.yml", "gpu_check", "monitoring", "health")

// jumpSetup is a login node (a sandbox machine whose sshd allows TCP forwarding, as OpenSSH does by
// default) and n nodes behind it, each given to provisioning only as its private address with the
// login node as Jump, all trusting one Runner's key.
type jumpSetup struct {
	runner *Runner
	jump   simhost.Endpoint
	nodes  []simhost.Endpoint
	addrs  []string
	// jumpDir holds the login node's sshd log.
	jumpDir string
	// gpuType and gpuCount describe every node.
	gpuType  string
	gpuCount int
}

func newJumpSetup(t *testing.T, net, n int, gpuType string, gpuCount int) jumpSetup {
	t.Helper()
	requireTools(t)
	key, pub := clientKey(t)
	cfg := Config{PrivateKey: key, TempDir: shortTemp(t), SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond,
		Playbooks: testsupport.PlaybooksWith(t, map[string]string{"jump-test.yml": jumpPlaybook})}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := jumpSetup{runner: r, gpuType: gpuType, gpuCount: gpuCount}
	s.jump = startMachine(t, simhost.Spec{AuthorizedKeys: []string{pub}})
	s.jumpDir = s.jump.Dir
	for i := range n {
		addr := fmt.Sprintf("127.%d.%d.%d", net, os.Getpid()%250, i+1)
		s.nodes = append(s.nodes, startMachine(t, simhost.Spec{GPUModel: simhost.NVIDIAName(gpuType), GPUCount: gpuCount,
			AuthorizedKeys: []string{pub}, PrivateAddr: addr, Fabric: true}))
		s.addrs = append(s.addrs, addr)
	}
	return s
}

// endpoint is node i's endpoint as a cloud without public node addresses reports it: the private
// address, through the login node (whose key is jumpKey; "" trusts it on first use).
func (s jumpSetup) endpoint(i int, jumpKey string) *cloudprovider.SSHEndpoint {
	n := s.nodes[i]
	return &cloudprovider.SSHEndpoint{Host: s.addrs[i], Port: n.Port, User: n.User,
		Jump: &cloudprovider.SSHEndpoint{Host: s.jump.Host, Port: s.jump.Port, User: s.jump.User, HostKey: jumpKey}}
}

// acceptedLogins counts the login node's accepted SSH logins so far (its sshd logs each, VERBOSE).
func (s jumpSetup) acceptedLogins(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.jumpDir, "sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "Accepted publickey")
}

// TestProvisionThroughJumpHost: a node reached only through its cluster's login node is provisioned to
// ready (Go's SSH wait and Ansible's run both through the login node, which logs their logins), both
// host keys trusted on first use and returned; its marker and health are read through the login node
// with both keys pinned, and fail once the login node is gone although the node still runs; a login
// node whose key changed is refused before anything runs, and so is a node whose own key changed.
func TestProvisionThroughJumpHost(t *testing.T) {
	t.Parallel()
	s := newJumpSetup(t, 141, 1, "l4", 1)
	node := s.nodes[0]
	req := func(hostKey, jumpKey string, rec *logRecorder) cloudprovider.ProvisionRequest {
		return cloudprovider.ProvisionRequest{
			Instance: cloudprovider.Instance{ID: "n-1", Name: "verda-vm-train--ab12cd34-1", Cloud: "verda", GPUType: s.gpuType, GPUCount: s.gpuCount,
				Status: cloudprovider.StatusRunning, SSH: s.endpoint(0, jumpKey)},
			Pool:    inventory.Pool{Name: "verda-vm-pool", Cloud: "verda", Kind: inventory.KindVM, Playbook: "jump-test.yml"},
			GPUType: s.gpuType, GPUCount: s.gpuCount, HostKey: hostKey, Attempt: 1, Log: rec.log,
		}
	}
	before := s.acceptedLogins(t)
	rec := &logRecorder{}
	res, err := s.runner.Provision(context.Background(), req("", "", rec))
	if err != nil {
		t.Fatalf("Provision through the login node: %v\nlog:\n%s", err, rec)
	}
	if res.HostKey != node.HostKey || res.JumpHostKey != s.jump.HostKey {
		t.Errorf("keys seen: node %q, jump %q; want %q and %q", res.HostKey, res.JumpHostKey, node.HostKey, s.jump.HostKey)
	}
	// One login for the SSH wait, one more for Ansible's connection (its ProxyCommand), which every task
	// of the run shares (the node's control socket): a login per task (some 20) means they did not.
	if n := s.acceptedLogins(t) - before; n < 2 || n > 4 {
		t.Errorf("the login node accepted %d logins during provisioning, want the SSH wait's and Ansible's one connection", n)
	}
	if _, err := os.Stat(filepath.Join(node.Root, filepath.FromSlash(DefaultMarkerPath))); err != nil {
		t.Fatalf("no marker on the node: %v", err)
	}

	ep := s.endpoint(0, s.jump.HostKey)
	m, seen, err := s.runner.ReadMarker(context.Background(), *ep, node.HostKey)
	if err != nil || seen != node.HostKey || m.Machine == nil {
		t.Errorf("ReadMarker through the login node: %+v, key %q, %v", m, seen, err)
	}
	if h, err := s.runner.ProbeHealth(context.Background(), *ep, node.HostKey); err != nil || !h.Healthy {
		t.Errorf("ProbeHealth through the login node: %+v, %v", h, err)
	}

	t.Run("changed login node key", func(t *testing.T) {
		// Pinned: the key the login node had; it now presents another.
		if err := simhost.RotateHostKey(s.jumpDir); err != nil {
			t.Fatal(err)
		}
		rec := &logRecorder{}
		_, err := s.runner.Provision(context.Background(), req(node.HostKey, s.jump.HostKey, rec))
		var perm *cloudprovider.PermanentError
		var mm *HostKeyMismatchError
		if !errors.As(err, &perm) || !errors.As(err, &mm) || mm.Address != fmt.Sprintf("%s:%d", s.jump.Host, s.jump.Port) {
			t.Fatalf("want a permanent host key mismatch of the login node, got %v", err)
		}
		if strings.Contains(rec.String(), "task started") {
			t.Errorf("ansible ran despite the mismatch:\n%s", rec)
		}
		if _, _, err := s.runner.ReadMarker(context.Background(), *ep, node.HostKey); !errors.As(err, &mm) {
			t.Errorf("ReadMarker with the login node's key changed: %v, want a mismatch", err)
		}
	})
	t.Run("changed node key", func(t *testing.T) {
		jumpKey, err := simhost.HostPublicKey(s.jumpDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := simhost.RotateHostKey(node.Dir); err != nil {
			t.Fatal(err)
		}
		_, err = s.runner.Provision(context.Background(), req(node.HostKey, jumpKey, &logRecorder{}))
		var mm *HostKeyMismatchError
		if !errors.As(err, &mm) || mm.Address != fmt.Sprintf("%s:%d", s.addrs[0], node.Port) {
			t.Fatalf("want a host key mismatch of the node, got %v", err)
		}
	})
	t.Run("login node gone", func(t *testing.T) {
		if err := simhost.Stop(s.jumpDir); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.runner.ReadMarker(context.Background(), *ep, "")
		if err == nil || !strings.Contains(err.Error(), "through") {
			t.Errorf("ReadMarker with the login node stopped: %v, want a failure naming the login node", err)
		}
	})
}

// TestCheckClusterThroughJumpHost: the cluster check's one Ansible run reaches 2 nodes given only as
// their private addresses behind a login node: with the login node's key pinned it passes (peers
// reached, fabric up); with another key pinned for the login node, the check is refused before it runs
// (a permanent host key mismatch naming the login node), without touching the nodes. With none pinned the
// login node's key is trusted on first use: TestVerdaClusterThroughLoginNode runs that check.
func TestCheckClusterThroughJumpHost(t *testing.T) {
	t.Parallel()
	clusterConnectTimeoutSeconds = 3
	s := newJumpSetup(t, 142, 2, "h100", 8)
	request := func(jumpKey string) cloudprovider.ClusterCheckRequest {
		req := cloudprovider.ClusterCheckRequest{Fabric: true}
		for i, n := range s.nodes {
			req.Nodes = append(req.Nodes, cloudprovider.ClusterCheckNode{
				ProvisionRequest: cloudprovider.ProvisionRequest{
					Instance: cloudprovider.Instance{Name: fmt.Sprintf("verda-vm-train--ab12cd34-%d", i+1), Cloud: "verda", SSH: s.endpoint(i, jumpKey)},
					GPUType:  s.gpuType, GPUCount: s.gpuCount, HostKey: n.HostKey,
				},
				PrivateIP: s.addrs[i],
			})
		}
		return req
	}
	for _, tc := range []struct {
		name    string
		jumpKey string
		// mismatch: the login node presents another key than the pinned one.
		mismatch bool
	}{
		{"login node key pinned", s.jump.HostKey, false},
		// The second node's key stands in for a login node that presents another key than the pinned.
		{"another login node key pinned", s.nodes[1].HostKey, true},
	} {
		rec := &logRecorder{}
		req := request(tc.jumpKey)
		req.Log = rec.log
		s.runner.checkMode = true
		before := s.acceptedLogins(t)
		_, err := s.runner.CheckCluster(context.Background(), req)
		var mm *HostKeyMismatchError
		var perm *cloudprovider.PermanentError
		switch {
		case !tc.mismatch && err != nil:
			t.Errorf("%s: %v\nlog:\n%s", tc.name, err, rec)
		case tc.mismatch && (!errors.As(err, &mm) || !errors.As(err, &perm) || mm.Address != fmt.Sprintf("%s:%d", s.jump.Host, s.jump.Port)):
			t.Errorf("%s: got %v, want a permanent host key mismatch of the login node\nlog:\n%s", tc.name, err, rec)
		case tc.mismatch && strings.Contains(rec.String(), "task started"):
			t.Errorf("%s: the check ran despite the mismatch:\n%s", tc.name, rec)
		case !tc.mismatch && s.acceptedLogins(t)-before < 2:
			t.Errorf("%s: the login node accepted %d logins, want one per node at least", tc.name, s.acceptedLogins(t)-before)
		}
	}
}

// loginNode is a cluster's login node for a test: an SSH server on 127.0.0.1 that lets in the one
// client key, opens no shell, and forwards TCP connections ("direct-tcpip", what `ssh -W` and
// x/crypto/ssh's Client.Dial ask for) to the nodes. Every node of a real cluster listens on one SSH
// port; the sandbox's nodes each have their own, so a forward to an address goes to the port
// ports[address] names. Forwards counts the forwards made.
type loginNode struct {
	addr     string
	hostKey  string
	ports    sync.Map // private address -> the node's sshd port
	forwards atomic.Int64
	open     atomic.Int64 // SSH connections not closed yet
}

func startLoginNode(t *testing.T, clientKey string) *loginNode {
	t.Helper()
	allowed, _, _, _, err := ssh.ParseAuthorizedKey([]byte(clientKey))
	if err != nil {
		t.Fatal(err)
	}
	hostKey, _, err := simhost.NewKeyPair("login-node")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(hostKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if string(key.Marshal()) != string(allowed.Marshal()) {
			return nil, fmt.Errorf("key not allowed")
		}
		return nil, nil
	}}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	n := &loginNode{addr: l.Addr().String(), hostKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go n.serve(c, cfg)
		}
	}()
	return n
}

func (n *loginNode) serve(c net.Conn, cfg *ssh.ServerConfig) {
	n.open.Add(1)
	defer n.open.Add(-1)
	defer func() { _ = c.Close() }()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		var target struct {
			Host     string
			Port     uint32
			OrigHost string
			OrigPort uint32
		}
		if nc.ChannelType() != "direct-tcpip" || ssh.Unmarshal(nc.ExtraData(), &target) != nil {
			_ = nc.Reject(ssh.Prohibited, "this login node only forwards")
			continue
		}
		port, ok := n.ports.Load(target.Host)
		if !ok {
			_ = nc.Reject(ssh.ConnectionFailed, "no such node")
			continue
		}
		up, err := net.Dial("tcp", net.JoinHostPort(target.Host, strconv.Itoa(port.(int))))
		if err != nil {
			_ = nc.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			_ = up.Close()
			continue
		}
		n.forwards.Add(1)
		go ssh.DiscardRequests(creqs)
		go func() {
			defer func() { _ = ch.Close(); _ = up.Close() }()
			go func() { _, _ = io.Copy(up, ch); _ = up.(*net.TCPConn).CloseWrite() }()
			_, _ = io.Copy(ch, up)
		}()
	}
}

// TestVerdaClusterThroughLoginNode: a cluster from Verda's emulator, read by hydra's Verda backend,
// reports its nodes at their private addresses behind the cluster's login node, as Verda's clusters
// have them; the cluster check's Ansible run (Go's SSH wait first, the login node's key trusted on
// first use) passes over those endpoints as the backend gives them, every connection forwarded by the
// login node, whose key the check then pins.
func TestVerdaClusterThroughLoginNode(t *testing.T) {
	t.Parallel()
	requireTools(t)
	clusterConnectTimeoutSeconds = 3
	key, pub := clientKey(t)
	login := startLoginNode(t, pub)
	loginHost, loginPort, _ := net.SplitHostPort(login.addr)
	lp, _ := strconv.Atoi(loginPort)

	srv := verdaemu.New(verdaemu.Options{Options: simulation.Options{BootDuration: 50 * time.Millisecond},
		InstanceIP: loginHost, ClusterPrivateNet: fmt.Sprintf("127.%d", 143)})
	me, err := user.Current() // the sandbox machines' login user
	if err != nil {
		t.Fatal(err)
	}
	b := backendtest.Must(verda.New(verda.Config{ClientID: verdaemu.DefaultClientID, ClientSecret: verdaemu.DefaultClientSecret,
		BaseURL: backendtest.Serve(t, srv) + verdaemu.BasePath, Tuning: backendtest.Tuning(time.Millisecond, 50*time.Millisecond),
		SSHPort: lp, SSHUser: me.Username}, backendtest.Inventory(t), nil))(t)
	ctx := context.Background()
	offers, err := b.ClusterOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var offer cloudprovider.ClusterOffer
	for _, o := range offers {
		if o.InstanceType == "16H200" {
			offer = o
		}
	}
	pool := backendtest.Pool(t, verda.CloudName)
	offer.Pool = pool.Name
	owner := cloudprovider.Ownership{Resource: "train", Token: "ab12cd34"}
	c, err := b.CreateCluster(ctx, cloudprovider.ClusterRequest{Name: cloudprovider.CloudName(pool, "train", owner.Token), Pool: pool,
		Offer: offer, Owner: owner, SSHPublicKeys: []string{pub}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.DeleteCluster(context.Background(), c.ID) })
	for c.Status != cloudprovider.StatusRunning {
		time.Sleep(20 * time.Millisecond)
		if c, err = b.GetCluster(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}

	r, err := New(Config{PrivateKey: key, TempDir: shortTemp(t), SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.checkMode = true
	req := cloudprovider.ClusterCheckRequest{Fabric: true, Env: c.Env}
	for _, n := range c.Nodes {
		ep := n.SSH
		if ep == nil || ep.Jump == nil || ep.Host != n.PrivateIP || ep.Jump.Host != loginHost || ep.Jump.Port != lp || ep.Jump.User != me.Username ||
			!strings.HasPrefix(n.PrivateIP, "127.143.") {
			t.Fatalf("node %s: SSH %+v; want its private address through the login node %s", n.Name, ep, login.addr)
		}
		// The node's sshd on its private address, as the cloud placed it. A real cluster's nodes all
		// listen on one port; each sandbox node has its own, which the node's endpoint and the login
		// node's forwards use.
		m := startMachine(t, simhost.Spec{GPUModel: simhost.NVIDIAName("h200"), GPUCount: 8, AuthorizedKeys: []string{pub},
			PrivateAddr: n.PrivateIP, Fabric: true})
		login.ports.Store(n.PrivateIP, m.Port)
		inst := n.Instance
		sshEP := *ep
		sshEP.Port = m.Port
		inst.SSH = &sshEP
		req.Nodes = append(req.Nodes, cloudprovider.ClusterCheckNode{PrivateIP: n.PrivateIP, ProvisionRequest: cloudprovider.ProvisionRequest{
			Instance: inst, GPUType: "h200", GPUCount: 8, HostKey: m.HostKey}})
	}
	rec := &logRecorder{}
	req.Log = rec.log
	if _, err := r.CheckCluster(ctx, req); err != nil {
		t.Fatalf("cluster check through the login node: %v\nlog:\n%s", err, rec)
	}
	// The nodes' sshds also listen where a direct dial would reach them: the forwards prove the way.
	f := login.forwards.Load()
	t.Logf("the login node forwarded %d connections for %d nodes", f, len(req.Nodes))
	if f < int64(2*len(req.Nodes)) {
		t.Errorf("the login node forwarded %d connections, want Go's SSH wait and Ansible's per node", f)
	}
	// Every connection to the login node is closed once the check is over: none is left behind.
	deadline := time.Now().Add(10 * time.Second)
	for login.open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := login.open.Load(); n != 0 {
		t.Errorf("%d connections to the login node are still open after the check", n)
	}
}

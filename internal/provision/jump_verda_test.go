package provision

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/user"
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
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

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

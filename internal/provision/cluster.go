package provision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// clusterCheckPlaybook is the playbook CheckCluster runs over every node at once.
const clusterCheckPlaybook = "cluster-check.yml"

// clusterBusBWTask is the cluster check's task that reports the NCCL all-reduce's average bus
// bandwidth (GB/s) as its message.
const clusterBusBWTask = "Report the NCCL all-reduce's bus bandwidth"

// clusterConnectTimeoutSeconds is how long a node waits for a peer's SSH port to answer.
var clusterConnectTimeoutSeconds = 10

var _ cloudprovider.ClusterChecker = (*Runner)(nil)

// ClusterCheckError is a cluster check that ran and found the nodes unable to train together.
type ClusterCheckError struct {
	// Node is the first node (in the cluster's order) whose check failed.
	Node string
	// Message says what failed, naming the node: every failing node's finding, in order.
	Message string
}

func (e *ClusterCheckError) Error() string { return e.Message }

// CheckCluster runs playbooks/cluster-check.yml (role cluster_check) in one ansible-playbook run over
// every node, each with its pinned host key (through its jump host where SSH.Jump says so, the jump's
// key pinned too, or trusted on first use when SSH.Jump.HostKey is empty): every node must reach
// every peer's private address on the peer's SSH port, with req.Fabric every InfiniBand port must be Active/LinkUp (ibstat), and with
// req.MinBusBandwidthGBps > 0 the first node's NCCL all-reduce (all_reduce_perf under mpirun, fed the
// hostfile, req.Env exported to every rank) must reach that average bus bandwidth. A failed check is a
// *ClusterCheckError naming the node and what failed; a node with no pinned host key, SSH address or
// private address is refused before anything runs (*cloudprovider.PermanentError).
func (r *Runner) CheckCluster(ctx context.Context, req cloudprovider.ClusterCheckRequest) (cloudprovider.ClusterCheckResult, error) {
	var res cloudprovider.ClusterCheckResult
	if len(req.Nodes) == 0 {
		return res, &cloudprovider.PermanentError{Err: errors.New("cluster check: no nodes")}
	}
	nodes := make([]map[string]any, len(req.Nodes))
	specs := make([]runSpec, len(req.Nodes))
	jumpsChecked := map[string]bool{} // "<host> <port> <pinned key>" of the jump hosts checkJumpKey passed
	for i, n := range req.Nodes {
		name := n.Instance.Name
		if n.Instance.SSH == nil || n.Instance.SSH.Host == "" {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d) has no SSH address", name, i+1)}
		}
		ep := *n.Instance.SSH
		ep.Port, ep.User = cmp.Or(ep.Port, 22), cmp.Or(ep.User, "root") // as Provision reads it
		if err := validateEndpoint(ep); err != nil {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d): %w", name, i+1, err)}
		}
		if net.ParseIP(n.PrivateIP) == nil {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d) has no private IP address (%q)", name, i+1, n.PrivateIP)}
		}
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(n.HostKey))
		if err != nil {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d) has no pinned host key: %v", name, i+1, err)}
		}
		nodes[i] = map[string]any{
			"index": i + 1, "name": name, "private_ip": n.PrivateIP, "ssh_port": ep.Port, "slots": max(n.GPUCount, 1),
		}
		specs[i] = runSpec{endpoint: ep, hostKey: key, hostName: inventoryHostName(name), instance: name}
		if specs[i].jump, err = jumpEndpoint(ep); err != nil {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d): %w", name, i+1, err)}
		}
		if j := specs[i].jump; j != nil && j.HostKey != "" {
			if specs[i].jumpKey, _, _, _, err = ssh.ParseAuthorizedKey([]byte(j.HostKey)); err != nil {
				return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: node %s (node %d): the jump host's pinned key cannot be parsed: %v", name, i+1, err)}
			}
			if jumpsChecked[j.Host+" "+strconv.Itoa(j.Port)+" "+j.HostKey] {
				continue
			}
			jumpsChecked[j.Host+" "+strconv.Itoa(j.Port)+" "+j.HostKey] = true
			if err := r.checkJumpKey(ctx, ep, n.HostKey); err != nil {
				return res, fmt.Errorf("cluster check: node %s (node %d): %w", name, i+1, err)
			}
		} else if j != nil {
			// No key recorded for the jump host: trust on first use, as Provision does (the node's own
			// key stays pinned).
			if _, specs[i].jumpKey, err = r.waitSSH(ctx, ep, n.HostKey); err != nil {
				return res, fmt.Errorf("cluster check: node %s (node %d): %w", name, i+1, err)
			}
		}
	}
	ansible, err := r.ansiblePath()
	if err != nil {
		return res, &cloudprovider.PermanentError{Err: err}
	}
	env := map[string]any{}
	for k, v := range req.Env {
		if !varName.MatchString(k) {
			return res, &cloudprovider.PermanentError{Err: fmt.Errorf("cluster check: %q is not an environment variable name", k)}
		}
		env[k] = v
	}
	var (
		mu    sync.Mutex
		busbw string
	)
	for i := range specs {
		name := specs[i].instance
		specs[i].vars = markUnsafeMap(map[string]any{
			"hydra_cluster_nodes":                   nodes,
			"hydra_cluster_node_index":              i + 1,
			"hydra_cluster_node_name":               name,
			"hydra_cluster_fabric":                  req.Fabric,
			"hydra_cluster_min_busbw_gbps":          req.MinBusBandwidthGBps,
			"hydra_cluster_env":                     env,
			"hydra_cluster_connect_timeout_seconds": clusterConnectTimeoutSeconds,
		})
		specs[i].log = func(msg string, fields map[string]any) {
			if task, _ := fields["task"].(string); msg == "task ok" && strings.HasSuffix(task, clusterBusBWTask) {
				mu.Lock()
				busbw = fmt.Sprint(fields["msg"])
				mu.Unlock()
			}
			if req.Log != nil {
				f := map[string]any{"node": name}
				for k, v := range fields {
					f[k] = v
				}
				req.Log(msg, f)
			}
			r.logger.Debug("cluster check: "+msg, "node", name, "task", fields["task"])
		}
	}

	done := r.runTogether(ctx, clusterCheckPlaybook, ansible, specs)
	if v, err := strconv.ParseFloat(strings.TrimSpace(busbw), 64); err == nil {
		res.BusBandwidthGBps = v
	}
	var found []string
	for i, d := range done {
		if d.err == nil {
			continue
		}
		var te *TaskError
		var perm *cloudprovider.PermanentError
		switch {
		case errors.As(d.err, &perm) || ctx.Err() != nil:
			return res, fmt.Errorf("cluster check: %w", d.err)
		case errors.As(d.err, &te) && te.Unreachable:
			found = append(found, fmt.Sprintf("node %s (node %d) is unreachable over SSH: %s", specs[i].instance, i+1, te.Message))
		case errors.As(d.err, &te):
			found = append(found, d.out.message)
		default:
			found = append(found, fmt.Sprintf("node %s (node %d): %v", specs[i].instance, i+1, d.err))
		}
		if res.FailedNode == "" {
			res.FailedNode = specs[i].instance
		}
	}
	if len(found) == 0 {
		return res, nil
	}
	res.Message = cut(strings.Join(found, "; "), summaryLimit)
	return res, &ClusterCheckError{Node: res.FailedNode, Message: res.Message}
}

// checkJumpKey logs in once through ep's jump host (its key pinned) and returns a jump host that presents
// another key as a *HostKeyMismatchError (a *cloudprovider.PermanentError), before anything runs.
// Ansible's ssh refuses such a jump host too, but says only that the connection closed: with a control
// socket, ssh sends its ProxyCommand's messages to /dev/null. Any other failure is left to the run.
func (r *Runner) checkJumpKey(ctx context.Context, ep cloudprovider.SSHEndpoint, pinned string) error {
	rt, err := r.route(ep, pinned)
	if err != nil {
		return err
	}
	_ = remoteRun(ctx, rt, "true", nil, nil) // only the jump host's key matters here
	if _, mm := rt.jump.check.result(); mm != nil {
		return &cloudprovider.PermanentError{Err: mm}
	}
	return nil
}

// runTogether runs playbook over every machine of specs in one ansible-playbook run (a batch formed
// at once, never joined by other machines) and returns each machine's outcome, in order.
func (r *Runner) runTogether(ctx context.Context, playbook, ansible string, specs []runSpec) []runDone {
	bctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &batch{r: r, key: batchKey{playbook: playbook, checkMode: r.checkMode}, ansible: ansible,
		ctx: bctx, cancel: cancel, ended: make(chan struct{}), launched: true}
	for _, s := range specs {
		b.members = append(b.members, &member{spec: s, ctx: ctx, events: &eventLog{log: s.log}, result: make(chan runDone, 1)})
	}
	go b.run()
	done := make([]runDone, len(b.members))
	for i, m := range b.members {
		done[i].out, done[i].err = b.wait(m)
	}
	return done
}

package verda

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/createonce"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// Verda's instant clusters (the shapes are verdaapi's; where each comes from is written there).

// Cluster wire types (verdaapi's).
type (
	ClusterType          = verdaapi.ClusterType
	ClusterAvailability  = verdaapi.ClusterAvailability
	VerdaCluster         = verdaapi.Cluster
	CreateClusterRequest = verdaapi.CreateClusterRequest
)

// Defaults of the cluster settings of Config.
const (
	// DefaultClusterImage is the image a cluster's nodes boot (one of every cluster type's supported_os).
	DefaultClusterImage = "ubuntu-24.04-cuda-12.8-cluster"
	// DefaultClusterSharedVolumeGB sizes the shared /home file system Verda requires with every cluster.
	DefaultClusterSharedVolumeGB = 1000
	// DetailClusterType is the Offer.Details key of a cluster offer's type ("32H200").
	DetailClusterType = "cluster_type"
	// DetailClusterImage is the Offer.Details key of the image a cluster offer's nodes boot: the
	// configured ClusterImage when the type supports it, else the type's first supported_os.
	DetailClusterImage = "cluster_image"
	// gpusPerClusterNode is what Verda's docs say of every cluster node: 8 GPUs.
	gpusPerClusterNode = 8
)

// FabricEnv is what Verda's fabric needs: docs.verda.com ("Instant clusters: good to know") says the
// worker nodes share a partitioned 400 Gb/s InfiniBand fabric and that NCCL inside a Docker container
// must be given NCCL_IB_PKEY=1.
var FabricEnv = map[string]string{"NCCL_IB_PKEY": "1"}

const msgInvalidClusterID = "invalid cluster id"

var _ cloudprovider.ClusterBackend = (*Backend)(nil)

// ClusterTypes lists the cluster types with the whole cluster's price (GET /cluster-types).
func (c *Client) ClusterTypes(ctx context.Context, currency string) ([]ClusterType, error) {
	return get[[]ClusterType](ctx, c, "listing cluster types", "/cluster-types", restclient.Query(nil, "currency", currency))
}

// ClusterAvailability lists, per location, the cluster types deployable now (GET /cluster-availability).
func (c *Client) ClusterAvailability(ctx context.Context, location string) ([]ClusterAvailability, error) {
	return get[[]ClusterAvailability](ctx, c, "listing cluster availability", "/cluster-availability", restclient.Query(nil, "location_code", location))
}

// Clusters lists the account's clusters (GET /clusters); discontinued ones are left out by Verda.
func (c *Client) Clusters(ctx context.Context) ([]VerdaCluster, error) {
	return get[[]VerdaCluster](ctx, c, "listing clusters", "/clusters", nil)
}

// Cluster reads one cluster (GET /clusters/{id}).
func (c *Client) Cluster(ctx context.Context, id string) (VerdaCluster, error) {
	return get[VerdaCluster](ctx, c, "reading cluster", "/clusters/"+url.PathEscape(id), nil)
}

// CreateCluster deploys a cluster (POST /clusters) and returns its id (answered {"id": ...}; a plain-text
// id is read too). It is retried on 429 only.
func (c *Client) CreateCluster(ctx context.Context, req CreateClusterRequest) (string, error) {
	if req.SSHKeyIDs == nil {
		req.SSHKeyIDs = []string{}
	}
	return c.create(ctx, "creating cluster", restclient.Request{Method: http.MethodPost, Path: "/clusters", Body: req, NotIdempotent: true})
}

// DiscontinueCluster deletes a cluster (PUT /clusters with action "discontinue"): its nodes and their
// local storage go; Verda detaches the shared volume.
func (c *Client) DiscontinueCluster(ctx context.Context, id string) error {
	_, err := c.do(ctx, "deleting cluster", restclient.Request{Method: http.MethodPut, Path: "/clusters",
		Body: verdaapi.ClusterActionsRequest{Actions: []verdaapi.ClusterAction{{Action: "discontinue", ID: id}}}})
	return err
}

var nodeDetails = regexp.MustCompile(`^\s*(\d+)\s*x\s*(\d+)\s*GPU`)

// clusterShape reads a cluster type's nodes and GPUs per node from its node_details ("4x 8 GPU
// nodes"), else from its GPU total at 8 GPUs a node (Verda's docs).
func clusterShape(t ClusterType) (nodes, gpusPerNode int) {
	for _, d := range t.NodeDetails {
		if m := nodeDetails.FindStringSubmatch(d); m != nil {
			n, _ := strconv.Atoi(m[1])
			g, _ := strconv.Atoi(m[2])
			if n > 0 && g > 0 {
				return n, g
			}
		}
	}
	if t.GPU.NumberOfGPUs >= gpusPerClusterNode && t.GPU.NumberOfGPUs%gpusPerClusterNode == 0 {
		return t.GPU.NumberOfGPUs / gpusPerClusterNode, gpusPerClusterNode
	}
	return 0, 0
}

// perNode divides a cluster type's described totals by its nodes.
func perNode(t ClusterType, nodes int) (cpu CPU, gpuMem, mem Size) {
	cpu = CPU{Description: t.CPU.Description, NumberOfCores: t.CPU.NumberOfCores / nodes}
	gpuMem = Size{SizeInGigabytes: t.GPUMemory.SizeInGigabytes / nodes}
	mem = Size{SizeInGigabytes: t.Memory.SizeInGigabytes / nodes}
	return cpu, gpuMem, mem
}

// ClusterOffers lists the instant clusters Verda can deploy now: the cluster types (GET /cluster-types)
// joined with GET /cluster-availability, one offer per type and location, on the fabric (Verda
// promises every cluster an InfiniBand partition). Nodes and GPUs per node come from the type's
// node_details; the price is the whole cluster's. Verda only says yes or no, so Available is -1.
func (b *Backend) ClusterOffers(ctx context.Context) ([]cloudprovider.ClusterOffer, error) {
	var (
		types []ClusterType
		avail []ClusterAvailability
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { types, err = b.client.ClusterTypes(gctx, b.cfg.Currency); return })
	g.Go(func() (err error) { avail, err = b.client.ClusterAvailability(gctx, ""); return })
	if err := g.Wait(); err != nil {
		return nil, classify("listing cluster offers", err)
	}
	byName := map[string]ClusterType{}
	curr := map[string]string{}
	for _, t := range types {
		byName[t.ClusterType] = t
		curr[t.ClusterType] = t.Currency
	}
	b.mu.Lock()
	b.clusterCurr = curr
	b.mu.Unlock()
	var offers []cloudprovider.ClusterOffer
	for _, loc := range avail {
		if !backendkit.Allowed(b.cfg.Locations, loc.LocationCode) {
			continue
		}
		for _, name := range loc.Availabilities {
			t, ok := byName[name]
			if !ok {
				continue
			}
			o, ok := b.clusterOffer(t, loc.LocationCode)
			if ok {
				offers = append(offers, o)
			}
		}
	}
	return offers, nil
}

func (b *Backend) clusterOffer(t ClusterType, location string) (cloudprovider.ClusterOffer, bool) {
	nodes, perGPU := clusterShape(t)
	price, ok := b.toUSD(float64(t.PricePerHour), t.Currency)
	if nodes == 0 || !ok || price <= 0 {
		return cloudprovider.ClusterOffer{}, false
	}
	gt := b.gpuTypeFor(t.GPU.Description, t.Model, t.Name)
	if gt != "" && perGPU > b.inv.GPUs[gt].MaxCount {
		return cloudprovider.ClusterOffer{}, false
	}
	cpu, gpuMem, mem := perNode(t, nodes)
	return cloudprovider.ClusterOffer{
		Offer: cloudprovider.Offer{
			Cloud: CloudName, Region: location, InstanceType: t.ClusterType, GPUType: gt,
			CloudGPU:     strings.TrimSpace(countPrefix.ReplaceAllString(t.GPU.Description, "")),
			GPUCount:     perGPU,
			Hardware:     hardware(t.Name, t.Model, GPU{Description: t.GPU.Description, NumberOfGPUs: perGPU}, gpuMem, cpu, mem),
			PricePerHour: price, Available: -1,
			Details: map[string]string{DetailLocationCode: location, DetailClusterType: t.ClusterType,
				DetailCatalogCurrency: strings.ToLower(cmp.Or(t.Currency, b.cfg.Currency)),
				DetailCatalogPrice:    strconv.FormatFloat(float64(t.PricePerHour), 'f', -1, 64),
				DetailClusterImage:    b.clusterImage(t)},
		},
		Nodes:        nodes,
		Interconnect: cloudprovider.InterconnectFabric,
	}, true
}

// clusterImage is the image t's nodes boot: ClusterImage (default DefaultClusterImage) when t lists it
// in supported_os (or lists none), else t's first supported image.
func (b *Backend) clusterImage(t ClusterType) string {
	want := cmp.Or(b.cfg.ClusterImage, DefaultClusterImage)
	if len(t.SupportedOS) == 0 || slices.Contains(t.SupportedOS, want) {
		return want
	}
	return t.SupportedOS[0]
}

// CreateCluster deploys an instant cluster with req.Name as its hostname (Verda names the worker
// nodes <hostname>-1 ... <hostname>-N, hydra's node names), the ownership record as its description
// and tags, a shared volume of ClusterSharedVolumeGB, and req.Volumes on every node (existing_volumes:
// shared volumes of the cluster's location only, checked before anything is created). It is idempotent by name: creates of one
// name in this process run one at a time and first look for a live cluster of the name. A price
// above req.MaxPricePerHour (the type's price now) is ErrCapacity and creates nothing. Verda places a
// cluster whole or answers 503 "Not enough resources" (ErrCapacity, nothing placed); a cluster Verda
// accepted but reports failed at once (error, no_capacity) is discontinued and ErrCapacity returned.
// After a lost answer the cluster is looked for by name once.
func (b *Backend) CreateCluster(ctx context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	const op = "creating cluster"
	clusterType := cmp.Or(req.Offer.Details[DetailClusterType], req.Offer.InstanceType)
	location := cmp.Or(req.Offer.Details[DetailLocationCode], req.Offer.Region)
	if req.Name == "" || clusterType == "" || location == "" {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op,
			"a cluster needs a name, a cluster type and a location code")
	}
	var existing []verdaapi.ClusterExistingVolume
	var keyIDs []string
	made, how, err := createonce.Run(ctx, &b.creates, createonce.StepsOf[cloudprovider.Cluster]{
		Cloud: CloudName, Op: op, Name: req.Name, Key: "cluster/" + req.Name, Log: b.log,
		ID:   func(c cloudprovider.Cluster) string { return c.ID },
		Find: func(ctx context.Context) (cloudprovider.Cluster, bool, error) { return b.findCluster(ctx, req.Name) },
		Prepare: func(ctx context.Context) (err error) {
			if err := b.checkClusterPrice(ctx, req, clusterType); err != nil {
				return err
			}
			if existing, err = b.clusterVolumes(ctx, location, req.Volumes); err != nil { // volumes.go
				return err
			}
			keyIDs, err = b.ensureSSHKeys(ctx, req.SSHPublicKeys)
			return err
		},
		Create: func(ctx context.Context) (cloudprovider.Cluster, error) {
			id, err := b.client.CreateCluster(ctx, CreateClusterRequest{
				ClusterType: clusterType, Image: cmp.Or(req.Offer.Details[DetailClusterImage], b.cfg.ClusterImage, DefaultClusterImage), Hostname: req.Name,
				Description: cloudprovider.OwnerDescription(req.Owner), SSHKeyIDs: keyIDs, LocationCode: location,
				Contract:        "PAY_AS_YOU_GO",
				SharedVolume:    &verdaapi.ClusterSharedVolumeSpec{Name: sharedVolumeName(req.Name), Size: cmp.Or(b.cfg.ClusterSharedVolumeGB, DefaultClusterSharedVolumeGB)},
				ExistingVolumes: existing,
				Tags:            ownerTags(req.Owner),
			})
			return cloudprovider.Cluster{ID: id}, err
		},
	})
	if err != nil || how != createonce.Created {
		return made, err // found by name: before the create, or after a lost answer
	}
	id := made.ID
	b.log.Info("cluster ordered", "name", req.Name, "id", id, "cluster_type", clusterType, "location", location)
	vc, err := b.client.Cluster(ctx, id)
	if err != nil {
		ordered := cloudprovider.Cluster{ID: id, Name: req.Name, Cloud: CloudName, Region: location, Status: cloudprovider.StatusPending,
			CloudStatus: StatusOrdered, PricePerHour: req.Offer.PricePerHour, Env: fabricEnv(), Owner: req.Owner, Interconnect: cloudprovider.InterconnectFabric}
		return ordered, nil //nolint:nilerr // ordered: a failed read leaves it pending for the next poll
	}
	c := b.toCluster(vc)
	if c.Status == cloudprovider.StatusError {
		// Not delivered whole: nothing stays billed.
		if derr := b.DeleteCluster(ctx, id); derr != nil {
			return c, derr
		}
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrCapacity, CloudName, op,
			"Verda could not deliver cluster %s (%s); it was discontinued", req.Name, vc.Status)
	}
	return c, nil
}

// findCluster returns the live cluster whose hostname is name, if there is one.
func (b *Backend) findCluster(ctx context.Context, name string) (cloudprovider.Cluster, bool, error) {
	return cloudprovider.FindNamed(ctx, name, b.ListClusters, func(c cloudprovider.Cluster) bool { return c.Name == name }, nil)
}

// checkClusterPrice refuses (ErrCapacity) a cluster type whose price, as planned or now, is above
// req.MaxPricePerHour.
func (b *Backend) checkClusterPrice(ctx context.Context, req cloudprovider.ClusterRequest, clusterType string) error {
	if req.MaxPricePerHour <= 0 {
		return nil
	}
	if err := cloudprovider.CheckPriceCap(CloudName, "creating cluster", clusterType, req.Offer.PricePerHour, req.MaxPricePerHour); err != nil {
		return err
	}
	return checkListedPrice(ctx, b, "creating cluster", clusterType, clusterType+" in "+req.Offer.Region, req.MaxPricePerHour, b.client.ClusterTypes,
		func(t ClusterType) (string, verdaapi.Decimal, string) {
			return t.ClusterType, t.PricePerHour, t.Currency
		})
}

// GetCluster reads one cluster; an unknown id is ErrNotFound, a discontinued one is terminated.
func (b *Backend) GetCluster(ctx context.Context, id string) (cloudprovider.Cluster, error) {
	vc, err := b.client.Cluster(ctx, id)
	if err != nil {
		return cloudprovider.Cluster{}, clusterGone(err)
	}
	return b.toCluster(vc), nil
}

// ListClusters returns the live clusters whose hostname starts with prefix.
func (b *Backend) ListClusters(ctx context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	return backendkit.ListClusters(ctx, prefix, b.client.Clusters, func(vc VerdaCluster) string { return vc.Hostname }, b.toCluster)
}

// DeleteCluster discontinues a cluster and deletes the shared volume CreateCluster made for it
// (named <hostname>-home): Verda detaches a discontinued cluster's shared volumes and keeps billing them
// until they are deleted (the Go SDK's Discontinue says so). A cluster Verda does not know is success;
// one already discontinued only has its volume deleted, so a retried delete finishes the job.
func (b *Backend) DeleteCluster(ctx context.Context, id string) error {
	vc, err := b.client.Cluster(ctx, id)
	if err != nil {
		if err = clusterGone(err); cloudprovider.IsNotFound(err) {
			return nil
		}
		return err
	}
	if vc.Status != StatusDiscontinued {
		err := b.client.DiscontinueCluster(ctx, id)
		if re, ok := asResponseError(err); ok && (re.MessageHas("discontinue a discontinued") || re.MessageHas(msgInvalidClusterID)) {
			err = nil
		}
		if err != nil {
			return err
		}
	}
	for _, v := range vc.SharedVolumes {
		if v.ID == "" || v.Name != sharedVolumeName(vc.Hostname) {
			continue // a volume hydra did not make stays
		}
		err := b.client.DeleteVolume(ctx, v.ID)
		if re, ok := asResponseError(err); ok && (re.Status == http.StatusNotFound || re.MessageHas("invalid volume id")) {
			err = nil
		}
		if err != nil {
			return err
		}
		b.log.Debug("deleted the cluster's shared volume", "cluster", id, "volume", v.ID)
	}
	return nil
}

// sharedVolumeName is the name of the shared volume CreateCluster makes for cluster name.
func sharedVolumeName(name string) string { return name + "-home" }

// DeleteVolume deletes a volume (DELETE /volumes/{id}); Verda keeps it in its trash for 96 hours.
func (c *Client) DeleteVolume(ctx context.Context, id string) error {
	_, err := c.do(ctx, "deleting volume", restclient.Request{Method: http.MethodDelete, Path: "/volumes/" + url.PathEscape(id)})
	return err
}

// clusterGone reads Verda's answer for an unknown cluster id (400 "Invalid cluster id") as ErrNotFound.
func clusterGone(err error) error {
	if re, ok := asResponseError(err); ok && re.MessageHas(msgInvalidClusterID) {
		return cloudprovider.NewError(cloudprovider.ErrNotFound, CloudName, "reading cluster", re)
	}
	return err
}

func fabricEnv() map[string]string {
	env := make(map[string]string, len(FabricEnv))
	for k, v := range FabricEnv {
		env[k] = v
	}
	return env
}

// toCluster maps Verda's cluster onto hydra's: every worker node a ClusterNode (Cluster set to the
// cluster's id, the cluster's ownership record), the cluster running only when every node runs. A
// running node is reached at its private_ip through the cluster's login node (the cluster's ip) as
// SSH.Jump: Verda's docs make the login node the only node reachable from the internet. A node that
// does report a public_ip is reached there directly.
func (b *Backend) toCluster(vc VerdaCluster) cloudprovider.Cluster {
	owner := ownerOf(Instance{Tags: vc.Tags, Description: vc.Description})
	b.mu.Lock()
	currency := b.clusterCurr[vc.ClusterType]
	b.mu.Unlock()
	price, ok := b.toUSD(float64(vc.PricePerHour), currency)
	if !ok {
		price, _ = b.toUSD(float64(vc.PricePerHour), "usd")
	}
	n := len(vc.WorkerNodes)
	perGPU := 0
	if n > 0 {
		perGPU = vc.GPU.NumberOfGPUs / n
	}
	gt := b.gpuTypeFor(vc.GPU.Description)
	out := cloudprovider.Cluster{
		ID: vc.ID, Name: vc.Hostname, Cloud: CloudName, Region: vc.Location, CloudStatus: vc.Status,
		PricePerHour: price, Env: fabricEnv(), Owner: owner, Interconnect: cloudprovider.InterconnectFabric,
	}
	if t, err := time.Parse(time.RFC3339Nano, vc.CreatedAt); err == nil {
		out.CreatedAt = t
	}
	var hw cloudprovider.Hardware
	if n > 0 {
		cpu, gpuMem, mem := perNode(ClusterType{CPU: vc.CPU, GPUMemory: vc.GPUMemory, Memory: vc.Memory}, n)
		hw = hardware("", "", GPU{Description: vc.GPU.Description, NumberOfGPUs: perGPU}, gpuMem, cpu, mem)
	}
	allRunning := n > 0
	anyError := false
	login := ""
	if vc.IP != nil {
		login = strings.TrimSpace(*vc.IP)
	}
	for _, wn := range vc.WorkerNodes {
		public, private := "", ""
		if wn.PublicIP != nil {
			public = strings.TrimSpace(*wn.PublicIP)
		}
		if wn.PrivateIP != nil {
			private = strings.TrimSpace(*wn.PrivateIP)
		}
		// Reachable once it has a public address, or a private one behind a login node with one.
		reachable := public != "" || (login != "" && private != "")
		status, msg := mapStatus(cmp.Or(wn.Status, vc.Status), reachable)
		node := cloudprovider.ClusterNode{Instance: cloudprovider.Instance{
			ID: wn.ID, Name: wn.Hostname, Cloud: CloudName, Region: vc.Location, InstanceType: vc.ClusterType,
			GPUType: gt, GPUCount: perGPU, Hardware: hw, Status: status, CloudStatus: wn.Status, Message: msg,
			CreatedAt: out.CreatedAt, Cluster: vc.ID, Owner: owner,
		}}
		if n > 0 {
			node.PricePerHour = money.USD(int64(price) / int64(n))
		}
		node.PrivateIP = private
		switch {
		case status != cloudprovider.StatusRunning:
		case public != "":
			node.SSH = &cloudprovider.SSHEndpoint{Host: public, Port: b.cfg.SSHPort, User: b.cfg.SSHUser}
		default:
			node.SSH = &cloudprovider.SSHEndpoint{Host: private, Port: b.cfg.SSHPort, User: b.cfg.SSHUser,
				Jump: &cloudprovider.SSHEndpoint{Host: login, Port: b.cfg.SSHPort, User: b.cfg.SSHUser}}
		}
		allRunning = allRunning && status == cloudprovider.StatusRunning
		anyError = anyError || status == cloudprovider.StatusError
		out.Nodes = append(out.Nodes, node)
	}
	status, msg := mapStatus(vc.Status, true)
	switch {
	case status == cloudprovider.StatusTerminated || status == cloudprovider.StatusError:
	case anyError:
		status, msg = cloudprovider.StatusError, "a node of the cluster failed at Verda"
	case status == cloudprovider.StatusRunning && !allRunning:
		status = cloudprovider.StatusPending
	}
	out.Status, out.Message = status, strings.Replace(msg, "the instance", "the cluster", 1)
	return out
}

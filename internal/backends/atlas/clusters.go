package atlas

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Details keys a cluster offer carries.
const (
	DetailFabric       = "fabric"
	DetailInterconnect = "interconnect"
	// DetailMaxClusterNodes is the largest cluster Atlas builds for the offer, free or not.
	DetailMaxClusterNodes = "max_cluster_nodes"
)

var _ cloudprovider.ClusterBackend = (*Backend)(nil)

// ClusterOffers returns GET /v1/cluster-offers.
func (c *Client) ClusterOffers(ctx context.Context) ([]atlasapi.ClusterOffer, error) {
	var out struct {
		ClusterOffers []atlasapi.ClusterOffer `json:"cluster_offers"`
	}
	err := c.doJSON(ctx, "listing cluster offers", restclient.Request{Method: http.MethodGet, Path: "/v1/cluster-offers"}, &out)
	return out.ClusterOffers, err
}

// CreateCluster orders a cluster. It is idempotent by name on Atlas, so it is retried like a read, and
// a 409 already_exists returns the existing cluster with existed = true.
func (c *Client) CreateCluster(ctx context.Context, req atlasapi.CreateClusterRequest) (cl atlasapi.Cluster, existed bool, err error) {
	const op = "creating cluster"
	resp, err := c.rc.Do(ctx, restclient.Request{Method: http.MethodPost, Path: "/v1/clusters", Body: req})
	if err != nil {
		var he *restclient.HTTPError
		if errors.As(err, &he) && he.Status == http.StatusConflict {
			var body struct {
				Cluster *atlasapi.Cluster `json:"cluster"`
			}
			if json.Unmarshal(he.Body, &body) == nil && body.Cluster != nil && body.Cluster.ID != "" {
				return *body.Cluster, true, nil
			}
		}
		return atlasapi.Cluster{}, false, classify(op, err)
	}
	if err := json.Unmarshal(resp.Body, &cl); err != nil || cl.ID == "" {
		return atlasapi.Cluster{}, false, cloudprovider.Errorf(cloudprovider.ErrOther, CloudName, op, "unexpected answer: %.200s", resp.Body)
	}
	return cl, false, nil
}

// Cluster returns one cluster; an unknown id is an ErrNotFound error.
func (c *Client) Cluster(ctx context.Context, id string) (atlasapi.Cluster, error) {
	var out atlasapi.Cluster
	err := c.doJSON(ctx, "reading cluster", restclient.Request{Method: http.MethodGet, Path: "/v1/clusters/" + url.PathEscape(id)}, &out)
	return out, err
}

// Clusters lists the live clusters whose name starts with prefix, reading every page.
func (c *Client) Clusters(ctx context.Context, prefix string) ([]atlasapi.Cluster, error) {
	return listAll(ctx, c, "listing clusters", "/v1/clusters", prefix, func(l atlasapi.ClusterList) ([]atlasapi.Cluster, string) {
		return l.Clusters, l.NextPageToken
	})
}

// DeleteCluster starts terminating every node of a cluster.
func (c *Client) DeleteCluster(ctx context.Context, id string) error {
	return c.doJSON(ctx, "deleting cluster", restclient.Request{Method: http.MethodDelete, Path: "/v1/clusters/" + url.PathEscape(id)}, nil)
}

// ClusterOffers lists Atlas's clusters, one offer per entry of GET /v1/cluster-offers: any count of
// nodes up to the most one cluster can have now (Nodes, the smaller of max_cluster_nodes and
// available_nodes; 0 when none is free, listed so the control plane can say so) at the list price per
// node (PricePerNode); PricePerHour is the price of Nodes nodes, ranked with PriceFactor as machines
// are. A fabric entry's offer promises the fabric; the others are "any".
func (b *Backend) ClusterOffers(ctx context.Context) ([]cloudprovider.ClusterOffer, error) {
	entries, err := b.client.ClusterOffers(ctx)
	if err != nil {
		return nil, err
	}
	var out []cloudprovider.ClusterOffer
	for _, e := range entries {
		gpuType, node, ok := b.listPrice(e.GPUModel, e.GPUCount, e.PricePerHour, e.Currency)
		if !ok {
			continue
		}
		interconnect := cloudprovider.InterconnectAny
		if e.Interconnect == atlasapi.InterconnectFabric {
			interconnect = cloudprovider.InterconnectFabric
		}
		nodes := max(min(e.MaxClusterNodes, e.AvailableNodes), 0)
		price := node.Times(float64(nodes))
		rank := price.Times(b.factor)
		out = append(out, cloudprovider.ClusterOffer{
			Offer: cloudprovider.Offer{
				Cloud: CloudName, Region: e.Region, InstanceType: e.InstanceType, GPUType: gpuType, CloudGPU: e.GPUModel, GPUCount: e.GPUCount,
				Hardware:     offerHardware(e.Spec),
				PricePerHour: price, RankPrice: rank, Available: min(nodes, 1),
				Details: map[string]string{DetailRankPrice: rank.String(), DetailGPUModel: e.GPUModel, DetailDiskGB: strconv.Itoa(e.DiskGB),
					DetailInterconnect: e.Interconnect, DetailFabric: e.Fabric, DetailMaxClusterNodes: strconv.Itoa(e.MaxClusterNodes)},
			},
			Nodes: nodes, Interconnect: interconnect, PricePerNode: node,
		})
	}
	return out, nil
}

// CreateCluster orders req.Offer.Nodes nodes (the request's count, at most the offer's) as one cluster named req.Name (Atlas names the nodes
// <name>-1 ... <name>-N), every node carrying the ownership record as labels. Atlas places a cluster
// whole or answers 422 no_capacity (ErrCapacity, nothing placed); the cap (req.MaxPricePerHour, the
// whole cluster's) is sent and enforced by Atlas against the list price (422 price_above_max:
// ErrCapacity, nothing created). Create is idempotent by name at Atlas (409 with the cluster).
func (b *Backend) CreateCluster(ctx context.Context, req cloudprovider.ClusterRequest) (cloudprovider.Cluster, error) {
	const op = "creating cluster"
	if req.Name == "" || req.Offer.InstanceType == "" || req.Offer.Region == "" || req.Offer.Nodes < 1 {
		return cloudprovider.Cluster{}, cloudprovider.Errorf(cloudprovider.ErrInvalid, CloudName, op, "name, instance type, region and nodes are required")
	}
	price := req.Offer.PricePerHour
	if req.Offer.PricePerNode > 0 {
		price = req.Offer.PricePerNode.Times(float64(req.Offer.Nodes))
	}
	if err := cloudprovider.CheckPriceCap(CloudName, op, fmt.Sprintf("%d x %s in %s", req.Offer.Nodes, req.Offer.InstanceType, req.Offer.Region), price, req.MaxPricePerHour); err != nil {
		return cloudprovider.Cluster{}, err
	}
	interconnect := atlasapi.InterconnectAny
	if req.Offer.Interconnect == cloudprovider.InterconnectFabric {
		interconnect = atlasapi.InterconnectFabric
	}
	var keys []string
	for _, k := range req.SSHPublicKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	cl, existed, err := b.client.CreateCluster(ctx, atlasapi.CreateClusterRequest{CreateRequest: atlasapi.CreateRequest{
		Name: req.Name, InstanceType: req.Offer.InstanceType, Region: req.Offer.Region,
		SSHPublicKeys: keys, Labels: ownerLabels(req.Owner), MaxPricePerHour: req.MaxPricePerHour.Float64(),
	}, Interconnect: interconnect, NodeCount: req.Offer.Nodes})
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	if existed {
		b.log.Debug("a cluster with this name already existed; returning it", "name", req.Name, "id", cl.ID)
	}
	return b.toCluster(cl), nil
}

// ownerLabels is the ownership record as Atlas labels (none without a token).
func ownerLabels(o cloudprovider.Ownership) map[string]string {
	if o.Token == "" {
		return nil
	}
	labels := map[string]string{}
	for _, kv := range cloudprovider.OwnerLabels(o) {
		labels[kv[0]] = kv[1]
	}
	return labels
}

// GetCluster returns one cluster, or ErrNotFound.
func (b *Backend) GetCluster(ctx context.Context, id string) (cloudprovider.Cluster, error) {
	cl, err := b.client.Cluster(ctx, id)
	if err != nil {
		return cloudprovider.Cluster{}, err
	}
	return b.toCluster(cl), nil
}

// ListClusters returns the live clusters whose name starts with prefix.
func (b *Backend) ListClusters(ctx context.Context, prefix string) ([]cloudprovider.Cluster, error) {
	// The server filters too; check again rather than trust it.
	read := func(ctx context.Context) ([]atlasapi.Cluster, error) { return b.client.Clusters(ctx, prefix) }
	return backendkit.ListClusters(ctx, prefix, read, func(cl atlasapi.Cluster) string { return cl.Name }, b.toCluster)
}

// DeleteCluster starts terminating the cluster; one that is terminated or unknown (404) is success.
func (b *Backend) DeleteCluster(ctx context.Context, id string) error {
	if err := b.client.DeleteCluster(ctx, id); err != nil && !cloudprovider.IsNotFound(err) {
		return err
	}
	return nil
}

// toCluster maps an Atlas cluster onto hydra's: its nodes as instances (Cluster set, private address
// kept), running only when Atlas says active and every node runs.
func (b *Backend) toCluster(cl atlasapi.Cluster) cloudprovider.Cluster {
	out := cloudprovider.Cluster{ID: cl.ID, Name: cl.Name, Cloud: CloudName, Region: cl.Region, CloudStatus: cl.Status,
		PricePerHour: usd(cl.PricePerHour), Env: maps.Clone(cl.Env), CreatedAt: cl.CreatedAt, Interconnect: cloudprovider.InterconnectAny}
	if cl.Interconnect == atlasapi.InterconnectFabric {
		out.Interconnect = cloudprovider.InterconnectFabric
	}
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	if o, ok := cloudprovider.OwnerFromLabels(func(k string) (string, bool) { v, ok := cl.Labels[k]; return v, ok }); ok {
		out.Owner = o
	}
	allRunning := len(cl.Nodes) > 0
	for _, n := range cl.Nodes {
		node := cloudprovider.ClusterNode{Instance: b.toInstance(n), PrivateIP: n.PrivateIP}
		node.Cluster = cl.ID
		allRunning = allRunning && node.Status == cloudprovider.StatusRunning
		out.Nodes = append(out.Nodes, node)
	}
	out.Status = mapStatus(cl.Status, nil)
	if out.Status == cloudprovider.StatusError {
		out.Message = cmp.Or(cl.StatusMessage, "the cluster failed")
	}
	if cl.Status == "active" {
		out.Status = cloudprovider.StatusPending
		if allRunning {
			out.Status = cloudprovider.StatusRunning
		}
	}
	return out
}

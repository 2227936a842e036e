package verda

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// Verda's instant clusters, as its SDKs and documents show them (verda-cloud/verdacloud-sdk-go
// pkg/verda/clusters*.go, verda-cloud/sdk-python verda/clusters and verda/cluster_types with their
// unit tests, docs.verda.com "Instant clusters: good to know", the API change log of 2026-03-23):
//
//   - GET /cluster-types?currency: the types, each a whole cluster ("32H200": 4 nodes of 8 GPUs) with
//     the whole cluster's price as a decimal string.
//   - GET /cluster-availability?location_code: [{location_code, availabilities}];
//     GET /cluster-availability/{type}?location_code: a bare boolean.
//   - POST /clusters {cluster_type, image, hostname, description, ssh_key_ids, location_code (400
//     without it since 2026-03-23), contract, startup_script_id, shared_volume, existing_volumes, tags}:
//     answered 200 {"id": "..."} (JSON, unlike POST /instances: both SDKs' tests decode it so). A
//     location without room for the whole cluster answers 503 "Not enough resources..." and places
//     nothing: a cluster is placed whole or not at all.
//   - GET /clusters (optional ?status) and GET /clusters/{id}: the cluster with worker_nodes [{id,
//     hostname, public_ip, private_ip, status}] named <hostname>-1, <hostname>-2, ... (the docs' naming
//     convention) and ip, the login node's address, null until running as an instance's is. A worker
//     has no public address: the docs' cluster architecture makes the login node (jump host, bastion)
//     the only node reachable from the internet and has workers reached by SSH to the login node first,
//     and the Python SDK's tests give worker nodes id, status, hostname and private_ip only; public_ip
//     is answered null. Discontinued clusters leave the list but stay readable by id, as instances do.
//   - PUT /clusters {actions: [{action: "discontinue", id}]} deletes (the Python SDK sends its "delete"
//     as "discontinue"; both are accepted); answered 202 with an empty body. The Go SDK says the local
//     storage goes and the shared volumes are detached, to be deleted by hand: they stay (billed)
//     until DELETE /volumes/{id} (the Go SDK's DeleteVolume), the one volume call the emulator serves.
//
// Worker nodes are not listed under /instances: no document says a cluster's nodes appear there (the
// SDKs read them only from the cluster's worker_nodes), so the emulator keeps them inside the cluster.
// An unknown cluster id is answered 400 invalid_request "Invalid cluster id", in the shape Verda
// answers unknown instance ids (no cluster-specific answer was found).

// ClusterTypeEntry is one cluster type of the emulated catalog.
type ClusterTypeEntry struct {
	// ClusterType is Verda's name, e.g. "32H200".
	ClusterType string
	// Name and Model as GET /cluster-types answers them ("H200 Cluster", "H200").
	Name, Model string
	// GPUName is the GPU as the instance catalog names it ("H200 SXM5 141GB"); the type's gpu
	// description is "<total>x <GPUName>".
	GPUName string
	// Nodes and GPUsPerNode shape the cluster; GPUMemoryGB is one GPU's; CPUCores and MemoryGB one node's.
	Nodes, GPUsPerNode, GPUMemoryGB, CPUCores, MemoryGB int
	// PricePerHour is the whole cluster's, in the account currency.
	PricePerHour float64
	// Stock gives, per location code, how many clusters of this type may run at once.
	Stock map[string]int
}

// DefaultClusterTypes are a few clusters of 8-GPU nodes (Verda's docs: up to 16 worker nodes with 8
// GPUs each), priced as that many of the catalog's 8-GPU instances: 2 and 4 nodes of H200 in FIN-03, 4
// nodes of B200 in ICE-01, and a B300 type listed but never available.
func DefaultClusterTypes() []ClusterTypeEntry {
	return []ClusterTypeEntry{
		{ClusterType: "16H200", Name: "H200 Cluster", Model: "H200", GPUName: "H200 SXM5 141GB", Nodes: 2, GPUsPerNode: 8, GPUMemoryGB: 141,
			CPUCores: 176, MemoryGB: 1480, PricePerHour: 57.44, Stock: map[string]int{"FIN-03": 2}},
		{ClusterType: "32H200", Name: "H200 Cluster", Model: "H200", GPUName: "H200 SXM5 141GB", Nodes: 4, GPUsPerNode: 8, GPUMemoryGB: 141,
			CPUCores: 176, MemoryGB: 1480, PricePerHour: 114.88, Stock: map[string]int{"FIN-03": 1}},
		{ClusterType: "32B200", Name: "B200 Cluster", Model: "B200", GPUName: "B200 SXM6 180GB", Nodes: 4, GPUsPerNode: 8, GPUMemoryGB: 180,
			CPUCores: 240, MemoryGB: 2000, PricePerHour: 143.68, Stock: map[string]int{"ICE-01": 1}},
		{ClusterType: "16B300", Name: "B300 Cluster", Model: "B300", GPUName: "B300 SXM6 262GB", Nodes: 2, GPUsPerNode: 8, GPUMemoryGB: 262,
			CPUCores: 240, MemoryGB: 2000, PricePerHour: 99.04},
	}
}

// clusterImages are the images a cluster boots, each cluster type's supported_os (the SDKs' tests show
// these names; GET /images/cluster, which lists them, is not served).
var clusterImages = []string{"ubuntu-24.04-cuda-12.8-cluster", "ubuntu-22.04-cuda-12.4-cluster"}

type clusterNode struct {
	ID        string `json:"id"`
	Hostname  string `json:"hostname"`
	PrivateIP string `json:"private_ip"`
}

type cluster struct {
	order
	ClusterType     string                           `json:"cluster_type"`
	SharedVolume    verdaapi.ClusterSharedVolumeSpec `json:"shared_volume"`
	ExistingVolumes []verdaapi.ClusterExistingVolume `json:"existing_volumes,omitempty"`
	Nodes           []clusterNode                    `json:"nodes"`
}

// clusterStatus follows an instance's life (statusOf): ordered, provisioning, running or error,
// discontinued once deleted.
func (s *Server) clusterStatus(c *cluster, now time.Time) string {
	return s.statusOf(&instance{order: c.order}, now)
}

func (s *Server) clusterType(name string) (ClusterTypeEntry, bool) {
	for _, t := range s.opts.ClusterTypes {
		if t.ClusterType == name {
			return t, true
		}
	}
	return ClusterTypeEntry{}, false
}

func (t ClusterTypeEntry) wire(currency string, factor float64) verdaapi.ClusterType {
	gpus := t.Nodes * t.GPUsPerNode
	return verdaapi.ClusterType{
		ID: uuidFor("cluster/" + t.ClusterType), Model: t.Model, Name: t.Name, ClusterType: t.ClusterType,
		CPU:          verdaapi.CPU{Description: fmt.Sprintf("%d CPU", t.Nodes*t.CPUCores), NumberOfCores: t.Nodes * t.CPUCores},
		GPU:          verdaapi.GPU{Description: fmt.Sprintf("%dx %s", gpus, t.GPUName), NumberOfGPUs: gpus},
		GPUMemory:    verdaapi.Size{Description: fmt.Sprintf("%dGB VRAM", gpus*t.GPUMemoryGB), SizeInGigabytes: gpus * t.GPUMemoryGB},
		Memory:       verdaapi.Size{Description: fmt.Sprintf("%dGB RAM", t.Nodes*t.MemoryGB), SizeInGigabytes: t.Nodes * t.MemoryGB},
		PricePerHour: verdaapi.Decimal(roundPrice(t.PricePerHour * factor)),
		Currency:     currency, Manufacturer: "NVIDIA",
		NodeDetails: []string{fmt.Sprintf("%dx %d GPU nodes", t.Nodes, t.GPUsPerNode)},
		SupportedOS: clusterImages,
	}
}

func roundPrice(p float64) float64 { return float64(int64(p*1000+0.5)) / 1000 }

// clusterFree is how many more clusters of a type may start in a location.
func (s *Server) clusterFree(st *state, t ClusterTypeEntry, location string) int {
	return t.Stock[location] - emukit.Count(st.Clusters, func(c *cluster) bool {
		return c.DeletedAt == nil && c.ClusterType == t.ClusterType && c.Location == location
	})
}

func (s *Server) clusterTypes(q url.Values, nparts int) reply {
	if nparts != 1 {
		return errReply(http.StatusNotFound, "not_found", "Not found")
	}
	currency, factor := s.currencyFor(q.Get("currency"))
	out := []verdaapi.ClusterType{}
	for _, t := range s.opts.ClusterTypes {
		out = append(out, t.wire(currency, factor))
	}
	return jsonReply(http.StatusOK, out)
}

func (s *Server) clusterAvailability(st *state, q url.Values, name string, nparts int) reply {
	names := make([]string, 0, len(s.opts.ClusterTypes))
	for _, t := range s.opts.ClusterTypes {
		names = append(names, t.ClusterType)
	}
	return s.availabilityReply(locationParam(q), name, nparts == 2, names, func(name, location string) bool {
		t, ok := s.clusterType(name)
		return ok && s.clusterFree(st, t, location) > 0
	})
}

func (s *Server) clusters(st *state, r *http.Request, id string, nparts int, body []byte) reply {
	switch {
	case r.Method == http.MethodGet && nparts == 1:
		now := s.opts.Now()
		want := r.URL.Query().Get("status")
		out := []verdaapi.Cluster{}
		for _, c := range sortedClusters(st) {
			status := s.clusterStatus(c, now)
			if status == "discontinued" || (want != "" && want != status) {
				continue
			}
			out = append(out, s.clusterView(c, now))
		}
		return jsonReply(http.StatusOK, out)
	case r.Method == http.MethodGet && nparts == 2:
		c, ok := st.Clusters[id]
		if !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid cluster id")
		}
		return jsonReply(http.StatusOK, s.clusterView(c, s.opts.Now()))
	case r.Method == http.MethodPost && nparts == 1:
		return s.createCluster(st, body)
	case r.Method == http.MethodPut && nparts == 1:
		return s.clusterActions(st, body)
	}
	return errReply(http.StatusNotFound, "not_found", "Not found")
}

func sortedClusters(st *state) []*cluster {
	return emukit.ByAge(st.Clusters, func(c *cluster) time.Time { return c.CreatedAt }, func(c *cluster) string { return c.ID })
}

func (s *Server) clusterView(c *cluster, now time.Time) verdaapi.Cluster {
	status := s.clusterStatus(c, now)
	t, _ := s.clusterType(c.ClusterType)
	w := t.wire("", 1)
	running := status == "running"
	var ip *string
	if running {
		ip = &c.IP
	}
	nodes := make([]verdaapi.ClusterWorkerNode, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = verdaapi.ClusterWorkerNode{ID: n.ID, Hostname: n.Hostname, PrivateIP: &n.PrivateIP, Status: status}
	}
	tags := c.Tags
	if tags == nil {
		tags = []tag{}
	}
	return verdaapi.Cluster{
		ID: c.ID, IP: ip, Status: status, CreatedAt: c.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		Hostname: c.Hostname, Description: c.Description, Location: c.Location, ClusterType: c.ClusterType,
		Image: c.Image, OSName: "Ubuntu", PricePerHour: restclient.FlexFloat(c.PricePerHour),
		CPU: w.CPU, GPU: w.GPU, GPUMemory: w.GPUMemory, Memory: w.Memory,
		SSHKeyIDs: c.SSHKeyIDs, Contract: c.Contract, StartupScriptID: c.StartupID, WorkerNodes: nodes,
		SharedVolumes: []verdaapi.ClusterSharedVolume{c.sharedVolume()},
		Tags:          tags,
	}
}

func (s *Server) createCluster(st *state, body []byte) reply {
	var req verdaapi.CreateClusterRequest
	if rep, ok := decodeRequired(body, &req, required{"cluster_type", &req.ClusterType}, required{"image", &req.Image},
		required{"hostname", &req.Hostname}, required{"location_code", &req.LocationCode}); !ok {
		return rep
	}
	t, ok := s.clusterType(req.ClusterType)
	if !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid cluster type")
	}
	if !s.knownLocation(req.LocationCode) {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid location code")
	}
	if !hostnameRE.MatchString(req.Hostname + "-99") {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid hostname")
	}
	imageOK := false
	for _, im := range clusterImages {
		imageOK = imageOK || im == req.Image
	}
	if !imageOK {
		return errReply(http.StatusBadRequest, "invalid_request", "Operating system is not valid for this cluster type")
	}
	switch req.Contract {
	case "", "PAY_AS_YOU_GO", "LONG_TERM":
	default:
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid contract")
	}
	if rep, bad := checkKeysAndTags(st, req.SSHKeyIDs, req.Tags); bad {
		return rep
	}
	if rep, bad := clusterVolumesRefused(st, req.LocationCode, req.ExistingVolumes); bad { // volumes.go
		return rep
	}
	// All or nothing: the location either has room for every node or the cluster is refused whole.
	if st.Faults.SoldOut || s.clusterFree(st, t, req.LocationCode) <= 0 {
		return errReply(http.StatusServiceUnavailable, "service_unavailable",
			fmt.Sprintf("Not enough resources to deploy a %d node cluster type %s in %s", t.Nodes, t.ClusterType, req.LocationCode))
	}
	keys := req.SSHKeyIDs
	if keys == nil {
		keys = []string{}
	}
	shared := verdaapi.ClusterSharedVolumeSpec{Name: req.Hostname + "-shared-volume", Size: 30000}
	if req.SharedVolume != nil {
		shared = *req.SharedVolume
	}
	st.ClusterSeq++
	c := &cluster{order: order{
		ID: newUUID(), Hostname: req.Hostname, Description: req.Description,
		Image: req.Image, Location: req.LocationCode, Contract: cmp.Or(req.Contract, "PAY_AS_YOU_GO"), SSHKeyIDs: keys,
		StartupID: req.StartupScriptID, Tags: req.Tags,
		IP: s.nextIP(st), PricePerHour: t.PricePerHour, CreatedAt: s.opts.Now(), Boot: int64(s.opts.BootDuration),
		FailBoot: st.Faults.TakeBootFailure(),
	}, ClusterType: t.ClusterType, SharedVolume: shared, ExistingVolumes: req.ExistingVolumes}
	for i := 1; i <= t.Nodes; i++ {
		c.Nodes = append(c.Nodes, clusterNode{ID: newUUID(), Hostname: fmt.Sprintf("%s-%d", req.Hostname, i),
			PrivateIP: fmt.Sprintf("%s.%d.%d", s.opts.ClusterPrivateNet, st.ClusterSeq%250, 10+i)})
	}
	st.Clusters[c.ID] = c
	st.Created += t.Nodes
	if st.Faults.TakeLostCreate() {
		return textReply(http.StatusBadGateway, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	}
	if s.opts.ClusterIDAsText {
		return textReply(http.StatusOK, c.ID)
	}
	return jsonReply(http.StatusOK, verdaapi.CreateClusterResponse{ID: c.ID})
}

// clusterActions performs PUT /clusters. Every action must be "discontinue" (or "delete"); an unknown
// id is 400 "Invalid cluster id", an already discontinued one 400 forbidden_action, as for instances.
func (s *Server) clusterActions(st *state, body []byte) reply {
	var req verdaapi.ClusterActionsRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Actions) == 0 {
		return errReply(http.StatusBadRequest, "invalid_request", "actions are required")
	}
	for _, a := range req.Actions {
		if a.Action != "discontinue" && a.Action != "delete" {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid action")
		}
		c, ok := st.Clusters[a.ID]
		if !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid cluster id")
		}
		if c.DeletedAt != nil {
			return errReply(http.StatusBadRequest, "forbidden_action", "Can't discontinue a discontinued cluster")
		}
	}
	now := s.opts.Now()
	for _, a := range req.Actions {
		c := st.Clusters[a.ID]
		c.DeletedAt = &now
		v := c.sharedVolume()
		st.Volumes[v.ID] = &detachedVolume{ID: v.ID, Name: v.Name, Size: v.SizeInGigabytes, Location: c.Location}
	}
	return reply{Status: http.StatusAccepted}
}

// detachedVolume is a discontinued cluster's shared volume, still billed until deleted.
type detachedVolume struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Size     int    `json:"size"`
	Location string `json:"location"`
}

func (c *cluster) sharedVolume() verdaapi.ClusterSharedVolume {
	return verdaapi.ClusterSharedVolume{ID: uuidFor("sfs/" + c.ID), Name: c.SharedVolume.Name, MountPoint: "/home", SizeInGigabytes: c.SharedVolume.Size}
}

// deleteVolume deletes a detached shared volume (202); an unknown one is 404 not_found (no recorded
// answer was found; the backend also reads "Invalid volume id" as gone).
func (s *Server) deleteVolume(st *state, id string) reply {
	if _, ok := st.Volumes[id]; !ok {
		return errReply(http.StatusNotFound, "not_found", "Volume not found")
	}
	delete(st.Volumes, id)
	return reply{Status: http.StatusAccepted}
}

// DetachedVolumes counts the shared volumes of discontinued clusters not deleted yet (still billed).
func (s *Server) DetachedVolumes() int {
	return emukit.Read(s.update, func(st *state) int { return len(st.Volumes) })
}

// liveClusterNodes lists the nodes of the clusters not discontinued (for Stats), oldest cluster first.
func liveClusterNodes(st *state) []clusterNode {
	var out []clusterNode
	for _, c := range sortedClusters(st) {
		if c.DeletedAt == nil {
			out = append(out, c.Nodes...)
		}
	}
	return out
}

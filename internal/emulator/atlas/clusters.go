package atlas

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas/atlasapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Clusters (API.md "Clusters"): N instances of one type in one region ordered as one, placed whole or
// not at all, on a region's InfiniBand fabric (a pod of nodes only clusters get) or on its ordinary
// network (nodes from the type's instance capacity). The nodes are instances named <name>-1 ...
// <name>-N carrying the cluster's labels, its id (cluster_id) and a private address; they are
// deleted with their cluster only.

// Fabric is an InfiniBand pod: Nodes machines of InstanceType in Region that only clusters get. Free
// is how many are not in a cluster now (set to Nodes when the emulator seeds its state).
type Fabric struct {
	Name         string `json:"name"`
	Region       string `json:"region"`
	InstanceType string `json:"instance_type"`
	Nodes        int    `json:"nodes"`
	Free         int    `json:"free"`
}

// DefaultFabrics is one pod of four 8-GPU H100 machines in ams1.
func DefaultFabrics() []Fabric {
	return []Fabric{{Name: "ams1-ib1", Region: "ams1", InstanceType: "h100.8x", Nodes: 4, Free: 4}}
}

// maxAnyNodes is the largest cluster Atlas builds on a region's ordinary network.
const maxAnyNodes = 16

type clusterRec struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	InstanceType string            `json:"instance_type"`
	Region       string            `json:"region"`
	Interconnect string            `json:"interconnect"`
	Fabric       string            `json:"fabric,omitempty"`
	NodeIDs      []string          `json:"node_ids"`
	Price        float64           `json:"price"`
	Labels       map[string]string `json:"labels,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
}

func (s *Server) clusterOffers(w http.ResponseWriter) {
	out := []atlasapi.ClusterOffer{}
	_ = s.Store.With(false, func(st *state) error {
		for _, f := range st.Fabrics {
			if o, ok := catalogEntry(st, f.InstanceType, f.Region); ok {
				out = append(out, clusterOffer(o, atlasapi.InterconnectFabric, f.Name, f.Nodes, f.Free))
			}
		}
		for _, o := range st.Catalog {
			out = append(out, clusterOffer(o, atlasapi.InterconnectAny, "", maxAnyNodes, o.Available))
		}
		return nil
	})
	writeJSON(w, http.StatusOK, map[string]any{"cluster_offers": out})
}

func clusterOffer(o Offer, interconnect, fabric string, most, free int) atlasapi.ClusterOffer {
	spec := o.Spec
	spec.Currency = "USD"
	return atlasapi.ClusterOffer{InstanceType: o.InstanceType, Region: o.Region, Interconnect: interconnect, Fabric: fabric,
		Spec: spec, MaxClusterNodes: most, AvailableNodes: max(free, 0)}
}

func catalogEntry(st *state, instanceType, region string) (Offer, bool) {
	for _, o := range st.Catalog {
		if o.InstanceType == instanceType && o.Region == region {
			return o, true
		}
	}
	return Offer{}, false
}

// capacity returns the free-node counter a cluster draws from, the largest cluster possible there and
// the fabric's name; nil when the region has no such fabric or type.
func capacity(st *state, instanceType, region, interconnect string) (free *int, most int, fabric string) {
	if interconnect == atlasapi.InterconnectFabric {
		for i := range st.Fabrics {
			if f := &st.Fabrics[i]; f.InstanceType == instanceType && f.Region == region {
				return &f.Free, f.Nodes, f.Name
			}
		}
		return nil, 0, ""
	}
	for i := range st.Catalog {
		if o := &st.Catalog[i]; o.InstanceType == instanceType && o.Region == region {
			return &o.Available, maxAnyNodes, ""
		}
	}
	return nil, 0, ""
}

func (s *Server) nodesOf(st *state, c *clusterRec) []*instRec {
	var out []*instRec
	for _, id := range c.NodeIDs {
		if in := s.find(st, id); in != nil {
			out = append(out, in)
		}
	}
	return out
}

// clusterStatus is the cluster's as a whole: terminating or terminated with its nodes, failed when a
// node failed, active only when every node is, else the earliest of its nodes' (provisioning, booting).
func (s *Server) clusterStatus(nodes []*instRec, now time.Time) string {
	seen := map[string]bool{}
	for _, in := range nodes {
		seen[s.status(in, now)] = true
	}
	for _, st := range []string{"terminated", "terminating", "failed", "provisioning", "booting"} {
		if seen[st] {
			return st
		}
	}
	return "active"
}

func (s *Server) renderCluster(st *state, c *clusterRec, now time.Time) (atlasapi.Cluster, error) {
	nodes := s.nodesOf(st, c)
	out := atlasapi.Cluster{Resource: atlasapi.Resource{ID: c.ID, Name: c.Name, Status: s.clusterStatus(nodes, now), InstanceType: c.InstanceType, Region: c.Region},
		Interconnect: c.Interconnect, Fabric: c.Fabric, NodeCount: len(c.NodeIDs), PricePerHour: c.Price * float64(len(c.NodeIDs)),
		Labels: maps.Clone(c.Labels), Env: map[string]string{}, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Status == "failed" {
		out.StatusMessage = "a node failed its hardware check"
	}
	for _, in := range nodes {
		b, err := json.Marshal(s.render(in, now))
		if err != nil {
			return out, err
		}
		var node atlasapi.Instance
		if err := json.Unmarshal(b, &node); err != nil {
			return out, err
		}
		out.Nodes = append(out.Nodes, node)
		if node.UpdatedAt.After(out.UpdatedAt) {
			out.UpdatedAt = node.UpdatedAt
		}
	}
	return out, nil
}

func (s *Server) findCluster(st *state, id string) *clusterRec {
	return emukit.Find(st.Clusters, func(c *clusterRec) bool { return c.ID == id })
}

// gone says a cluster is terminated long enough to be purged (404), as its nodes are.
func (s *Server) gone(st *state, c *clusterRec, now time.Time) bool {
	nodes := s.nodesOf(st, c)
	return len(nodes) == 0 || s.purged(nodes[0], now)
}

func (s *Server) getCluster(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	var (
		out   atlasapi.Cluster
		found bool
	)
	err := s.Store.With(false, func(st *state) (err error) {
		if c := s.findCluster(st, id); c != nil && !s.gone(st, c, now) {
			out, err = s.renderCluster(st, c, now)
			found = true
		}
		return err
	})
	s.answerCluster(w, id, http.StatusOK, out, found, err)
}

func (s *Server) answerCluster(w http.ResponseWriter, id string, status int, out atlasapi.Cluster, found bool, err error) {
	switch {
	case err != nil:
		apiError(w, http.StatusInternalServerError, "internal", err.Error())
	case !found:
		apiError(w, http.StatusNotFound, "not_found", "no cluster "+id)
	default:
		writeJSON(w, status, out)
	}
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) {
	l, ok := s.listing(w, r)
	if !ok {
		return
	}
	now := s.opts.Now()
	var page atlasapi.ClusterList
	err := s.Store.With(false, func(st *state) error {
		recs, next := pageOf(l, st.Clusters, func(c *clusterRec) (string, string) { return c.Name, c.ID },
			func(c *clusterRec) bool { return s.gone(st, c, now) },
			func(c *clusterRec) bool { return s.clusterStatus(s.nodesOf(st, c), now) == "terminated" })
		page.Clusters, page.NextPageToken = []atlasapi.Cluster{}, next
		for _, rec := range recs {
			c, err := s.renderCluster(st, rec, now)
			if err != nil {
				return err
			}
			page.Clusters = append(page.Clusters, c)
		}
		return nil
	})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// listing is what a list request asks for (API.md): a page (from start, at most limit), a prefix of
// the names, and whether terminated records are included.
type listing struct {
	start, limit   int
	prefix         string
	withTerminated bool
}

// listing reads a list request's query, answering 400 itself when limit or page_token is bad.
func (s *Server) listing(w http.ResponseWriter, r *http.Request) (listing, bool) {
	q := r.URL.Query()
	start, limit, ok := s.paging(w, q)
	return listing{start: start, limit: limit, prefix: q.Get("name_prefix"), withTerminated: q.Get("include_terminated") == "true"}, ok
}

// pageOf selects the records l asks for: named with its prefix, not gone, not terminated unless l
// includes them, ordered by name then id; it returns l's page of them and the next page token ("" on
// the last page). key gives a record's name and id.
func pageOf[T any](l listing, recs []T, key func(T) (name, id string), gone, terminated func(T) bool) (page []T, next string) {
	var sel []T
	for _, rec := range recs {
		if name, _ := key(rec); !strings.HasPrefix(name, l.prefix) || gone(rec) {
			continue
		}
		if !l.withTerminated && terminated(rec) {
			continue
		}
		sel = append(sel, rec)
	}
	sort.Slice(sel, func(i, j int) bool {
		ni, ii := key(sel[i])
		nj, ij := key(sel[j])
		if ni != nj {
			return ni < nj
		}
		return ii < ij
	})
	for i := l.start; i < len(sel) && i < l.start+l.limit; i++ {
		page = append(page, sel[i])
	}
	if l.start+l.limit < len(sel) {
		next = strconv.Itoa(l.start + l.limit)
	}
	return page, next
}

// paging reads limit and page_token (API.md: limit 1 to MaxLimit, default 100), answering 400 itself
// when they are bad.
func (s *Server) paging(w http.ResponseWriter, q url.Values) (start, limit int, ok bool) {
	limit = 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.opts.MaxLimit {
			apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("limit must be between 1 and %d", s.opts.MaxLimit))
			return 0, 0, false
		}
		limit = n
	}
	if v := q.Get("page_token"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			apiError(w, http.StatusBadRequest, "invalid", "bad page_token")
			return 0, 0, false
		}
		start = n
	}
	return start, limit, true
}

// checkKeys returns why authorized_keys lines are refused ("" when they are not).
func checkKeys(keys []string) string {
	if len(keys) == 0 {
		return "ssh_public_keys: at least one key is required"
	}
	for _, k := range keys {
		if f := strings.Fields(k); len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") && !strings.HasPrefix(f[0], "sk-") {
			return "ssh_public_keys: not an authorized_keys line"
		}
	}
	return ""
}

func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	var b atlasapi.CreateClusterRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		apiError(w, http.StatusBadRequest, "invalid", "malformed JSON: "+err.Error())
		return
	}
	invalid := ""
	switch {
	case !nameRE.MatchString(b.Name) || len(b.Name) > 60:
		invalid = "name must be 1-60 lower-case letters, digits and '-', starting with a letter (nodes add -<i>)"
	case b.Interconnect != atlasapi.InterconnectFabric && b.Interconnect != atlasapi.InterconnectAny:
		invalid = `interconnect must be "fabric" or "any"`
	case b.NodeCount < 1:
		invalid = "node_count must be at least 1"
	case b.MaxPricePerHour < 0:
		invalid = "max_price_per_hour must not be negative"
	}
	if invalid == "" {
		invalid = cmp.Or(checkKeys(b.SSHPublicKeys), checkLabels(b.Labels))
	}
	if invalid != "" {
		apiError(w, http.StatusBadRequest, "invalid", invalid)
		return
	}
	now := s.opts.Now()
	var (
		ref      refusal
		existing *atlasapi.Cluster
		out      atlasapi.Cluster
		lost     bool
	)
	err := s.Store.With(true, func(st *state) error {
		for _, c := range st.Clusters {
			if c.Name == b.Name && s.clusterStatus(s.nodesOf(st, c), now) != "terminated" {
				ref = refusal{http.StatusConflict, "already_exists", "a cluster named " + b.Name + " already exists"}
				rendered, err := s.renderCluster(st, c, now)
				existing = &rendered
				return err
			}
		}
		o, known := catalogEntry(st, b.InstanceType, b.Region)
		free, most, fabric := capacity(st, b.InstanceType, b.Region, b.Interconnect)
		f := &st.Faults
		switch {
		case !known || free == nil:
			ref = refusal{http.StatusBadRequest, "invalid", fmt.Sprintf("no %s cluster of %s in %s", b.Interconnect, b.InstanceType, b.Region)}
		case b.NodeCount > most:
			ref = refusal{http.StatusUnprocessableEntity, "no_capacity", fmt.Sprintf("at most %d nodes of %s in one %s cluster in %s", most, b.InstanceType, b.Interconnect, b.Region)}
		case f.QuotaExceeded:
			ref = refusal{http.StatusForbidden, "quota_exceeded", "the project's GPU quota would be exceeded"}
		case f.SoldOut || *free < b.NodeCount:
			ref = refusal{http.StatusUnprocessableEntity, "no_capacity", fmt.Sprintf("only %d of %d %s nodes free in %s", max(*free, 0), b.NodeCount, b.InstanceType, b.Region)}
			if f.SoldOut {
				ref.msg = fmt.Sprintf("no %s capacity left in %s", b.InstanceType, b.Region)
			}
		case b.MaxPricePerHour > 0 && o.PricePerHour*float64(b.NodeCount) > b.MaxPricePerHour+1e-9:
			ref = refusal{http.StatusUnprocessableEntity, "price_above_max", fmt.Sprintf("%d x %s in %s costs $%v/h, above max_price_per_hour $%v/h",
				b.NodeCount, b.InstanceType, b.Region, o.PricePerHour*float64(b.NodeCount), b.MaxPricePerHour)}
		}
		if ref.status != 0 {
			return nil
		}
		*free -= b.NodeCount
		st.ClusterSeq++
		c := &clusterRec{ID: "c-" + simulation.RandomHex(6), Name: b.Name, InstanceType: o.InstanceType, Region: o.Region,
			Interconnect: b.Interconnect, Fabric: fabric, Price: o.PricePerHour, Labels: maps.Clone(b.Labels), CreatedAt: now.UTC()}
		fail := f.TakeBootFailure()
		for i := 1; i <= b.NodeCount; i++ {
			in := &instRec{ID: newID(), Name: fmt.Sprintf("%s-%d", b.Name, i), InstanceType: o.InstanceType, Region: o.Region,
				GPUModel: o.GPUModel, GPUCount: o.GPUCount, Price: o.PricePerHour, Keys: b.SSHPublicKeys, CreatedAt: now.UTC(),
				Boot: int64(s.opts.BootDuration + time.Duration(f.SlowBoot)), Fail: fail && i == b.NodeCount, Labels: maps.Clone(b.Labels),
				ClusterID: c.ID, PrivateIP: fmt.Sprintf("%s.%d.%d", s.opts.PrivateNet, st.ClusterSeq%250, 10+i)}
			st.Instances = append(st.Instances, in)
			c.NodeIDs = append(c.NodeIDs, in.ID)
		}
		st.Clusters = append(st.Clusters, c)
		st.CreateCount += b.NodeCount
		lost = f.TakeLostCreate()
		var err error
		out, err = s.renderCluster(st, c, now)
		return err
	})
	var have any
	if existing != nil {
		have = existing
	}
	answerCreate(w, err, ref, "cluster", have, lost, out)
}

// deleteCluster terminates every node and gives their capacity back: 202 with the cluster
// (terminating), 202 again while it terminates, 404 when it is terminated or unknown.
func (s *Server) deleteCluster(w http.ResponseWriter, id string) {
	now := s.opts.Now()
	var (
		out   atlasapi.Cluster
		found bool
	)
	err := s.Store.With(true, func(st *state) error {
		c := s.findCluster(st, id)
		if c == nil {
			return nil
		}
		nodes := s.nodesOf(st, c)
		switch s.clusterStatus(nodes, now) {
		case "terminated":
			return nil
		case "terminating":
		default:
			t := now.UTC()
			free, _, _ := capacity(st, c.InstanceType, c.Region, c.Interconnect)
			for _, in := range nodes {
				in.DeletedAt = &t
				if free != nil {
					*free++
				}
			}
		}
		found = true
		var err error
		out, err = s.renderCluster(st, c, now)
		return err
	})
	s.answerCluster(w, id, http.StatusAccepted, out, found, err)
}

// refusal is an error answer a create decides under the state lock: its status (0: none), code and
// message.
type refusal struct {
	status    int
	code, msg string
}

// answerCreate writes a create's answer (instances and clusters alike): the state's error, a 409 with
// the existing object of the name under kind, a refusal, a lost answer (503 after the create) or 201
// with the new object.
func answerCreate(w http.ResponseWriter, err error, ref refusal, kind string, existing any, lost bool, created any) {
	switch {
	case err != nil:
		apiError(w, http.StatusInternalServerError, "internal", err.Error())
	case existing != nil:
		writeJSON(w, ref.status, map[string]any{"error": map[string]string{"code": ref.code, "message": ref.msg}, kind: existing})
	case ref.status != 0:
		apiError(w, ref.status, ref.code, ref.msg)
	case lost:
		apiError(w, http.StatusServiceUnavailable, "unavailable", "upstream timeout")
	default:
		writeJSON(w, http.StatusCreated, created)
	}
}

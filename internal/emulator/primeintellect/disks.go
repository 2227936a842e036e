package primeintellect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// Prime Intellect's network-attached disks. The shapes come from these documents:
//   - Prime's compute OpenAPI document (kept in api-evangelist/prime-intellect,
//     openapi/prime-intellect-disks-api-openapi.yml): POST /api/v1/disks/ with
//     {disk: APIDiskCreateRequest {size > 0, name (at most 255), country, cloudId, dataCenterId;
//     additionalProperties false}, provider: {type}, team?}; the answer and GET /api/v1/disks/{id} are
//     APIDiskConfig {id, name, createdAt, updatedAt, terminatedAt, status (DiskStatusEnum), providerType,
//     size, info, priceHr, stoppedPriceHr, provisioningPriceHr, userId, teamId, walletId, pods, clusters};
//     GET /api/v1/disks/ pages with offset and limit into {total_count, offset, limit, data}; PATCH takes
//     {name}; DELETE answers {status}.
//   - The same document's pods part (openapi/prime-intellect-pods-api-openapi.yml): the create body's
//     `disks` (a list of disk ids) and the pod's attachedResources [AttachedResources {resourceType DISK,
//     id, status UNATTACHED | ATTACHED | MOUNTED, isDetachable, mountPath (default /workspace),
//     resourcePath, size, isShared}].
//   - The prime CLI (PrimeIntellect-ai/prime, packages/prime/src/prime_cli/api/disks.py): a disk's info
//     holds {country, dataCenterId, cloudId, isMultinode}; commands/pods.py sends `disks` on create.
//   - Prime's docs (docs.primeintellect.ai, "Managing Disks"): spec.pricePerUnit of /availability/disks is
//     the price per GB and hour, isMultinode says whether a disk can be attached to several instances,
//     and disks must be in the same data center as the pod; /availability/gpus takes `disks` (repeated
//     disk ids) to list only GPUs co-located with them (the CLI's availability client says so too).
//
// What no document says, the emulator chooses and says so: the wording of its refusals (a disk of
// another provider or data center at a pod's create, deleting a disk a pod uses, an unknown disk), the
// mount path of a pod's second and later disks (DiskMountPath, then DiskMountPath-2, -3, ...), and when
// an attached resource is UNATTACHED (pod provisioning or terminated), ATTACHED (installing or deleting)
// or MOUNTED (pod running).

// DefaultDiskMountPath is where Prime mounts a pod's disk: the default of AttachedResources.mountPath.
const DefaultDiskMountPath = "/workspace"

// diskPlace is where Prime sells disks: one item of /availability/disks. A disk keeps the place it was
// created in.
type diskPlace struct {
	Provider     string  `json:"provider"`
	DataCenter   string  `json:"data_center"`
	Country      string  `json:"country"`
	Region       string  `json:"region"`
	Security     string  `json:"security,omitempty"`
	PricePerUnit float64 `json:"price_per_unit"`
	MaxGB        int     `json:"max_gb,omitempty"`
	Multinode    bool    `json:"multinode"`
}

// diskPlaces are the places of the catalog that sell disks: one per provider, place and security among
// the items that price their disk and name their country and region (storage is sold in a place; the
// data center may be null), in the API's order. A place is multinode when a multi-GPU item sells there.
func diskPlaces(items []Item) []diskPlace {
	var out []diskPlace
	index := map[string]int{}
	for _, it := range sortedItems(items) {
		k := strings.Join([]string{strings.ToLower(it.Provider), it.DataCenter, it.Country, it.Region, it.Security}, "|")
		if it.DiskPricePerUnit <= 0 || it.Country == "" || it.Region == "" {
			continue
		}
		if i, ok := index[k]; ok {
			out[i].Multinode = out[i].Multinode || it.GPUCount > 1
			continue
		}
		index[k] = len(out)
		out = append(out, diskPlace{Provider: it.Provider, DataCenter: it.DataCenter, Country: it.Country, Region: it.Region,
			Security: it.Security, PricePerUnit: it.DiskPricePerUnit, MaxGB: 8192, Multinode: it.GPUCount > 1})
	}
	return out
}

// hosts says whether an item is in the place: same provider and data center (and country and region
// where the place has no data center).
func (p diskPlace) hosts(it Item) bool {
	if !strings.EqualFold(p.Provider, it.Provider) || p.DataCenter != it.DataCenter {
		return false
	}
	return p.DataCenter != "" || (p.Country == it.Country && p.Region == it.Region)
}

type diskRec struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	SizeGB int    `json:"size_gb"`
	// diskPlace is where the disk was created (pods' items are matched against it).
	diskPlace
	TeamID    string     `json:"team_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// podDisk is a disk a pod got at its create.
type podDisk struct {
	ID     string `json:"id"`
	SizeGB int    `json:"size_gb"`
}

// diskStatus is a disk's DiskStatusEnum at now; gone says it no longer answers (404).
func (s *Server) diskStatus(d *diskRec, now time.Time) (status string, gone bool) {
	if d.DeletedAt != nil {
		since := now.Sub(*d.DeletedAt)
		if since < s.opts.DeleteDuration {
			return "DELETING", false
		}
		return "TERMINATED", since >= s.opts.DeleteDuration+s.opts.TerminatedRetention
	}
	if now.Sub(d.CreatedAt) < s.opts.DiskProvisionDuration {
		return "PROVISIONING", false
	}
	return "ACTIVE", false
}

// diskPods lists the pods using a disk: those created with it and not yet terminated.
func (s *Server) diskPods(st *state, id string, now time.Time) []string {
	out := []string{}
	for _, p := range st.Pods {
		if s.view(p, now).status == "TERMINATED" {
			continue
		}
		if slices.ContainsFunc(p.Disks, func(d podDisk) bool { return d.ID == id }) {
			out = append(out, p.ID)
		}
	}
	return out
}

func (s *Server) findDisk(st *state, id string) *diskRec {
	return emukit.Find(st.Disks, func(d *diskRec) bool { return d.ID == id })
}

// renderDisk builds an APIDiskConfig.
func (s *Server) renderDisk(st *state, d *diskRec, now time.Time) map[string]any {
	status, _ := s.diskStatus(d, now)
	var terminatedAt any
	if status == "TERMINATED" {
		terminatedAt = d.DeletedAt.Add(s.opts.DeleteDuration).Format(time.RFC3339Nano)
	}
	price := d.PricePerUnit * float64(d.SizeGB)
	return map[string]any{
		"id": d.ID, "name": d.Name, "createdAt": d.CreatedAt.Format(time.RFC3339Nano), "updatedAt": d.UpdatedAt.Format(time.RFC3339Nano),
		"terminatedAt": terminatedAt, "status": status, "providerType": d.Provider, "size": d.SizeGB,
		"info":    map[string]any{"country": nullable(d.Country), "dataCenterId": nullable(d.DataCenter), "cloudId": nil, "isMultinode": d.Multinode},
		"priceHr": price, "stoppedPriceHr": price, "provisioningPriceHr": 0.0,
		"userId": "emulated-user", "teamId": nullable(d.TeamID), "walletId": "emulated-wallet",
		"pods": s.diskPods(st, d.ID, now), "clusters": []string{},
	}
}

// diskCreateBody is POST /api/v1/disks/ as the emulator reads it; disk is decoded strictly
// (APIDiskCreateRequest has additionalProperties false).
type diskCreateBody struct {
	Disk     json.RawMessage `json:"disk"`
	Provider *struct {
		Type string `json:"type"`
	} `json:"provider"`
	Team *struct {
		TeamID string `json:"teamId"`
	} `json:"team"`
}

type diskCreateRequest struct {
	Size         *int    `json:"size"`
	Name         *string `json:"name"`
	Country      *string `json:"country"`
	CloudID      *string `json:"cloudId"`
	DataCenterID *string `json:"dataCenterId"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) createDisk(w http.ResponseWriter, r *http.Request) {
	var b diskCreateBody
	if _, ok := decodeBody(w, r, &b); !ok {
		return
	}
	if len(b.Disk) == 0 || string(b.Disk) == "null" {
		validation(w, []string{"body", "disk"}, "Field required", "missing")
		return
	}
	var req diskCreateRequest
	dec := json.NewDecoder(bytes.NewReader(b.Disk))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field, _ = strconv.Unquote(field)
			validation(w, []string{"body", "disk", field}, "Extra inputs are not permitted", "extra_forbidden")
			return
		}
		validation(w, []string{"body", "disk"}, "Input should be a valid dictionary or object", "model_attributes_type")
		return
	}
	switch {
	case req.Size == nil:
		validation(w, []string{"body", "disk", "size"}, "Field required", "missing")
		return
	case *req.Size <= 0:
		validation(w, []string{"body", "disk", "size"}, "Input should be greater than 0", "greater_than")
		return
	case len(str(req.Name)) > 255:
		validation(w, []string{"body", "disk", "name"}, "String should have at most 255 characters", "string_too_long")
		return
	case b.Provider == nil || b.Provider.Type == "":
		validation(w, []string{"body", "provider", "type"}, "Field required", "missing")
		return
	}
	now := s.opts.Now().UTC()
	var (
		status int
		msg    string
		out    map[string]any
	)
	err := s.Store.With(true, func(st *state) error {
		if st.CloudFaults.PaymentRequired {
			status, msg = http.StatusPaymentRequired, "Insufficient balance. Please add funds to your wallet."
			return nil
		}
		var place *diskPlace
		for _, p := range diskPlaces(st.Catalog) {
			if !strings.EqualFold(p.Provider, b.Provider.Type) ||
				(str(req.DataCenterID) != "" && p.DataCenter != str(req.DataCenterID)) ||
				(str(req.Country) != "" && p.Country != str(req.Country)) {
				continue
			}
			place = &p
			break
		}
		if place == nil {
			status, msg = http.StatusBadRequest, fmt.Sprintf("No disk availability for provider %s in data center %s", b.Provider.Type, str(req.DataCenterID))
			return nil
		}
		if *req.Size > place.MaxGB {
			status, msg = http.StatusBadRequest, fmt.Sprintf("Disk size %d GB exceeds the maximum of %d GB", *req.Size, place.MaxGB)
			return nil
		}
		d := &diskRec{ID: newUUID(), Name: str(req.Name), SizeGB: *req.Size, diskPlace: *place, CreatedAt: now, UpdatedAt: now}
		if b.Team != nil {
			d.TeamID = b.Team.TeamID
		}
		st.Disks = append(st.Disks, d)
		out = s.renderDisk(st, d, now)
		return nil
	})
	switch {
	case err != nil:
		detail(w, http.StatusInternalServerError, err.Error())
	case status != 0:
		detail(w, status, msg)
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

// newUUID makes a version-4 UUID, the shape of Prime's disk ids ("generated as a UUID").
func newUUID() string {
	h := newID()
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

func (s *Server) listDisks(w http.ResponseWriter, r *http.Request) {
	offset, limit := pageQuery(r.URL.Query())
	now := s.opts.Now().UTC()
	data := []any{}
	total := 0
	_ = s.Store.With(false, func(st *state) error {
		var live []*diskRec
		for _, d := range st.Disks {
			if _, gone := s.diskStatus(d, now); !gone {
				live = append(live, d)
			}
		}
		total = len(live)
		data = page(live, offset, limit, func(d *diskRec) any { return s.renderDisk(st, d, now) })
		return nil
	})
	writeList(w, data, total, offset, limit)
}

// writeDisk answers a rendered disk, or Prime's 404 when there is none (nil).
func writeDisk(w http.ResponseWriter, out map[string]any) {
	if out == nil {
		detail(w, http.StatusNotFound, "Disk not found")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getDisk(w http.ResponseWriter, id string) {
	now := s.opts.Now().UTC()
	var out map[string]any
	_ = s.Store.With(false, func(st *state) error {
		if d := s.findDisk(st, id); d != nil {
			if _, gone := s.diskStatus(d, now); !gone {
				out = s.renderDisk(st, d, now)
			}
		}
		return nil
	})
	writeDisk(w, out)
}

func (s *Server) patchDisk(w http.ResponseWriter, r *http.Request, id string) {
	var b struct {
		Name *string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		validation(w, []string{"body"}, "JSON decode error", "json_invalid")
		return
	}
	if b.Name == nil {
		validation(w, []string{"body", "name"}, "Field required", "missing")
		return
	}
	now := s.opts.Now().UTC()
	var out map[string]any
	_ = s.Store.With(true, func(st *state) error {
		d := s.findDisk(st, id)
		if d == nil {
			return nil
		}
		if status, _ := s.diskStatus(d, now); status == "TERMINATED" || status == "DELETING" {
			return nil
		}
		d.Name, d.UpdatedAt = *b.Name, now
		out = s.renderDisk(st, d, now)
		return nil
	})
	writeDisk(w, out)
}

// deleteDisk terminates a disk no pod uses; one a pod uses is refused with 400 and stays.
func (s *Server) deleteDisk(w http.ResponseWriter, id string) {
	now := s.opts.Now().UTC()
	var status, msg string
	code := http.StatusOK
	_ = s.Store.With(true, func(st *state) error {
		d := s.findDisk(st, id)
		if d == nil {
			return nil
		}
		switch cur, _ := s.diskStatus(d, now); cur {
		case "TERMINATED":
			return nil
		case "DELETING":
			status = cur
			return nil
		}
		if pods := s.diskPods(st, id, now); len(pods) > 0 {
			code, msg = http.StatusBadRequest, fmt.Sprintf("Disk %s is attached to pods %s; terminate them first", id, strings.Join(pods, ", "))
			return nil
		}
		t := now
		d.DeletedAt, d.UpdatedAt, status = &t, now, "DELETING"
		return nil
	})
	switch {
	case msg != "":
		detail(w, code, msg)
	case status == "":
		detail(w, http.StatusNotFound, "Disk not found")
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": status})
	}
}

// podDisks checks the disks of a pod's create against the item chosen for it: each must exist, not be
// deleted, and be in the item's place (provider and data center). It returns the pod's disks, or a
// refusal.
func (s *Server) podDisks(st *state, ids []string, it Item, now time.Time) ([]podDisk, string) {
	var out []podDisk
	for _, id := range ids {
		d := s.findDisk(st, id)
		if d == nil {
			return nil, fmt.Sprintf("Disk %s not found", id)
		}
		if status, _ := s.diskStatus(d, now); status != "ACTIVE" && status != "PROVISIONING" {
			return nil, fmt.Sprintf("Disk %s is %s", id, status)
		}
		if !d.hosts(it) {
			return nil, fmt.Sprintf("Disk %s is in %s/%s; the pod would be in %s/%s: disks must be in the same data center as the pod",
				id, d.Provider, cmpOr(d.DataCenter, d.Country), it.Provider, cmpOr(it.DataCenter, it.Country))
		}
		if slices.ContainsFunc(out, func(p podDisk) bool { return p.ID == id }) {
			continue
		}
		out = append(out, podDisk{ID: id, SizeGB: d.SizeGB})
	}
	return out, ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// attachedResources renders a pod's disks: mounted while the pod runs.
func (s *Server) attachedResources(p *podRec, v podView) []any {
	status := "UNATTACHED"
	switch {
	case v.status == "ACTIVE" && v.install == "FINISHED":
		status = "MOUNTED"
	case v.status == "ACTIVE", v.status == "DELETING":
		status = "ATTACHED"
	}
	out := []any{}
	for i, d := range p.Disks {
		path := s.opts.DiskMountPath
		if i > 0 {
			path = fmt.Sprintf("%s-%d", s.opts.DiskMountPath, i+1)
		}
		out = append(out, map[string]any{"resourceType": "DISK", "id": d.ID, "status": status, "isDetachable": true,
			"mountPath": path, "resourcePath": nil, "size": d.SizeGB, "isShared": false})
	}
	return out
}

// diskFilter answers the `disks` query parameter of /availability/gpus: a filter keeping the items
// co-located with every named disk, or the unknown disk's id.
func (s *Server) diskFilter(st *state, ids []string, now time.Time) (keep func(Item) bool, unknown string) {
	var places []diskPlace
	for _, id := range ids {
		d := s.findDisk(st, id)
		if d == nil {
			return nil, id
		}
		if _, gone := s.diskStatus(d, now); gone {
			return nil, id
		}
		places = append(places, d.diskPlace)
	}
	return func(it Item) bool {
		for _, p := range places {
			if !p.hosts(it) {
				return false
			}
		}
		return true
	}, ""
}

// DiskInfo is an admin view of one disk.
type DiskInfo struct {
	ID, Name, Provider, DataCenter, Status string
	SizeGB                                 int
	Pods                                   []string
}

// Disks lists the disks that are not terminated.
func (s *Server) Disks() []DiskInfo {
	var out []DiskInfo
	now := s.opts.Now()
	_ = s.Store.With(false, func(st *state) error {
		for _, d := range st.Disks {
			if status, _ := s.diskStatus(d, now); status != "TERMINATED" {
				out = append(out, DiskInfo{ID: d.ID, Name: d.Name, Provider: d.Provider, DataCenter: d.DataCenter, Status: status,
					SizeGB: d.SizeGB, Pods: s.diskPods(st, d.ID, now)})
			}
		}
		return nil
	})
	return out
}

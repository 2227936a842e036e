package mithril

// Mithril's storage volumes, as its Compute API's OpenAPI document (the Volumes tag: VolumeModel,
// CreateVolumeRequest, GET/POST /v2/volumes, DELETE and PATCH /v2/volumes/{volume_fid}) and its docs
// describe them:
//
//   - POST /v2/volumes {name, project, disk_interface: Block | File, region, size_gb} answers 201 with
//     the VolumeModel {fid, name, region, created_at, deleted_at, capacity_gb, project, interface, bids,
//     reservations, attachments}; the name is lowercase letters, digits and dashes (at most 64);
//   - GET /v2/volumes?project[&region][&include_deleted] lists the project's volumes, the deleted ones
//     (deleted_at set) only with include_deleted;
//   - a volume goes to a bid's instances through launch_specification.volumes, only in its region; it
//     lists the bids using it, and survives their termination and preemption (Mithril's docs);
//   - DELETE refuses a volume in use ("The volume must not be currently in use/attached").
//
// Not confirmed, chosen here: the statuses and messages of the refusals (409 for a volume in use, 400
// for a volume of another region at a bid, 404 for an unknown or deleted one), that a Block volume is
// refused for a second live bid and for a bid of several instances, that the bids listed are the live
// ones (not Terminated), and attachments, answered empty (the document gives it no description).
//
// Inside an instance (not emulated: the emulator has no machines) Mithril mounts a File volume itself
// at /mnt/<volume name> (its docs' hosted Kubernetes page: hostPath /mnt/your-fileshare-name; its Flow
// SDK bind-mounts that virtiofs mount); where a Block volume appears Mithril does not document (the
// backend's Attachment says what it assumes).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"
)

// volumeNameRE is CreateVolumeRequest's name pattern.
var volumeNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// volume is one stored volume.
type volume struct {
	FID       string     `json:"fid"`
	Name      string     `json:"name"`
	Project   string     `json:"project"`
	Region    string     `json:"region"`
	Interface string     `json:"interface"`
	SizeGB    int        `json:"capacity_gb"`
	CreatedAt time.Time  `json:"created_at"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// volumeBids are the live bids (not Terminated) using the volume.
func (st *state) volumeBids(fid string) []string {
	out := []string{}
	for _, b := range st.Bids {
		if b.Status != bidTerminated && slices.Contains(b.Volumes, fid) {
			out = append(out, b.FID)
		}
	}
	return out
}

func (st *state) volumeJSON(v *volume) map[string]any {
	return map[string]any{"fid": v.FID, "name": v.Name, "region": v.Region, "created_at": v.CreatedAt, "deleted_at": v.DeletedAt,
		"capacity_gb": v.SizeGB, "project": v.Project, "interface": v.Interface, "bids": st.volumeBids(v.FID),
		"reservations": []string{}, "attachments": map[string]string{}}
}

func (s *Server) listVolumes(r *http.Request, st *state, _ time.Time, _ string) (int, any, error) {
	q := r.URL.Query()
	proj := q.Get("project")
	if proj == "" {
		return 0, nil, invalid(missing("query", "project"))
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	out := []map[string]any{}
	for _, v := range st.Volumes {
		if v.Project == proj && (q.Get("region") == "" || q.Get("region") == v.Region) && (v.DeletedAt == nil || q.Get("include_deleted") == "true") {
			out = append(out, st.volumeJSON(v))
		}
	}
	return http.StatusOK, out, nil
}

func (s *Server) createVolume(r *http.Request, st *state, now time.Time, _ string) (int, any, error) {
	m, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	var errs []validation
	body := []any{"body"}
	name := stringField(m, body, "name", true, &errs)
	proj := stringField(m, body, "project", true, &errs)
	iface := stringField(m, body, "disk_interface", true, &errs)
	region := stringField(m, body, "region", true, &errs)
	size := 0
	if raw, ok := m["size_gb"]; !ok {
		errs = append(errs, missing("body", "size_gb"))
	} else if err := json.Unmarshal(raw, &size); err != nil || size <= 0 {
		errs = append(errs, validation{Type: "greater_than", Loc: []any{"body", "size_gb"}, Msg: "Input should be greater than 0", Input: raw})
	}
	if name != "" && (len(name) > 64 || !volumeNameRE.MatchString(name)) {
		errs = append(errs, validation{Type: "string_pattern_mismatch", Loc: []any{"body", "name"},
			Msg: "String should match pattern '^[a-z]([-a-z0-9]*[a-z0-9])?$'", Input: name})
	}
	if iface != "" && iface != "Block" && iface != "File" {
		errs = append(errs, validation{Type: "enum", Loc: []any{"body", "disk_interface"}, Msg: "Input should be 'Block' or 'File'", Input: iface})
	}
	if len(errs) > 0 {
		return 0, nil, invalid(errs...)
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	if !slices.ContainsFunc(st.Auctions, func(a *auction) bool { return a.Region == region }) {
		return 0, nil, detail(http.StatusBadRequest, fmt.Sprintf("Region %s not found", region))
	}
	v := &volume{FID: randomFID("vol_"), Name: name, Project: proj, Region: region, Interface: iface, SizeGB: size, CreatedAt: now}
	st.Volumes = append(st.Volumes, v)
	return http.StatusCreated, st.volumeJSON(v), nil
}

// liveVolume is the project's volume fid, not deleted.
func (s *Server) liveVolume(st *state, fid string) (*volume, error) {
	for _, v := range st.Volumes {
		if v.FID == fid && v.DeletedAt == nil && s.userProject(st, v.Project) != nil {
			return v, nil
		}
	}
	return nil, detail(http.StatusNotFound, fmt.Sprintf("Volume %s not found", fid))
}

func (s *Server) deleteVolume(r *http.Request, st *state, now time.Time, _ string) (int, any, error) {
	v, err := s.liveVolume(st, r.PathValue("fid"))
	if err != nil {
		return 0, nil, err
	}
	if bids := st.volumeBids(v.FID); len(bids) > 0 {
		return 0, nil, detail(http.StatusConflict, fmt.Sprintf("Volume %s is in use by %v", v.FID, bids))
	}
	t := now
	v.DeletedAt = &t
	return http.StatusNoContent, nil, nil
}

// checkBidVolumes refuses a bid's launch_specification.volumes: unknown or deleted ones, ones of another
// project or region, a Block volume another live bid uses, and a Block volume on a bid for more than one
// instance (a block device is on one instance).
func (s *Server) checkBidVolumes(st *state, proj, region string, quantity int, fids []string) error {
	for _, fid := range fids {
		v, err := s.liveVolume(st, fid)
		if err != nil || v.Project != proj {
			return detail(http.StatusNotFound, fmt.Sprintf("Volume %s not found", fid))
		}
		if v.Region != region {
			return detail(http.StatusBadRequest, fmt.Sprintf("Volume %s is in region %s, not %s", fid, v.Region, region))
		}
		if v.Interface == "Block" && len(st.volumeBids(fid)) > 0 {
			return detail(http.StatusBadRequest, fmt.Sprintf("Block volume %s is in use by another bid", fid))
		}
		if v.Interface == "Block" && quantity > 1 {
			return detail(http.StatusBadRequest, fmt.Sprintf("Block volume %s can be attached to one instance, not %d", fid, quantity))
		}
	}
	return nil
}

// VolumeInfo is an emulator-side summary of one volume.
type VolumeInfo struct {
	FID, Name, Region, Interface string
	SizeGB                       int
	Bids                         []string
	Deleted                      bool
}

// Volumes lists every volume, deleted ones too, oldest first.
func (s *Server) Volumes() []VolumeInfo {
	var out []VolumeInfo
	_ = s.update(func(st *state, _ time.Time) error {
		for _, v := range st.Volumes {
			out = append(out, VolumeInfo{FID: v.FID, Name: v.Name, Region: v.Region, Interface: v.Interface, SizeGB: v.SizeGB,
				Bids: st.volumeBids(v.FID), Deleted: v.DeletedAt != nil})
		}
		return nil
	})
	return out
}

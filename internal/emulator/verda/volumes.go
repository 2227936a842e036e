package verda

// Verda's volumes, as its clients carry the API's shapes (verdaapi/volumes.go names them):
//
//   - POST /volumes {type, name, size, location_code, instance_id?} answers 202 with the new id as plain
//     text (the Python SDK reads the body as text); GET /volumes lists the volumes not deleted, GET
//     /volumes/{id} one, GET /volume-types the types with their price per GB and month;
//   - a volume is bound to its location: attached at an instance's create (existing_volumes [ids]) or,
//     with PUT /volumes {action: attach | detach, instance_id}, only while the instance is shut down
//     (offline), as the Python SDK's attach and detach say; a block volume (NVMe, HDD) is on one
//     instance at a time, NVMe_Shared on several;
//   - deleting an instance without volume_ids deletes its OS volume and detaches the others; those it
//     lists go to the trash;
//   - a deleted volume (DELETE /volumes/{id} {is_permanent?}, or PUT action delete) goes to the trash
//     (GET /volumes/trash) for 96 hours, then it is gone; with is_permanent at once. Deleting one that is
//     attached needs its instances shut down, as the SDK's delete says.
//
// Not confirmed, chosen here: the messages and codes of the refusals (400 invalid_request for a wrong
// location or a running instance, 404 not_found "Invalid volume id" for an unknown id), that GET
// /volumes/{id} still answers a trashed volume (status deleted, deleted_at). Prices: NVMe's 0.2 USD per
// GB and month is in a public client's fixture; no public source gave HDD's or NVMe_Shared's, so the
// emulator states none for them (0), and the backend then reports no monthly price.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// TrashRetention is how long Verda keeps a deleted volume in its trash.
const TrashRetention = 96 * time.Hour

// volumeTypes are the volume types served, with their prices per GB and month in the account's
// currency.
var volumeTypes = []verdaapi.VolumeType{
	{Type: verdaapi.VolumeTypeNVMe, Price: verdaapi.VolumeTypePrice{PricePerMonthPerGB: 0.2}},
	{Type: verdaapi.VolumeTypeHDD},
	{Type: verdaapi.VolumeTypeNVMeShared, IsSharedFS: true},
}

// volume is one stored data volume.
type volume struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Type        string     `json:"type"`
	Size        int        `json:"size"`
	Location    string     `json:"location"`
	CreatedAt   time.Time  `json:"created_at"`
	InstanceIDs []string   `json:"instance_ids,omitempty"`
	DeletedAt   *time.Time `json:"deleted_at,omitempty"`
}

func volumeType(name string) (verdaapi.VolumeType, bool) {
	i := slices.IndexFunc(volumeTypes, func(t verdaapi.VolumeType) bool { return t.Type == name })
	if i < 0 {
		return verdaapi.VolumeType{}, false
	}
	return volumeTypes[i], true
}

// purgeTrash forgets volumes deleted longer than TrashRetention ago.
func (s *Server) purgeTrash(st *state) {
	now := s.opts.Now()
	for id, v := range st.DataVolumes {
		if v.DeletedAt != nil && !now.Before(v.DeletedAt.Add(TrashRetention)) {
			delete(st.DataVolumes, id)
		}
	}
}

// attached lists the live instances (not deleted) the volume is on.
func attached(st *state, v *volume) []*instance {
	var out []*instance
	for _, id := range v.InstanceIDs {
		if in, ok := st.Instances[id]; ok && in.DeletedAt == nil {
			out = append(out, in)
		}
	}
	return out
}

func (s *Server) volumeView(st *state, v *volume) verdaapi.Volume {
	now := s.opts.Now()
	t, _ := volumeType(v.Type)
	out := verdaapi.Volume{ID: v.ID, Instances: []verdaapi.VolumeInstance{}, Name: v.Name, CreatedAt: v.CreatedAt.UTC().Format(time.RFC3339),
		Status: verdaapi.VolumeStatusDetached, Size: v.Size, Type: v.Type, Location: v.Location, SSHKeyIDs: []string{},
		Contract: "PAY_AS_YOU_GO", MonthlyPrice: t.Price.PricePerMonthPerGB * float64(v.Size), Currency: s.opts.Currency}
	if v.DeletedAt != nil {
		d := v.DeletedAt.UTC().Format(time.RFC3339)
		out.Status, out.DeletedAt = verdaapi.VolumeStatusDeleted, &d
		return out
	}
	for _, in := range attached(st, v) {
		out.Instances = append(out.Instances, verdaapi.VolumeInstance{ID: in.ID, InstanceType: in.InstanceType, Status: s.statusOf(in, now), Hostname: in.Hostname})
	}
	if len(out.Instances) > 0 {
		id, target := out.Instances[0].ID, "vdb"
		out.InstanceID, out.Target, out.Status = &id, &target, verdaapi.VolumeStatusAttached
	}
	return out
}

// volumes answers /volumes and /volume-types. DELETE of an id that is no data volume goes to the
// detached cluster volumes (clusters.go).
func (s *Server) volumes(st *state, r *http.Request, id string, n int, body []byte) (reply, bool) {
	s.purgeTrash(st)
	switch {
	case r.Method == http.MethodGet && n == 1:
		out := []verdaapi.Volume{}
		for _, v := range sortedVolumes(st) {
			if v.DeletedAt == nil {
				out = append(out, s.volumeView(st, v))
			}
		}
		return jsonReply(http.StatusOK, out), true
	case r.Method == http.MethodGet && n == 2 && id == "trash":
		out := []verdaapi.Volume{}
		for _, v := range sortedVolumes(st) {
			if v.DeletedAt != nil {
				out = append(out, s.volumeView(st, v))
			}
		}
		return jsonReply(http.StatusOK, out), true
	case r.Method == http.MethodGet && n == 2:
		v, ok := st.DataVolumes[id]
		if !ok {
			return volumeNotFound(), true
		}
		return jsonReply(http.StatusOK, s.volumeView(st, v)), true
	case r.Method == http.MethodPost && n == 1:
		return s.createVolume(st, body), true
	case r.Method == http.MethodPut && n == 1:
		return s.volumeAction(st, body), true
	case r.Method == http.MethodDelete && n == 2:
		if _, ok := st.DataVolumes[id]; !ok {
			return reply{}, false
		}
		var req struct {
			IsPermanent bool `json:"is_permanent"`
		}
		_ = json.Unmarshal(body, &req) // the body is optional
		if rep, bad := s.deleteDataVolume(st, id, req.IsPermanent); bad {
			return rep, true
		}
		return reply{Status: http.StatusAccepted}, true
	}
	return errReply(http.StatusNotFound, "not_found", "Not found"), true
}

func (s *Server) volumeTypesReply() reply {
	out := make([]verdaapi.VolumeType, 0, len(volumeTypes))
	for _, t := range volumeTypes {
		t.Price.Currency = s.opts.Currency
		out = append(out, t)
	}
	return jsonReply(http.StatusOK, out)
}

func volumeNotFound() reply { return errReply(http.StatusNotFound, "not_found", "Invalid volume id") }

func (s *Server) createVolume(st *state, body []byte) reply {
	var req verdaapi.CreateVolumeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
	}
	if _, ok := volumeType(req.Type); !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid volume type")
	}
	switch {
	case strings.TrimSpace(req.Name) == "":
		return errReply(http.StatusBadRequest, "invalid_request", "name is required")
	case req.Size <= 0:
		return errReply(http.StatusBadRequest, "invalid_request", "size must be a positive number of GB")
	case !slices.ContainsFunc(s.opts.Locations, func(l Location) bool { return l.Code == req.LocationCode }):
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid location code")
	}
	v := &volume{ID: newUUID(), Name: req.Name, Type: req.Type, Size: req.Size, Location: req.LocationCode, CreatedAt: s.opts.Now()}
	if req.InstanceID != "" {
		if rep, bad := s.attachable(st, v, req.InstanceID, true); bad {
			return rep
		}
		v.InstanceIDs = []string{req.InstanceID}
	}
	st.DataVolumes[v.ID] = v
	return textReply(http.StatusAccepted, v.ID)
}

// attachable refuses attaching v to instance id: unknown or deleted, in another location, running when
// offline is required, or v a block volume already on a live instance.
func (s *Server) attachable(st *state, v *volume, id string, offline bool) (reply, bool) {
	in, ok := st.Instances[id]
	switch {
	case !ok || in.DeletedAt != nil:
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid instance id"), true
	case in.Location != v.Location:
		return errReply(http.StatusBadRequest, "invalid_request",
			fmt.Sprintf("Volume %s is in %s and the instance in %s", v.ID, v.Location, in.Location)), true
	case offline && s.statusOf(in, s.opts.Now()) != "offline":
		return errReply(http.StatusBadRequest, "invalid_request", "The instance must be shut down to attach or detach a volume"), true
	case v.Type != verdaapi.VolumeTypeNVMeShared && len(attached(st, v)) > 0:
		return errReply(http.StatusBadRequest, "invalid_request", fmt.Sprintf("Volume %s is already attached", v.ID)), true
	}
	return reply{}, false
}

// attachAtCreate checks the existing_volumes of an instance to create in location loc.
func (s *Server) attachAtCreate(st *state, loc string, ids []string) (reply, bool) {
	for _, id := range ids {
		v, ok := st.DataVolumes[id]
		if !ok || v.DeletedAt != nil {
			return volumeNotFound(), true
		}
		if v.Location != loc {
			return errReply(http.StatusBadRequest, "invalid_request",
				fmt.Sprintf("Volume %s is in %s and the instance in %s", v.ID, v.Location, loc)), true
		}
		if v.Type != verdaapi.VolumeTypeNVMeShared && len(attached(st, v)) > 0 {
			return errReply(http.StatusBadRequest, "invalid_request", fmt.Sprintf("Volume %s is already attached", v.ID)), true
		}
	}
	return reply{}, false
}

// attachCreated attaches the existing_volumes to the instance just created.
func attachCreated(st *state, instanceID string, ids []string) {
	for _, id := range ids {
		v := st.DataVolumes[id]
		v.InstanceIDs = append(v.InstanceIDs, instanceID)
	}
}

// releaseVolumes is what deleting instance id does to its data volumes: those listed in trash go to
// the trash (or at once with permanent), the others are detached.
func (s *Server) releaseVolumes(st *state, id string, trash []string, permanent bool) {
	for vid, v := range st.DataVolumes {
		if !slices.Contains(v.InstanceIDs, id) {
			continue
		}
		v.InstanceIDs = slices.DeleteFunc(v.InstanceIDs, func(i string) bool { return i == id })
		if slices.Contains(trash, vid) {
			s.trash(st, v, permanent)
		}
	}
}

func (s *Server) trash(st *state, v *volume, permanent bool) {
	if permanent {
		delete(st.DataVolumes, v.ID)
		return
	}
	t := s.opts.Now()
	v.DeletedAt, v.InstanceIDs = &t, nil
}

// deleteDataVolume deletes a volume: to the trash, or at once when permanent. One attached to a running
// instance is refused; one in the trash is deleted for good only when permanent.
func (s *Server) deleteDataVolume(st *state, id string, permanent bool) (reply, bool) {
	v, ok := st.DataVolumes[id]
	if !ok {
		return volumeNotFound(), true
	}
	if v.DeletedAt != nil && !permanent {
		return errReply(http.StatusBadRequest, "forbidden_action", "Volume is already deleted"), true
	}
	for _, in := range attached(st, v) {
		if s.statusOf(in, s.opts.Now()) != "offline" {
			return errReply(http.StatusBadRequest, "invalid_request", "The instance must be shut down to delete an attached volume"), true
		}
	}
	s.trash(st, v, permanent)
	return reply{}, false
}

func (s *Server) volumeAction(st *state, body []byte) reply {
	var req struct {
		ID          json.RawMessage `json:"id"`
		Action      string          `json:"action"`
		InstanceID  string          `json:"instance_id"`
		Size        int             `json:"size"`
		IsPermanent bool            `json:"is_permanent"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
	}
	ids, ok := actionIDs(req.ID)
	if !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "id is required")
	}
	// Every volume is checked before any is changed: a refused request changes nothing.
	for _, id := range ids {
		v, ok := st.DataVolumes[id]
		if !ok || (v.DeletedAt != nil && req.Action != verdaapi.VolumeActionDelete) {
			return volumeNotFound()
		}
		switch req.Action {
		case verdaapi.VolumeActionAttach:
			if rep, bad := s.attachable(st, v, req.InstanceID, true); bad {
				return rep
			}
		case verdaapi.VolumeActionDetach:
			for _, in := range attached(st, v) {
				if s.statusOf(in, s.opts.Now()) != "offline" {
					return errReply(http.StatusBadRequest, "invalid_request", "The instance must be shut down to attach or detach a volume")
				}
			}
		case verdaapi.VolumeActionResize:
			if req.Size <= v.Size {
				return errReply(http.StatusBadRequest, "invalid_request", "A volume can only grow")
			}
		case verdaapi.VolumeActionDelete:
		default:
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid action")
		}
	}
	for _, id := range ids {
		v := st.DataVolumes[id]
		switch req.Action {
		case verdaapi.VolumeActionAttach:
			v.InstanceIDs = append(v.InstanceIDs, req.InstanceID)
		case verdaapi.VolumeActionDetach:
			v.InstanceIDs = nil
		case verdaapi.VolumeActionResize:
			v.Size = req.Size
		case verdaapi.VolumeActionDelete:
			if rep, bad := s.deleteDataVolume(st, id, req.IsPermanent); bad {
				return rep
			}
		}
	}
	return reply{Status: http.StatusAccepted}
}

// actionIDs reads the id of a PUT action: one id or a list of them (false: neither).
func actionIDs(raw json.RawMessage) ([]string, bool) {
	var ids []string
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, true
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil || one == "" {
		return nil, false
	}
	return []string{one}, true
}

// volumeIDs are the data volumes attached to an instance (its volume_ids).
func volumeIDs(st *state, in *instance) []string {
	out := []string{}
	for _, v := range sortedVolumes(st) {
		if v.DeletedAt == nil && in.DeletedAt == nil && slices.Contains(v.InstanceIDs, in.ID) {
			out = append(out, v.ID)
		}
	}
	return out
}

func sortedVolumes(st *state) []*volume {
	return emukit.ByAge(st.DataVolumes, func(v *volume) time.Time { return v.CreatedAt }, func(v *volume) string { return v.ID })
}

// VolumeInfo is an emulator-side summary of one data volume.
type VolumeInfo struct {
	ID, Name, Type, Location string
	Size                     int
	InstanceIDs              []string
	Trashed                  bool
}

// Volumes lists the data volumes, the trashed ones too, oldest first.
func (s *Server) Volumes() []VolumeInfo {
	var out []VolumeInfo
	_ = s.update(func(st *state) error {
		s.purgeTrash(st)
		for _, v := range sortedVolumes(st) {
			var ids []string
			for _, in := range attached(st, v) {
				ids = append(ids, in.ID)
			}
			out = append(out, VolumeInfo{ID: v.ID, Name: v.Name, Type: v.Type, Location: v.Location, Size: v.Size, InstanceIDs: ids, Trashed: v.DeletedAt != nil})
		}
		return nil
	})
	return out
}

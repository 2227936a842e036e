package upcloud

// UpCloud's storages, as the emulator serves them. The shapes come from UpCloud's Go SDK
// (UpCloudLtd/upcloud-go-api v8: upcloud/storage.go, upcloud/request/storage.go,
// upcloud/request/server.go) and its go-vcr recordings of real traffic (upcloud/service/fixtures:
// createmodifydeletestorage.yaml, storagelabels.yaml, attachdetachstorage.yaml):
//
//   - POST /storage {"storage":{size, tier, title, zone, labels?, backup_rule?, encrypted?}} -> 201
//     {"storage": details}. The SDK sends size as a string ("10"); a number is accepted too. A
//     storage's labels are a bare array [{key,value}], unlike a server's {"label":[...]}.
//   - GET /storage[/{access}][/{type}] with ?label=key or ?label=key=value filters -> {"storages":
//     {"storage":[...]}}; the list items carry no servers (storagelabels.yaml).
//   - GET /storage/{uuid} -> {"storage": {..., "backups":{"backup":[]}, "servers":{"server":[uuids]}}}.
//   - DELETE /storage/{uuid} -> 204. A storage a server has is refused with 409 STORAGE_ATTACHED (the
//     code is from the SDK's error code list, upcloud/error_codes.go; UpCloud's Terraform provider
//     detaches a storage before it deletes it, internal/service/storage/storage.go).
//   - POST /server/{uuid}/storage/attach {"storage_device":{type, address, storage}} and
//     /storage/detach {"storage_device":{address}} -> 200 {"server": details}. An address is a bus
//     ("virtio", "scsi", "ide": the next free place on it) or a place ("virtio:1", "scsi:0:0").
//   - POST /server with storage_devices [{action:"clone", ...}, {action:"attach", storage, address?,
//     type?}] attaches existing storages at the create (the SDK's CreateServerStorageDeviceActionAttach).
//   - DELETE /server/{uuid}?storages=1 deletes the server and every storage attached to it (the SDK's
//     DeleteServerAndStoragesRequest: "delete a server and all attached storages"); without it the
//     storages stay, detached.
//
// The server-state rule: UpCloud's CSI driver (UpCloudLtd/upcloud-csi, internal/service/
// upcloud_service.go) attaches and detaches virtio disks on started servers and then waits for the
// server to leave "maintenance"; UpCloud's Terraform provider stops a server only for ide and cdrom
// devices (internal/service/server/utils.go, changeRequiresServerStop) and detaches ide devices only
// from stopped servers. So virtio and scsi disks attach and detach on a started or stopped server (a
// started one is in "maintenance" for HotplugDuration after), ide ones only on a stopped server
// (IDE_HOTPLUG_UNSUPPORTED), and a server in maintenance refuses both (SERVER_STATE_ILLEGAL). A server
// has at most 16 storage devices (UpCloud's API page "9. Storages"), a storage is attached to one server
// at a time, of its own zone.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// maxStorageDevices is how many storages one server may have (UpCloud's "9. Storages" page).
const maxStorageDevices = 16

// storageTiers are the tiers a storage may have ("hdd" is the Archive tier's API name).
var storageTiers = []string{"maxiops", "standard", "hdd"}

// storageLabelsJSON is a storage's labels as UpCloud writes them: a bare array.
func storageLabelsJSON(ls []label) []any {
	list := []any{}
	for _, l := range ls {
		list = append(list, map[string]any{"key": l.Key, "value": l.Value})
	}
	return list
}

// storageListKinds are the path words GET /storage/... filters by: access or type.
var storageListKinds = map[string]bool{"public": true, "private": true, "normal": true, "template": true, "backup": true,
	"cdrom": true, "favorite": true}

// isStorageList reports whether a GET path (split at "/") lists storages: /storage, or /storage
// followed by access and type words.
func isStorageList(parts []string) bool {
	if len(parts) > 3 {
		return false
	}
	for _, p := range parts[1:] {
		if !storageListKinds[p] {
			return false
		}
	}
	return true
}

// listStorages answers GET /storage[/{access}][/{type}]: the disks (type normal, private) and the
// templates that match the path's words and the ?label= filters, by uuid.
func (s *Server) listStorages(st *state, words []string, r *http.Request) response {
	filters := r.URL.Query()["label"]
	want := func(access, typ string) bool {
		for _, w := range words {
			switch w {
			case "public", "private":
				if access != w {
					return false
				}
			case "favorite":
				return false // the emulator keeps no favorites
			default:
				if typ != w {
					return false
				}
			}
		}
		return true
	}
	var list []map[string]any
	if want("private", "normal") {
		for _, d := range st.Disks {
			if matchLabels(d.Labels, filters) {
				list = append(list, s.diskJSON(st, d))
			}
		}
	}
	if len(filters) == 0 {
		for _, t := range st.Templates {
			if want(templateAccess(t), "template") {
				list = append(list, s.templateJSON(t))
			}
		}
	}
	uuid := func(m map[string]any) string { u, _ := m["uuid"].(string); return u } // set by diskJSON and templateJSON
	sort.Slice(list, func(i, j int) bool { return uuid(list[i]) < uuid(list[j]) })
	out := make([]any, 0, len(list))
	for _, m := range list {
		out = append(out, m)
	}
	return jsonResp(http.StatusOK, map[string]any{"storages": map[string]any{"storage": out}})
}

// createStorageBody is what the emulator reads of POST /storage's "storage" object (the SDK's
// CreateStorageRequest).
type createStorageBody struct {
	Size   json.Number `json:"size"`
	Tier   string      `json:"tier"`
	Title  string      `json:"title"`
	Zone   string      `json:"zone"`
	Labels []label     `json:"labels"`
}

// createStorage answers POST /storage: a blank storage, online at once (as recorded), 201. Sizes are
// 1 to 4096 GiB and titles 1 to 255 characters (the bounds UpCloud's Terraform provider validates,
// internal/service/storage/storage.go).
func (s *Server) createStorage(st *state, r *http.Request) (response, bool) {
	b, resp, ok := object[createStorageBody](r, "storage")
	if !ok {
		return resp, false
	}
	size, err := strconv.Atoi(b.Size.String())
	tier := b.Tier
	if tier == "" {
		tier = "maxiops"
	}
	switch {
	case b.Size == "":
		return errResp(http.StatusBadRequest, "SIZE_MISSING", "The storage size is missing."), false
	case err != nil || size < 1 || size > 4096:
		return errResp(http.StatusBadRequest, "SIZE_INVALID", fmt.Sprintf("The storage size %s is invalid.", b.Size)), false
	case !slices.Contains(storageTiers, tier):
		return errResp(http.StatusBadRequest, "TIER_INVALID", fmt.Sprintf("The storage tier %q is invalid.", tier)), false
	case b.Title == "":
		return errResp(http.StatusBadRequest, "TITLE_MISSING", "The title is missing."), false
	case len(b.Title) > 255:
		return errResp(http.StatusBadRequest, "TITLE_INVALID", "The title is invalid."), false
	case b.Zone == "":
		return errResp(http.StatusBadRequest, "ZONE_MISSING", "The zone is missing."), false
	}
	if _, ok := st.zone(b.Zone); !ok {
		return errResp(http.StatusNotFound, "ZONE_NOT_FOUND", fmt.Sprintf("The zone %s does not exist.", b.Zone)), false
	}
	if resp, ok := checkLabels(b.Labels); !ok {
		return resp, false
	}
	d := &disk{UUID: newUUID("01"), Title: b.Title, Zone: b.Zone, Size: size, Tier: tier, Created: s.opts.Now(),
		Labels: slices.Clone(b.Labels)} // none given: the answer has no labels, as recorded
	st.Disks[d.UUID] = d
	m := s.diskJSON(st, d)
	m["backups"] = map[string]any{"backup": []any{}}
	m["servers"] = map[string]any{"server": []any{}}
	return jsonResp(http.StatusCreated, map[string]any{"storage": m}), true
}

// deleteStorage answers DELETE /storage/{uuid}: 204, or 409 STORAGE_ATTACHED while a server has it.
func (s *Server) deleteStorage(st *state, uuid string) (response, bool) {
	d, ok := st.Disks[uuid]
	if !ok {
		if _, ok := st.template(uuid); ok {
			return errResp(http.StatusForbidden, "STORAGE_FORBIDDEN", fmt.Sprintf("The storage %s cannot be deleted by this emulator.", uuid)), false
		}
		return storageNotFound(uuid), false
	}
	if v, ok := st.Servers[d.Server]; ok {
		return errResp(http.StatusConflict, "STORAGE_ATTACHED",
			fmt.Sprintf("The storage %s is attached to server %s.", uuid, v.UUID)), false
	}
	delete(st.Disks, uuid)
	return response{status: http.StatusNoContent}, true
}

// disksOf returns the disks attached to a server, by address.
func disksOf(st *state, server string) []*disk {
	var out []*disk
	for _, d := range st.Disks {
		if d.Server == server {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return addressLess(out[i].Address, out[j].Address) })
	return out
}

// addressLess orders addresses by bus, then by number ("virtio:2" before "virtio:10").
func addressLess(a, b string) bool {
	ab, an, _ := strings.Cut(a, ":")
	bb, bn, _ := strings.Cut(b, ":")
	if ab != bb {
		return ab < bb
	}
	ai, aerr := strconv.Atoi(strings.ReplaceAll(an, ":", ""))
	bi, berr := strconv.Atoi(strings.ReplaceAll(bn, ":", ""))
	if aerr == nil && berr == nil {
		return ai < bi
	}
	return an < bn
}

// storageDevices is a server's storage_devices as its details show them: its own disk with the labels
// UpCloud puts on a template's clone, then the storages attached to it.
func (s *Server) storageDevices(st *state, v *server) map[string]any {
	list := []any{}
	for _, d := range disksOf(st, v.UUID) {
		m := map[string]any{
			"address": d.Address, "boot_disk": "0", "storage": d.UUID, "storage_encrypted": "no",
			"storage_size": d.Size, "storage_tier": d.Tier, "storage_title": d.Title, "type": "disk",
		}
		if d.UUID == v.Storage {
			m["labels"] = []any{
				map[string]any{"key": "_os_main_category", "value": "Linux"},
				map[string]any{"key": "_template_uuid", "value": v.Template},
			}
		} else {
			m["labels"] = storageLabelsJSON(d.Labels)
		}
		list = append(list, m)
	}
	return map[string]any{"storage_device": list}
}

// busPlaces are the places of each bus, in the order "the next free place" takes them.
func busPlaces(bus string) []string {
	var out []string
	switch bus {
	case "virtio":
		for i := range maxStorageDevices {
			out = append(out, fmt.Sprintf("virtio:%d", i))
		}
	case "scsi":
		for i := range maxStorageDevices {
			out = append(out, fmt.Sprintf("scsi:0:%d", i))
		}
	case "ide":
		out = []string{"ide:0:0", "ide:0:1", "ide:1:0", "ide:1:1"}
	}
	return out
}

// placeFor resolves an attach's address on a server whose disks use the addresses in used: a bus takes
// its next free place, a place must be free. It answers the error UpCloud would otherwise.
func placeFor(address string, used []string) (string, response, bool) {
	if address == "" {
		address = "virtio"
	}
	bus, _, _ := strings.Cut(address, ":")
	places := busPlaces(bus)
	if len(places) == 0 {
		return "", errResp(http.StatusBadRequest, "ADDRESS_INVALID", fmt.Sprintf("The device address %q is invalid.", address)), false
	}
	if bus != address {
		if !slices.Contains(places, address) {
			return "", errResp(http.StatusBadRequest, "ADDRESS_INVALID", fmt.Sprintf("The device address %q is invalid.", address)), false
		}
		if slices.Contains(used, address) {
			return "", errResp(http.StatusConflict, "DEVICE_ADDRESS_IN_USE", fmt.Sprintf("The device address %s is in use.", address)), false
		}
		return address, response{}, true
	}
	for _, p := range places {
		if !slices.Contains(used, p) {
			return p, response{}, true
		}
	}
	return "", errResp(http.StatusConflict, "STORAGE_DEVICE_LIMIT_REACHED", "The server has no free device address on bus "+bus+"."), false
}

// attachable checks that a storage can go to a server of zone: it exists, is a normal storage of that
// zone, and no server has it.
func attachable(st *state, zone, uuid string) (*disk, response, bool) {
	d, ok := st.Disks[uuid]
	if !ok {
		if _, ok := st.template(uuid); ok {
			return nil, errResp(http.StatusBadRequest, "STORAGE_TYPE_ILLEGAL", fmt.Sprintf("The storage %s is a template; only normal storages attach as disks.", uuid)), false
		}
		return nil, storageNotFound(uuid), false
	}
	if d.Zone != zone {
		return nil, errResp(http.StatusConflict, "ZONE_MISMATCH",
			fmt.Sprintf("The storage %s is in zone %s, the server in %s.", uuid, d.Zone, zone)), false
	}
	if _, ok := st.Servers[d.Server]; ok {
		return nil, errResp(http.StatusConflict, "STORAGE_ATTACHED", fmt.Sprintf("The storage %s is attached to server %s.", uuid, d.Server)), false
	}
	return d, response{}, true
}

// createAttach is one {action:"attach"} device of a POST /server.
type createAttach struct {
	Action, Storage, Address, Type string
}

// checkCreateAttach checks the devices after a create's clone: each attaches an existing storage of the
// server's zone that no server has, as a disk, at a free place, at most 16 devices in all.
func checkCreateAttach(st *state, zone string, devs []createAttach) (response, bool) {
	used := []string{"virtio:0"} // the clone
	seen := map[string]bool{}
	if 1+len(devs) > maxStorageDevices {
		return errResp(http.StatusConflict, "STORAGE_DEVICE_LIMIT_REACHED", fmt.Sprintf("A server has at most %d storage devices.", maxStorageDevices)), false
	}
	for _, ad := range devs {
		switch {
		case ad.Action != "attach":
			return errResp(http.StatusBadRequest, "STORAGE_DEVICE_INVALID", fmt.Sprintf("Only the first storage device may be cloned; action %q is not supported here.", ad.Action)), false
		case ad.Type != "" && ad.Type != "disk":
			return errResp(http.StatusBadRequest, "TYPE_INVALID", fmt.Sprintf("The storage device type %q is not supported by this emulator.", ad.Type)), false
		case seen[ad.Storage]:
			return errResp(http.StatusConflict, "STORAGE_ATTACHED", fmt.Sprintf("The storage %s is attached twice.", ad.Storage)), false
		}
		seen[ad.Storage] = true
		if _, resp, ok := attachable(st, zone, ad.Storage); !ok {
			return resp, false
		}
		place, resp, ok := placeFor(ad.Address, used)
		if !ok {
			return resp, false
		}
		used = append(used, place)
	}
	return response{}, true
}

// attachAtCreate attaches a create's checked storages to its new server, in order.
func attachAtCreate(st *state, v *server, devs []createAttach) {
	used := []string{"virtio:0"}
	for _, ad := range devs {
		place, _, _ := placeFor(ad.Address, used)
		used = append(used, place)
		st.Disks[ad.Storage].Server, st.Disks[ad.Storage].Address = v.UUID, place
	}
}

// attachDetach answers POST /server/{uuid}/storage/attach and /detach (see the rule above).
func (s *Server) attachDetach(st *state, uuid string, attach bool, r *http.Request) (response, bool) {
	v, ok := st.Servers[uuid]
	if !ok {
		return notFound(uuid), false
	}
	b, resp, ok := object[struct {
		Type    string `json:"type"`
		Address string `json:"address"`
		Storage string `json:"storage"`
	}](r, "storage_device")
	if !ok {
		return resp, false
	}
	now := s.opts.Now()
	state, _ := serverState(v, now)
	if state != "started" && state != "stopped" && state != "error" {
		return errResp(http.StatusConflict, "SERVER_STATE_ILLEGAL", fmt.Sprintf("The server %s is in state %s, which does not allow this operation.", uuid, state)), false
	}
	var used []string
	for _, d := range disksOf(st, uuid) {
		used = append(used, d.Address)
	}
	var target *disk
	if attach {
		if b.Type != "" && b.Type != "disk" {
			return errResp(http.StatusBadRequest, "TYPE_INVALID", fmt.Sprintf("The storage device type %q is not supported by this emulator.", b.Type)), false
		}
		if b.Storage == "" {
			return errResp(http.StatusBadRequest, "STORAGE_MISSING", "The storage is missing."), false
		}
		d, resp, ok := attachable(st, v.Zone, b.Storage)
		if !ok {
			return resp, false
		}
		if len(used) >= maxStorageDevices {
			return errResp(http.StatusConflict, "STORAGE_DEVICE_LIMIT_REACHED", fmt.Sprintf("A server has at most %d storage devices.", maxStorageDevices)), false
		}
		place, resp, ok := placeFor(b.Address, used)
		if !ok {
			return resp, false
		}
		if strings.HasPrefix(place, "ide") && state == "started" {
			return errResp(http.StatusConflict, "IDE_HOTPLUG_UNSUPPORTED", "An ide device can only be attached to a stopped server."), false
		}
		d.Server, d.Address, target = uuid, place, d
	} else {
		if b.Address == "" {
			return errResp(http.StatusBadRequest, "ADDRESS_MISSING", "The device address is missing."), false
		}
		for _, d := range disksOf(st, uuid) {
			if d.Address == b.Address {
				target = d
			}
		}
		if target == nil {
			return errResp(http.StatusConflict, "DEVICE_ADDRESS_NOT_IN_USE", fmt.Sprintf("No storage is attached at %s.", b.Address)), false
		}
		if strings.HasPrefix(target.Address, "ide") && state == "started" {
			return errResp(http.StatusConflict, "IDE_HOTPLUG_UNSUPPORTED", "An ide device can only be detached from a stopped server."), false
		}
		target.Server, target.Address = "", ""
	}
	answer := s.details(st, v)
	if state == "started" && st.HotplugDuration > 0 {
		until := now.Add(st.HotplugDuration)
		v.BusyUntil = &until
	}
	return jsonResp(http.StatusOK, map[string]any{"server": answer}), true
}

// releaseDisks acts on the disks of a deleted server: with storages "1" (or "true") every disk attached
// to it is deleted, otherwise they stay, detached.
func (s *Server) releaseDisks(st *state, server, storages string) {
	all := storages == "1" || storages == "true"
	for _, d := range disksOf(st, server) {
		if all {
			delete(st.Disks, d.UUID)
		} else {
			d.Server, d.Address = "", ""
		}
	}
}

// StorageInfo is an admin view of one storage (a server's disk or a created one).
type StorageInfo struct {
	UUID, Title, Zone, Tier string
	SizeGB                  int
	Labels                  map[string]string
	// Server and Address say where it is attached ("" when detached).
	Server, Address string
}

// Storages lists the storages, by uuid.
func (s *Server) Storages() []StorageInfo {
	var out []StorageInfo
	_ = s.withState(func(st *state) bool {
		for _, d := range st.Disks {
			labels := map[string]string{}
			for _, l := range d.Labels {
				labels[l.Key] = l.Value
			}
			out = append(out, StorageInfo{UUID: d.UUID, Title: d.Title, Zone: d.Zone, Tier: d.Tier, SizeGB: d.Size,
				Labels: labels, Server: d.Server, Address: d.Address})
		}
		return false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].UUID < out[j].UUID })
	return out
}

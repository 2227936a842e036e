package verda

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda/verdaapi"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
)

// statusOf computes an instance's status from its stored timestamps: ordered for the first quarter of
// its boot, provisioning for the rest, then running (or error when its boot was made to fail);
// offline after a shutdown; discontinued once deleted.
func (s *Server) statusOf(in *instance, now time.Time) string {
	if in.DeletedAt != nil {
		return "discontinued"
	}
	boot := time.Duration(in.Boot)
	el := now.Sub(in.CreatedAt)
	switch {
	case el < boot/4:
		return "ordered"
	case el < boot:
		return "provisioning"
	case in.FailBoot:
		return "error"
	case in.Offline:
		return "offline"
	}
	return "running"
}

func (s *Server) instanceView(st *state, in *instance, now time.Time) map[string]any {
	status := s.statusOf(in, now)
	c := s.catalog[in.InstanceType]
	var ip, osVol any
	if status == "running" || status == "offline" {
		ip = in.IP
	}
	if status != "ordered" {
		osVol = in.OSVolumeID
	}
	gpuDesc, memDesc := "", ""
	if c.GPUCount > 0 {
		gpuDesc = fmt.Sprintf("%dx %s", c.GPUCount, c.Name)
		memDesc = fmt.Sprintf("%dGB GPU RAM", c.GPUCount*c.GPUMemoryGB)
	}
	osName := "Ubuntu 24.04"
	for _, im := range images {
		if im.ImageType == in.Image || im.ID == in.Image {
			osName = im.Details[0]
		}
	}
	tags := in.Tags
	if tags == nil {
		tags = []tag{}
	}
	return map[string]any{
		"id":                in.ID,
		"ip":                ip,
		"status":            status,
		"created_at":        in.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
		"hostname":          in.Hostname,
		"description":       in.Description,
		"location":          in.Location,
		"instance_type":     in.InstanceType,
		"image":             in.Image,
		"os_name":           osName,
		"price_per_hour":    in.PricePerHour,
		"is_spot":           in.IsSpot,
		"contract":          in.Contract,
		"pricing":           in.Pricing,
		"cpu":               map[string]any{"description": fmt.Sprintf("%d CPU", c.CPUCores), "number_of_cores": c.CPUCores},
		"gpu":               map[string]any{"description": gpuDesc, "number_of_gpus": c.GPUCount},
		"gpu_memory":        map[string]any{"description": memDesc, "size_in_gigabytes": c.GPUCount * c.GPUMemoryGB},
		"memory":            map[string]any{"description": fmt.Sprintf("%dGB RAM", c.MemoryGB), "size_in_gigabytes": c.MemoryGB},
		"storage":           map[string]any{"description": fmt.Sprintf("%dGB NVME", in.OSVolumeSize), "size_in_gigabytes": in.OSVolumeSize},
		"startup_script_id": in.StartupID,
		"ssh_key_ids":       in.SSHKeyIDs,
		"os_volume_id":      osVol,
		"volume_ids":        volumeIDs(st, in), // volumes.go
		"jupyter_token":     "",
		"tags":              tags,
	}
}

// sortedInstances lists the instances oldest first.
func sortedInstances(st *state) []*instance {
	return emukit.ByAge(st.Instances, func(in *instance) time.Time { return in.CreatedAt }, func(in *instance) string { return in.ID })
}

func (s *Server) listInstances(st *state, q url.Values) reply {
	now := s.opts.Now()
	want := q.Get("status")
	out := []map[string]any{}
	for _, in := range sortedInstances(st) {
		status := s.statusOf(in, now)
		if status == "discontinued" || (want != "" && want != status) {
			continue // deleted instances vanish from the list (but stay readable by id)
		}
		out = append(out, s.instanceView(st, in, now))
	}
	return jsonReply(http.StatusOK, out)
}

// getInstance answers one instance. Verda answers an id it does not know (malformed or not) with
// 400 invalid_request "Invalid instance id", not 404.
func (s *Server) getInstance(st *state, id string) reply {
	in, ok := st.Instances[id]
	if !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid instance id")
	}
	return jsonReply(http.StatusOK, s.instanceView(st, in, s.opts.Now()))
}

// required is a field a create refuses when it holds only white space: its JSON name and where it is
// decoded to.
type required struct {
	name string
	val  *string
}

// decodeRequired decodes a create's body into req and checks its required fields in order (each val
// points into req), as Verda does; ok is false with the refusal to answer.
func decodeRequired(body []byte, req any, fields ...required) (reply, bool) {
	if err := json.Unmarshal(body, req); err != nil {
		return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json"), false
	}
	for _, f := range fields {
		if strings.TrimSpace(*f.val) == "" {
			return errReply(http.StatusBadRequest, "invalid_request", f.name+" is required"), false
		}
	}
	return reply{}, true
}

// knownLocation reports whether code is one of the emulator's locations.
func (s *Server) knownLocation(code string) bool {
	return slices.ContainsFunc(s.opts.Locations, func(l Location) bool { return l.Code == code })
}

var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

func (s *Server) createInstance(st *state, body []byte) reply {
	var req verdaapi.CreateInstanceRequest
	if rep, ok := decodeRequired(body, &req, required{"instance_type", &req.InstanceType}, required{"image", &req.Image},
		required{"hostname", &req.Hostname}, required{"description", &req.Description}); !ok {
		return rep
	}
	if req.LocationCode == "" {
		return errReply(http.StatusBadRequest, "invalid_request", "location_code is required")
	}
	loc := req.LocationCode
	c, ok := s.catalog[req.InstanceType]
	if !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid instance type")
	}
	if !s.knownLocation(loc) {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid location code")
	}
	if !hostnameRE.MatchString(req.Hostname) {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid hostname")
	}
	var img *image
	for i := range images {
		if images[i].ImageType == req.Image || images[i].ID == req.Image {
			img = &images[i]
		}
	}
	if img == nil {
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid image")
	}
	if c.LegacyImagesOnly && !legacyImage(*img) {
		return errReply(http.StatusBadRequest, "invalid_request", "Operating system is not valid for this instance type")
	}
	if rep, bad := checkKeysAndTags(st, req.SSHKeyIDs, req.Tags); bad {
		return rep
	}
	if rep, bad := s.attachAtCreate(st, loc, req.ExistingVolumes); bad {
		return rep
	}
	if st.Faults.SoldOut || s.free(st, c, loc, req.IsSpot) <= 0 {
		return errReply(http.StatusServiceUnavailable, "service_unavailable",
			fmt.Sprintf("Not enough resources to deploy a %d GPU instance type %s in %s", c.GPUCount, c.InstanceType, loc))
	}
	price := c.PricePerHour
	if req.IsSpot {
		price = c.SpotPrice
	}
	contract := req.Contract
	if contract == "" {
		contract = "PAY_AS_YOU_GO"
		if req.IsSpot {
			contract = "SPOT"
		}
	}
	pricing := req.Pricing
	if pricing == "" {
		pricing = "FIXED_PRICE"
	}
	size := 50
	if req.OSVolume != nil && req.OSVolume.Size > 0 {
		size = req.OSVolume.Size
	}
	ip := s.nextIP(st)
	keys := req.SSHKeyIDs
	if keys == nil {
		keys = []string{}
	}
	in := &instance{
		order: order{
			ID:           newUUID(),
			Hostname:     req.Hostname,
			Description:  req.Description,
			Image:        req.Image,
			Location:     loc,
			Contract:     contract,
			SSHKeyIDs:    keys,
			StartupID:    req.StartupScriptID,
			Tags:         req.Tags,
			IP:           ip,
			PricePerHour: price,
			CreatedAt:    s.opts.Now(),
			Boot:         int64(s.opts.BootDuration),
			FailBoot:     st.Faults.TakeBootFailure(),
		},
		InstanceType: c.InstanceType,
		IsSpot:       req.IsSpot,
		Pricing:      pricing,
		OSVolumeID:   newUUID(),
		OSVolumeSize: size,
	}
	st.Instances[in.ID] = in
	attachCreated(st, in.ID, req.ExistingVolumes)
	st.Created++
	if st.Faults.TakeLostCreate() {
		return textReply(http.StatusBadGateway, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	}
	// Quirk: the id comes back as plain text, not JSON, with 200 as in the recorded answer (Verda's
	// SDKs accept 200, 201 and 202).
	return textReply(http.StatusOK, in.ID)
}

func (s *Server) action(st *state, body []byte) reply {
	var req struct {
		ID                json.RawMessage `json:"id"`
		Action            string          `json:"action"`
		VolumeIDs         []string        `json:"volume_ids"`
		DeletePermanently bool            `json:"delete_permanently"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return errReply(http.StatusBadRequest, "invalid_request", "Request body is not valid json")
	}
	ids, ok := actionIDs(req.ID) // volumes.go
	if !ok {
		return errReply(http.StatusBadRequest, "invalid_request", "id is required")
	}
	if len(ids) == 0 {
		return errReply(http.StatusBadRequest, "invalid_request", "id is required")
	}
	switch req.Action {
	case "delete", "discontinue", "shutdown", "force_shutdown", "start", "boot":
	case "":
		return errReply(http.StatusBadRequest, "invalid_request", "action is required")
	default:
		return errReply(http.StatusBadRequest, "invalid_request", "Invalid action")
	}
	now := s.opts.Now()
	var results []verdaapi.ActionResult
	failed := 0
	for _, id := range ids {
		res := verdaapi.ActionResult{Action: req.Action, InstanceID: id, Status: "success"}
		code, msg := s.apply(st, id, req.Action, now)
		if msg != "" {
			res.Status, res.Error, res.StatusCode = "error", msg, code
			failed++
		} else if req.Action == "delete" || req.Action == "discontinue" {
			s.releaseVolumes(st, id, req.VolumeIDs, req.DeletePermanently) // volumes.go
		}
		results = append(results, res)
	}
	if len(ids) == 1 && failed == 1 {
		r := results[0]
		errCode := "forbidden_action"
		if strings.HasPrefix(r.Error, "Invalid") {
			errCode = "invalid_request" // an unknown id: 400 invalid_request "Invalid instance id"
		}
		return errReply(r.StatusCode, errCode, r.Error)
	}
	if failed > 0 {
		return jsonReply(http.StatusMultiStatus, results)
	}
	// Every action accepted: 202 with an empty body, as Verda answers (recorded in the Python SDK's
	// delete test); only a partial failure (207) lists a result per instance.
	return reply{Status: http.StatusAccepted}
}

// apply performs one action on one instance; it returns an HTTP status and message on failure.
func (s *Server) apply(st *state, id, action string, now time.Time) (int, string) {
	in, ok := st.Instances[id]
	if !ok {
		return http.StatusBadRequest, "Invalid instance id"
	}
	status := s.statusOf(in, now)
	switch action {
	case "delete", "discontinue":
		if status == "discontinued" || status == "provisioning" {
			return http.StatusBadRequest, "Can't discontinue a " + status + " instance"
		}
		t := now
		in.DeletedAt = &t
	case "shutdown", "force_shutdown":
		if status != "running" {
			return http.StatusBadRequest, "Can't shutdown a " + status + " instance"
		}
		in.Offline = true
	case "start", "boot":
		if status != "offline" {
			return http.StatusBadRequest, "Can't start a " + status + " instance"
		}
		in.Offline = false
	}
	return 0, ""
}

// checkKeysAndTags refuses unknown SSH key ids and bad tags (more than 10, no key, a key twice), as
// Verda does for instances and clusters.
func checkKeysAndTags(st *state, keyIDs []string, tags []tag) (reply, bool) {
	for _, k := range keyIDs {
		if _, ok := st.SSHKeys[k]; !ok {
			return errReply(http.StatusBadRequest, "invalid_request", "Invalid ssh-key ID"), true
		}
	}
	if len(tags) > 10 {
		return errReply(http.StatusBadRequest, "invalid_request", "At most 10 tags are allowed"), true
	}
	seen := map[string]bool{}
	for _, t := range tags {
		if strings.TrimSpace(t.Key) == "" {
			return errReply(http.StatusBadRequest, "invalid_request", "Tag key is required"), true
		}
		if seen[t.Key] {
			return errReply(http.StatusConflict, "invalid_request", "Tag key already exists"), true
		}
		seen[t.Key] = true
	}
	return reply{}, false
}

// nextIP is the public address of the next machine: Options.InstanceIP, else one of 198.51.100.0/22.
func (s *Server) nextIP(st *state) string {
	st.IPSeq++
	if s.opts.InstanceIP != "" {
		return s.opts.InstanceIP
	}
	return fmt.Sprintf("198.51.%d.%d", 100+(st.IPSeq/250)%4, 2+st.IPSeq%250)
}

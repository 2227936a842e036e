package mithril

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// dollars writes cents as Mithril's price string, e.g. "$12.50".
func dollars(c int64) string { return fmt.Sprintf("$%d.%02d", c/100, c%100) }

// parseDollars reads a "$12.50" limit price (the "$" is required, as in Mithril's schema).
func parseDollars(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "$") {
		return 0, false
	}
	s = strings.ReplaceAll(s[1:], ",", "")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 2 {
		return 0, false
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 {
		return 0, false
	}
	f := int64(0)
	if frac != "" {
		frac += "0"
		f, err = strconv.ParseInt(frac[:2], 10, 64)
		if err != nil || f < 0 {
			return 0, false
		}
	}
	return w*100 + f, true
}

func (s *Server) userProject(st *state, fid string) *project {
	p := st.project(fid)
	if p == nil || p.Market {
		return nil
	}
	return p
}

func (s *Server) me(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	return http.StatusOK, map[string]any{"id": user, "fid": user, "email": "hydra@example.com", "user_name": "hydra",
		"organization_id": "org_emulator", "organization_role": "admin"}, nil
}

func (s *Server) projects(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	out := []map[string]any{}
	for _, p := range st.Projects {
		if !p.Market {
			out = append(out, map[string]any{"fid": p.FID, "name": p.Name, "created_at": p.CreatedAt})
		}
	}
	return http.StatusOK, out, nil
}

func (s *Server) instanceTypes(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	out := []map[string]any{}
	for _, a := range st.Auctions {
		out = append(out, map[string]any{
			"fid": a.TypeFID, "name": a.Name, "num_cpus": a.NumCPUs, "cpu_type": "AMD EPYC", "ram_gb": a.RAMGB,
			"num_gpus": a.NumGPUs, "gpu_type": a.GPUType, "gpu_memory_gb": a.GPUMemoryGB, "gpu_socket": a.GPUSocket,
			"local_storage_gb": a.LocalStorageGB, "network_type": "InfiniBand", "ib_count": a.NumGPUs, "bridge_count": 0,
		})
	}
	return http.StatusOK, out, nil
}

func (s *Server) availability(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	out := []map[string]any{}
	for _, a := range st.Auctions {
		stt := st.stats(a)
		var lowest any
		if stt.lowestAllocated > 0 {
			lowest = dollars(stt.lowestAllocated)
		}
		out = append(out, map[string]any{
			"fid": a.FID, "instance_type": a.TypeFID, "region": a.Region, "capacity": stt.available,
			"last_instance_price": dollars(a.LastPriceCents), "lowest_allocated_price": lowest,
			"adjustable_memory": false, "default_image_version": nil,
		})
	}
	return http.StatusOK, out, nil
}

func (s *Server) pricing(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	q := r.URL.Query()
	it := q.Get("instance_type")
	if it == "" {
		return 0, nil, invalid(missing("query", "instance_type"))
	}
	if v := q.Get("instance_quantity"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return 0, nil, invalid(validation{Type: "less_than_equal", Loc: []any{"query", "instance_quantity"}, Msg: "Input should be between 1 and 256", Input: v})
		}
	}
	a := st.auctionFor(it, q.Get("region"))
	if a == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("No spot auction for instance type %s in region %q", it, q.Get("region")))
	}
	stt := st.stats(a)
	var lowest any
	if stt.lowestAllocated > 0 {
		lowest = stt.lowestAllocated
	}
	return http.StatusOK, map[string]any{
		"spot_price_cents": a.LastPriceCents, "reserved_price_cents": nil, "minimum_price_cents": a.MinimumCents,
		"lowest_allocated_bid_cents": lowest, "dynamic_win_price_cents": stt.winPrice,
		"available_capacity": stt.available, "total_capacity": a.Capacity,
	}, nil
}

func bidJSON(b *bid) map[string]any {
	var deact any
	if b.DeactivatedAt != nil {
		deact = *b.DeactivatedAt
	}
	var script, image any
	if b.StartupScript != "" {
		script = b.StartupScript
	}
	if b.ImageVersion != "" {
		image = b.ImageVersion
	}
	return map[string]any{
		"fid": b.FID, "name": b.Name, "project": b.Project, "created_by": b.CreatedBy, "created_at": b.CreatedAt,
		"deactivated_at": deact, "limit_price": dollars(b.LimitCents), "instance_quantity": b.Quantity,
		"instance_type": b.TypeFID, "region": b.Region, "instances": b.Instances, "status": b.Status,
		"launch_specification": map[string]any{"volumes": b.Volumes, "ssh_keys": b.SSHKeys, "startup_script": script,
			"kubernetes_cluster": nil, "image_version": image, "memory_gb": nil},
	}
}

func instanceJSON(in *instance, now time.Time) map[string]any {
	status := in.status(now)
	var dest, ip any
	if status == "STATUS_RUNNING" || status == "STATUS_PREEMPTING" {
		dest, ip = in.SSHDest, in.PrivateIP
	}
	return map[string]any{
		"fid": in.FID, "name": in.Name, "project": in.Project, "created_at": in.CreatedAt, "created_by": in.CreatedBy,
		"instance_type": in.TypeFID, "region": in.Region, "bid": in.Bid, "reservation": nil,
		"ssh_destination": dest, "private_ip": ip, "status": status,
	}
}

// readBody decodes a JSON object body, answering FastAPI's 422 for malformed JSON.
func readBody(r *http.Request) (map[string]json.RawMessage, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, 1<<20)); err != nil {
		return nil, invalid(validation{Type: "json_invalid", Loc: []any{"body"}, Msg: "JSON decode error"})
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m == nil {
		return nil, invalid(validation{Type: "model_attributes_type", Loc: []any{"body"}, Msg: "Input should be a valid dictionary or object to extract fields from", Input: buf.String()})
	}
	return m, nil
}

func stringField(m map[string]json.RawMessage, loc []any, key string, required bool, errs *[]validation) string {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		if required {
			*errs = append(*errs, missing(append(loc, key)...))
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		*errs = append(*errs, validation{Type: "string_type", Loc: append(append([]any{}, loc...), key), Msg: "Input should be a valid string", Input: raw})
	}
	return s
}

func listField(m map[string]json.RawMessage, loc []any, key string, errs *[]validation) []string {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		*errs = append(*errs, missing(append(append([]any{}, loc...), key)...))
		return nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		*errs = append(*errs, validation{Type: "list_type", Loc: append(append([]any{}, loc...), key), Msg: "Input should be a valid list", Input: raw})
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func (s *Server) createBid(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	m, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	var errs []validation
	body := []any{"body"}
	proj := stringField(m, body, "project", true, &errs)
	region := stringField(m, body, "region", true, &errs)
	itFID := stringField(m, body, "instance_type", true, &errs)
	name := stringField(m, body, "name", true, &errs)
	limitRaw, hasLimit := m["limit_price"]
	var limit int64
	if !hasLimit {
		errs = append(errs, missing("body", "limit_price"))
	} else {
		var ls string
		if err := json.Unmarshal(limitRaw, &ls); err != nil {
			errs = append(errs, validation{Type: "string_type", Loc: []any{"body", "limit_price"}, Msg: "Input should be a valid string", Input: limitRaw})
		} else if c, ok := parseDollars(ls); !ok {
			errs = append(errs, validation{Type: "value_error", Loc: []any{"body", "limit_price"}, Msg: `Value error, limit_price must be a dollar amount such as "$12.50"`, Input: ls})
		} else {
			limit = c
		}
	}
	qty := 0
	if raw, ok := m["instance_quantity"]; !ok {
		errs = append(errs, missing("body", "instance_quantity"))
	} else if err := json.Unmarshal(raw, &qty); err != nil {
		errs = append(errs, validation{Type: "int_type", Loc: []any{"body", "instance_quantity"}, Msg: "Input should be a valid integer", Input: raw})
	} else if qty < 1 || qty > 256 {
		errs = append(errs, validation{Type: "greater_than_equal", Loc: []any{"body", "instance_quantity"}, Msg: "Input should be between 1 and 256", Input: qty})
	}
	var keys, volumes []string
	var script, image string
	if raw, ok := m["launch_specification"]; !ok {
		errs = append(errs, missing("body", "launch_specification"))
	} else {
		var ls map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ls); err != nil || ls == nil {
			errs = append(errs, validation{Type: "model_type", Loc: []any{"body", "launch_specification"}, Msg: "Input should be a valid dictionary", Input: raw})
		} else {
			loc := []any{"body", "launch_specification"}
			volumes = listField(ls, loc, "volumes", &errs)
			keys = listField(ls, loc, "ssh_keys", &errs)
			script = stringField(ls, loc, "startup_script", false, &errs)
			image = stringField(ls, loc, "image_version", false, &errs)
		}
	}
	if len(errs) > 0 {
		return 0, nil, invalid(errs...)
	}
	if name == "" {
		return 0, nil, invalid(validation{Type: "string_too_short", Loc: []any{"body", "name"}, Msg: "String should have at least 1 character", Input: name})
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	a := st.auctionFor(itFID, "")
	if a == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Instance type %s not found", itFID))
	}
	if a.Region != region {
		if st.auctionFor(itFID, region) == nil {
			return 0, nil, detail(http.StatusBadRequest, fmt.Sprintf("Instance type %s is not available in region %s", itFID, region))
		}
		a = st.auctionFor(itFID, region)
	}
	for _, k := range keys {
		found := false
		for _, sk := range st.SSHKeys {
			if sk.FID == k && sk.Project == proj {
				found = true
			}
		}
		if !found {
			return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("SSH key %s not found", k))
		}
	}
	if err := s.checkBidVolumes(st, proj, a.Region, qty, volumes); err != nil { // volumes.go
		return 0, nil, err
	}
	if st.Faults.SoldOut {
		return 0, nil, detail(http.StatusBadRequest, fmt.Sprintf("Insufficient capacity for %s in %s", a.Name, a.Region))
	}
	b := &bid{resource: resource{Name: name, Project: proj, CreatedBy: user, CreatedAt: now}, LimitCents: limit, Quantity: qty,
		TypeFID: a.TypeFID, Region: a.Region, SSHKeys: keys, Volumes: volumes, StartupScript: script, ImageVersion: image}
	st.Created++
	if st.Own.OutbidOnArrival > 0 {
		st.Own.OutbidOnArrival--
		b.Outbid = true
	}
	st.placeBid(b, now)
	if st.Faults.TakeLostCreate() {
		// The bid is placed (and saved); only the answer is lost.
		return 0, nil, detail(st.serverErrorStatus(), "Upstream service failure")
	}
	return http.StatusCreated, bidJSON(b), nil
}

// pageParams reads limit (1-100, default 100) and next_cursor, answering 422 like FastAPI.
func pageParams(r *http.Request) (limit, offset int, err error) {
	q := r.URL.Query()
	limit = 100
	if v := q.Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		switch {
		case perr != nil:
			return 0, 0, invalid(validation{Type: "int_parsing", Loc: []any{"query", "limit"}, Msg: "Input should be a valid integer, unable to parse string as an integer", Input: v})
		case n < 1:
			return 0, 0, invalid(validation{Type: "greater_than_equal", Loc: []any{"query", "limit"}, Msg: "Input should be greater than or equal to 1", Input: v, Ctx: map[string]int{"ge": 1}})
		case n > 100:
			return 0, 0, invalid(validation{Type: "less_than_equal", Loc: []any{"query", "limit"}, Msg: "Input should be less than or equal to 100", Input: v, Ctx: map[string]int{"le": 100}})
		}
		limit = n
	}
	if c := q.Get("next_cursor"); c != "" {
		data, derr := base64.RawURLEncoding.DecodeString(c)
		n, aerr := strconv.Atoi(strings.TrimPrefix(string(data), "offset:"))
		if derr != nil || aerr != nil || !strings.HasPrefix(string(data), "offset:") || n < 0 {
			return 0, 0, detail(http.StatusBadRequest, "Invalid cursor")
		}
		offset = n
	}
	return limit, offset, nil
}

func pageOf[T any](items []T, limit, offset int) map[string]any {
	if offset > len(items) {
		offset = len(items)
	}
	end := min(offset+limit, len(items))
	var next any
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(end)))
	}
	data := items[offset:end]
	if data == nil {
		data = []T{}
	}
	return map[string]any{"data": data, "next_cursor": next}
}

// sortQuery orders by sort_by (created_at or status) and sort_dir (asc or desc, default desc).
func sortQuery(r *http.Request) (by string, desc bool, err error) {
	q := r.URL.Query()
	by = q.Get("sort_by")
	if by == "" {
		by = "created_at"
	}
	if by != "created_at" && by != "status" {
		return "", false, invalid(validation{Type: "enum", Loc: []any{"query", "sort_by"}, Msg: "Input should be 'created_at' or 'status'", Input: by})
	}
	dir := q.Get("sort_dir")
	if dir == "" {
		dir = "desc"
	}
	if dir != "asc" && dir != "desc" {
		return "", false, invalid(validation{Type: "enum", Loc: []any{"query", "sort_dir"}, Msg: "Input should be 'asc' or 'desc'", Input: dir})
	}
	return by, dir == "desc", nil
}

// listQuery reads the parameters every list of a project takes: project (required), the page and the
// sort.
func listQuery(r *http.Request) (proj string, limit, offset int, by string, desc bool, err error) {
	if proj = r.URL.Query().Get("project"); proj == "" {
		return "", 0, 0, "", false, invalid(missing("query", "project"))
	}
	if limit, offset, err = pageParams(r); err != nil {
		return "", 0, 0, "", false, err
	}
	by, desc, err = sortQuery(r)
	return proj, limit, offset, by, desc, err
}

func (s *Server) listBids(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	q := r.URL.Query()
	proj, limit, offset, by, desc, err := listQuery(r)
	if err != nil {
		return 0, nil, err
	}
	if status := q.Get("status"); status != "" {
		ok := false
		for _, v := range []string{bidOpen, bidAllocated, bidPreempting, bidTerminated, bidPaused} {
			ok = ok || v == status
		}
		if !ok {
			return 0, nil, invalid(validation{Type: "enum", Loc: []any{"query", "status"}, Msg: "Input should be 'Open', 'Allocated', 'Preempting', 'Terminated' or 'Paused'", Input: status})
		}
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	var bids []*bid
	for _, b := range st.Bids {
		if b.Project != proj || (q.Get("name") != "" && b.Name != q.Get("name")) || (q.Get("status") != "" && b.Status != q.Get("status")) ||
			(q.Get("instance_type") != "" && b.TypeFID != q.Get("instance_type")) || (q.Get("region") != "" && b.Region != q.Get("region")) {
			continue
		}
		bids = append(bids, b)
	}
	sort.SliceStable(bids, func(i, j int) bool {
		x, y := bids[i], bids[j]
		if by == "status" && x.Status != y.Status {
			return (x.Status < y.Status) != desc
		}
		return (x.Seq < y.Seq) != desc
	})
	out := make([]map[string]any, len(bids))
	for i, b := range bids {
		out[i] = bidJSON(b)
	}
	return http.StatusOK, pageOf(out, limit, offset), nil
}

// ownBid finds a bid of the caller's projects (other customers' bids are not found).
func (s *Server) ownBid(st *state, fid string) (*bid, error) {
	b := st.bidByFID(fid)
	if b == nil || s.userProject(st, b.Project) == nil {
		return nil, detail(http.StatusNotFound, "Bid not found")
	}
	return b, nil
}

func (s *Server) getBid(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	b, err := s.ownBid(st, r.PathValue("fid"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, bidJSON(b), nil
}

func (s *Server) bidStatus(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	b, err := s.ownBid(st, r.PathValue("fid"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"bid_fid": b.FID, "status": b.Status}, nil
}

func (s *Server) patchBid(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	b, err := s.ownBid(st, r.PathValue("fid"))
	if err != nil {
		return 0, nil, err
	}
	m, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	if b.Status == bidTerminated {
		return 0, nil, detail(http.StatusConflict, "Bid is terminated")
	}
	if raw, ok := m["limit_price"]; ok {
		var ls string
		c, okp := int64(0), false
		if json.Unmarshal(raw, &ls) == nil {
			c, okp = parseDollars(ls)
		}
		if !okp {
			return 0, nil, invalid(validation{Type: "value_error", Loc: []any{"body", "limit_price"}, Msg: `Value error, limit_price must be a dollar amount such as "$12.50"`, Input: raw})
		}
		b.LimitCents = c
	}
	if raw, ok := m["paused"]; ok {
		var p bool
		if err := json.Unmarshal(raw, &p); err != nil {
			return 0, nil, invalid(validation{Type: "bool_type", Loc: []any{"body", "paused"}, Msg: "Input should be a valid boolean", Input: raw})
		}
		switch {
		case p && b.Status != bidPaused:
			for _, fid := range b.Instances {
				if in := st.instanceByFID(fid); in != nil && in.live(now) {
					t := now
					in.StoppingAt, in.TerminatedAt = &t, &t
				}
			}
			b.Status, b.Instances, b.PreemptAt = bidPaused, []string{}, nil
		case !p && b.Status == bidPaused:
			b.Status = bidOpen
		}
	}
	if a := st.auctionFor(b.TypeFID, b.Region); a != nil {
		st.clear(a, now)
	}
	return http.StatusOK, bidJSON(b), nil
}

func (s *Server) cancelBid(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	b, err := s.ownBid(st, r.PathValue("fid"))
	if err != nil {
		return 0, nil, err
	}
	if b.Status == bidTerminated {
		return 0, nil, detail(http.StatusNotFound, "Bid not found or already terminated")
	}
	st.cancel(b, now)
	return http.StatusNoContent, nil, nil
}

func (s *Server) listInstances(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	q := r.URL.Query()
	proj, limit, offset, by, desc, err := listQuery(r)
	if err != nil {
		return 0, nil, err
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	set := func(key string) map[string]bool {
		v := q.Get(key)
		if v == "" {
			return nil
		}
		m := map[string]bool{}
		for _, x := range strings.Split(v, ",") {
			m[strings.TrimSpace(x)] = true
		}
		return m
	}
	bidsIn, statusIn := set("bid_fid_in"), set("status_in")
	var items []*instance
	for _, in := range st.Instances {
		if in.Project != proj || (bidsIn != nil && !bidsIn[in.Bid]) || (statusIn != nil && !statusIn[in.status(now)]) ||
			(q.Get("region") != "" && in.Region != q.Get("region")) || (q.Get("instance_type") != "" && in.TypeFID != q.Get("instance_type")) {
			continue
		}
		items = append(items, in)
	}
	sort.SliceStable(items, func(i, j int) bool {
		x, y := items[i], items[j]
		if by == "status" && x.status(now) != y.status(now) {
			return (x.status(now) < y.status(now)) != desc
		}
		return (x.Seq < y.Seq) != desc
	})
	out := make([]map[string]any, len(items))
	for i, in := range items {
		out[i] = instanceJSON(in, now)
	}
	return http.StatusOK, pageOf(out, limit, offset), nil
}

func (s *Server) instanceStatus(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	in := st.instanceByFID(r.PathValue("fid"))
	if in == nil || s.userProject(st, in.Project) == nil {
		return 0, nil, detail(http.StatusNotFound, "Instance not found")
	}
	var end any
	if in.PreemptedAt != nil {
		end = *in.PreemptedAt
	}
	return http.StatusOK, map[string]any{"fid": in.FID, "name": in.Name, "status": in.status(now), "bid": in.Bid, "reservation": nil, "end_time": end}, nil
}

func (s *Server) listKeys(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	proj := r.URL.Query().Get("project")
	if proj == "" {
		return 0, nil, invalid(missing("query", "project"))
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	out := []map[string]any{}
	for _, k := range st.SSHKeys {
		if k.Project == proj {
			out = append(out, keyJSON(k))
		}
	}
	return http.StatusOK, out, nil
}

func keyJSON(k *sshKey) map[string]any {
	return map[string]any{"fid": k.FID, "name": k.Name, "project": k.Project, "public_key": k.PublicKey, "created_at": k.CreatedAt, "required": k.Required}
}

func (s *Server) createKey(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	m, err := readBody(r)
	if err != nil {
		return 0, nil, err
	}
	var errs []validation
	proj := stringField(m, []any{"body"}, "project", true, &errs)
	name := stringField(m, []any{"body"}, "name", true, &errs)
	pub := stringField(m, []any{"body"}, "public_key", false, &errs)
	if len(errs) > 0 {
		return 0, nil, invalid(errs...)
	}
	if s.userProject(st, proj) == nil {
		return 0, nil, detail(http.StatusNotFound, fmt.Sprintf("Project %s not found", proj))
	}
	if pub == "" {
		return 0, nil, detail(http.StatusBadRequest, "Key generation is not supported by this emulator: send public_key")
	}
	f := strings.Fields(pub)
	if len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") && !strings.HasPrefix(f[0], "sk-") {
		return 0, nil, detail(http.StatusBadRequest, "Invalid public key")
	}
	for _, k := range st.SSHKeys {
		if k.Project != proj {
			continue
		}
		kf := strings.Fields(k.PublicKey)
		if len(kf) >= 2 && kf[1] == f[1] {
			return 0, nil, detail(http.StatusBadRequest, "An SSH key with this public key already exists in the project")
		}
	}
	k := &sshKey{FID: randomFID("sshkey_"), Name: name, Project: proj, PublicKey: strings.TrimSpace(pub), CreatedAt: now}
	st.SSHKeys = append(st.SSHKeys, k)
	return http.StatusCreated, keyJSON(k), nil
}

func (s *Server) deleteKey(r *http.Request, st *state, now time.Time, user string) (int, any, error) {
	fid := r.PathValue("fid")
	for i, k := range st.SSHKeys {
		if k.FID == fid && s.userProject(st, k.Project) != nil {
			st.SSHKeys = append(st.SSHKeys[:i], st.SSHKeys[i+1:]...)
			return http.StatusNoContent, nil, nil
		}
	}
	return 0, nil, detail(http.StatusNotFound, "SSH key not found")
}

package upcloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// recordedUUID matches an UpCloud uuid in a recorded request's path.
var recordedUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// PathUUID is the first uuid in a recorded request's path ("/1.3/server/<uuid>/stop"), "" when it has
// none: the key a replaying test maps onto the emulator's own uuid for ReplayURL.
func PathUUID(path string) string { return recordedUUID.FindString(path) }

// ReplayURL is where to send a recorded UpCloud request (its path and raw query) to this emulator served
// at root (its base URL without APIPrefix), for tests that replay real recordings: every uuid in the
// path that ids maps (recorded uuid -> the emulator's) is replaced, others are kept, and /1.2/ becomes
// /1.3/ (the same body shapes, see the recordings' README).
func ReplayURL(root, path, rawQuery string, ids map[string]string) string {
	path = recordedUUID.ReplaceAllStringFunc(path, func(u string) string {
		if v, ok := ids[u]; ok {
			return v
		}
		return u
	})
	u := root + strings.Replace(path, "/1.2/", "/1.3/", 1)
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// WithSDKTestLabels is a recorded create request body ({"server":{...}}) with the labels UpCloud's SDK
// integration tests give the servers they create (managedBy and testName): a test replaying recordings
// creates with it the servers that stand in for the recordings' other servers, which were created so.
func WithSDKTestLabels(body []byte, testName string) ([]byte, error) {
	var m map[string]map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["server"] == nil {
		return nil, fmt.Errorf("not a create request body {\"server\":{...}}: %q", body)
	}
	m["server"]["labels"] = map[string]any{"label": []any{
		map[string]any{"key": "managedBy", "value": "upcloud-sdk-integration-test"},
		map[string]any{"key": "testName", "value": testName}}}
	return json.Marshal(m)
}

// Recording is what Replay needs of one recorded exchange: its request and the recorded answer's body.
type Recording struct {
	Method, Path, RawQuery string
	Body, Answer           []byte
}

// Answer is the emulator's answer to one replayed request.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Replay sends UpCloud's recordings (by file name) to the emulator whose base URL without APIPrefix is
// root, in their order: the recorded creates and servers standing in for the recordings' other ones
// (gpuCreate is the body that creates the hand-written GPU server's), boot, read, modify, stop, start,
// delete, templatize, then every other recording whose path is absolute. Each recorded uuid is mapped
// onto the emulator object made for it. do sends one request; advance moves the emulator's clock,
// whose boot must take 10 s and stop 5 s. It returns the answers by file name, or why it could not go
// on.
func Replay(recs map[string]Recording, gpuCreate []byte, root string, do func(method, url string, body []byte) (Answer, error),
	advance func(time.Duration)) (map[string]Answer, error) {
	ids := map[string]string{} // recorded uuid -> the emulator's
	var failed error
	send := func(method, path, rawQuery string, body []byte) Answer {
		if failed != nil {
			return Answer{}
		}
		a, err := do(method, ReplayURL(root, path, rawQuery, ids), body)
		failed = err
		return a
	}
	var srv struct {
		Server struct {
			UUID           string `json:"uuid"`
			StorageDevices struct {
				StorageDevice []struct {
					Storage string `json:"storage"`
				} `json:"storage_device"`
			} `json:"storage_devices"`
		} `json:"server"`
	}
	server := func(body []byte) (uuid string, disks []string) {
		srv.Server.UUID, srv.Server.StorageDevices.StorageDevice = "", nil
		_ = json.Unmarshal(body, &srv)
		for _, d := range srv.Server.StorageDevices.StorageDevice {
			disks = append(disks, d.Storage)
		}
		return srv.Server.UUID, disks
	}
	recordedUUIDOf := func(name string) string { u, _ := server(recs[name].Answer); return u }
	sendRecorded := func(name string) Answer {
		rec := recs[name]
		// A hand-written request names "{uuid}": the server its answer shows.
		return send(rec.Method, strings.Replace(rec.Path, "{uuid}", recordedUUIDOf(name), 1), rec.RawQuery, rec.Body)
	}
	create := func(recorded string, body []byte, err error) Answer {
		if err != nil && failed == nil {
			failed = err
		}
		a := send(http.MethodPost, "/1.3/server", "", body)
		if failed == nil && a.Status != http.StatusAccepted {
			failed = fmt.Errorf("create: %d %s", a.Status, a.Body)
		}
		ids[recorded], _ = server(a.Body)
		return a
	}

	out := map[string]Answer{}
	for _, name := range []string{"server.create.202.json", "server.create-2025.202.json"} {
		out[name] = create(recordedUUIDOf(name), recs[name].Body, nil)
	}
	createBody := recs["server.create.202.json"].Body
	labelled := func(testName string) ([]byte, error) { return WithSDKTestLabels(createBody, testName) }
	b, err := labelled("TestCreateStartStopServer")
	create(recordedUUIDOf("server.get-stopped.200.json"), b, err)
	b, err = labelled("TestCreateModifyDeleteServer")
	create(recordedUUIDOf("server.modify.202.json"), b, err)
	for i := range 2 {
		b, err = labelled("getserverswithfilters")
		create(fmt.Sprintf("listed-%d", i), b, err)
	}
	create(recordedUUIDOf("handwritten.server-details-gpu.json"), gpuCreate, nil)
	advance(11 * time.Second) // every server started

	for _, name := range []string{"server.get.200.json", "server.modify.202.json", "server.list-label-filter.200.json",
		"handwritten.server-details-gpu.json", "server.stop.200.json", "server.stop-2025.200.json"} {
		out[name] = sendRecorded(name)
	}
	// The start/stop recording's server is stopped as recorded before it is read and started.
	if a := send(http.MethodPost, recs["server.get-stopped.200.json"].Path+"/stop", "", recs["server.stop.200.json"].Body); failed == nil && a.Status != http.StatusOK {
		failed = fmt.Errorf("stop: %d %s", a.Status, a.Body)
	}
	advance(6 * time.Second) // stopped
	for _, name := range []string{"server.get-stopped.200.json", "server.get-stopped-2025.200.json", "server.start.200.json",
		"server.delete-with-storages.204.json"} {
		out[name] = sendRecorded(name)
	}
	// The disk of the stopped 2025 server becomes a template, which is read once it is ready.
	_, disks := server(send(http.MethodGet, recs["server.get-stopped-2025.200.json"].Path, "", nil).Body)
	if len(disks) == 0 && failed == nil {
		failed = errors.New("the stopped 2025 server has no disk")
	}
	if failed != nil {
		return nil, failed
	}
	ids[PathUUID(recs["storage.templatize.201.json"].Path)] = disks[0]
	b, err = labelled("TestCreateDeleteServerAndStorage")
	create("cloning", b, err) // as recorded: one disk still cloning
	advance(5 * time.Second)
	out["storage.private-list.200.json"] = sendRecorded("storage.private-list.200.json")
	a := sendRecorded("storage.templatize.201.json")
	out["storage.templatize.201.json"] = a
	var tmpl struct {
		Storage struct {
			UUID string `json:"uuid"`
		} `json:"storage"`
	}
	_ = json.Unmarshal(a.Body, &tmpl)
	ids[PathUUID(recs["storage.template-get.200.json"].Path)] = tmpl.Storage.UUID
	advance(20 * time.Second)

	for name, rec := range recs {
		if _, done := out[name]; !done && strings.HasPrefix(rec.Path, "/") { // not "* (any endpoint)"
			out[name] = sendRecorded(name)
		}
	}
	return out, failed
}

// Package emulator_test holds the one test that compares every emulator with the clouds' recorded
// answers.
package emulator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"encoding/base64"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient/jsonshape"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	emuprime "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	emuupcloud "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	emuverda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// knownFile lists the known differences between the emulators' answers and the recordings, one a
// line: "<cloud>/<recording> | <difference> | <why>". Lines starting with # are comments.
const knownFile = "testdata/fidelity-known.txt"

// The recordings, as the backends' tests keep them (copied from real traffic or the vendors' fixtures,
// each with its provenance in its "source"). Mithril and Lambda have none.
var recordingDirs = map[string]string{
	"upcloud":        "../backends/upcloud/testdata/recorded",
	"verda":          "../backends/verda/testdata",
	"primeintellect": "../backends/primeintellect/testdata",
}

// mapPaths are the objects whose keys are data (a GPU type, a GPU count, a zone, a region): their
// values are compared whatever their keys.
var mapPaths = map[string][]string{
	"primeintellect/capture.availability-legacy.200.json":      {""},
	"primeintellect/capture.availability-gpu-summary.200.json": {"", "{}", "{}{}"},
	"upcloud/handwritten.device-availability.json":             {"", "{}.gpu_plans"},
}

// learnWith adds, to a recording trimmed by its authors, the recorded values of the same objects from
// another recording of the same API: /availability/gpus keeps 8 runpod secure-cloud items, and the
// legacy /availability capture the same items of 8 providers (null dataCenter and country, community
// prices, fixed disks).
var learnWith = map[string]func(t *testing.T, recs map[string]backendtest.Recorded) any{
	"primeintellect/capture.availability-gpus.200.json": func(t *testing.T, recs map[string]backendtest.Recorded) any {
		return emuprime.LegacyAvailabilityItems(backendtest.Must(jsonshape.Decode(recs["capture.availability-legacy.200.json"].Response.Body))(t))
	},
}

// answer is an emulator's answer to one recorded request.
type answer struct {
	status int
	body   []byte
}

// TestEmulatorsAnswerLikeRecordings sends every recorded request (upcloud, verda, primeintellect) to
// that cloud's emulator and compares the answer with the recorded one: the same status, and for JSON
// the same shape (jsonshape.Compare: keys the recording has, JSON types and nulls, recursively); a
// recorded empty or plain-text body must be answered the same way. Every difference must be listed,
// with why, in testdata/fidelity-known.txt, and every listed one must still occur: a new difference,
// or one fixed without updating the list, fails. Keys only the emulator sends are left to the
// backends' own recorded tests, which allow only what the reference documents.
func TestEmulatorsAnswerLikeRecordings(t *testing.T) {
	known := readKnown(t)
	var got []string
	for _, cloud := range []string{"primeintellect", "upcloud", "verda"} {
		recs := loadDir(t, recordingDirs[cloud])
		var answers map[string]answer
		switch cloud {
		case "upcloud":
			answers = upcloudAnswers(t, recs)
		case "verda":
			answers = verdaAnswers(t, recs)
		case "primeintellect":
			answers = primeAnswers(t, recs)
		}
		names := make([]string, 0, len(recs))
		for n := range recs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			key := cloud + "/" + name
			a, ok := answers[name]
			if !ok {
				got = append(got, key+" | not sent")
				continue
			}
			var also []any
			if f := learnWith[key]; f != nil {
				also = append(also, f(t, recs))
			}
			for _, d := range differences(t, key, recs[name], a, also...) {
				got = append(got, key+" | "+d)
			}
		}
	}
	seen := map[string]bool{}
	for _, d := range got {
		seen[d] = true
		if _, ok := known[d]; !ok {
			t.Errorf("new difference: %s", d)
		}
	}
	for d := range known {
		if !seen[d] {
			t.Errorf("listed in %s but no longer seen (remove it): %s", knownFile, d)
		}
	}
	t.Logf("%d known differences", len(got))
}

// differences compares one answer with its recording.
func differences(t *testing.T, key string, rec backendtest.Recorded, a answer, also ...any) []string {
	t.Helper()
	var out []string
	if a.status != rec.Response.Status {
		out = append(out, fmt.Sprintf("status %d, recorded %d", a.status, rec.Response.Status))
	}
	body := bytes.TrimSpace(rec.Response.Body)
	var text struct {
		Text *string `json:"_non_json_text"`
	}
	switch {
	case len(body) == 0 || string(body) == "null":
		if len(bytes.TrimSpace(a.body)) != 0 {
			out = append(out, "a body, recorded none")
		}
	case json.Unmarshal(body, &text) == nil && text.Text != nil:
		if _, err := jsonshape.Decode(a.body); err == nil || len(bytes.TrimSpace(a.body)) == 0 {
			out = append(out, "not plain text, recorded plain text")
		}
	default:
		recorded, err := jsonshape.Decode(body)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		v, err := jsonshape.Decode(a.body)
		if err != nil {
			return append(out, "not JSON, recorded JSON")
		}
		out = append(out, jsonshape.Compare(jsonshape.Learn(append([]any{recorded}, also...)...), jsonshape.Learn(v), mapPaths[key]...)...)
	}
	return out
}

// readKnown reads the known differences: difference -> why.
func readKnown(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(knownFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // read only
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndex(line, " | ")
		if i < 0 || strings.Count(line, " | ") < 2 || strings.TrimSpace(line[i+3:]) == "" {
			t.Fatalf("%s:%d: want \"<cloud>/<recording> | <difference> | <why>\", got %q", knownFile, n, line)
		}
		out[line[:i]] = line[i+3:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loadDir reads every recording of a directory.
func loadDir(t *testing.T, dir string) map[string]backendtest.Recorded {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings in %s: %v", dir, err)
	}
	out := map[string]backendtest.Recorded{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r backendtest.Recorded
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.Request.Method == "" {
			continue // not an exchange (a README, say)
		}
		out[filepath.Base(f)] = r
	}
	return out
}

// send makes one request and returns the answer; auth is the credentials' header, as name, value.
func send(t *testing.T, method, url string, body []byte, auth []string) answer {
	t.Helper()
	var payload any // no body for a recorded request without one
	if b := bytes.TrimSpace(body); len(b) > 0 && string(b) != "null" {
		payload = body
	}
	a := emutest.Fetch(t, url, method, "", payload, append([]string{"Accept", "application/json"}, auth...)...)
	return answer{status: a.Status, body: a.Raw}
}

func urlOf(root string, rec backendtest.Recorded) string {
	u := root + rec.Request.Path
	if q := rec.Query(); len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// primeAnswers: Prime's recordings are all reads of availability.
func primeAnswers(t *testing.T, recs map[string]backendtest.Recorded) map[string]answer {
	srv := httptest.NewServer(emuprime.New(emuprime.Options{}))
	t.Cleanup(srv.Close)
	out := map[string]answer{}
	for name, rec := range recs {
		out[name] = send(t, rec.Request.Method, urlOf(srv.URL, rec), rec.Request.Body, bearer(emuprime.DefaultAPIKey))
	}
	return out
}

// verdaAnswers: requests that name things the emulator does not have are sent with its own (its
// credentials, an instance it runs, an instance type and location it sells).
func verdaAnswers(t *testing.T, recs map[string]backendtest.Recorded) map[string]answer {
	clock := backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	srv := httptest.NewServer(emuverda.New(emuverda.Options{Options: simulation.Options{Now: clock.Now, BootDuration: time.Minute}}))
	t.Cleanup(srv.Close)
	creds := emutest.JSON(t, map[string]string{"grant_type": "client_credentials", "client_id": emuverda.DefaultClientID, "client_secret": emuverda.DefaultClientSecret})
	tok := send(t, http.MethodPost, srv.URL+emuverda.BasePath+"/oauth2/token", creds, nil)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(tok.body, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	create := func(typ, loc string) []byte {
		return emutest.JSON(t, map[string]any{"instance_type": typ, "image": "ubuntu-24.04-cuda-12.8-open-docker", "hostname": "verda-vm-fidelity",
			"description": "verda-vm-fidelity", "location_code": loc})
	}
	created := send(t, http.MethodPost, srv.URL+emuverda.BasePath+"/instances", create("1H100.80S.30V", "FIN-01"), bearer(tr.AccessToken))
	id := strings.TrimSpace(string(created.body))
	if created.status >= 300 || id == "" {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	out := map[string]answer{}
	do := func(name string) {
		rec := recs[name]
		body, auth := []byte(rec.Request.Body), bearer(tr.AccessToken)
		ok := rec.Response.Status < 300 // a recorded error is sent as recorded
		switch {
		case strings.HasSuffix(rec.Request.Path, "/oauth2/token"):
			body, auth = creds, nil
		case ok && rec.Request.Method == http.MethodPost && strings.HasSuffix(rec.Request.Path, "/instances"):
			body = create("1L40S.20V", "FIN-02")
		case ok && rec.Request.Method == http.MethodPut && strings.HasSuffix(rec.Request.Path, "/instances"):
			var req map[string]any
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			req["id"] = []string{id}
			body = emutest.JSON(t, req)
		}
		out[name] = send(t, rec.Request.Method, urlOf(srv.URL, rec), body, auth)
	}
	// In the recorded order: create, then (every instance running: ip and os_volume_id set, as in the
	// recorded list) the reads, then the delete.
	const createRec, deleteRec = "handwritten.instances.create.json", "handwritten.instances.action-delete.202.json"
	do(createRec)
	clock.Advance(2 * time.Minute)
	var names []string
	for name := range recs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name != createRec && name != deleteRec {
			do(name)
		}
	}
	do(deleteRec)
	return out
}

// upcloudAnswers replays UpCloud's recordings with emuupcloud.Replay.
func upcloudAnswers(t *testing.T, recs map[string]backendtest.Recorded) map[string]answer {
	const user, pass = "hydra-sub", "s3cret-Pass!"
	clock := backendtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	srv := httptest.NewServer(emuupcloud.New(emuupcloud.Options{Username: user, Password: pass,
		Options: simulation.Options{Now: clock.Now, BootDuration: 10 * time.Second}, StopDuration: 5 * time.Second}))
	t.Cleanup(srv.Close)
	auth := []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
	gpu := map[string]any{"server": map[string]any{"zone": "fi-hel2", "title": "server1", "hostname": "server1", "plan": "GPU-16xCPU-192GB-2xL40S",
		"metadata": "yes", "password_delivery": "none", "login_user": map[string]any{"username": "root",
			"ssh_keys": map[string]any{"ssh_key": []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHydraTestKey hydra@test"}}},
		"storage_devices": map[string]any{"storage_device": []any{map[string]any{"action": "clone", "storage": emuupcloud.GPUTemplateUUID,
			"title": "server1-disk", "size": 50, "tier": "maxiops"}}}}}
	toReplay := map[string]emuupcloud.Recording{}
	for name, r := range recs {
		toReplay[name] = emuupcloud.Recording{Method: r.Request.Method, Path: r.Request.Path, RawQuery: r.Query().Encode(), Body: r.Request.Body, Answer: r.Response.Body}
	}
	replayed, err := emuupcloud.Replay(toReplay, emutest.JSON(t, gpu), srv.URL,
		func(method, url string, body []byte) (emuupcloud.Answer, error) {
			a := send(t, method, url, body, auth)
			return emuupcloud.Answer{Status: a.status, Body: a.body}, nil
		}, clock.Advance)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]answer{}
	for name, a := range replayed {
		out[name] = answer{status: a.Status, body: a.Body}
	}
	return out
}

package verda

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient/jsonshape"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit/emutest"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
)

// recorded is one file of testdata/ (copied from reference/recorded/verda).
type recorded = backendtest.Recorded

// loadRecorded reads testdata/<name>.
func loadRecorded(t *testing.T, name string) recorded { return backendtest.LoadRecorded(t, name) }

// replay serves one recorded response the way the API sent it: JSON as JSON, "_non_json_text" as
// plain text, null as an empty body. Token requests get the recorded token answer.
func replay(t *testing.T, rec recorded) *httptest.Server {
	t.Helper()
	tok := loadRecorded(t, "handwritten.oauth2-token.json")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/oauth2/token") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(tok.Response.Body) // the client's read fails the test if this does
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer REDACTED" {
			t.Errorf("%s %s: Authorization %q, want the recorded token", r.Method, r.URL.Path, got)
		}
		body := rec.Response.Body
		var text struct {
			Text *string `json:"_non_json_text"`
		}
		switch {
		case string(body) == "null" || len(body) == 0:
			w.WriteHeader(rec.Response.Status)
		case json.Unmarshal(body, &text) == nil && text.Text != nil:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(rec.Response.Status)
			_, _ = w.Write([]byte(*text.Text))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Response.Status)
			_, _ = w.Write(body)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

func replayClient(t *testing.T, hs *httptest.Server) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{
		BaseURL:      hs.URL + "/v1",
		ClientID:     "id",
		ClientSecret: "secret",
		Tuning:       restclient.Tuning{RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond, RetryMax: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRecordedResponsesParse replays every recorded Verda response through the client over HTTP.
func TestRecordedResponsesParse(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		file  string
		check func(t *testing.T, c *Client)
	}{
		{"edited-capture.instance-types.json", func(t *testing.T, c *Client) {
			types := backendtest.Must(c.InstanceTypes(ctx, "usd"))(t)
			if len(types) != 4 {
				t.Fatalf("got %d types", len(types))
			}
			h := types[0]
			if h.InstanceType != "1H100.80S.30V" || h.PricePerHour != 3.95 || h.SpotPrice != 1.70 || h.GPU.NumberOfGPUs != 1 || h.Currency != "usd" {
				t.Errorf("H100 parsed as %+v", h)
			}
			if types[1].P2P == nil || *types[1].P2P != "50GB/s" || types[0].P2P != nil {
				t.Errorf("p2p null/string not kept")
			}
			if cpu := types[2]; cpu.GPU.NumberOfGPUs != 0 || cpu.GPU.Description != "" || cpu.DisplayName == nil {
				t.Errorf("CPU node parsed as %+v", cpu)
			}
			if types[3].Storage.SizeInGigabytes != 225 || types[0].Storage.Description != "dynamic" {
				t.Errorf("storage parsed wrong")
			}
		}},
		{"handwritten.instance-types.eur.json", func(t *testing.T, c *Client) {
			types := backendtest.Must(c.InstanceTypes(ctx, "eur"))(t)
			if len(types) != 1 || types[0].Currency != "eur" || types[0].PricePerHour != 5 || types[0].ServerlessSpotPrice != 0.75 {
				t.Errorf("got %+v", types)
			}
		}},
		{"edited-capture.instance-availability-spot.json", func(t *testing.T, c *Client) {
			av := backendtest.Must(c.Availability(ctx, true, ""))(t)
			if len(av) != 2 || av[0].LocationCode != "FIN-01" || av[0].Availabilities[0] != "1A100.22V" {
				t.Errorf("got %+v", av)
			}
		}},
		{"edited-capture.locations.json", func(t *testing.T, c *Client) {
			locs := backendtest.Must(c.Locations(ctx))(t)
			if len(locs) != 3 || locs[2] != (Location{Code: "ICE-01", Name: "Iceland 1", CountryCode: "IS"}) {
				t.Errorf("got %+v", locs)
			}
		}},
		{"handwritten.instance-availability.one-type.json", func(t *testing.T, c *Client) {
			ok, err := c.InstanceTypeAvailable(ctx, "1V100.6V", false, "")
			if err != nil || !ok {
				t.Errorf("got %v, %v", ok, err)
			}
		}},
		{"handwritten.images.json", func(t *testing.T, c *Client) {
			imgs := backendtest.Must(c.Images(ctx, ""))(t)
			if len(imgs) != 1 || imgs[0].ImageType != "ubuntu-20.04-cuda-11.0" || len(imgs[0].Details) != 2 {
				t.Errorf("got %+v", imgs)
			}
		}},
		{"handwritten.instances.list.json", func(t *testing.T, c *Client) {
			list := backendtest.Must(c.Instances(ctx, ""))(t)
			if len(list) != 1 {
				t.Fatalf("got %d", len(list))
			}
			in := list[0]
			if in.IP == nil || *in.IP != "1.2.3.4" || in.PricePerHour != 0.6 || !in.IsSpot || in.Location != "FIN-01" ||
				in.OSVolumeID == nil || len(in.SSHKeyIDs) != 1 {
				t.Errorf("got %+v", in)
			}
		}},
		{"handwritten.instances.create.json", func(t *testing.T, c *Client) {
			id, err := c.CreateInstance(ctx, CreateInstanceRequest{InstanceType: "1V100.6V", Image: "x", Hostname: "h", Description: "d", LocationCode: "FIN-01"})
			if err != nil || id != "deadc0de-a5d2-4972-ae4e-d429115d055b" {
				t.Errorf("got %q, %v", id, err)
			}
		}},
		{"handwritten.instances.action-delete.202.json", func(t *testing.T, c *Client) {
			res, err := c.InstanceAction(ctx, InstanceActionRequest{ID: []string{"deadc0de-a5d2-4972-ae4e-d429115d055b"}, Action: "delete"})
			if err != nil || res != nil {
				t.Errorf("got %v, %v", res, err)
			}
		}},
		{"handwritten.error.invalid-request.400.json", func(t *testing.T, c *Client) {
			_, err := c.CreateInstance(ctx, CreateInstanceRequest{})
			wantKind(t, err, cloudprovider.ErrInvalid)
			if !strings.Contains(err.Error(), "Your existence is invalid") || !strings.Contains(err.Error(), "invalid_request") {
				t.Errorf("message lost: %v", err)
			}
		}},
		{"reconstructed.error.sshkey-invalid-id.400.json", func(t *testing.T, c *Client) {
			_, err := c.SSHKey(ctx, "77fe26ba-e58d-4420-aab2-75e967b181b01")
			backendtest.WantError(t, err, cloudprovider.ErrInvalid, "Invalid ssh-key ID")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			rec := loadRecorded(t, tc.file)
			tc.check(t, replayClient(t, replay(t, rec)))
		})
	}
	// The token file itself is covered by every case above (the replay answers with it); check its keys.
	var tr TokenResponse
	if err := json.Unmarshal(loadRecorded(t, "handwritten.oauth2-token.json").Response.Body, &tr); err != nil ||
		tr.ExpiresIn != 3600 || tr.TokenType != "Bearer" || tr.RefreshToken == "" {
		t.Errorf("token fixture parsed as %+v, %v", tr, err)
	}
}

func TestFlexFloatAndPlainID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{{`"3.95"`, 3.95, false}, {`0.6`, 0.6, false}, {`null`, 0, false}, {`""`, 0, false}, {`"2.780"`, 2.78, false}, {`"abc"`, 0, true}} {
		var f FlexFloat
		err := json.Unmarshal([]byte(tc.in), &f)
		if (err != nil) != tc.err || float64(f) != tc.want {
			t.Errorf("%s: got %v, %v", tc.in, f, err)
		}
	}
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"deadc0de-a5d2-4972-ae4e-d429115d055b\n", "deadc0de-a5d2-4972-ae4e-d429115d055b", false},
		{`"abc-1"`, "abc-1", false},
		{`{"id":"abc-2"}`, "abc-2", false},
		{"", "", true},
		{"<html>oops</html>", "", true},
	} {
		got, err := parsePlainID([]byte(tc.in))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%q: got %q, %v", tc.in, got, err)
		}
	}
}

// TestEmulatorAnswersRecordedRequests sends every recorded request to the emulator and holds its answer
// to the recording: the same status, and for JSON bodies the same shape (keys and JSON types,
// recursively: prices as strings, nulls where Verda sends null, ...; jsonshape). Recordings of one
// endpoint are learnt together. Keys no recording shows are allowed only where the reference documents
// them (reference/provider-apis.md, section 1). A recorded request whose body or ids name things the
// emulator does not have is sent with the emulator's own (credentials, an instance id).
func TestEmulatorAnswersRecordedRequests(t *testing.T) {
	ctx := context.Background()
	f := startEmulator(t, emu.Options{})
	root := strings.TrimSuffix(f.url, emu.BasePath)
	c := f.client(t)
	id, err := c.CreateInstance(ctx, createReq("1H100.80S.30V", "FIN-01"))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime) // running: ip and os_volume_id set, as in the recorded list
	tok := emulatorToken(t, root)

	instanceTypes := []string{"edited-capture.instance-types.json", "handwritten.instance-types.eur.json"}
	tests := []struct {
		file string
		// learn names the recordings of the same endpoint (default: file alone).
		learn []string
		// body replaces the recorded request body (nil: sent as recorded).
		body func(recorded []byte) []byte
		// allowed are the documented keys beyond the recordings (jsonshape.Schema.Check).
		allowed []string
	}{
		{file: "edited-capture.instance-types.json", learn: instanceTypes,
			allowed: []string{"[].dynamic_price", "[].max_dynamic_price"}}, // reference 1.3
		{file: "handwritten.instance-types.eur.json", learn: instanceTypes,
			allowed: []string{"[].dynamic_price", "[].max_dynamic_price"}},
		{file: "edited-capture.instance-availability-spot.json"},
		{file: "edited-capture.locations.json"},
		{file: "handwritten.instance-availability.one-type.json"},
		{file: "handwritten.images.json", allowed: []string{"[].is_default", "[].is_cluster", "[].category"}}, // reference 1.2
		{file: "handwritten.instances.list.json", allowed: []string{ // reference 1.5
			"[].os_name", "[].contract", "[].pricing", "[].startup_script_id", "[].volume_ids", "[].jupyter_token", "[].tags"}},
		{file: "handwritten.instances.create.json", body: func([]byte) []byte {
			return emutest.JSON(t, createReq("1L40S.20V", "FIN-02"))
		}},
		{file: "handwritten.instances.action-delete.202.json", body: func(recorded []byte) []byte {
			var req map[string]any
			if err := json.Unmarshal(recorded, &req); err != nil {
				t.Fatal(err)
			}
			req["id"] = []string{id}
			return emutest.JSON(t, req)
		}},
		{file: "handwritten.error.invalid-request.400.json"},
		{file: "handwritten.oauth2-token.json", body: func([]byte) []byte {
			return emutest.JSON(t, map[string]string{"grant_type": "client_credentials", "client_id": emu.DefaultClientID, "client_secret": emu.DefaultClientSecret})
		}},
		{file: "reconstructed.error.sshkey-invalid-id.400.json"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			rec := loadRecorded(t, tc.file)
			body := []byte(rec.Request.Body)
			if string(body) == "null" {
				body = nil
			}
			if tc.body != nil {
				body = tc.body(body)
			}
			status, got := send(t, rec.Request.Method, root+rec.Request.Path, tok, body)
			if status != rec.Response.Status {
				t.Fatalf("%s %s: HTTP %d (%s), recorded %d", rec.Request.Method, rec.Request.Path, status, got, rec.Response.Status)
			}
			var text struct {
				Text *string `json:"_non_json_text"`
			}
			switch {
			case string(rec.Response.Body) == "null":
				if len(bytes.TrimSpace(got)) != 0 {
					t.Fatalf("answered %s, recorded no body", got)
				}
			case json.Unmarshal(rec.Response.Body, &text) == nil && text.Text != nil:
				if _, err := jsonshape.Decode(got); err == nil || len(bytes.TrimSpace(got)) == 0 {
					t.Fatalf("answered %q, recorded plain text like %q", got, *text.Text)
				}
			default:
				learn := tc.learn
				if learn == nil {
					learn = []string{tc.file}
				}
				var recorded []any
				for _, name := range learn {
					v, err := jsonshape.Decode(loadRecorded(t, name).Response.Body)
					if err != nil {
						t.Fatal(err)
					}
					recorded = append(recorded, v)
				}
				v, err := jsonshape.Decode(got)
				if err != nil {
					t.Fatalf("answered %q: %v", got, err)
				}
				for _, d := range jsonshape.Learn(recorded...).Check(v, tc.allowed...) {
					t.Error(d)
				}
				if m, ok := v.(map[string]any); ok && rec.Response.Status >= 400 {
					var want APIError
					_ = json.Unmarshal(rec.Response.Body, &want)
					if m["code"] != want.Code {
						t.Errorf("error code %v, recorded %q", m["code"], want.Code)
					}
				}
			}
		})
	}
}

// emulatorToken gets an access token from the emulator at root.
func emulatorToken(t *testing.T, root string) string {
	t.Helper()
	status, body := send(t, http.MethodPost, root+emu.BasePath+"/oauth2/token", "",
		emutest.JSON(t, map[string]string{"grant_type": "client_credentials", "client_id": emu.DefaultClientID, "client_secret": emu.DefaultClientSecret}))
	var tr TokenResponse
	if err := json.Unmarshal(body, &tr); status != http.StatusOK || err != nil || tr.AccessToken == "" {
		t.Fatalf("token: HTTP %d %s", status, body)
	}
	return tr.AccessToken
}

// send sends one request with a bearer token (when tok is not "") and a JSON body (when body is not
// nil) and returns the answer's status and body.
func send(t *testing.T, method, url, tok string, body []byte) (int, []byte) {
	t.Helper()
	var header []string
	if tok != "" {
		header = []string{"Authorization", "Bearer " + tok}
	}
	var b any
	if body != nil {
		b = body
	}
	a := emutest.Fetch(t, url, method, "", b, header...)
	return a.Status, a.Raw
}

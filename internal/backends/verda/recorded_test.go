package verda

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
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
			w.Write(tok.Response.Body)
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
			w.Write([]byte(*text.Text))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Response.Status)
			w.Write(body)
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
			types, err := c.InstanceTypes(ctx, "usd")
			if err != nil {
				t.Fatal(err)
			}
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
			types, err := c.InstanceTypes(ctx, "eur")
			if err != nil {
				t.Fatal(err)
			}
			if len(types) != 1 || types[0].Currency != "eur" || types[0].PricePerHour != 5 || types[0].ServerlessSpotPrice != 0.75 {
				t.Errorf("got %+v", types)
			}
		}},
		{"edited-capture.instance-availability-spot.json", func(t *testing.T, c *Client) {
			av, err := c.Availability(ctx, true, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(av) != 2 || av[0].LocationCode != "FIN-01" || av[0].Availabilities[0] != "1A100.22V" {
				t.Errorf("got %+v", av)
			}
		}},
		{"edited-capture.locations.json", func(t *testing.T, c *Client) {
			locs, err := c.Locations(ctx)
			if err != nil {
				t.Fatal(err)
			}
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
			imgs, err := c.Images(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) != 1 || imgs[0].ImageType != "ubuntu-20.04-cuda-11.0" || len(imgs[0].Details) != 2 {
				t.Errorf("got %+v", imgs)
			}
		}},
		{"handwritten.instances.list.json", func(t *testing.T, c *Client) {
			list, err := c.Instances(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
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
			wantKind(t, err, controlplane.ErrInvalid)
			if !strings.Contains(err.Error(), "Your existence is invalid") || !strings.Contains(err.Error(), "invalid_request") {
				t.Errorf("message lost: %v", err)
			}
		}},
		{"reconstructed.error.sshkey-invalid-id.400.json", func(t *testing.T, c *Client) {
			_, err := c.SSHKey(ctx, "77fe26ba-e58d-4420-aab2-75e967b181b01")
			backendtest.WantError(t, err, controlplane.ErrInvalid, "Invalid ssh-key ID")
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

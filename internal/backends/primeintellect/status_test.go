package primeintellect

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestStringListForms(t *testing.T) {
	tests := []struct {
		in   string
		want StringList
	}{
		{`null`, nil},
		{`""`, nil},
		{`[null]`, nil},
		{`[]`, nil},
		{`"root@1.2.3.4 -p 22"`, StringList{"root@1.2.3.4 -p 22"}},
		{`["root@1.2.3.4 -p 22"]`, StringList{"root@1.2.3.4 -p 22"}},
		{`[null, "root@5.6.7.8 -p 2222"]`, StringList{"root@5.6.7.8 -p 2222"}},
		{`["a", "b"]`, StringList{"a", "b"}},
	}
	for _, tt := range tests {
		var got struct {
			S StringList `json:"s"`
		}
		if err := json.Unmarshal([]byte(`{"s":`+tt.in+`}`), &got); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if !reflect.DeepEqual(got.S, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.in, got.S, tt.want)
		}
	}
}

func TestNumberForms(t *testing.T) {
	tests := []struct {
		in   string
		want Number
	}{
		{`null`, Number{}},
		{`""`, Number{}},
		{`1.6567999999999998`, Number{V: 1.6567999999999998, Set: true}},
		{`"2.5"`, Number{V: 2.5, Set: true}},
		{`9.7e-05`, Number{V: 9.7e-05, Set: true}},
	}
	for _, tt := range tests {
		var n Number
		if err := json.Unmarshal([]byte(tt.in), &n); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if n != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.in, n, tt.want)
		}
	}
	var n Number
	if err := json.Unmarshal([]byte(`"abc"`), &n); err == nil {
		t.Error("a non-numeric string must not decode")
	}
}

func TestParseSSH(t *testing.T) {
	tests := []struct {
		in   StringList
		want *cloudprovider.SSHEndpoint
	}{
		{nil, nil},
		{StringList{""}, nil},
		{StringList{"null"}, nil},
		{StringList{"root@1.2.3.4 -p 22"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 22, User: "root"}},
		{StringList{"ubuntu@10.0.0.5 -p 40022"}, &cloudprovider.SSHEndpoint{Host: "10.0.0.5", Port: 40022, User: "ubuntu"}},
		{StringList{"ssh root@host.example -p 2200"}, &cloudprovider.SSHEndpoint{Host: "host.example", Port: 2200, User: "root"}},
		{StringList{"-p 2201 root@1.2.3.4"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 2201, User: "root"}},
		{StringList{"root@1.2.3.4:2202"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 2202, User: "root"}},
		{StringList{"1.2.3.4"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 22, User: "root"}},
		{StringList{"root@1.2.3.4 -p22"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 22, User: "root"}},
		{StringList{"ssh -i key.pem root@1.2.3.4 -p 23"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 23, User: "root"}},
		{StringList{"root@2001:db8::1 -p 22"}, &cloudprovider.SSHEndpoint{Host: "2001:db8::1", Port: 22, User: "root"}},
		{StringList{"root@1.2.3.4 -p notaport"}, &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 22, User: "root"}},
	}
	for _, tt := range tests {
		got := parseSSH(tt.in)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestMapStatus(t *testing.T) {
	ssh := &cloudprovider.SSHEndpoint{Host: "1.2.3.4", Port: 22, User: "root"}
	done := Number{V: 100, Set: true}
	half := Number{V: 50, Set: true}
	tests := []struct {
		status, install, failure string
		progress                 Number
		ssh                      *cloudprovider.SSHEndpoint
		want                     cloudprovider.Status
		wantMsg                  bool
	}{
		{"PROVISIONING", "PENDING", "", Number{}, nil, cloudprovider.StatusPending, false},
		{"PENDING", "", "", Number{}, nil, cloudprovider.StatusPending, false},
		{"ACTIVE", "ACTIVE", "", half, ssh, cloudprovider.StatusPending, false},
		{"ACTIVE", "FINISHED", "", done, nil, cloudprovider.StatusPending, false},
		{"ACTIVE", "FINISHED", "", done, ssh, cloudprovider.StatusRunning, false},
		{"ACTIVE", "ACTIVE", "", done, ssh, cloudprovider.StatusRunning, false},
		{"ACTIVE", "", "", Number{}, ssh, cloudprovider.StatusRunning, false},
		{"active", "finished", "", Number{}, ssh, cloudprovider.StatusRunning, false},
		{"ACTIVE", "ERROR", "disk full", half, ssh, cloudprovider.StatusError, true},
		{"ERROR", "", "", Number{}, nil, cloudprovider.StatusError, true},
		{"STOPPED", "FINISHED", "", done, nil, cloudprovider.StatusError, true},
		{"DELETING", "FINISHED", "", done, nil, cloudprovider.StatusPending, false},
		{"TERMINATED", "TERMINATED", "", done, nil, cloudprovider.StatusTerminated, false},
		{"UNKNOWN", "", "", Number{}, nil, cloudprovider.StatusPending, false},
		{"SOMETHING_NEW", "", "", Number{}, nil, cloudprovider.StatusPending, false},
	}
	for _, tt := range tests {
		got, msg := mapStatus(tt.status, tt.install, tt.failure, tt.progress, tt.ssh)
		if got != tt.want || (msg != "") != tt.wantMsg {
			t.Errorf("%s/%s ssh=%v: got %s %q, want %s (message %v)", tt.status, tt.install, tt.ssh != nil, got, msg, tt.want, tt.wantMsg)
		}
	}
}

// TestErrorClassification: the body decides the kind where it says (a list of validation errors, a
// code, Prime's wording), the HTTP status where it does not; the message keeps what the body says.
func TestErrorClassification(t *testing.T) {
	// detail is FastAPI's {"detail": msg}, the answer Prime gives most (msg is plain text).
	detail := func(status int, msg string, kind cloudprovider.ErrorKind, text string) backendtest.Answer {
		return backendtest.Answer{Status: status, Body: `{"detail":"` + msg + `"}`, Kind: kind, Text: text}
	}
	backendtest.WantClassified(t, CloudName, "creating pod", "/api/v1/pods/", classify, []backendtest.Answer{
		detail(401, "Invalid or expired API key", cloudprovider.ErrAuth, "Invalid or expired API key"),
		detail(403, "Missing permission: instances write", cloudprovider.ErrAuth, "Missing permission"),
		detail(402, "Insufficient balance", cloudprovider.ErrQuota, "Insufficient balance"),
		detail(404, "Pod not found", cloudprovider.ErrNotFound, "Pod not found"),
		detail(400, "No capacity available for the requested GPU configuration", cloudprovider.ErrCapacity, "No capacity"),
		detail(400, "Cloud ID 'x' is no longer available for provider runpod", cloudprovider.ErrCapacity, "no longer available"),
		detail(400, "Current price 1.8 exceeds max price 1.5", cloudprovider.ErrCapacity, "exceeds max price"),
		detail(400, "Missing field: max_price not specified", cloudprovider.ErrInvalid, "max_price not specified"),
		detail(400, "Team spending limit exceeded", cloudprovider.ErrQuota, "spending limit"),
		detail(500, "Internal Server Error", cloudprovider.ErrOther, "Internal Server Error"),
		detail(503, "Not enough resources to fulfil the request", cloudprovider.ErrCapacity, "Not enough resources"),
		// An outage is no capacity, and a rate limit is no quota.
		detail(503, "Service Unavailable", cloudprovider.ErrOther, "Service Unavailable"),
		detail(429, "Rate limit exceeded. Please try again later.", cloudprovider.ErrOther, "Rate limit"),
		// The wording decides over the status.
		detail(404, "Pod is not available", cloudprovider.ErrNotFound, "not available"),
		detail(403, "Insufficient balance", cloudprovider.ErrQuota, "Insufficient balance"),
		// What the emulator answers.
		detail(400, "Requested configuration is not available", cloudprovider.ErrCapacity, "not available"),
		detail(402, "Insufficient balance. Please add funds to your wallet.", cloudprovider.ErrQuota, "add funds"),
		detail(404, "Not Found", cloudprovider.ErrNotFound, "Not Found"),
		detail(405, "Method Not Allowed", cloudprovider.ErrInvalid, "Method Not Allowed"),
		// Other bodies: validation lists, an error object, a code decide over the status; a page is read by its status.
		{Status: 422, Body: `{"detail":[{"loc":["body","pod","cloudId"],"msg":"Field required","type":"missing"}]}`, Kind: cloudprovider.ErrInvalid, Text: "cloudId: Field required"},
		{Status: 422, Body: `{"errors":[{"param":"gpuCount","details":"must be positive"}]}`, Kind: cloudprovider.ErrInvalid, Text: "gpuCount: must be positive"},
		{Status: 400, Body: `{"detail":[{"loc":["query","page_size"],"msg":"Input should be less than or equal to 100","type":"less_than_equal"}]}`, Kind: cloudprovider.ErrInvalid, Text: "page_size"},
		{Status: 404, Body: `{"errors":[{"param":"pod_ids","details":"required"}]}`, Kind: cloudprovider.ErrInvalid, Text: "pod_ids: required"},
		{Status: 400, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":null}}`, Kind: cloudprovider.ErrQuota, Text: "exceeded your current quota"},
		{Status: 500, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, Kind: cloudprovider.ErrAuth, Text: "Incorrect API key"},
		{Status: 400, Body: `{"code":"not_found","message":"No such pod"}`, Kind: cloudprovider.ErrNotFound, Text: "No such pod"},
		{Status: 502, Body: `<html>Bad Gateway</html>`, Kind: cloudprovider.ErrOther, Text: "Bad Gateway"},
	})
}

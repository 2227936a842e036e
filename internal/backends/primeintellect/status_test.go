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
	backendtest.WantClassified(t, CloudName, "creating pod", "/api/v1/pods/", classify, []backendtest.Answer{
		{Status: 401, Body: `{"detail":"Invalid or expired API key"}`, Kind: cloudprovider.ErrAuth, Text: "Invalid or expired API key"},
		{Status: 403, Body: `{"detail":"Missing permission: instances write"}`, Kind: cloudprovider.ErrAuth, Text: "Missing permission"},
		{Status: 402, Body: `{"detail":"Insufficient balance"}`, Kind: cloudprovider.ErrQuota, Text: "Insufficient balance"},
		{Status: 404, Body: `{"detail":"Pod not found"}`, Kind: cloudprovider.ErrNotFound, Text: "Pod not found"},
		{Status: 400, Body: `{"detail":"No capacity available for the requested GPU configuration"}`, Kind: cloudprovider.ErrCapacity, Text: "No capacity"},
		{Status: 400, Body: `{"detail":"Cloud ID 'x' is no longer available for provider runpod"}`, Kind: cloudprovider.ErrCapacity, Text: "no longer available"},
		{Status: 400, Body: `{"detail":"Current price 1.8 exceeds max price 1.5"}`, Kind: cloudprovider.ErrCapacity, Text: "exceeds max price"},
		{Status: 400, Body: `{"detail":"Missing field: max_price not specified"}`, Kind: cloudprovider.ErrInvalid, Text: "max_price not specified"},
		{Status: 422, Body: `{"detail":[{"loc":["body","pod","cloudId"],"msg":"Field required","type":"missing"}]}`, Kind: cloudprovider.ErrInvalid, Text: "cloudId: Field required"},
		{Status: 422, Body: `{"errors":[{"param":"gpuCount","details":"must be positive"}]}`, Kind: cloudprovider.ErrInvalid, Text: "gpuCount: must be positive"},
		{Status: 400, Body: `{"detail":"Team spending limit exceeded"}`, Kind: cloudprovider.ErrQuota, Text: "spending limit"},
		{Status: 500, Body: `{"detail":"Internal Server Error"}`, Kind: cloudprovider.ErrOther, Text: "Internal Server Error"},
		{Status: 502, Body: `<html>Bad Gateway</html>`, Kind: cloudprovider.ErrOther, Text: "Bad Gateway"},
		{Status: 503, Body: `{"detail":"Not enough resources to fulfil the request"}`, Kind: cloudprovider.ErrCapacity, Text: "Not enough resources"},
		// An outage is no capacity, and a rate limit is no quota.
		{Status: 503, Body: `{"detail":"Service Unavailable"}`, Kind: cloudprovider.ErrOther, Text: "Service Unavailable"},
		{Status: 429, Body: `{"detail":"Rate limit exceeded. Please try again later."}`, Kind: cloudprovider.ErrOther, Text: "Rate limit"},
		// The body decides over the status: a validation list, a code, a wording.
		{Status: 400, Body: `{"detail":[{"loc":["query","page_size"],"msg":"Input should be less than or equal to 100","type":"less_than_equal"}]}`, Kind: cloudprovider.ErrInvalid, Text: "page_size"},
		{Status: 404, Body: `{"errors":[{"param":"pod_ids","details":"required"}]}`, Kind: cloudprovider.ErrInvalid, Text: "pod_ids: required"},
		{Status: 400, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":null}}`, Kind: cloudprovider.ErrQuota, Text: "exceeded your current quota"},
		{Status: 500, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, Kind: cloudprovider.ErrAuth, Text: "Incorrect API key"},
		{Status: 400, Body: `{"code":"not_found","message":"No such pod"}`, Kind: cloudprovider.ErrNotFound, Text: "No such pod"},
		{Status: 404, Body: `{"detail":"Pod is not available"}`, Kind: cloudprovider.ErrNotFound, Text: "not available"},
		{Status: 403, Body: `{"detail":"Insufficient balance"}`, Kind: cloudprovider.ErrQuota, Text: "Insufficient balance"},
		// What the emulator answers.
		{Status: 400, Body: `{"detail":"Requested configuration is not available"}`, Kind: cloudprovider.ErrCapacity, Text: "not available"},
		{Status: 402, Body: `{"detail":"Insufficient balance. Please add funds to your wallet."}`, Kind: cloudprovider.ErrQuota, Text: "add funds"},
		{Status: 404, Body: `{"detail":"Not Found"}`, Kind: cloudprovider.ErrNotFound, Text: "Not Found"},
		{Status: 405, Body: `{"detail":"Method Not Allowed"}`, Kind: cloudprovider.ErrInvalid, Text: "Method Not Allowed"},
	})
}

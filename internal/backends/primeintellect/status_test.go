package primeintellect

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   cloudprovider.ErrorKind
		msg    string
	}{
		{401, `{"detail":"Invalid or expired API key"}`, cloudprovider.ErrAuth, "Invalid or expired API key"},
		{403, `{"detail":"Missing permission: instances write"}`, cloudprovider.ErrAuth, "Missing permission"},
		{402, `{"detail":"Insufficient balance"}`, cloudprovider.ErrQuota, "Insufficient balance"},
		{404, `{"detail":"Pod not found"}`, cloudprovider.ErrNotFound, "Pod not found"},
		{400, `{"detail":"No capacity available for the requested GPU configuration"}`, cloudprovider.ErrCapacity, "No capacity"},
		{400, `{"detail":"Cloud ID 'x' is no longer available for provider runpod"}`, cloudprovider.ErrCapacity, "no longer available"},
		{400, `{"detail":"Current price 1.8 exceeds max price 1.5"}`, cloudprovider.ErrCapacity, "exceeds max price"},
		{400, `{"detail":"Missing field: max_price not specified"}`, cloudprovider.ErrInvalid, "max_price not specified"},
		{422, `{"detail":[{"loc":["body","pod","cloudId"],"msg":"Field required","type":"missing"}]}`, cloudprovider.ErrInvalid, "cloudId: Field required"},
		{422, `{"errors":[{"param":"gpuCount","details":"must be positive"}]}`, cloudprovider.ErrInvalid, "gpuCount: must be positive"},
		{400, `{"detail":"Team spending limit exceeded"}`, cloudprovider.ErrQuota, "spending limit"},
		{500, `{"detail":"Internal Server Error"}`, cloudprovider.ErrOther, "Internal Server Error"},
		{502, `<html>Bad Gateway</html>`, cloudprovider.ErrOther, "Bad Gateway"},
		{503, `{"detail":"Not enough resources to fulfil the request"}`, cloudprovider.ErrCapacity, "Not enough resources"},
		// An outage is no capacity, and a rate limit is no quota.
		{503, `{"detail":"Service Unavailable"}`, cloudprovider.ErrOther, "Service Unavailable"},
		{429, `{"detail":"Rate limit exceeded. Please try again later."}`, cloudprovider.ErrOther, "Rate limit"},
		// The body decides over the status: a validation list, a code, a wording.
		{400, `{"detail":[{"loc":["query","page_size"],"msg":"Input should be less than or equal to 100","type":"less_than_equal"}]}`, cloudprovider.ErrInvalid, "page_size"},
		{404, `{"errors":[{"param":"pod_ids","details":"required"}]}`, cloudprovider.ErrInvalid, "pod_ids: required"},
		{400, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":null}}`, cloudprovider.ErrQuota, "exceeded your current quota"},
		{500, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, cloudprovider.ErrAuth, "Incorrect API key"},
		{400, `{"code":"not_found","message":"No such pod"}`, cloudprovider.ErrNotFound, "No such pod"},
		{404, `{"detail":"Pod is not available"}`, cloudprovider.ErrNotFound, "not available"},
		{403, `{"detail":"Insufficient balance"}`, cloudprovider.ErrQuota, "Insufficient balance"},
		// What the emulator answers.
		{400, `{"detail":"Requested configuration is not available"}`, cloudprovider.ErrCapacity, "not available"},
		{402, `{"detail":"Insufficient balance. Please add funds to your wallet."}`, cloudprovider.ErrQuota, "add funds"},
		{404, `{"detail":"Not Found"}`, cloudprovider.ErrNotFound, "Not Found"},
		{405, `{"detail":"Method Not Allowed"}`, cloudprovider.ErrInvalid, "Method Not Allowed"},
	}
	for _, tt := range tests {
		info := parseError([]byte(tt.body))
		msg := info.Message
		if got := kindFor(tt.status, info); got != tt.want {
			t.Errorf("%d %s: kind %v, want %v", tt.status, tt.body, got, tt.want)
		}
		if !contains(msg, tt.msg) {
			t.Errorf("%d %s: message %q lacks %q", tt.status, tt.body, msg, tt.msg)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

package restclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestClassify(t *testing.T) {
	cloudErr := errors.New("the cloud's own error")
	answer := func(he *HTTPError) (cloudprovider.ErrorKind, error) {
		if he.Status == 404 {
			return cloudprovider.ErrNotFound, cloudErr
		}
		return cloudprovider.ErrInvalid, cloudErr
	}
	already := cloudprovider.NewError(cloudprovider.ErrQuota, "x", "before", errors.New("no money"))
	tests := []struct {
		name     string
		err      error
		wantNil  bool
		wantKind cloudprovider.ErrorKind
		wantIs   error
	}{
		{name: "nil", err: nil, wantNil: true},
		{name: "already classified", err: fmt.Errorf("wrapped: %w", already), wantKind: cloudprovider.ErrQuota},
		{name: "http answer", err: fmt.Errorf("call: %w", &HTTPError{Status: 404}), wantKind: cloudprovider.ErrNotFound, wantIs: cloudErr},
		{name: "transport", err: fmt.Errorf("call: %w", context.DeadlineExceeded), wantKind: cloudprovider.ErrOther, wantIs: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify("cloud", "op", tt.err, answer)
			if tt.wantNil {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if k := cloudprovider.KindOf(got); k != tt.wantKind {
				t.Errorf("kind %v, want %v (%v)", k, tt.wantKind, got)
			}
			if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
				t.Errorf("%v does not wrap %v", got, tt.wantIs)
			}
		})
	}
}

func TestAPIError(t *testing.T) {
	e := NewAPIError(&HTTPError{Method: "POST", Path: "/x", Status: 400, Body: []byte("ignored")})
	e.Message = "Not Enough Resources"
	if got := e.Error(); got != "POST /x: HTTP 400: Not Enough Resources" {
		t.Errorf("without a code: %q", got)
	}
	e.Code = "invalid_request"
	if got := e.Error(); got != "POST /x: HTTP 400 invalid_request: Not Enough Resources" {
		t.Errorf("with a code: %q", got)
	}
	if !e.MessageHas("not enough resources") || e.MessageHas("quota") {
		t.Error("MessageHas must match case-insensitively, and only what is there")
	}
}

func TestDecodeAPIError(t *testing.T) {
	parse := func(b []byte) (string, string, bool) {
		var body struct{ Code, Message string }
		if err := json.Unmarshal(b, &body); err != nil || (body.Code == "" && body.Message == "") {
			return "", "", false
		}
		return body.Code, body.Message, true
	}
	long := strings.Repeat("x", 600)
	tests := []struct {
		name            string
		status          int
		body            string
		wantCode, wantM string
	}{
		{"the cloud's error body", 400, `{"code":"bad","message":"no such image"}`, "bad", "no such image"},
		{"a code without a message: the status text", 404, `{"code":"gone"}`, "gone", "Not Found"},
		{"not the cloud's shape: the body", 502, "  upstream down \n", "", "upstream down"},
		{"a long body is cut", 500, long, "", long[:512] + "..."},
		{"no body: the status text", 503, "", "", "Service Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := DecodeAPIError(&HTTPError{Method: "GET", Path: "/x", Status: tt.status, Body: []byte(tt.body)}, parse)
			if e.Code != tt.wantCode || e.Message != tt.wantM || e.Status != tt.status || e.Method != "GET" || e.Path != "/x" {
				t.Errorf("got %+v, want code %q message %q", e, tt.wantCode, tt.wantM)
			}
		})
	}
}

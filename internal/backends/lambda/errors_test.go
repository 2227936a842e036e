package lambda

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func lambdaBody(code, msg string) string {
	return fmt.Sprintf(`{"error": {"code": %q, "message": %q, "suggestion": "try this"}}`, code, msg)
}

// Lambda's error body's code decides the kind; the HTTP status only when there is no code this backend
// knows.
func TestErrorClassification(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   controlplane.ErrorKind
	}{
		// The codes Lambda documents, with the statuses it sends them with.
		{400, lambdaBody(CodeInsufficientCapacity, "Not enough capacity to fulfill launch request."), controlplane.ErrCapacity},
		{401, lambdaBody(CodeInvalidAPIKey, "API key was invalid, expired, or deleted."), controlplane.ErrAuth},
		{403, lambdaBody(CodeAccountInactive, "Your account is inactive."), controlplane.ErrQuota},
		{400, lambdaBody(CodeQuotaExceeded, "Quota exceeded."), controlplane.ErrQuota},
		{400, lambdaBody(CodeInvalidAddress, "Your billing address is invalid."), controlplane.ErrQuota},
		{404, lambdaBody(CodeObjectDoesNotExist, "Specified instance does not exist."), controlplane.ErrNotFound},
		{400, lambdaBody(CodeInvalidParameters, "Invalid request data."), controlplane.ErrInvalid},
		{400, lambdaBody(CodeDuplicate, "duplicate"), controlplane.ErrInvalid},
		{400, lambdaBody(CodeFileSystemInWrongRegion, "wrong region"), controlplane.ErrInvalid},
		{400, lambdaBody(CodeSSHKeyInUse, "in use"), controlplane.ErrInvalid},
		{500, lambdaBody(CodeUnknown, "Something unexpected occurred."), controlplane.ErrOther},
		// The code wins over the status.
		{503, lambdaBody(CodeInsufficientCapacity, "no capacity"), controlplane.ErrCapacity},
		{400, lambdaBody(CodeUnknown, "odd"), controlplane.ErrOther},
		{404, lambdaBody(CodeInvalidAPIKey, "odd"), controlplane.ErrAuth},
		{400, lambdaBody(CodeObjectDoesNotExist, "SSH key \"x\" does not exist."), controlplane.ErrNotFound},
		// No code (or one this backend does not know): the status decides.
		{401, `Unauthorized`, controlplane.ErrAuth},
		{403, lambdaBody("global/some-new-code", "forbidden"), controlplane.ErrAuth},
		{402, `{}`, controlplane.ErrQuota},
		{404, `<html>not found</html>`, controlplane.ErrNotFound},
		{400, `{"error": {"message": "bad"}}`, controlplane.ErrInvalid},
		{409, ``, controlplane.ErrInvalid},
		{429, lambdaBody("global/too-many-requests", "Too many requests."), controlplane.ErrOther},
		// Lambda's edge answers 429 with a plain-text page (RateLimited: the launch waits it out).
		{429, `error code: 1015`, controlplane.ErrOther},
		{500, ``, controlplane.ErrOther},
		{502, `<html><body><h1>502 Bad Gateway</h1></body></html>`, controlplane.ErrOther},
	} {
		he := &restclient.HTTPError{Method: "POST", Path: "/instance-operations/launch", Status: tc.status, Body: []byte(tc.body)}
		err := classify("launching instance", fmt.Errorf("wrapped: %w", he))
		if got := controlplane.KindOf(err); got != tc.want {
			t.Errorf("HTTP %d %s: kind %v, want %v (%v)", tc.status, tc.body, got, tc.want, err)
		}
		var ce *controlplane.Error
		if !errors.As(err, &ce) || ce.Cloud != CloudName || ce.Op != "launching instance" {
			t.Errorf("HTTP %d: not a lambda *controlplane.Error: %#v", tc.status, err)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	body := `{"error": {"code": "global/invalid-parameters", "message": "Invalid request data.", "suggestion": "Fix it."},
		"field_errors": {"name": {"code": "global/invalid-parameters", "message": "Must be 64 characters or fewer."}}}`
	err := classify("launching instance", &restclient.HTTPError{Method: "POST", Path: "/instance-operations/launch", Status: 400, Body: []byte(body)})
	msg := err.Error()
	for _, want := range []string{"lambda: launching instance", "HTTP 400", "global/invalid-parameters", "Invalid request data.",
		"name: Must be 64 characters or fewer.", "(Fix it.)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not contain %q", msg, want)
		}
	}
	re, ok := asResponseError(err)
	if !ok || re.Code != CodeInvalidParameters || re.Status != 400 {
		t.Errorf("asResponseError: %+v, %v", re, ok)
	}
	// A long non-JSON body is cut.
	err = classify("x", &restclient.HTTPError{Status: 502, Body: []byte(strings.Repeat("x", 2000))})
	if len(err.Error()) > 700 {
		t.Errorf("a proxy's body is not cut: %d bytes", len(err.Error()))
	}
	// Classified errors and transport errors pass through.
	if classify("x", nil) != nil {
		t.Error("nil is not nil")
	}
	if k := controlplane.KindOf(classify("x", errors.New("connection reset"))); k != controlplane.ErrOther {
		t.Errorf("transport error: %v", k)
	}
}

// A 429 is rate-limited whatever its body: Lambda's JSON, or the plain-text page of its edge
// (Cloudflare's "error code: 1015"), which gets a code and a message that say what happened; the
// server's Retry-After is kept.
func TestRateLimitedClassification(t *testing.T) {
	for _, tc := range []struct {
		status  int
		body    string
		limited bool
		code    string
	}{
		{429, "error code: 1015", true, CodeCloudflareRateLimited},
		{429, "error code: 1015\n", true, CodeCloudflareRateLimited},
		{429, lambdaBody("global/too-many-requests", "Too many requests."), true, "global/too-many-requests"},
		{403, "error code: 1015", true, CodeCloudflareRateLimited}, // the page decides, whatever the status
		{400, lambdaBody(CodeInvalidParameters, "bad"), false, CodeInvalidParameters},
		{500, "error code: 1016", false, ""},
	} {
		he := &restclient.HTTPError{Method: "POST", Path: "/instance-operations/launch", Status: tc.status, Body: []byte(tc.body), RetryAfter: 7e9}
		re, ok := asResponseError(classify("launching instance", he))
		if !ok || re.RateLimited() != tc.limited || re.Code != tc.code || re.RetryAfter != 7e9 {
			t.Errorf("HTTP %d %q: %+v", tc.status, tc.body, re)
		}
		if tc.code == CodeCloudflareRateLimited && !strings.Contains(re.Error(), "Cloudflare error 1015") {
			t.Errorf("message %q does not say what the page means", re.Error())
		}
	}
}

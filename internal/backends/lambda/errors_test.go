package lambda

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
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
		want   cloudprovider.ErrorKind
	}{
		// The codes Lambda documents, with the statuses it sends them with.
		{400, lambdaBody(CodeInsufficientCapacity, "Not enough capacity to fulfill launch request."), cloudprovider.ErrCapacity},
		{401, lambdaBody(CodeInvalidAPIKey, "API key was invalid, expired, or deleted."), cloudprovider.ErrAuth},
		{403, lambdaBody(CodeAccountInactive, "Your account is inactive."), cloudprovider.ErrQuota},
		{400, lambdaBody(CodeQuotaExceeded, "Quota exceeded."), cloudprovider.ErrQuota},
		{400, lambdaBody(CodeInvalidAddress, "Your billing address is invalid."), cloudprovider.ErrQuota},
		{404, lambdaBody(CodeObjectDoesNotExist, "Specified instance does not exist."), cloudprovider.ErrNotFound},
		{400, lambdaBody(CodeInvalidParameters, "Invalid request data."), cloudprovider.ErrInvalid},
		{400, lambdaBody(CodeDuplicate, "duplicate"), cloudprovider.ErrInvalid},
		{400, lambdaBody(CodeFileSystemInWrongRegion, "wrong region"), cloudprovider.ErrInvalid},
		{400, lambdaBody(CodeSSHKeyInUse, "in use"), cloudprovider.ErrInvalid},
		{500, lambdaBody(CodeUnknown, "Something unexpected occurred."), cloudprovider.ErrOther},
		// The code wins over the status.
		{503, lambdaBody(CodeInsufficientCapacity, "no capacity"), cloudprovider.ErrCapacity},
		{400, lambdaBody(CodeUnknown, "odd"), cloudprovider.ErrOther},
		{404, lambdaBody(CodeInvalidAPIKey, "odd"), cloudprovider.ErrAuth},
		{400, lambdaBody(CodeObjectDoesNotExist, "SSH key \"x\" does not exist."), cloudprovider.ErrNotFound},
		// No code (or one this backend does not know): the status decides.
		{401, `Unauthorized`, cloudprovider.ErrAuth},
		{403, lambdaBody("global/some-new-code", "forbidden"), cloudprovider.ErrAuth},
		{402, `{}`, cloudprovider.ErrQuota},
		{404, `<html>not found</html>`, cloudprovider.ErrNotFound},
		{400, `{"error": {"message": "bad"}}`, cloudprovider.ErrInvalid},
		{409, ``, cloudprovider.ErrInvalid},
		{429, lambdaBody("global/too-many-requests", "Too many requests."), cloudprovider.ErrOther},
		// Lambda's edge answers 429 with a plain-text page (RateLimited: the launch waits it out).
		{429, `error code: 1015`, cloudprovider.ErrOther},
		{500, ``, cloudprovider.ErrOther},
		{502, `<html><body><h1>502 Bad Gateway</h1></body></html>`, cloudprovider.ErrOther},
	} {
		he := &restclient.HTTPError{Method: "POST", Path: "/instance-operations/launch", Status: tc.status, Body: []byte(tc.body)}
		err := classify("launching instance", fmt.Errorf("wrapped: %w", he))
		if got := cloudprovider.KindOf(err); got != tc.want {
			t.Errorf("HTTP %d %s: kind %v, want %v (%v)", tc.status, tc.body, got, tc.want, err)
		}
		var ce *cloudprovider.Error
		if !errors.As(err, &ce) || ce.Cloud != CloudName || ce.Op != "launching instance" {
			t.Errorf("HTTP %d: not a lambda *cloudprovider.Error: %#v", tc.status, err)
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
	if k := cloudprovider.KindOf(classify("x", errors.New("connection reset"))); k != cloudprovider.ErrOther {
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

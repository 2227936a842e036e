package lambda

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func lambdaBody(code, msg string) string {
	return fmt.Sprintf(`{"error": {"code": %q, "message": %q, "suggestion": "try this"}}`, code, msg)
}

// Lambda's error body's code decides the kind; the HTTP status only when there is no code this backend
// knows.
func TestErrorClassification(t *testing.T) {
	backendtest.WantClassified(t, CloudName, "launching instance", "/instance-operations/launch", classify, []backendtest.Answer{
		// The codes Lambda documents, with the statuses it sends them with.
		{Status: 400, Body: lambdaBody(CodeInsufficientCapacity, "Not enough capacity to fulfill launch request."), Kind: cloudprovider.ErrCapacity},
		{Status: 401, Body: lambdaBody(CodeInvalidAPIKey, "API key was invalid, expired, or deleted."), Kind: cloudprovider.ErrAuth},
		{Status: 403, Body: lambdaBody(CodeAccountInactive, "Your account is inactive."), Kind: cloudprovider.ErrQuota},
		{Status: 400, Body: lambdaBody(CodeQuotaExceeded, "Quota exceeded."), Kind: cloudprovider.ErrQuota},
		{Status: 400, Body: lambdaBody(CodeInvalidAddress, "Your billing address is invalid."), Kind: cloudprovider.ErrQuota},
		{Status: 404, Body: lambdaBody(CodeObjectDoesNotExist, "Specified instance does not exist."), Kind: cloudprovider.ErrNotFound},
		{Status: 400, Body: lambdaBody(CodeInvalidParameters, "Invalid request data."), Kind: cloudprovider.ErrInvalid},
		{Status: 400, Body: lambdaBody(CodeDuplicate, "duplicate"), Kind: cloudprovider.ErrInvalid},
		{Status: 400, Body: lambdaBody(CodeFileSystemInWrongRegion, "wrong region"), Kind: cloudprovider.ErrInvalid},
		{Status: 400, Body: lambdaBody(CodeSSHKeyInUse, "in use"), Kind: cloudprovider.ErrInvalid},
		{Status: 500, Body: lambdaBody(CodeUnknown, "Something unexpected occurred."), Kind: cloudprovider.ErrOther},
		// The code wins over the status.
		{Status: 503, Body: lambdaBody(CodeInsufficientCapacity, "no capacity"), Kind: cloudprovider.ErrCapacity},
		{Status: 400, Body: lambdaBody(CodeUnknown, "odd"), Kind: cloudprovider.ErrOther},
		{Status: 404, Body: lambdaBody(CodeInvalidAPIKey, "odd"), Kind: cloudprovider.ErrAuth},
		{Status: 400, Body: lambdaBody(CodeObjectDoesNotExist, "SSH key \"x\" does not exist."), Kind: cloudprovider.ErrNotFound},
		// No code (or one this backend does not know): the status decides.
		{Status: 401, Body: `Unauthorized`, Kind: cloudprovider.ErrAuth},
		{Status: 403, Body: lambdaBody("global/some-new-code", "forbidden"), Kind: cloudprovider.ErrAuth},
		{Status: 402, Body: `{}`, Kind: cloudprovider.ErrQuota},
		{Status: 404, Body: `<html>not found</html>`, Kind: cloudprovider.ErrNotFound},
		{Status: 400, Body: `{"error": {"message": "bad"}}`, Kind: cloudprovider.ErrInvalid},
		{Status: 409, Body: ``, Kind: cloudprovider.ErrInvalid},
		{Status: 429, Body: lambdaBody("global/too-many-requests", "Too many requests."), Kind: cloudprovider.ErrOther},
		// Lambda's edge answers 429 with a plain-text page (RateLimited: the launch waits it out).
		{Status: 429, Body: `error code: 1015`, Kind: cloudprovider.ErrOther},
		{Status: 500, Body: ``, Kind: cloudprovider.ErrOther},
		{Status: 502, Body: `<html><body><h1>502 Bad Gateway</h1></body></html>`, Kind: cloudprovider.ErrOther},
	})
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
	check := func(status int, body string, limited bool, code string) {
		t.Helper()
		he := &restclient.HTTPError{Method: "POST", Path: "/instance-operations/launch", Status: status, Body: []byte(body), RetryAfter: 7e9}
		re, ok := asResponseError(classify("launching instance", he))
		if !ok || re.RateLimited() != limited || re.Code != code || re.RetryAfter != 7e9 {
			t.Errorf("HTTP %d %q: %+v", status, body, re)
		}
		if code == CodeCloudflareRateLimited && !strings.Contains(re.Error(), "Cloudflare error 1015") {
			t.Errorf("message %q does not say what the page means", re.Error())
		}
	}
	for _, tc := range []struct {
		status     int
		body, code string
	}{
		{429, "error code: 1015", CodeCloudflareRateLimited},
		{429, "error code: 1015\n", CodeCloudflareRateLimited},
		{429, lambdaBody("global/too-many-requests", "Too many requests."), "global/too-many-requests"},
		{403, "error code: 1015", CodeCloudflareRateLimited}, // the page decides, whatever the status
	} {
		check(tc.status, tc.body, true, tc.code)
	}
	// Not rate-limited: another error, another edge page.
	check(400, lambdaBody(CodeInvalidParameters, "bad"), false, CodeInvalidParameters)
	check(500, "error code: 1016", false, "")
}

package upcloud

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// problemBody is an RFC 7807 answer as UpCloud's newer endpoints send it.
func problemBody(code, title string, status int) string {
	return fmt.Sprintf(`{"type":"https://developers.upcloud.com/1.3/errors#%s","title":%q,"status":%d,"correlation_id":"01KC8T59GZXZTNCZMYGJXGFSGM"}`, code, title, status)
}

// classicBody is UpCloud's classic error answer.
func classicBody(code, msg string) string {
	return fmt.Sprintf(`{"error":{"error_code":%q,"error_message":%q}}`, code, msg)
}

// TestErrorKinds: the error body's code decides the kind when it names one, in either shape; the HTTP
// status decides only when it does not. The recorded bodies come first.
func TestErrorKinds(t *testing.T) {
	recorded := func(name string) (int, string) {
		x := loadRecording(t, name)
		return x.Response.Status, string(x.Response.Body)
	}
	type tc struct {
		name   string
		status int
		body   string
		code   string
		kind   cloudprovider.ErrorKind
	}
	// classic and problem answer in UpCloud's classic error shape or RFC 7807's, naming code; the error
	// must carry that code.
	classic := func(name string, status int, code, msg string, kind cloudprovider.ErrorKind) tc {
		return tc{name, status, classicBody(code, msg), code, kind}
	}
	problem := func(name string, status int, code, title string, kind cloudprovider.ErrorKind) tc {
		return tc{name, status, problemBody(code, title, status), code, kind}
	}
	var cases []tc
	for _, r := range []struct {
		file string
		code string
		kind cloudprovider.ErrorKind
	}{
		{"error.server-invalid.400.json", "SERVER_INVALID", cloudprovider.ErrInvalid},
		{"error.storage-not-found.404.json", "STORAGE_NOT_FOUND", cloudprovider.ErrNotFound},
		{"error.tag-not-found.404.json", "TAG_NOT_FOUND", cloudprovider.ErrNotFound},
		{"error.problem-json-not-found.404.json", "ERROR_RESOURCE_NOT_FOUND", cloudprovider.ErrNotFound},
		{"handwritten.error.problem-validation.json", "ERROR_INVALID_REQUEST", cloudprovider.ErrInvalid},
	} {
		status, body := recorded(r.file)
		cases = append(cases, tc{"recorded " + r.file, status, body, r.code, r.kind})
	}
	cases = append(cases, []tc{
		// The case: a 403 that is no credential problem.
		problem("403 problem+json service error", 403, "ERROR_SERVICE_ERROR", "Server cannot be deleted.", cloudprovider.ErrOther),
		classic("403 classic service error", 403, "SERVICE_ERROR", "The server cannot be deleted.", cloudprovider.ErrOther),
		classic("401 authentication failed", 401, "AUTHENTICATION_FAILED", "Authentication failed using the given username and password.", cloudprovider.ErrAuth),
		classic("403 access denied", 403, "ACCESS_DENIED", "Access denied.", cloudprovider.ErrAuth),
		problem("401 problem+json authentication failed", 401, "ERROR_AUTHENTICATION_FAILED", "Authentication failed.", cloudprovider.ErrAuth),
		classic("404 server not found", 404, "SERVER_NOT_FOUND", "The server 00aa does not exist.", cloudprovider.ErrNotFound),
		classic("400 zone not found names the request's zone", 404, "ZONE_NOT_FOUND", "The zone xx-nowhere1 does not exist.", cloudprovider.ErrInvalid),
		classic("402 insufficient credits", 402, "INSUFFICIENT_CREDITS", "Not enough credits.", cloudprovider.ErrQuota),
		classic("403 insufficient credits", 403, "INSUFFICIENT_CREDITS", "Not enough credits.", cloudprovider.ErrQuota),
		classic("403 trial plan", 403, "TRIAL_PLAN", "Trial accounts cannot use this plan.", cloudprovider.ErrQuota),
		classic("409 creating limit", 409, "SERVER_CREATING_LIMIT_REACHED", "Too many servers being created.", cloudprovider.ErrQuota),
		classic("403 core limit", 403, "SERVER_CORE_LIMIT_REACHED", "Core limit reached.", cloudprovider.ErrQuota),
		classic("409 no capacity", 409, "SERVER_RESOURCES_UNAVAILABLE", "Not enough resources.", cloudprovider.ErrCapacity),
		classic("409 storage capacity", 409, "STORAGE_RESOURCES_UNAVAILABLE", "Not enough storage.", cloudprovider.ErrCapacity),
		classic("409 state illegal", 409, "SERVER_STATE_ILLEGAL", "The server is started.", cloudprovider.ErrInvalid),
		classic("400 plan core number illegal", 400, "PLAN_CORE_NUMBER_ILLEGAL", "Plan and core_number together.", cloudprovider.ErrInvalid),
		problem("403 invalid label key", 403, "ERROR_INVALID_LABEL_KEY", "Invalid label key.", cloudprovider.ErrInvalid),
		classic("400 size missing", 400, "SIZE_MISSING", "The size is missing.", cloudprovider.ErrInvalid),
		classic("400 metadata on cloud-init", 400, "METADATA_DISABLED_ON_CLOUD-INIT", "Metadata is required.", cloudprovider.ErrInvalid),
		classic("503 in UpCloud's shape", 503, "SERVICE_UNAVAILABLE", "Try again.", cloudprovider.ErrOther),
		// No code that names a kind: the status decides.
		classic("403 unknown code", 403, "SOMETHING_NEW", "Forbidden.", cloudprovider.ErrAuth),
		classic("403 forbidden server", 403, "SERVER_FORBIDDEN", "No access to this server.", cloudprovider.ErrAuth),
		{"401 no body", 401, "", "", cloudprovider.ErrAuth},
		{"404 html", 404, "<html>not found</html>", "", cloudprovider.ErrNotFound},
		{"429 no body", 429, "", "", cloudprovider.ErrOther},
		{"502 text", 502, "bad gateway", "", cloudprovider.ErrOther},
		{"400 problem without fragment", 400, `{"type":"VALIDATION_ERROR","title":"Validation failed.","status":400}`, "VALIDATION_ERROR", cloudprovider.ErrInvalid},
		{"409 problem with an about:blank type", 409, `{"type":"about:blank","title":"Conflict","status":409}`, "", cloudprovider.ErrInvalid},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := classify("doing something", &restclient.HTTPError{Method: "DELETE", Path: "/server/x", Status: c.status, Body: []byte(c.body)})
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != c.code || ae.Status != c.status {
				t.Fatalf("err = %#v, want code %q status %d", err, c.code, c.status)
			}
			if c.body != "" && ae.Message == "" {
				t.Errorf("message lost: %v", err)
			}
			if k := cloudprovider.KindOf(err); k != c.kind {
				t.Errorf("kind %v, want %v (%v)", k, c.kind, err)
			}
		})
	}
}

// A create whose request names something missing (the template's STORAGE_NOT_FOUND) is an invalid
// request, not a missing object.
func TestCreateNotFoundIsInvalid(t *testing.T) {
	rs := &replayServer{x: recording{}}
	rs.x.Response.Status = http.StatusNotFound
	rs.x.Response.ContentType = "application/json; charset=UTF-8"
	rs.x.Response.Body = []byte(classicBody("STORAGE_NOT_FOUND", "The storage 01000000-0000-4000-8000-000099999999 does not exist."))
	c := newTestClient(t, fastClientConfig(serveReplay(t, rs)))
	_, err := c.CreateServerRequest(t.Context(), testCreateBody("upcloud-vm-x", "GPU-8xCPU-64GB-1xL40S", "fi-hel2"))
	var ae *APIError
	if cloudprovider.KindOf(err) != cloudprovider.ErrInvalid || !errors.As(err, &ae) || ae.Code != "STORAGE_NOT_FOUND" {
		t.Fatalf("err = %v, want an invalid request keeping STORAGE_NOT_FOUND", err)
	}
}

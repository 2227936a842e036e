package upcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// APIError is an error answer from UpCloud: the HTTP status plus the code and message of either error
// shape (classic {"error":{error_code,error_message}} or RFC 7807 problem+json, whose code is the part of
// "type" after '#').
type APIError struct {
	Method string
	Path   string
	Status int
	// Code is UpCloud's error code, e.g. "SERVER_NOT_FOUND" or "ERROR_RESOURCE_NOT_FOUND" ("" if none).
	Code string
	// Message is UpCloud's message (problem+json: the title plus any invalid parameters).
	Message string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// errorCode is what an UpCloud error code looks like ("SERVER_NOT_FOUND", "METADATA_DISABLED_ON_CLOUD-INIT").
var errorCode = regexp.MustCompile(`^[A-Z][A-Z0-9_-]*$`)

// parseAPIError reads either error shape from an HTTP error. A problem+json code is the fragment of
// "type" after '#' ("https://developers.upcloud.com/1.3/errors#ERROR_RESOURCE_NOT_FOUND"), or "type"
// itself when it is no URL (as UpCloud's SDK reads it).
func parseAPIError(h *restclient.HTTPError) *APIError {
	e := &APIError{Method: h.Method, Path: h.Path, Status: h.Status}
	var classic ErrorBody
	if json.Unmarshal(h.Body, &classic) == nil && (classic.Error.Code != "" || classic.Error.Message != "") {
		e.Code, e.Message = classic.Error.Code, classic.Error.Message
		return e
	}
	var p Problem
	if json.Unmarshal(h.Body, &p) == nil && (p.Type != "" || p.Title != "") {
		if i := strings.LastIndex(p.Type, "#"); i >= 0 {
			e.Code = p.Type[i+1:]
		} else if errorCode.MatchString(p.Type) {
			e.Code = p.Type
		}
		msg := p.Title
		for _, ip := range p.InvalidParams {
			msg += fmt.Sprintf(" (%s: %s)", ip.Name, ip.Reason)
		}
		e.Message = msg
		return e
	}
	body := strings.TrimSpace(string(h.Body))
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	e.Message = body
	return e
}

// codeKinds are the error codes whose kind is not told by their suffix (see codeKind). Codes are
// compared without problem+json's "ERROR_" prefix: "ERROR_SERVICE_ERROR" is SERVICE_ERROR here. The
// codes come from reference 2.9, the recordings, and the SDK's list of problem types.
var codeKinds = map[string]cloudprovider.ErrorKind{
	// Credentials or permissions.
	"AUTHENTICATION_FAILED":    cloudprovider.ErrAuth,
	"ACCESS_DENIED":            cloudprovider.ErrAuth,
	"ACCOUNT_INACTIVE":         cloudprovider.ErrAuth,
	"ACCOUNT_FORBIDDEN":        cloudprovider.ErrAuth,
	"INSUFFICIENT_PERMISSIONS": cloudprovider.ErrAuth,
	"UNAUTHORIZED":             cloudprovider.ErrAuth,
	// Money and account limits (the *_LIMIT_REACHED codes by suffix).
	"INSUFFICIENT_CREDITS": cloudprovider.ErrQuota,
	"TRIAL_PLAN":           cloudprovider.ErrQuota,
	// A request that names a zone that does not exist is malformed, not a missing object.
	"ZONE_NOT_FOUND":                  cloudprovider.ErrInvalid,
	"METADATA_DISABLED_ON_CLOUD-INIT": cloudprovider.ErrInvalid,
	"VALIDATION_ERROR":                cloudprovider.ErrInvalid,
	"DUPLICATE_LABEL_KEYS":            cloudprovider.ErrInvalid,
	"UNKNOWN_ATTRIBUTE":               cloudprovider.ErrInvalid,
	"MULTIPLE_TEMPLATES":              cloudprovider.ErrInvalid,
	"TOO_MANY_BOOT_DISKS":             cloudprovider.ErrInvalid,
	"ZONE_MISMATCH":                   cloudprovider.ErrInvalid,
	"PUBLIC_STORAGE_ATTACH":           cloudprovider.ErrInvalid,
	"WINDOWS_NOT_AVAILABLE":           cloudprovider.ErrInvalid,
	"METHOD_NOT_ALLOWED":              cloudprovider.ErrInvalid,
	// The service failed (a 403 SERVICE_ERROR "cannot be deleted" is no credential problem).
	"SERVICE_ERROR":         cloudprovider.ErrOther,
	"INTERNAL_ERROR":        cloudprovider.ErrOther,
	"INTERNAL_SERVER_ERROR": cloudprovider.ErrOther,
	"SERVICE_UNAVAILABLE":   cloudprovider.ErrOther,
	"TOO_MANY_REQUESTS":     cloudprovider.ErrOther,
}

// codeKind is the kind an UpCloud error code names; ok is false for a code that names none (or no
// code), whose kind the HTTP status decides. After codeKinds, the suffix decides: *_NOT_FOUND is not
// found, *_LIMIT_REACHED quota, *_RESOURCES_UNAVAILABLE capacity, and INVALID_*, *_INVALID,
// *_ILLEGAL, *_MISSING an invalid request.
func codeKind(code string) (kind cloudprovider.ErrorKind, ok bool) {
	c := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(code)), "ERROR_")
	if c == "" {
		return cloudprovider.ErrOther, false
	}
	if k, ok := codeKinds[c]; ok {
		return k, true
	}
	switch {
	case c == "NOT_FOUND" || strings.HasSuffix(c, "_NOT_FOUND"):
		return cloudprovider.ErrNotFound, true
	case strings.HasSuffix(c, "_LIMIT_REACHED"):
		return cloudprovider.ErrQuota, true
	case strings.HasSuffix(c, "_RESOURCES_UNAVAILABLE"):
		return cloudprovider.ErrCapacity, true
	case strings.HasPrefix(c, "INVALID_"), strings.HasSuffix(c, "_INVALID"), strings.HasSuffix(c, "_ILLEGAL"),
		strings.HasSuffix(c, "_MISSING"):
		return cloudprovider.ErrInvalid, true
	}
	return cloudprovider.ErrOther, false
}

// kindOf classifies an UpCloud error answer: the error code decides when it names a kind (codeKind),
// the HTTP status only when it does not.
func kindOf(e *APIError) cloudprovider.ErrorKind {
	if k, ok := codeKind(e.Code); ok {
		return k
	}
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return cloudprovider.ErrAuth
	case e.Status == http.StatusPaymentRequired:
		return cloudprovider.ErrQuota
	case e.Status == http.StatusNotFound:
		return cloudprovider.ErrNotFound
	case e.Status == http.StatusTooManyRequests || e.Status >= 500:
		return cloudprovider.ErrOther
	case e.Status >= 400:
		return cloudprovider.ErrInvalid
	}
	return cloudprovider.ErrOther
}

// classify turns any client error into a *cloudprovider.Error; HTTP answers become *APIError inside it
// (UpCloud's message is kept; credentials never appear in it, as they travel only in a header).
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(h *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		ae := parseAPIError(h)
		return kindOf(ae), ae
	})
}

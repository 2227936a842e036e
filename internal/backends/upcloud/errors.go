package upcloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
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

// parseAPIError reads either error shape from an HTTP error.
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

// Error codes that decide an error's kind regardless of its HTTP status.
var codeKinds = map[string]controlplane.ErrorKind{
	"AUTHENTICATION_FAILED":           controlplane.ErrAuth,
	"ACCOUNT_INACTIVE":                controlplane.ErrAuth,
	"INSUFFICIENT_PERMISSIONS":        controlplane.ErrAuth,
	"SERVER_NOT_FOUND":                controlplane.ErrNotFound,
	"ERROR_RESOURCE_NOT_FOUND":        controlplane.ErrNotFound,
	"SERVER_RESOURCES_UNAVAILABLE":    controlplane.ErrCapacity,
	"STORAGE_RESOURCES_UNAVAILABLE":   controlplane.ErrCapacity,
	"SERVER_CREATING_LIMIT_REACHED":   controlplane.ErrQuota,
	"SERVER_CORE_LIMIT_REACHED":       controlplane.ErrQuota,
	"SERVER_MEMORY_LIMIT_REACHED":     controlplane.ErrQuota,
	"SERVER_GPU_LIMIT_REACHED":        controlplane.ErrQuota,
	"GPU_LIMIT_REACHED":               controlplane.ErrQuota,
	"STORAGE_LIMIT_REACHED":           controlplane.ErrQuota,
	"IP_ADDRESS_LIMIT_REACHED":        controlplane.ErrQuota,
	"INSUFFICIENT_CREDITS":            controlplane.ErrQuota,
	"TRIAL_PLAN":                      controlplane.ErrQuota,
	"SERVER_STATE_ILLEGAL":            controlplane.ErrInvalid,
	"SERVER_INVALID":                  controlplane.ErrInvalid,
	"PLAN_CORE_NUMBER_ILLEGAL":        controlplane.ErrInvalid,
	"PLAN_INVALID":                    controlplane.ErrInvalid,
	"ZONE_NOT_FOUND":                  controlplane.ErrInvalid,
	"ZONE_INVALID":                    controlplane.ErrInvalid,
	"STORAGE_NOT_FOUND":               controlplane.ErrInvalid, // a create naming a missing template
	"STORAGE_DEVICE_INVALID":          controlplane.ErrInvalid,
	"METADATA_DISABLED_ON_CLOUD-INIT": controlplane.ErrInvalid,
	"ERROR_INVALID_REQUEST":           controlplane.ErrInvalid,
}

// kindOf classifies an UpCloud error answer: a known code wins, then the HTTP status decides.
func kindOf(e *APIError) controlplane.ErrorKind {
	if k, ok := codeKinds[e.Code]; ok {
		return k
	}
	switch {
	case strings.HasSuffix(e.Code, "_LIMIT_REACHED"):
		return controlplane.ErrQuota
	case strings.HasSuffix(e.Code, "_RESOURCES_UNAVAILABLE"):
		return controlplane.ErrCapacity
	}
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return controlplane.ErrAuth
	case e.Status == http.StatusPaymentRequired:
		return controlplane.ErrQuota
	case e.Status == http.StatusNotFound:
		return controlplane.ErrNotFound
	case e.Status == http.StatusTooManyRequests || e.Status >= 500:
		return controlplane.ErrOther
	case e.Status >= 400:
		return controlplane.ErrInvalid
	}
	return controlplane.ErrOther
}

// classify turns any client error into a *controlplane.Error; HTTP answers become *APIError inside it
// (UpCloud's message is kept; credentials never appear in it, as they travel only in a header).
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(h *restclient.HTTPError) (controlplane.ErrorKind, error) {
		ae := parseAPIError(h)
		return kindOf(ae), ae
	})
}

package lambda

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "lambda"

// Error codes Lambda puts in its {"error": {"code": ...}} body. The first nine are the ErrorCode enum of
// the v1.4.0 OpenAPI document; invalid-address, duplicate and filesystem-in-use are error schemas of the
// newer document.
const (
	CodeUnknown                 = "global/unknown"
	CodeInvalidAPIKey           = "global/invalid-api-key"
	CodeAccountInactive         = "global/account-inactive"
	CodeInvalidParameters       = "global/invalid-parameters"
	CodeObjectDoesNotExist      = "global/object-does-not-exist"
	CodeInsufficientCapacity    = "instance-operations/launch/insufficient-capacity"
	CodeFileSystemInWrongRegion = "instance-operations/launch/file-system-in-wrong-region"
	CodeFileSystemsNotSupported = "instance-operations/launch/file-systems-not-supported"
	CodeSSHKeyInUse             = "ssh-keys/key-in-use"
	CodeQuotaExceeded           = "global/quota-exceeded"
	CodeInvalidAddress          = "global/invalid-address"
	CodeDuplicate               = "global/duplicate"
	CodeFilesystemInUse         = "filesystems/filesystem-in-use"
)

// codeKinds maps Lambda's error codes onto hydra's error kinds. The code decides whenever Lambda sends
// one this table knows; the HTTP status is consulted only when it does not (backendkit.StatusKind).
//
// global/account-inactive ("verify your email address and have a valid payment method") and
// global/invalid-address (billing address) are account standing, not credentials: ErrQuota, like an
// exhausted balance on other clouds. global/object-does-not-exist is ErrNotFound; on a launch it names a
// missing SSH key, image or file system instead, which Create reports as ErrInvalid.
var codeKinds = map[string]cloudprovider.ErrorKind{
	CodeUnknown:                 cloudprovider.ErrOther,
	CodeInvalidAPIKey:           cloudprovider.ErrAuth,
	CodeAccountInactive:         cloudprovider.ErrQuota,
	CodeInvalidAddress:          cloudprovider.ErrQuota,
	CodeQuotaExceeded:           cloudprovider.ErrQuota,
	CodeInvalidParameters:       cloudprovider.ErrInvalid,
	CodeObjectDoesNotExist:      cloudprovider.ErrNotFound,
	CodeInsufficientCapacity:    cloudprovider.ErrCapacity,
	CodeFileSystemInWrongRegion: cloudprovider.ErrInvalid,
	CodeFileSystemsNotSupported: cloudprovider.ErrInvalid,
	CodeSSHKeyInUse:             cloudprovider.ErrInvalid,
	CodeDuplicate:               cloudprovider.ErrInvalid,
	CodeFilesystemInUse:         cloudprovider.ErrInvalid,
}

// ResponseError is a non-2xx answer from Lambda with the fields of its error body (or the raw body when
// it was not Lambda's JSON, as from a proxy). It never holds request data, so the API key cannot leak
// through it.
type ResponseError struct {
	restclient.APIError
	Suggestion string
	// RetryAfter is the server's Retry-After, if it sent one.
	RetryAfter time.Duration
}

// CodeCloudflareRateLimited is the code hydra gives Lambda's plain-text 429 page ("error code: 1015",
// Cloudflare's rate limiting in front of the API), which carries no JSON error.
const CodeCloudflareRateLimited = "cloudflare/1015"

// RateLimited reports whether Lambda refused the request for its rate: a 429, JSON or Cloudflare's
// plain-text page. The request was not acted on, so it may be sent again after a wait.
func (e *ResponseError) RateLimited() bool {
	return e.Status == http.StatusTooManyRequests || e.Code == CodeCloudflareRateLimited
}

func (e *ResponseError) Error() string {
	msg := e.APIError.Error()
	if e.Suggestion != "" {
		msg += " (" + e.Suggestion + ")"
	}
	return msg
}

// Kind is the error's kind: by its code when Lambda sent a known one, else by the HTTP status.
func (e *ResponseError) Kind() cloudprovider.ErrorKind {
	if k, ok := codeKinds[e.Code]; ok {
		return k
	}
	// 429 after the client's retries (the launch waits it out: RateLimited), 5xx: the outcome is unknown.
	return backendkit.StatusKind(e.Status)
}

func responseError(he *restclient.HTTPError) *ResponseError {
	re := &ResponseError{RetryAfter: he.RetryAfter}
	re.APIError = *restclient.DecodeAPIError(he, func(b []byte) (string, string, bool) {
		if strings.Contains(strings.TrimSpace(string(b)), "error code: 1015") {
			return CodeCloudflareRateLimited, "rate limited by Lambda's edge (Cloudflare error 1015: too many requests; launches are limited to one every 12 s)", true
		}
		var body ErrorBody
		if err := json.Unmarshal(b, &body); err != nil || (body.Error.Code == "" && body.Error.Message == "") {
			return "", "", false
		}
		re.Suggestion = body.Error.Suggestion
		msg := body.Error.Message
		for field, fe := range body.FieldErrors {
			msg += fmt.Sprintf("; %s: %s", field, fe.Message)
		}
		return body.Error.Code, msg, true
	})
	return re
}

// classify turns any error of a client call into a *cloudprovider.Error of the right kind. Errors that
// are already classified pass through.
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		re := responseError(he)
		return re.Kind(), re
	})
}

// asResponseError returns the Lambda error inside err, if any.
func asResponseError(err error) (*ResponseError, bool) {
	var re *ResponseError
	ok := errors.As(err, &re)
	return re, ok
}

package verda

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// CloudName is the backend's name in pools.yml and api_names.
const CloudName = "verda"

// Error codes Verda puts in its {code, message} error body.
const (
	CodeInvalidRequest      = "invalid_request"
	CodeUnauthorizedRequest = "unauthorized_request"
	CodeInsufficientFunds   = "insufficient_funds"
	CodeForbiddenAction     = "forbidden_action"
	CodeNotFound            = "not_found"
	CodeServerError         = "server_error"
	CodeServiceUnavailable  = "service_unavailable"
)

// Messages Verda is known to send; matched without regard to case.
const (
	msgNotEnoughResources  = "not enough resources"
	msgInvalidInstanceID   = "invalid instance id"
	msgAlreadyDiscontinued = "discontinue a discontinued"
	msgProvisioning        = "discontinue a provisioning"
	msgOSNotValid          = "operating system is not valid"
)

// ResponseError is a non-2xx answer from Verda, with the code and message of its error body (or the
// raw body when it was not JSON). It never holds request data, so no credential can leak through it.
type ResponseError = restclient.APIError

func responseError(he *restclient.HTTPError) *ResponseError {
	return restclient.DecodeAPIError(he, func(b []byte) (string, string, bool) {
		var body APIError
		if err := json.Unmarshal(b, &body); err != nil || (body.Code == "" && body.Message == "") {
			return "", "", false
		}
		return body.Code, body.Message, true
	})
}

// classify turns any error of a client call into a *cloudprovider.Error of the right kind. Errors that
// are already classified pass through.
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		re := responseError(he)
		return kindOf(re), re
	})
}

// codeKinds maps the codes of Verda's error body onto hydra's error kinds. server_error and
// service_unavailable are outcomes unknown (ErrOther) unless the message says more.
var codeKinds = map[string]cloudprovider.ErrorKind{
	CodeInvalidRequest:      cloudprovider.ErrInvalid,
	CodeUnauthorizedRequest: cloudprovider.ErrAuth,
	CodeInsufficientFunds:   cloudprovider.ErrQuota,
	CodeForbiddenAction:     cloudprovider.ErrInvalid,
	CodeNotFound:            cloudprovider.ErrNotFound,
	CodeServerError:         cloudprovider.ErrOther,
	CodeServiceUnavailable:  cloudprovider.ErrOther,
}

// kindOf maps a Verda error onto hydra's error kinds. The body decides when it says: first the
// messages Verda is known to send ("Not enough resources..." is no capacity, whatever the code and
// status; "Invalid instance id", which Verda answers 400 invalid_request for an unknown instance, is
// not found), then a quota wording on a refusal (a 4xx but 429), then the body's code. The HTTP status decides only for a body
// without a known code (a proxy's page, an error of the emulator's gateway).
func kindOf(re *ResponseError) cloudprovider.ErrorKind {
	switch {
	case re.MessageHas(msgNotEnoughResources):
		return cloudprovider.ErrCapacity
	case re.MessageHas(msgInvalidInstanceID):
		return cloudprovider.ErrNotFound
	case re.Status >= 400 && re.Status < 500 && re.Status != http.StatusTooManyRequests &&
		(re.MessageHas("quota") || re.MessageHas("limit reached") || re.MessageHas("limit exceeded")):
		return cloudprovider.ErrQuota
	}
	if k, ok := codeKinds[re.Code]; ok {
		return k
	}
	// 429 after the client's retries, 5xx, anything else: the outcome is unknown.
	return backendkit.StatusKind(re.Status)
}

// asResponseError returns the Verda error inside err, if any.
func asResponseError(err error) (*ResponseError, bool) {
	var re *ResponseError
	ok := errors.As(err, &re)
	return re, ok
}

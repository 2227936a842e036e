package primeintellect

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendkit"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// APIError is a non-2xx answer from Prime Intellect with the message of its error body: detail (a
// string, or the msgs of a 422 list), the spec's errors[].details, or the raw body when none of those is
// there. Code is the code the body names, when it names one (Prime's compute API sends none today).
type APIError = restclient.APIError

// errorInfo is what an error body says: its text, the code it names (error.code, else error.type,
// else a top-level code: the OpenAI-style shape of Prime's other APIs), and whether it is a list of
// validation errors (FastAPI's {"detail":[{loc,msg,type}]} or the spec's {"errors":[{param,details}]}).
type errorInfo struct {
	Message    string
	Code       string
	Validation bool
}

// parseError reads an error body in any of the forms Prime uses: {"detail":"..."},
// {"detail":[{loc,msg,type}]}, {"errors":[{param,details}]}, {"message":"...","code":"..."} or
// {"error":{"message","type","code"}}; a body that is not JSON is its own message (cut to 300 bytes).
func parseError(body []byte) errorInfo {
	var b struct {
		Detail  json.RawMessage `json:"detail"`
		Errors  json.RawMessage `json:"errors"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Error   json.RawMessage `json:"error"`
	}
	raw := strings.TrimSpace(string(body))
	if len(raw) > 300 {
		raw = raw[:300] + "..."
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return errorInfo{Message: raw}
	}
	var info errorInfo
	var parts []string
	if len(b.Detail) > 0 && string(b.Detail) != "null" {
		var s string
		if json.Unmarshal(b.Detail, &s) == nil {
			parts = append(parts, s)
		} else {
			var list []struct {
				Loc []any  `json:"loc"`
				Msg string `json:"msg"`
			}
			if json.Unmarshal(b.Detail, &list) == nil {
				info.Validation = len(list) > 0
				for _, d := range list {
					if len(d.Loc) > 0 {
						parts = append(parts, fmt.Sprintf("%v: %s", d.Loc[len(d.Loc)-1], d.Msg))
					} else {
						parts = append(parts, d.Msg)
					}
				}
			} else {
				parts = append(parts, string(b.Detail))
			}
		}
	}
	if len(b.Errors) > 0 && string(b.Errors) != "null" {
		var list []struct {
			Param   string `json:"param"`
			Details string `json:"details"`
		}
		if json.Unmarshal(b.Errors, &list) == nil {
			info.Validation = info.Validation || len(list) > 0
			for _, d := range list {
				if d.Param != "" {
					parts = append(parts, d.Param+": "+d.Details)
				} else {
					parts = append(parts, d.Details)
				}
			}
		}
	}
	if b.Message != "" {
		parts = append(parts, b.Message)
	}
	_ = json.Unmarshal(b.Code, &info.Code) // a code that is no string is no code
	if len(b.Error) > 0 && string(b.Error) != "null" {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(b.Error, &e) == nil {
			if e.Message != "" {
				parts = append(parts, e.Message)
			}
			var code string
			if json.Unmarshal(e.Code, &code) == nil && code != "" {
				info.Code = code
			} else if e.Type != "" {
				info.Code = e.Type
			}
		}
	}
	info.Message = strings.Join(parts, "; ")
	if len(parts) == 0 {
		info.Message = raw
	}
	return info
}

// codeKinds maps the codes an error body may name onto hydra's error kinds (lower case).
var codeKinds = map[string]cloudprovider.ErrorKind{
	"not_found":             cloudprovider.ErrNotFound,
	"unauthorized":          cloudprovider.ErrAuth,
	"invalid_api_key":       cloudprovider.ErrAuth,
	"authentication_error":  cloudprovider.ErrAuth,
	"permission_denied":     cloudprovider.ErrAuth,
	"forbidden":             cloudprovider.ErrAuth,
	"insufficient_quota":    cloudprovider.ErrQuota,
	"insufficient_funds":    cloudprovider.ErrQuota,
	"insufficient_balance":  cloudprovider.ErrQuota,
	"payment_required":      cloudprovider.ErrQuota,
	"quota_exceeded":        cloudprovider.ErrQuota,
	"invalid_request":       cloudprovider.ErrInvalid,
	"invalid_request_error": cloudprovider.ErrInvalid,
	"validation_error":      cloudprovider.ErrInvalid,
	"bad_request":           cloudprovider.ErrInvalid,
	"no_capacity":           cloudprovider.ErrCapacity,
	"insufficient_capacity": cloudprovider.ErrCapacity,
	"out_of_stock":          cloudprovider.ErrCapacity,
	"rate_limit_exceeded":   cloudprovider.ErrOther,
	"rate_limited":          cloudprovider.ErrOther,
	"internal_error":        cloudprovider.ErrOther,
	"server_error":          cloudprovider.ErrOther,
	"service_unavailable":   cloudprovider.ErrOther,
}

var (
	// capacityWords say "no capacity" in a refusal (a 4xx); strongCapacityWords say it whatever the
	// status ("service unavailable" on a 503 is an outage, "not enough resources" is not).
	capacityWords = []string{"capacity", "not available", "no available", "unavailable", "out of stock", "sold out",
		"no longer available", "no gpus available", "insufficient resources", "not enough resources"}
	strongCapacityWords = []string{"no capacity", "insufficient capacity", "out of stock", "sold out",
		"no gpus available", "insufficient resources", "not enough resources"}
	quotaWords = []string{"balance", "insufficient funds", "payment", "quota", "limit exceeded", "spending limit", "credit"}
	authWords  = []string{"api key", "unauthorized", "not authenticated", "permission", "forbidden"}
)

func containsAny(s string, words []string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// priceAboveMax recognises "the price is above your max price" answers: the offer moved, which the
// control plane treats like lost capacity (try another offer).
func priceAboveMax(s string) bool {
	s = strings.ToLower(s)
	if !strings.Contains(s, "max price") && !strings.Contains(s, "maxprice") && !strings.Contains(s, "max_price") {
		return false
	}
	return containsAny(s, []string{"exceed", "above", "higher", "greater", "lower than", "below"})
}

// kindFor classifies one error answer. The body decides when it names a kind: a list of validation
// errors is ErrInvalid, a known code its kind; then its message, as Prime words its refusals (a price
// above the maximum and no capacity, a balance or quota, a key; a 404 that is "not available" is still
// not found); the HTTP status only when the body says none of these (401 and 403 auth, 402 quota, 404
// not found, other 4xx invalid, the rest unknown).
func kindFor(status int, e errorInfo) cloudprovider.ErrorKind {
	refusal := status >= 400 && status < 500 && status != http.StatusTooManyRequests
	msg := e.Message
	if e.Validation {
		return cloudprovider.ErrInvalid
	}
	if k, ok := codeKinds[strings.ToLower(e.Code)]; ok {
		return k
	}
	switch {
	case priceAboveMax(msg):
		return cloudprovider.ErrCapacity
	case containsAny(msg, strongCapacityWords), refusal && status != http.StatusNotFound && containsAny(msg, capacityWords):
		return cloudprovider.ErrCapacity
	case refusal && containsAny(msg, quotaWords):
		return cloudprovider.ErrQuota
	case refusal && containsAny(msg, authWords):
		return cloudprovider.ErrAuth
	}
	if status == http.StatusMethodNotAllowed {
		return cloudprovider.ErrInvalid
	}
	return backendkit.StatusKind(status)
}

// classify turns a client error into a *cloudprovider.Error. The message of the cloud's error body is
// kept; credentials never reach it (they travel only in the Authorization header).
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (cloudprovider.ErrorKind, error) {
		info := parseError(he.Body)
		ae := restclient.NewAPIError(he)
		ae.Message, ae.Code = info.Message, info.Code
		return kindFor(he.Status, info), ae
	})
}

// statusOf returns the HTTP status behind err (0 when it is not an HTTP answer).
func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	var he *restclient.HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

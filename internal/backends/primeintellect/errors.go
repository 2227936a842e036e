package primeintellect

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// APIError is a non-2xx answer from Prime Intellect with the message of its error body: detail (a
// string, or the msgs of a 422 list), the spec's errors[].details, or the raw body when none of those is
// there. Prime sends no error code.
type APIError = restclient.APIError

// errorMessage extracts the text of an error body in any of the forms Prime uses:
// {"detail":"..."}, {"detail":[{loc,msg,type}]}, {"errors":[{param,details}]}, {"message":"..."} or
// {"error":{"message":...}}.
func errorMessage(body []byte) string {
	var b struct {
		Detail  json.RawMessage `json:"detail"`
		Errors  json.RawMessage `json:"errors"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	raw := strings.TrimSpace(string(body))
	if err := json.Unmarshal(body, &b); err != nil {
		if len(raw) > 300 {
			raw = raw[:300] + "..."
		}
		return raw
	}
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
	if len(b.Error) > 0 && string(b.Error) != "null" {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b.Error, &e) == nil && e.Message != "" {
			parts = append(parts, e.Message)
		}
	}
	if len(parts) == 0 {
		if len(raw) > 300 {
			raw = raw[:300] + "..."
		}
		return raw
	}
	return strings.Join(parts, "; ")
}

var (
	capacityWords = []string{"capacity", "not available", "no available", "unavailable", "out of stock", "sold out",
		"no longer available", "no gpus available", "insufficient resources", "not enough resources"}
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
	if !(strings.Contains(s, "max price") || strings.Contains(s, "maxprice") || strings.Contains(s, "max_price")) {
		return false
	}
	return containsAny(s, []string{"exceed", "above", "higher", "greater", "lower than", "below"})
}

// kindFor classifies one error answer.
func kindFor(status int, msg string) controlplane.ErrorKind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return controlplane.ErrAuth
	case status == http.StatusPaymentRequired:
		return controlplane.ErrQuota
	case status == http.StatusNotFound:
		return controlplane.ErrNotFound
	case priceAboveMax(msg):
		return controlplane.ErrCapacity
	case containsAny(msg, capacityWords):
		return controlplane.ErrCapacity
	case status < 500 && containsAny(msg, quotaWords):
		return controlplane.ErrQuota
	case status < 500 && containsAny(msg, authWords):
		return controlplane.ErrAuth
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity || status == http.StatusConflict || status == http.StatusMethodNotAllowed:
		return controlplane.ErrInvalid
	}
	return controlplane.ErrOther
}

// classify turns a client error into a *controlplane.Error. The message of the cloud's error body is
// kept; credentials never reach it (they travel only in the Authorization header).
func classify(op string, err error) error {
	return restclient.Classify(CloudName, op, err, func(he *restclient.HTTPError) (controlplane.ErrorKind, error) {
		ae := restclient.NewAPIError(he)
		ae.Message = errorMessage(he.Body)
		return kindFor(he.Status, ae.Message), ae
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

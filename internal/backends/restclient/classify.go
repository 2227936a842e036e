package restclient

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Classify turns the error of one client call into a *cloudprovider.Error of cloud: nil stays nil, a
// *cloudprovider.Error passes through, an *HTTPError becomes the kind and the cloud's own error that
// answer makes of it, and anything else (transport failures, timeouts, cancellation, which errors.Is
// still finds through the wrapper) is ErrOther.
func Classify(cloud, op string, err error, answer func(*HTTPError) (cloudprovider.ErrorKind, error)) error {
	if err == nil {
		return nil
	}
	var ce *cloudprovider.Error
	if errors.As(err, &ce) {
		return err
	}
	var he *HTTPError
	if errors.As(err, &he) {
		kind, cloudErr := answer(he)
		return cloudprovider.NewError(kind, cloud, op, cloudErr)
	}
	return cloudprovider.NewError(cloudprovider.ErrOther, cloud, op, err)
}

// APIError is a cloud's answer outside 2xx with the code and message of its error body, in the form
// most clouds share. It never holds request data, so no credential can leak through it.
type APIError struct {
	Method, Path string
	Status       int
	// Code is the cloud's error code ("" when it sent none).
	Code    string
	Message string
}

// NewAPIError starts the APIError of an HTTP error: its method, path and status.
func NewAPIError(he *HTTPError) *APIError {
	return &APIError{Method: he.Method, Path: he.Path, Status: he.Status}
}

// DecodeAPIError is the APIError of an HTTP error with the code and message that parse reads from the
// cloud's error body (ok false: the body is not in the cloud's error shape, or says nothing). Without
// them the message is the body itself, trimmed and cut to 512 bytes; with no message at all, the
// status text ("Bad Gateway").
func DecodeAPIError(he *HTTPError, parse func(body []byte) (code, message string, ok bool)) *APIError {
	e := NewAPIError(he)
	if code, msg, ok := parse(he.Body); ok {
		e.Code, e.Message = code, msg
	} else {
		e.Message = strings.TrimSpace(string(he.Body))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512] + "..."
		}
	}
	if e.Message == "" {
		e.Message = http.StatusText(he.Status)
	}
	return e
}

func (e *APIError) Error() string {
	code := ""
	if e.Code != "" {
		code = " " + e.Code
	}
	return fmt.Sprintf("%s %s: HTTP %d%s: %s", e.Method, e.Path, e.Status, code, e.Message)
}

// MessageHas reports whether the message contains s, ignoring case.
func (e *APIError) MessageHas(s string) bool {
	return strings.Contains(strings.ToLower(e.Message), strings.ToLower(s))
}

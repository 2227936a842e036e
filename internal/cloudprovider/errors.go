package cloudprovider

import (
	"errors"
	"fmt"
)

// ErrorKind classifies a cloud's error so the control plane can act on it without knowing the cloud.
type ErrorKind int

// The kinds of cloud error.
const (
	ErrOther    ErrorKind = iota // anything else (5xx after retries, malformed answers)
	ErrCapacity                  // the cloud has no capacity for this offer now: try another offer
	ErrQuota                     // a quota, limit or account balance stops the request
	ErrAuth                      // credentials are missing, wrong or lack permission
	ErrNotFound                  // the object does not exist (or no longer)
	ErrInvalid                   // the request is malformed or not allowed; retrying will not help
)

func (k ErrorKind) String() string {
	switch k {
	case ErrCapacity:
		return "capacity"
	case ErrQuota:
		return "quota"
	case ErrAuth:
		return "auth"
	case ErrNotFound:
		return "not found"
	case ErrInvalid:
		return "invalid request"
	default:
		return "other"
	}
}

// Error is a classified error from one cloud.
type Error struct {
	Kind  ErrorKind
	Cloud string
	// Op is what was being done, e.g. "creating instance", "listing offers".
	Op  string
	Err error
}

func (e *Error) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Op == "" {
		return fmt.Sprintf("%s: %s", e.Cloud, msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Cloud, e.Op, msg)
}

func (e *Error) Unwrap() error { return e.Err }

// NewError wraps err as a classified cloud error.
func NewError(kind ErrorKind, cloud, op string, err error) error {
	return &Error{Kind: kind, Cloud: cloud, Op: op, Err: err}
}

// Errorf builds a classified cloud error from a format.
func Errorf(kind ErrorKind, cloud, op, format string, args ...any) error {
	return &Error{Kind: kind, Cloud: cloud, Op: op, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of the first *Error in err's chain, or ErrOther.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ErrOther
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == ErrNotFound }

// IsCapacity reports whether err says the cloud has no capacity for the request.
func IsCapacity(err error) bool { return err != nil && KindOf(err) == ErrCapacity }

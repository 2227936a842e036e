package restclient

import (
	"errors"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// Classify turns the error of one client call into a *controlplane.Error of cloud: nil stays nil, a
// *controlplane.Error passes through, an *HTTPError becomes the kind and the cloud's own error that
// answer makes of it, and anything else (transport failures, timeouts, cancellation, which errors.Is
// still finds through the wrapper) is ErrOther.
func Classify(cloud, op string, err error, answer func(*HTTPError) (controlplane.ErrorKind, error)) error {
	if err == nil {
		return nil
	}
	var ce *controlplane.Error
	if errors.As(err, &ce) {
		return err
	}
	var he *HTTPError
	if errors.As(err, &he) {
		kind, cloudErr := answer(he)
		return controlplane.NewError(kind, cloud, op, cloudErr)
	}
	return controlplane.NewError(controlplane.ErrOther, cloud, op, err)
}

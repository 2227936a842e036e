package backendtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Answer is one error answer of a cloud's API (its HTTP status and body) and what a backend's classify
// must make of it: an error of Kind whose message holds Text (any message when Text is empty).
type Answer struct {
	Status int
	Body   string
	Kind   cloudprovider.ErrorKind
	Text   string
}

// WantClassified passes each answer, as the *restclient.HTTPError of a POST to path wrapped in another
// error, through classify with op, and fails the test unless the result is a *cloudprovider.Error of
// cloud and op, of the answer's Kind, whose message holds its Text. It returns the errors, in the
// answers' order, for checks of the backend's own.
func WantClassified(t testing.TB, cloud, op, path string, classify func(op string, err error) error, answers []Answer) []error {
	t.Helper()
	out := make([]error, len(answers))
	for i, a := range answers {
		he := &restclient.HTTPError{Method: "POST", Path: path, Status: a.Status, Body: []byte(a.Body)}
		err := classify(op, fmt.Errorf("wrapped: %w", he))
		var ce *cloudprovider.Error
		switch {
		case !errors.As(err, &ce) || ce.Cloud != cloud || ce.Op != op:
			t.Errorf("HTTP %d %s: not a %s *cloudprovider.Error of %q: %#v", a.Status, a.Body, cloud, op, err)
		case ce.Kind != a.Kind:
			t.Errorf("HTTP %d %s: kind %v, want %v (%v)", a.Status, a.Body, ce.Kind, a.Kind, err)
		case !strings.Contains(err.Error(), a.Text):
			t.Errorf("HTTP %d %s: message %q lacks %q", a.Status, a.Body, err, a.Text)
		}
		out[i] = err
	}
	return out
}

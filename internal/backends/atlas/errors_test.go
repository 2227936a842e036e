package atlas

import (
	"fmt"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

func atlasBody(code, msg string) string {
	return fmt.Sprintf(`{"error": {"code": %q, "message": %q}}`, code, msg)
}

// TestErrorClassification: the code of Atlas's error body decides the kind (API.md's table, with the
// statuses it names); the HTTP status only when the body names no code this client knows.
func TestErrorClassification(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   controlplane.ErrorKind
	}{
		// API.md's error table.
		{400, atlasBody(CodeInvalid, "unknown instance type x.1x"), controlplane.ErrInvalid},
		{401, atlasBody(CodeUnauthorized, "missing token"), controlplane.ErrAuth},
		{403, atlasBody(CodeForbidden, "the token lacks instances:write"), controlplane.ErrAuth},
		{403, atlasBody(CodeQuotaExceeded, "the project's GPU quota would be exceeded"), controlplane.ErrQuota},
		{404, atlasBody(CodeNotFound, "no instance i-1"), controlplane.ErrNotFound},
		{409, atlasBody(CodeAlreadyExists, "an instance named atlas-vm-web1 already exists"), controlplane.ErrInvalid},
		{422, atlasBody(CodeNoCapacity, "no l40s.1x capacity left in ams1"), controlplane.ErrCapacity},
		{422, atlasBody(CodePriceAboveMax, "list price 1.6 is above 1.0"), controlplane.ErrCapacity},
		{429, atlasBody(CodeRateLimited, "slow down"), controlplane.ErrOther},
		{500, atlasBody(CodeInternal, "boom"), controlplane.ErrOther},
		{503, atlasBody(CodeUnavailable, "maintenance"), controlplane.ErrOther},
		// The code wins over the status.
		{403, atlasBody(CodeNoCapacity, "odd"), controlplane.ErrCapacity},
		{500, atlasBody(CodeNotFound, "odd"), controlplane.ErrNotFound},
		{422, atlasBody(CodeInternal, "odd"), controlplane.ErrOther},
		{404, atlasBody(CodeUnavailable, "odd"), controlplane.ErrOther},
		{400, atlasBody(CodeQuotaExceeded, "odd"), controlplane.ErrQuota},
		// No known code: the status decides.
		{401, `Unauthorized`, controlplane.ErrAuth},
		{403, atlasBody("new_code", "x"), controlplane.ErrAuth},
		{404, `<html>not found</html>`, controlplane.ErrNotFound},
		{422, `{}`, controlplane.ErrCapacity},
		{409, ``, controlplane.ErrInvalid},
		{400, `{"error": {"message": "bad"}}`, controlplane.ErrInvalid},
		{502, `<html>Bad Gateway</html>`, controlplane.ErrOther},
	}
	for _, tc := range tests {
		err := classify("testing", &restclient.HTTPError{Method: "POST", Path: "/v1/instances", Status: tc.status, Body: []byte(tc.body)})
		if got := controlplane.KindOf(err); got != tc.want {
			t.Errorf("HTTP %d %s: kind %v, want %v (%v)", tc.status, tc.body, got, tc.want, err)
		}
	}
}

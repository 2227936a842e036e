package atlas

import (
	"fmt"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
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
		want   cloudprovider.ErrorKind
	}{
		// API.md's error table.
		{400, atlasBody(CodeInvalid, "unknown instance type x.1x"), cloudprovider.ErrInvalid},
		{401, atlasBody(CodeUnauthorized, "missing token"), cloudprovider.ErrAuth},
		{403, atlasBody(CodeForbidden, "the token lacks instances:write"), cloudprovider.ErrAuth},
		{403, atlasBody(CodeQuotaExceeded, "the project's GPU quota would be exceeded"), cloudprovider.ErrQuota},
		{404, atlasBody(CodeNotFound, "no instance i-1"), cloudprovider.ErrNotFound},
		{409, atlasBody(CodeAlreadyExists, "an instance named atlas-vm-web1 already exists"), cloudprovider.ErrInvalid},
		{422, atlasBody(CodeNoCapacity, "no l40s.1x capacity left in ams1"), cloudprovider.ErrCapacity},
		{422, atlasBody(CodePriceAboveMax, "list price 1.6 is above 1.0"), cloudprovider.ErrCapacity},
		{429, atlasBody(CodeRateLimited, "slow down"), cloudprovider.ErrOther},
		{500, atlasBody(CodeInternal, "boom"), cloudprovider.ErrOther},
		{503, atlasBody(CodeUnavailable, "maintenance"), cloudprovider.ErrOther},
		// The code wins over the status.
		{403, atlasBody(CodeNoCapacity, "odd"), cloudprovider.ErrCapacity},
		{500, atlasBody(CodeNotFound, "odd"), cloudprovider.ErrNotFound},
		{422, atlasBody(CodeInternal, "odd"), cloudprovider.ErrOther},
		{404, atlasBody(CodeUnavailable, "odd"), cloudprovider.ErrOther},
		{400, atlasBody(CodeQuotaExceeded, "odd"), cloudprovider.ErrQuota},
		// No known code: the status decides.
		{401, `Unauthorized`, cloudprovider.ErrAuth},
		{403, atlasBody("new_code", "x"), cloudprovider.ErrAuth},
		{404, `<html>not found</html>`, cloudprovider.ErrNotFound},
		{422, `{}`, cloudprovider.ErrCapacity},
		{409, ``, cloudprovider.ErrInvalid},
		{400, `{"error": {"message": "bad"}}`, cloudprovider.ErrInvalid},
		{502, `<html>Bad Gateway</html>`, cloudprovider.ErrOther},
	}
	for _, tc := range tests {
		err := classify("testing", &restclient.HTTPError{Method: "POST", Path: "/v1/instances", Status: tc.status, Body: []byte(tc.body)})
		if got := cloudprovider.KindOf(err); got != tc.want {
			t.Errorf("HTTP %d %s: kind %v, want %v (%v)", tc.status, tc.body, got, tc.want, err)
		}
	}
}

package cloudprovider

import (
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

func TestPriceCap(t *testing.T) {
	for _, tc := range []struct {
		name         string
		price, limit money.USD
		above        bool
	}{
		{"no cap admits any price", money.Max, 0, false},
		{"at the cap", 2 * money.Dollar, 2 * money.Dollar, false},
		{"a micro-dollar above", 2*money.Dollar + money.Micro, 2 * money.Dollar, true},
		{"below", money.Dollar, 2 * money.Dollar, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AboveCap(tc.price, tc.limit); got != tc.above {
				t.Errorf("AboveCap(%s, %s) = %v, want %v", tc.price, tc.limit, got, tc.above)
			}
			err := CheckPriceCap("c", "creating", "x", tc.price, tc.limit)
			if (err != nil) != tc.above || (err != nil && !IsCapacity(err)) {
				t.Errorf("CheckPriceCap(%s, %s) = %v, want a capacity error: %v", tc.price, tc.limit, err, tc.above)
			}
		})
	}
}

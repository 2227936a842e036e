package simulation

import (
	"context"
	"testing"
	"time"
)

func TestTakeFault(t *testing.T) {
	tests := []struct {
		name                  string
		tooMany, retry, errs  int
		status                int
		wantStatus            int
		wantRetryAfter        string
		wantTooMany, wantErrs int
	}{
		{name: "none", status: 500},
		{name: "429 first", tooMany: 2, errs: 1, retry: 3, status: 500, wantStatus: 429, wantRetryAfter: "3", wantTooMany: 1, wantErrs: 1},
		{name: "429 default retry", tooMany: 1, status: 500, wantStatus: 429, wantRetryAfter: "1"},
		{name: "5xx", errs: 2, status: 503, wantStatus: 503, wantErrs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tooMany, errs := tt.tooMany, tt.errs
			status, header := TakeFault(&tooMany, tt.retry, &errs, tt.status)
			if status != tt.wantStatus || header.Get("Retry-After") != tt.wantRetryAfter {
				t.Errorf("got %d Retry-After %q, want %d %q", status, header.Get("Retry-After"), tt.wantStatus, tt.wantRetryAfter)
			}
			if tooMany != tt.wantTooMany || errs != tt.wantErrs {
				t.Errorf("counters left %d/%d, want %d/%d", tooMany, errs, tt.wantTooMany, tt.wantErrs)
			}
		})
	}
}

func TestDelayCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Delay(ctx, time.Hour) {
		t.Error("Delay waited out an hour on a cancelled context")
	}
	if !Delay(ctx, 0) {
		t.Error("Delay of 0 reported a cancel")
	}
}

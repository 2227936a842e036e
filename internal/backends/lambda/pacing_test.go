package lambda

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	emu "github.com/hydragpu/terraform-provider-hydra/internal/emulator/lambda"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// sleeps is the backend's injected wait: it moves the shared fake clock instead of sleeping and
// records each wait.
type sleeps struct {
	clock *backendtest.Clock
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	s.clock.Advance(d)
	return nil
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// pacedFixture is an emulator pacing launches as Lambda does (one every 12 s) and a backend on the same
// fake clock.
func pacedFixture(t *testing.T, mod func(*Config)) (*fixture, *Backend, *sleeps) {
	t.Helper()
	return pacedFixtureBehind(t, mod, nil)
}

// pacedFixtureBehind is pacedFixture with the emulator behind wrap (nil: none).
func pacedFixtureBehind(t *testing.T, mod func(*Config), wrap func(http.Handler) http.Handler) (*fixture, *Backend, *sleeps) {
	t.Helper()
	f := startEmulator(t, emu.Options{LaunchInterval: emu.DefaultLaunchInterval})
	if wrap != nil {
		f.url = backendtest.Serve(t, wrap(f.srv)) + emu.BasePath
	}
	sl := &sleeps{clock: f.clock}
	b := f.backend(t, func(c *Config) {
		c.LaunchInterval = 0 // the default: 12 s
		c.Now, c.Sleep = f.clock.Now, sl.sleep
		if mod != nil {
			mod(c)
		}
	})
	return f, b, sl
}

// Two launches in one apply: the second waits the documented 12 s in this process, and Lambda accepts
// both, without a 429 and without the test waiting.
func TestLaunchesSpacedTwelveSeconds(t *testing.T) {
	f, b, sl := pacedFixture(t, nil)
	offer := cheapestH100(t, b)
	for _, name := range []string{"one", "two"} {
		if _, err := b.Create(context.Background(), request(t, offer, name, testKey)); err != nil {
			t.Fatal(err)
		}
	}
	if got := sl.got(); len(got) != 1 || got[0] != 12*time.Second {
		t.Errorf("waits %v, want one of 12s before the second launch", got)
	}
	if n := f.srv.RequestCount("POST /instance-operations/launch"); n != 2 {
		t.Errorf("%d launch requests, want 2 (none refused)", n)
	}
}

// A 429 from Lambda's edge (plain text "error code: 1015", not JSON), as when another process launched
// just before: the launch is rate-limited, not failed; the backend waits a launch interval, or the
// server's Retry-After when longer, and launches again, so a second launch in one apply succeeds.
func TestRateLimitedLaunchWaitsAndSucceeds(t *testing.T) {
	t.Run("paced by the cloud, no Retry-After", func(t *testing.T) {
		f, b, sl := pacedFixture(t, func(c *Config) { c.LaunchInterval = -1 }) // as if each launch came from another process
		offer := cheapestH100(t, b)
		for _, name := range []string{"one", "two"} {
			if _, err := b.Create(context.Background(), request(t, offer, name, testKey)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if got := sl.got(); len(got) != 1 || got[0] != DefaultLaunchInterval {
			t.Errorf("waits %v, want one of %v after the 429", got, DefaultLaunchInterval)
		}
		if st, _ := f.srv.Stats(); st.Created != 2 {
			t.Errorf("created %d", st.Created)
		}
	})
	t.Run("Retry-After longer than the interval", func(t *testing.T) {
		// More 429s than the client's own retries (RetryMax 4: 5 attempts), each with Retry-After 20.
		_, b, sl := pacedFixtureBehind(t, nil, refuseLaunches(5, "20"))
		offer := cheapestH100(t, b)
		if _, err := b.Create(context.Background(), request(t, offer, "one", testKey)); err != nil {
			t.Fatal(err)
		}
		if got := sl.got(); len(got) != 1 || got[0] != 20*time.Second {
			t.Errorf("waits %v, want one of 20s (the Retry-After)", got)
		}
	})
	t.Run("still limited after every retry", func(t *testing.T) {
		f, b, sl := pacedFixtureBehind(t, func(c *Config) { c.RateLimitRetries = 2 }, refuseLaunches(1000, ""))
		offer := cheapestH100(t, b)
		_, err := b.Create(context.Background(), request(t, offer, "one", testKey))
		backendtest.WantError(t, err, cloudprovider.ErrOther, "Cloudflare error 1015")
		re, ok := asResponseError(err)
		if !ok || !re.RateLimited() || re.Code != CodeCloudflareRateLimited {
			t.Errorf("not a rate-limited Lambda error: %#v", err)
		}
		if got := sl.got(); len(got) != 2 {
			t.Errorf("waits %v, want 2 (RateLimitRetries)", got)
		}
		if st, _ := f.srv.Stats(); st.Created != 0 {
			t.Errorf("created %d", st.Created)
		}
	})
}

// An instance Lambda reports as unhealthy is not yet up (pending, saying so) for the grace, as other
// clients treat it, and an error only after it.
func TestUnhealthyGrace(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, func(c *Config) { c.Now = f.clock.Now })
	setFaults(t, f.srv, simulation.Faults{BootFailures: 1})
	inst, err := b.Create(context.Background(), request(t, cheapestH100(t, b), "sick", testKey))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime) // booted: unhealthy
	for _, step := range []struct {
		advance time.Duration
		want    cloudprovider.Status
		msg     string
	}{
		{0, cloudprovider.StatusPending, "taken as not yet up for 5m0s more"},
		{4 * time.Minute, cloudprovider.StatusPending, "for 1m0s more"},
		{time.Minute, cloudprovider.StatusError, "still unhealthy after 5m0s"},
	} {
		f.clock.Advance(step.advance)
		got, err := b.Get(context.Background(), inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != step.want || got.CloudStatus != StatusUnhealthy || !strings.Contains(got.Message, step.msg) {
			t.Errorf("after %v more: %s (%s) %q, want %s with %q", step.advance, got.Status, got.CloudStatus, got.Message, step.want, step.msg)
		}
	}
	// Without a grace, unhealthy is an error at once.
	nograce := f.backend(t, func(c *Config) { c.UnhealthyGrace = -1 })
	if got, _ := nograce.Get(context.Background(), inst.ID); got.Status != cloudprovider.StatusError {
		t.Errorf("without grace: %s", got.Status)
	}
}

// Lambda's CPU types (cpu_4x_general: gpu_description "N/A", 0 GPUs) are never offers of GPUs, not
// even unmapped ones.
func TestCPUTypesAreNoOffers(t *testing.T) {
	catalog := append(emu.DefaultCatalog(), emu.CatalogEntry{Name: "cpu_4x_general", Description: "4x CPU General", GPUDescription: "N/A",
		PriceCentsPerHour: 20, VCPUs: 4, MemoryGiB: 16, StorageGiB: 64, GPUs: 0, Capacity: map[string]int{"us-east-1": 5}})
	f := startEmulator(t, emu.Options{Catalog: catalog})
	for _, o := range backendtest.Offers(t, f.backend(t, nil)) {
		if o.InstanceType == "cpu_4x_general" || o.CloudGPU == "N/A" {
			t.Errorf("a CPU type is an offer: %+v", o)
		}
	}
}

// A preempted instance is terminated for hydra (billing stopped, it will not come back), and deleting
// it is success.
func TestPreemptedInstance(t *testing.T) {
	f := startEmulator(t, emu.Options{})
	b := f.backend(t, nil)
	inst, err := b.Create(context.Background(), request(t, cheapestH100(t, b), "spot-like", testKey))
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(bootTime)
	if err := f.srv.Preempt(inst.ID); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(context.Background(), inst.ID)
	if err != nil || got.Status != cloudprovider.StatusTerminated || got.CloudStatus != StatusPreempted {
		t.Errorf("preempted: %+v %v", got, err)
	}
	if err := b.Delete(context.Background(), inst.ID); err != nil {
		t.Errorf("deleting a preempted instance: %v", err)
	}
}

// Lambda's refusals of a launch, in its error shapes, each map onto hydra's error taxonomy.
func TestLaunchErrorsTaxonomy(t *testing.T) {
	tests := []struct {
		name string
		arm  func(f *fixture)
		mod  func(*Config)
		kind cloudprovider.ErrorKind
		text string
	}{
		{name: "insufficient capacity", arm: func(f *fixture) { setFaults(t, f.srv, simulation.Faults{SoldOut: true}) },
			kind: cloudprovider.ErrCapacity, text: CodeInsufficientCapacity},
		{name: "quota exceeded", arm: func(f *fixture) { _ = f.srv.SetAccountFaults(emu.AccountFaults{QuotaExceeded: 1}) },
			kind: cloudprovider.ErrQuota, text: CodeQuotaExceeded},
		{name: "account inactive", arm: func(f *fixture) { _ = f.srv.SetAccountFaults(emu.AccountFaults{AccountInactive: true}) },
			kind: cloudprovider.ErrQuota, text: CodeAccountInactive},
		{name: "invalid API key", mod: func(c *Config) { c.APIKey = "wrong" }, kind: cloudprovider.ErrAuth, text: CodeInvalidAPIKey},
		// Invalid parameters: Lambda's field errors (global/invalid-parameters) and, on a launch, a missing
		// SSH key (global/object-does-not-exist) are ErrInvalid: TestErrorClassification and
		// TestLaunchResourceNotFoundIsInvalid.
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startEmulator(t, emu.Options{})
			offer := cheapestH100(t, f.backend(t, nil))
			b := f.backend(t, tc.mod)
			if tc.arm != nil {
				tc.arm(f)
			}
			_, err := b.Create(context.Background(), request(t, offer, "x", testKey))
			backendtest.WantError(t, err, tc.kind, tc.text)
			if st, _ := f.srv.Stats(); st.Created != 0 {
				t.Errorf("created %d", st.Created)
			}
		})
	}
	// Not found: an instance Lambda does not know.
	f := startEmulator(t, emu.Options{})
	_, err := f.backend(t, nil).Get(context.Background(), "0123456789abcdef0123456789abcdef")
	backendtest.WantKind(t, err, cloudprovider.ErrNotFound)
}

func setFaults(t *testing.T, srv *emu.Server, fl simulation.Faults) {
	t.Helper()
	if err := srv.SetFaults(fl); err != nil {
		t.Fatal(err)
	}
}

// refuseLaunches answers the first n launch requests with the edge's plain-text 429 page (with
// Retry-After retryAfter when not ""), before they reach the emulator.
func refuseLaunches(n int, retryAfter string) func(http.Handler) http.Handler {
	var mu sync.Mutex
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			refuse := n > 0 && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/instance-operations/launch")
			if refuse {
				n--
			}
			mu.Unlock()
			if !refuse {
				next.ServeHTTP(w, r)
				return
			}
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte("error code: 1015"))
		})
	}
}

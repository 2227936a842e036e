package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// Test SSH public keys (throwaway keys; nothing logs in with them).
const (
	TestKey  = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPF4C6czNRPamaSIKnQfGObnLSIXdT5+qdAzu7M4ZCwu hydra@test"
	OtherKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINp6IdYmi25vwTQiMf5JCGxaJKGzp2QrpGwf7gIxaqDY other@test"
)

// Inventory is the embedded inventory (inventory.Default); the test fails when it does not load.
func Inventory(t testing.TB) *inventory.Inventory {
	t.Helper()
	return Must(inventory.Default())(t)
}

// Pool is the cloud's first pool in the embedded inventory, failing the test when it has none.
func Pool(t testing.TB, cloud string) inventory.Pool {
	t.Helper()
	for _, p := range Inventory(t).Pools {
		if p.Cloud == cloud {
			return p
		}
	}
	t.Fatalf("no pool of cloud %q in the embedded inventory", cloud)
	return inventory.Pool{}
}

// Must takes a value and an error and returns a function of the test that returns the value, failing
// the test when the error is not nil: b := Must(New(cfg, inv, nil))(t).
func Must[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// WantKind fails the test unless err is a classified cloud error (cloudprovider.Error) of kind.
func WantKind(t testing.TB, err error, kind cloudprovider.ErrorKind) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %v error, got nil", kind)
	}
	if got := cloudprovider.KindOf(err); got != kind {
		t.Fatalf("want a %v error, got %v: %v", kind, got, err)
	}
}

// Clocked gives an emulator's options the test's clock, unless they have one, and boot as their boot
// duration, unless they have one, so tests move time instead of waiting for machines to boot.
func Clocked(o *simulation.Options, clock *Clock, boot time.Duration) {
	if o.Now == nil {
		o.Now = clock.Now
	}
	if o.BootDuration == 0 {
		o.BootDuration = boot
	}
}

// Tuning is a client tuning for tests against a local emulator: no rate limit to speak of, and retries
// that wait between minWait and maxWait (a Retry-After is honoured up to maxWait).
func Tuning(minWait, maxWait time.Duration) restclient.Tuning {
	return restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000, RetryWaitMin: minWait, RetryWaitMax: maxWait}
}

// Retrying is Tuning with at most retries retries of a request (restclient's default when 0).
func Retrying(retries int, minWait, maxWait time.Duration) restclient.Tuning {
	t := Tuning(minWait, maxWait)
	t.RetryMax = retries
	return t
}

// Unlimited is a client tuning without a rate limit to speak of, and restclient's default retries.
var Unlimited = restclient.Tuning{RequestsPerSecond: 1000, Burst: 1000}

// Serve serves h on a loopback httptest server for the test's lifetime and returns its URL. (Close, at
// cleanup, also drops connections a client dialled but never used.)
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// Start starts an emulator with its own Start method on a free loopback port for the test's lifetime
// and returns the base URL it answers. A stop that fails at the test's end fails the test.
func Start(t testing.TB, start func(addr string) (baseURL string, stop func(context.Context) error, err error)) string {
	t.Helper()
	url, stop, err := start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(context.Background()); err != nil {
			t.Errorf("stopping the emulator at %s: %v", url, err)
		}
	})
	return url
}

// RequestLog serves a handler (an emulator) on a loopback httptest server and logs every request it
// answers as "METHOD /path STATUS", e.g. "GET /v1/offers OK".
type RequestLog struct {
	// URL is the server's URL.
	URL string
	// Count counts the requests answered (tests may reset it).
	Count atomic.Int32
	mu    sync.Mutex
	log   []string
}

// NewRequestLog serves h for the test's lifetime.
func NewRequestLog(t testing.TB, h http.Handler) *RequestLog {
	t.Helper()
	l := &RequestLog{}
	l.URL = Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		l.Count.Add(1)
		l.mu.Lock()
		l.log = append(l.log, r.Method+" "+r.URL.Path+" "+http.StatusText(rec.status))
		l.mu.Unlock()
	}))
	return l
}

// Requests counts the logged requests that start with prefix ("POST /v1/instances").
func (l *RequestLog) Requests(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.log {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// Log returns the log so far.
func (l *RequestLog) Log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(s int) { r.status = s; r.ResponseWriter.WriteHeader(s) }

// Recorded is one recorded (or hand-written) exchange with a cloud API, as the files under a backend's
// testdata hold them.
type Recorded struct {
	Source struct {
		// Kind says where the exchange comes from (a capture, the vendor's fixtures, written by hand).
		Kind string `json:"kind"`
	} `json:"source"`
	Request struct {
		Method string `json:"method"`
		// URL is the whole request URL, where the recording keeps it (repeated parameters included).
		URL   string            `json:"url"`
		Path  string            `json:"path"`
		Query map[string]string `json:"query"`
		Body  json.RawMessage   `json:"body"`
	} `json:"request"`
	Response struct {
		Status      int             `json:"status"`
		ContentType string          `json:"content_type"`
		Body        json.RawMessage `json:"body"`
	} `json:"response"`
}

// Query is the recorded request's query: from its URL (which keeps repeated parameters), else from its
// query object.
func (r Recorded) Query() url.Values {
	if u, err := url.Parse(r.Request.URL); err == nil && r.Request.URL != "" {
		return u.Query()
	}
	q := url.Values{}
	for k, v := range r.Request.Query {
		q.Set(k, v)
	}
	return q
}

// Testdata reads testdata/<elem...> of the package under test.
func Testdata(t testing.TB, elem ...string) []byte {
	t.Helper()
	return Must(os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...)))(t)
}

// LoadRecorded reads the recorded exchange testdata/<elem...>.
func LoadRecorded(t testing.TB, elem ...string) Recorded {
	t.Helper()
	var r Recorded
	if err := json.Unmarshal(Testdata(t, elem...), &r); err != nil {
		t.Fatalf("%s: %v", filepath.Join(elem...), err)
	}
	return r
}

// WantError fails the test unless err is a classified cloud error (cloudprovider.Error) of kind whose message contains text.
func WantError(t testing.TB, err error, kind cloudprovider.ErrorKind, text string) {
	t.Helper()
	WantKind(t, err, kind)
	if !strings.Contains(err.Error(), text) {
		t.Fatalf("error %q lacks %q", err, text)
	}
}

// WantSharedLimit makes 11 calls at once, through a client tuned to 20 requests per second with a
// burst of 1, and fails the test unless they took at least 0.45 s together (0.5 s at that rate): every
// call waits for the client's one limiter.
func WantSharedLimit(t testing.TB, call func()) {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for range 11 {
		wg.Add(1)
		go func() { defer wg.Done(); call() }()
	}
	wg.Wait()
	if d := time.Since(start); d < 450*time.Millisecond {
		t.Fatalf("11 requests took %v: the shared limit of 20/s was not applied", d)
	}
}

// Offers returns the backend's offers, failing the test when it cannot list them.
func Offers(t testing.TB, b cloudprovider.InstanceManagerBackend) []cloudprovider.Offer {
	t.Helper()
	return Must(b.Offers(context.Background()))(t)
}

// ClusterOffers returns the backend's cluster offers, failing the test when it cannot list them.
func ClusterOffers(t testing.TB, b cloudprovider.ClusterBackend) []cloudprovider.ClusterOffer {
	t.Helper()
	return Must(b.ClusterOffers(context.Background()))(t)
}

// WantAuthError fails the test unless err is an ErrAuth error whose message holds none of secrets (a
// credential must never reach an error, which users see and logs keep).
func WantAuthError(t testing.TB, err error, secrets ...string) {
	t.Helper()
	WantKind(t, err, cloudprovider.ErrAuth)
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("a credential leaked into the error: %v", err)
		}
	}
}

// CreateWithHardware creates req's instance and checks that Create and a Get both report want as its
// hardware (what the offer, or the cloud's instance answer, says of the machine). It returns the
// created instance.
func CreateWithHardware(t *testing.T, b cloudprovider.InstanceManagerBackend, req cloudprovider.CreateRequest, want cloudprovider.Hardware) cloudprovider.Instance {
	t.Helper()
	ctx := context.Background()
	inst, err := b.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Hardware != want {
		t.Errorf("created: hardware %+v, want %+v", inst.Hardware, want)
	}
	got, err := b.Get(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hardware != want {
		t.Errorf("get: hardware %+v, want %+v", got.Hardware, want)
	}
	return inst
}

// InstanceHardware creates a machine from the on-demand offer of instanceType in region ("": any
// region), in the cloud's vm pool of the test inventory, named for the pool with a fresh owner token,
// and checks its hardware is want, as Create answers it and as Get reads it (CreateWithHardware).
func InstanceHardware(t *testing.T, b cloudprovider.InstanceManagerBackend, region, instanceType string, want cloudprovider.Hardware) cloudprovider.Instance {
	t.Helper()
	o, ok := FindOffer(Offers(t, b), region, instanceType, false)
	if !ok {
		t.Fatalf("no on-demand %s offer in region %q", instanceType, region)
	}
	var pool inventory.Pool
	for _, p := range Inventory(t).Pools {
		if p.Cloud == b.Cloud() && p.Kind == inventory.KindVM {
			pool = p
			break
		}
	}
	owner := cloudprovider.Ownership{Resource: "hw", Token: cloudprovider.NewOwnerToken()}
	return CreateWithHardware(t, b, cloudprovider.CreateRequest{Name: cloudprovider.CloudName(pool, "hw", owner.Token), Pool: pool,
		Offer: o, Owner: owner, SSHPublicKeys: []string{TestKey}}, want)
}

// BadGateway is an http.RoundTripper that answers the first N requests Match accepts with a 502 and an
// HTML body, as a load balancer does. With Forward the request reaches Next first, so the cloud acts and
// only its answer is lost; without, the cloud never sees it. Every other request goes to Next.
type BadGateway struct {
	Next    http.RoundTripper
	Match   func(*http.Request) bool
	Forward bool
	N       int
	mu      sync.Mutex
}

// RoundTrip implements http.RoundTripper.
func (t *BadGateway) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	hit := t.N > 0 && t.Match(r)
	if hit {
		t.N--
	}
	t.mu.Unlock()
	if !hit {
		return t.Next.RoundTrip(r)
	}
	if t.Forward {
		resp, err := t.Next.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close() // the answer is the one that gets lost
	}
	return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{"Content-Type": {"text/html"}},
		Body: io.NopCloser(strings.NewReader("<html>502 Bad Gateway</html>")), Request: r}, nil
}

// KeyAdds matches the POST that registers an SSH key at path's end ("/ssh-keys") or under it
// ("/api/v1/ssh_keys/").
func KeyAdds(path string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.Contains(r.URL.Path, path)
	}
}

// Left is how many of the N failures have not fired yet.
func (t *BadGateway) Left() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.N
}

// WantKeyAddSurvives5xx checks a backend's create through a BadGateway on its SSH key adds (KeyAdds of
// keysPath), each case a subtest on a fresh cloud: one 502, whether the cloud stored the key (Forward)
// or never saw the request, does not fail the create, and the key is registered once; a 502 on every
// add fails the create with an unknown outcome (ErrOther), no key registered and nothing launched.
// create builds the backend on tr and creates one machine; it returns the keys registered at the cloud,
// the machines launched and the create's error.
func WantKeyAddSurvives5xx(t *testing.T, keysPath string, create func(t *testing.T, tr http.RoundTripper) (keys, launched int, err error)) {
	t.Helper()
	for _, tc := range []struct {
		name    string
		fails   int
		forward bool
	}{
		{"refused before acting", 1, false},
		{"answer lost after storing", 1, true},
		{"every add fails", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &BadGateway{Next: http.DefaultTransport, Match: KeyAdds(keysPath), Forward: tc.forward, N: tc.fails}
			keys, launched, err := create(t, tr)
			want := 1 // keys and machines
			switch {
			case tc.fails > 1 && cloudprovider.KindOf(err) != cloudprovider.ErrOther:
				t.Fatalf("create through failing key adds: %v, want an unknown outcome (ErrOther)", err)
			case tc.fails > 1:
				want = 0
			case err != nil:
				t.Fatalf("create through one failed key add: %v", err)
			case tr.Left() != 0:
				t.Fatal("the fault never fired")
			}
			if keys != want || launched != want {
				t.Errorf("%d keys registered and %d machines launched, want %d of each", keys, launched, want)
			}
		})
	}
}

// HardwareCase is the hardware one offer must report: the offer of InstanceType in Region (in any region
// when Region is empty), on demand, or spot when Spot is set.
type HardwareCase struct {
	Region, InstanceType string
	Spot                 bool
	Want                 cloudprovider.Hardware
}

func (c HardwareCase) String() string {
	return fmt.Sprintf("%s %s spot=%v", c.Region, c.InstanceType, c.Spot)
}

// FindOffer returns the offer of typ in region (any region when region is empty), on demand or spot,
// and whether there is one.
func FindOffer(offers []cloudprovider.Offer, region, typ string, spot bool) (cloudprovider.Offer, bool) {
	for _, o := range offers {
		if (region == "" || o.Region == region) && o.InstanceType == typ && o.Spot == spot {
			return o, true
		}
	}
	return cloudprovider.Offer{}, false
}

// WantHardware checks the hardware of each case's offer (a missing offer is an error too) and returns
// the offers in the cases' order, a zero Offer for one that is missing, for checks of their own.
func WantHardware(t testing.TB, offers []cloudprovider.Offer, cases []HardwareCase) []cloudprovider.Offer {
	t.Helper()
	found := make([]cloudprovider.Offer, len(cases))
	for i, c := range cases {
		o, ok := FindOffer(offers, c.Region, c.InstanceType, c.Spot)
		switch {
		case !ok:
			t.Errorf("%s: no offer", c)
		case o.Hardware != c.Want:
			t.Errorf("%s: hardware %+v, want %+v", c, o.Hardware, c.Want)
		}
		found[i] = o
	}
	return found
}

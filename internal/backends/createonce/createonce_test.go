package createonce

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

func TestDo(t *testing.T) {
	existing := cloudprovider.Instance{ID: "old", Name: "n"}
	made := cloudprovider.Instance{ID: "new", Name: "n"}
	otherErr := cloudprovider.Errorf(cloudprovider.ErrOther, "c", "creating", "HTTP 503")
	capErr := cloudprovider.Errorf(cloudprovider.ErrCapacity, "c", "creating", "sold out")
	listErr := cloudprovider.Errorf(cloudprovider.ErrAuth, "c", "listing", "bad key")
	tests := []struct {
		name string
		// finds are Find's answers in turn (then Refind's, when refind is nil): ok, error.
		finds      []any
		prepareErr error
		createErr  error
		unknown    func(context.Context, error) bool
		refind     []any // Refind's answers, when set
		cancelled  bool
		wantInst   cloudprovider.Instance
		wantHow    Outcome
		wantErr    error
		wantCalls  string // the steps run, in order: f(ind), p(repare), c(reate), r(efind)
	}{
		{name: "created", finds: []any{false}, wantInst: made, wantHow: Created, wantCalls: "fpc"},
		{name: "existing is returned", finds: []any{true}, wantInst: existing, wantHow: Existed, wantCalls: "f"},
		{name: "find fails", finds: []any{listErr}, wantErr: listErr, wantCalls: "f"},
		{name: "prepare fails, nothing created or looked for", finds: []any{false}, prepareErr: capErr, wantErr: capErr, wantCalls: "fp"},
		{name: "known failure is not looked for", finds: []any{false}, createErr: capErr, wantErr: capErr, wantCalls: "fpc"},
		{name: "lost answer, instance found", finds: []any{false, true}, createErr: otherErr, wantInst: existing, wantHow: Recovered, wantCalls: "fpcf"},
		{name: "lost answer, nothing found", finds: []any{false, false}, createErr: otherErr, wantErr: otherErr, wantCalls: "fpcf"},
		{name: "lost answer, the look fails", finds: []any{false, listErr}, createErr: otherErr, wantErr: otherErr, wantCalls: "fpcf"},
		{name: "cancelled context is not looked for", finds: []any{false}, createErr: otherErr, cancelled: true, wantErr: otherErr, wantCalls: "fpc"},
		{name: "own unknown and refind", finds: []any{false}, createErr: capErr, unknown: func(context.Context, error) bool { return true },
			refind: []any{true}, wantInst: existing, wantHow: Recovered, wantCalls: "fpcr"},
		{name: "own unknown says known", finds: []any{false}, createErr: otherErr, unknown: func(context.Context, error) bool { return false },
			wantErr: otherErr, wantCalls: "fpc"},
	}
	answer := func(a any) (cloudprovider.Instance, bool, error) {
		switch v := a.(type) {
		case bool:
			if v {
				return existing, true, nil
			}
			return cloudprovider.Instance{}, false, nil
		case error:
			return cloudprovider.Instance{}, false, v
		}
		panic("bad answer")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := ""
			finds, refinds := tt.finds, tt.refind
			s := Steps{
				Cloud: "c", Op: "creating", Name: "n",
				Find: func(context.Context) (cloudprovider.Instance, bool, error) {
					calls += "f"
					a := finds[0]
					finds = finds[1:]
					return answer(a)
				},
				Prepare: func(context.Context) error { calls += "p"; return tt.prepareErr },
				Create: func(context.Context) (cloudprovider.Instance, error) {
					calls += "c"
					if tt.cancelled {
						cancel()
					}
					if tt.createErr != nil {
						return cloudprovider.Instance{}, tt.createErr
					}
					return made, nil
				},
				Unknown: tt.unknown,
			}
			if refinds != nil {
				s.Refind = func(context.Context) (cloudprovider.Instance, bool, error) {
					calls += "r"
					a := refinds[0]
					refinds = refinds[1:]
					return answer(a)
				}
			}
			var g Group
			inst, how, err := g.Do(ctx, s)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if err == nil && (inst != tt.wantInst || how != tt.wantHow) {
				t.Errorf("got %+v (%v), want %+v (%v)", inst, how, tt.wantInst, tt.wantHow)
			}
			if calls != tt.wantCalls {
				t.Errorf("steps %q, want %q", calls, tt.wantCalls)
			}
			if len(g.names) != 0 {
				t.Errorf("%d locks left behind", len(g.names))
			}
		})
	}
}

// TestDoStorm runs many creates of one name at once: one creates, the others find its instance.
func TestDoStorm(t *testing.T) {
	var g Group
	var mu sync.Mutex
	var live []cloudprovider.Instance
	created := 0
	steps := Steps{
		Name: "storm",
		Find: func(context.Context) (cloudprovider.Instance, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if len(live) > 0 {
				return live[0], true, nil
			}
			return cloudprovider.Instance{}, false, nil
		},
		Create: func(context.Context) (cloudprovider.Instance, error) {
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			created++
			in := cloudprovider.Instance{ID: "i1", Name: "storm"}
			live = append(live, in)
			return in, nil
		},
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, _, err := g.Do(context.Background(), steps)
			if err != nil || inst.ID != "i1" {
				t.Errorf("got %+v, %v", inst, err)
			}
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Errorf("%d creates, want 1", created)
	}
	if len(g.names) != 0 {
		t.Errorf("%d locks left behind", len(g.names))
	}
}

func TestLock(t *testing.T) {
	var g Group
	unlock, err := g.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another name does not wait.
	unlockB, err := g.Lock(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	// The same name waits until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock of a held name: %v, want the context's deadline", err)
	}
	// ... and a create that gives up waiting is ErrOther of the cloud.
	_, _, err = g.Do(ctx, Steps{Cloud: "c", Op: "creating", Name: "a"})
	if cloudprovider.KindOf(err) != cloudprovider.ErrOther {
		t.Fatalf("Do while the name is held and ctx is over: %v, want ErrOther", err)
	}
	// A create keyed apart (a cluster named like a machine) does not wait for the name's lock.
	keyed, cancelKeyed := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelKeyed()
	got, how, err := Run(keyed, &g, StepsOf[string]{Cloud: "c", Op: "creating", Name: "a", Key: "cluster/a",
		Find:   func(context.Context) (string, bool, error) { return "", false, nil },
		Create: func(context.Context) (string, error) { return "cluster a", nil }})
	if err != nil || how != Created || got != "cluster a" {
		t.Fatalf("Run keyed apart while the name is held: %q %v %v", got, how, err)
	}
	done := make(chan struct{})
	go func() {
		u, err := g.Lock(context.Background(), "a")
		if err == nil {
			u()
		}
		close(done)
	}()
	time.Sleep(5 * time.Millisecond)
	unlock()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never got the lock")
	}
	if len(g.names) != 0 {
		t.Errorf("%d locks left behind", len(g.names))
	}
}

func TestFindByName(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	listed := []cloudprovider.Instance{
		{ID: "3", Name: "web-1", CreatedAt: t0.Add(time.Minute)},
		{ID: "9", Name: "web-10", CreatedAt: t0},
		{ID: "2", Name: "web-1", CreatedAt: t0.Add(2 * time.Minute)},
		{ID: "1", Name: "web-1", CreatedAt: t0.Add(3 * time.Minute), CloudStatus: "DELETING"},
	}
	var prefix string
	list := func(_ context.Context, p string) ([]cloudprovider.Instance, error) { prefix = p; return listed, nil }
	notDeleting := func(in cloudprovider.Instance) bool { return in.CloudStatus != "DELETING" }
	byID := func(a, b cloudprovider.Instance) bool { return a.ID < b.ID }
	tests := []struct {
		name   string
		find   string
		keep   func(cloudprovider.Instance) bool
		less   func(a, b cloudprovider.Instance) bool
		wantID string
	}{
		{"oldest of the exact name", "web-1", nil, nil, "3"},
		{"first by less", "web-1", nil, byID, "1"},
		{"kept only", "web-1", notDeleting, byID, "2"},
		{"none", "web-2", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, ok, err := FindByName(context.Background(), tt.find, list, tt.keep, tt.less)
			if err != nil || ok != (tt.wantID != "") || inst.ID != tt.wantID {
				t.Fatalf("got %q %v %v, want %q", inst.ID, ok, err, tt.wantID)
			}
			if prefix != tt.find {
				t.Errorf("listed prefix %q, want %q", prefix, tt.find)
			}
		})
	}
	boom := errors.New("boom")
	if _, _, err := FindByName(context.Background(), "x", func(context.Context, string) ([]cloudprovider.Instance, error) { return nil, boom }, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the listing's", err)
	}
}

// TestVolume checks the idempotent volume create: a volume of the name is returned without a create,
// one of another region is ErrInvalid, a create whose answer was lost is recovered by a second look,
// and a refused create is returned as it is.
func TestVolume(t *testing.T) {
	req := cloudprovider.VolumeRequest{Name: "pool-data--abcdefgh", Region: "r1"}
	lost := cloudprovider.Errorf(cloudprovider.ErrOther, "c", "creating volume", "502")
	refused := cloudprovider.Errorf(cloudprovider.ErrQuota, "c", "creating volume", "no quota")
	for _, tc := range []struct {
		name       string
		existing   []cloudprovider.Volume
		createErr  error
		madeAnyway bool
		wantID     string
		wantErr    bool
		wantKind   cloudprovider.ErrorKind
		creates    int
	}{
		{name: "new", wantID: "made", creates: 1},
		{name: "exists", existing: []cloudprovider.Volume{{ID: "old", Name: req.Name, Region: "r1"}}, wantID: "old"},
		{name: "a longer name is another volume", existing: []cloudprovider.Volume{{ID: "x", Name: req.Name + "-2", Region: "r1"}}, wantID: "made", creates: 1},
		{name: "exists in another region", existing: []cloudprovider.Volume{{ID: "old", Name: req.Name, Region: "r2"}}, wantErr: true, wantKind: cloudprovider.ErrInvalid},
		{name: "lost answer", createErr: lost, madeAnyway: true, wantID: "made", creates: 1},
		{name: "lost answer, nothing made", createErr: lost, wantErr: true, wantKind: cloudprovider.ErrOther, creates: 1},
		{name: "refused", createErr: refused, madeAnyway: true, wantErr: true, wantKind: cloudprovider.ErrQuota, creates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vols := append([]cloudprovider.Volume{}, tc.existing...)
			creates := 0
			list := func(_ context.Context, prefix string) ([]cloudprovider.Volume, error) {
				var out []cloudprovider.Volume
				for _, v := range vols {
					if strings.HasPrefix(v.Name, prefix) {
						out = append(out, v)
					}
				}
				return out, nil
			}
			create := func(context.Context) (cloudprovider.Volume, error) {
				creates++
				v := cloudprovider.Volume{ID: "made", Name: req.Name, Region: req.Region}
				if tc.createErr == nil || tc.madeAnyway {
					vols = append(vols, v)
				}
				if tc.createErr != nil {
					return cloudprovider.Volume{}, tc.createErr
				}
				return v, nil
			}
			var g Group
			v, err := g.Volume(context.Background(), "c", req, list, create)
			switch {
			case tc.wantErr && (err == nil || cloudprovider.KindOf(err) != tc.wantKind):
				t.Errorf("error %v, want kind %v", err, tc.wantKind)
			case !tc.wantErr && (err != nil || v.ID != tc.wantID):
				t.Errorf("volume %+v, %v; want %s", v, err, tc.wantID)
			}
			if creates != tc.creates {
				t.Errorf("%d creates, want %d", creates, tc.creates)
			}
		})
	}
}

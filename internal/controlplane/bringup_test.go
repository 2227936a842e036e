package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// fakeInspector answers health probes and marker reads as told, and records drains.
type fakeInspector struct {
	reasons   string
	healthErr error
	marker    Marker
	markerErr error
	drained   []string
	// drainBlocks makes Drain wait until its context ends.
	drainBlocks bool
}

func (f *fakeInspector) ProbeHealth(context.Context, cloudprovider.SSHEndpoint, string) (string, error) {
	return f.reasons, f.healthErr
}

func (f *fakeInspector) ReadMarker(context.Context, cloudprovider.SSHEndpoint, string) (Marker, string, error) {
	return f.marker, "ssh-ed25519 SEEN", f.markerErr
}

func (f *fakeInspector) Drain(ctx context.Context, inst cloudprovider.Instance, pool inventory.Pool, _ string, _ int, _ string) error {
	f.drained = append(f.drained, inst.Name+"@"+pool.Name)
	if f.drainBlocks {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// cancellingProvisioner cancels the operation during its first attempt (Ctrl-C while Ansible runs).
type cancellingProvisioner struct{ cancel context.CancelFunc }

func (cancellingProvisioner) Digest(inventory.Pool, map[string]any) (string, error) { return "d1", nil }

func (p cancellingProvisioner) Provision(ctx context.Context, _ cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.cancel()
	return cloudprovider.ProvisionResult{}, ctx.Err()
}

// poolProvisioner records the pools it provisioned for.
type poolProvisioner struct{ pools []string }

func (p *poolProvisioner) Digest(inventory.Pool, map[string]any) (string, error) { return "d2", nil }

func (p *poolProvisioner) Provision(_ context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	p.pools = append(p.pools, req.Pool.Name)
	return cloudprovider.ProvisionResult{HostKey: req.HostKey}, nil
}

// put stores a machine at the fake cloud as its Get will report it.
func (f *fakeBackend) put(inst cloudprovider.Instance) cloudprovider.Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.instances == nil {
		f.instances = map[string]cloudprovider.Instance{}
	}
	if inst.ID == "" {
		f.created++
		inst.ID = fmt.Sprintf("%s-%d", f.cloud, f.created)
	}
	inst.Cloud = f.cloud
	f.instances[inst.ID] = inst
	return inst
}

var testSSH = &cloudprovider.SSHEndpoint{Host: "127.0.0.1", Port: 22, User: "root"}

// checkRecord compares a record with the one wanted, leaving out its name, id and health's time.
func checkRecord(t *testing.T, got, want Record) {
	t.Helper()
	show := func(r Record) string {
		r.Name, r.ID, r.Health.CheckedAt = "", "", time.Time{}
		ssh := "no SSH"
		if r.SSH != nil {
			ssh = fmt.Sprintf("%+v", *r.SSH)
		}
		r.SSH = nil
		return fmt.Sprintf("%+v %s", r, ssh)
	}
	if show(got) != show(want) {
		t.Errorf("record\n %s\nwant\n %s", show(got), show(want))
	}
}

// BringUp takes a machine from created to ready, recording every step; each way it can end leaves a
// record a later apply can act on.
func TestBringUp(t *testing.T) {
	running := cloudprovider.Instance{Name: "verda-vm-x--abcdefgh", Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}
	cases := []struct {
		name string
		// cloud is what the cloud reports when read; inst what BringUp is handed.
		cloud, inst cloudprovider.Instance
		prov        func(cancel context.CancelFunc) cloudprovider.Provisioner
		wantErr     func(error) bool
		want        Record
		// wantSteps are the statuses saved, in order (repeats collapsed).
		wantSteps []cloudprovider.Status
		// cancelFirst cancels the context before BringUp starts (an interrupt during the boot wait).
		cancelFirst bool
	}{{
		name: "provisioning off: ready once it runs", cloud: running, inst: running,
		want:      Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusReady},
	}, {
		name:  "boots, then provisions (the cloud's host key is pinned)",
		cloud: cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH, HostKey: "ssh-ed25519 CLOUD"},
		inst:  cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusPending, CloudStatus: "booting"},
		prov:  func(context.CancelFunc) cloudprovider.Provisioner { return &poolProvisioner{} },
		want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH, HostKey: "ssh-ed25519 CLOUD", ProvisioningAttempts: 1,
			ProvisioningDigest: "d2", Health: Health{Status: HealthHealthy}},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusRunning, cloudprovider.StatusProvisioning, cloudprovider.StatusReady},
	}, {
		name: "provisioning passes at the second attempt", cloud: running, inst: running,
		prov: func(context.CancelFunc) cloudprovider.Provisioner { return &scriptedProvisioner{failures: 1} },
		want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH, HostKey: "ssh-ed25519 AAAA", ProvisioningAttempts: 2,
			ProvisioningDigest: "d1", Health: Health{Status: HealthHealthy}},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusProvisioning, cloudprovider.StatusReady},
	}, {
		name: "provisioning fails for good: error, with the failed task", cloud: running, inst: running,
		prov: func(context.CancelFunc) cloudprovider.Provisioner { return &scriptedProvisioner{failures: 99} },
		wantErr: func(err error) bool {
			var pf *ProvisioningFailedError
			return errors.As(err, &pf) && pf.Attempts == 3
		},
		want: Record{Status: cloudprovider.StatusError, CloudStatus: "running", SSH: testSSH, HostKey: "ssh-ed25519 AAAA", ProvisioningAttempts: 3,
			ProvisioningError: `host verda-vm-x--abcdefgh, task "check gpus": 2 GPUs, want 8`},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusProvisioning, cloudprovider.StatusError},
	}, {
		name:  "fails at the cloud while booting",
		cloud: cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusError, CloudStatus: "failed", Message: "injected fault"},
		inst:  cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusPending, CloudStatus: "booting"},
		wantErr: func(err error) bool {
			var be *BootError
			return errors.As(err, &be) && strings.Contains(err.Error(), "failed at the cloud: injected fault")
		},
		want:      Record{Status: cloudprovider.StatusError, CloudStatus: "failed"},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusError},
	}, {
		name: "interrupted while provisioning: still provisioning, resumable", cloud: running, inst: running,
		prov:      func(cancel context.CancelFunc) cloudprovider.Provisioner { return cancellingProvisioner{cancel} },
		wantErr:   func(err error) bool { return errors.Is(err, context.Canceled) },
		want:      Record{Status: cloudprovider.StatusProvisioning, CloudStatus: "running", SSH: testSSH, ProvisioningAttempts: 1},
		wantSteps: []cloudprovider.Status{cloudprovider.StatusProvisioning},
	}, {
		name:  "interrupted while booting: still pending, resumable, a BootError matching context.Canceled",
		cloud: cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusPending, CloudStatus: "booting"},
		inst:  cloudprovider.Instance{Name: running.Name, Status: cloudprovider.StatusPending, CloudStatus: "booting"},
		prov:  func(context.CancelFunc) cloudprovider.Provisioner { return &poolProvisioner{} },
		wantErr: func(err error) bool {
			var be *BootError
			return errors.As(err, &be) && errors.Is(err, context.Canceled)
		},
		want:        Record{Status: cloudprovider.StatusPending, CloudStatus: "booting"},
		wantSteps:   []cloudprovider.Status{cloudprovider.StatusPending},
		cancelFirst: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b := &fakeBackend{cloud: "verda"}
			inst := tc.inst
			inst.ID = b.put(tc.cloud).ID
			opts := fast
			opts.ProvisionBackoff = time.Millisecond
			if tc.prov != nil {
				opts.Provisioner = tc.prov(cancel)
			}
			cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, opts)
			rec := NewRecord(inst)
			if tc.cancelFirst {
				cancel()
			}
			var steps []cloudprovider.Status
			err := cp.BringUp(ctx, &rec, inst, BringUpSpec{Pool: inventory.Pool{Name: "verda-vm-pool"}}, func(r Record) {
				if len(steps) == 0 || steps[len(steps)-1] != r.Status {
					steps = append(steps, r.Status)
				}
			})
			if (tc.wantErr == nil) != (err == nil) || tc.wantErr != nil && !tc.wantErr(err) {
				t.Fatalf("BringUp: %v", err)
			}
			if fmt.Sprint(steps) != fmt.Sprint(tc.wantSteps) {
				t.Errorf("saved statuses %v, want %v", steps, tc.wantSteps)
			}
			if rec.Status == cloudprovider.StatusReady && rec.ReadyAt.IsZero() {
				t.Error("a ready machine has no ready_at")
			}
			if rec.Health.Status == HealthHealthy && !rec.Health.CheckedAt.Equal(rec.ReadyAt) {
				t.Errorf("health checked at %v, want the end of provisioning %v", rec.Health.CheckedAt, rec.ReadyAt)
			}
			got := rec
			got.ReadyAt = time.Time{}
			checkRecord(t, got, tc.want)
		})
	}
}

// Resume continues a machine a state holds from its cloud's view, in its own pool; a machine gone at
// the cloud is reported so.
func TestResume(t *testing.T) {
	ctx := context.Background()
	b := &fakeBackend{cloud: "sandbox"}
	inst := b.put(cloudprovider.Instance{Name: "sbx-ex-job--abcdefgh", Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH})
	prov := &poolProvisioner{}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{Provisioner: prov})
	rec := Record{Name: inst.Name, ID: inst.ID, Status: cloudprovider.StatusProvisioning, ProvisioningDigest: "old"}
	if err := cp.Resume(ctx, &rec, BringUpSpec{}, nil); err != nil {
		t.Fatal(err)
	}
	if rec.Status != cloudprovider.StatusReady || rec.ProvisioningDigest != "d2" || fmt.Sprint(prov.pools) != "[sandbox-execlet-pool]" {
		t.Errorf("resumed %+v, provisioned in %v; want ready with the new digest, in the machine's own pool", rec, prov.pools)
	}
	gone := Record{Name: "sbx-vm-gone--abcdefgh", ID: "sandbox-404"}
	if err := cp.Resume(ctx, &gone, BringUpSpec{}, nil); !cloudprovider.IsNotFound(err) {
		t.Errorf("Resume of a gone machine: %v, want not found", err)
	}
}

// Refresh follows the cloud and reads a ready machine's health; a machine that cannot be read is
// unknown, never unhealthy; with provisioning off nothing is probed.
func TestRefresh(t *testing.T) {
	unknown := fmt.Errorf("ssh: connection refused: %w", cloudprovider.ErrHealthUnknown)
	cases := []struct {
		name      string
		cloud     *cloudprovider.Instance // nil: gone
		status    cloudprovider.Status
		inspector *fakeInspector
		off       bool
		wantFound bool
		want      Record
	}{
		{name: "gone at the cloud", status: cloudprovider.StatusReady, inspector: &fakeInspector{}},
		{name: "terminated at the cloud", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusTerminated}, status: cloudprovider.StatusReady, inspector: &fakeInspector{}},
		{name: "healthy", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}, status: cloudprovider.StatusReady, inspector: &fakeInspector{},
			wantFound: true, want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH, Health: Health{Status: HealthHealthy}}},
		{name: "unhealthy, with the reasons", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}, status: cloudprovider.StatusReady,
			inspector: &fakeInspector{reasons: "Xid 79 since boot"}, wantFound: true,
			want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH, Health: Health{Status: HealthUnhealthy, Reason: "Xid 79 since boot"}}},
		{name: "unreachable: unknown", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}, status: cloudprovider.StatusReady,
			inspector: &fakeInspector{healthErr: unknown}, wantFound: true,
			want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH, Health: Health{Status: HealthUnknown, Reason: unknown.Error()}}},
		{name: "no SSH address: unknown", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running"}, status: cloudprovider.StatusReady, inspector: &fakeInspector{},
			wantFound: true, want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", Health: Health{Status: HealthUnknown, Reason: "the cloud reports no SSH address"}}},
		{name: "not ready: not probed", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}, status: cloudprovider.StatusRunning,
			inspector: &fakeInspector{reasons: "never asked"}, wantFound: true, want: Record{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}},
		{name: "provisioning off: not probed", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}, status: cloudprovider.StatusReady, off: true,
			inspector: &fakeInspector{reasons: "never asked"}, wantFound: true, want: Record{Status: cloudprovider.StatusReady, CloudStatus: "running", SSH: testSSH}},
		{name: "stopped at the cloud: pending again", cloud: &cloudprovider.Instance{Status: cloudprovider.StatusPending, CloudStatus: "starting"}, status: cloudprovider.StatusReady,
			inspector: &fakeInspector{}, wantFound: true, want: Record{Status: cloudprovider.StatusPending, CloudStatus: "starting"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{cloud: "verda"}
			rec := Record{Name: "verda-vm-x--abcdefgh", ID: "verda-404", Status: tc.status}
			if tc.cloud != nil {
				c := *tc.cloud
				c.Name = rec.Name
				rec.ID = b.put(c).ID
			}
			opts := Options{Inspector: tc.inspector, Provisioner: &poolProvisioner{}}
			if tc.off {
				opts.Provisioner = nil
			}
			cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, opts)
			found, err := cp.Refresh(context.Background(), &rec)
			if err != nil || found != tc.wantFound {
				t.Fatalf("Refresh = %v, %v; want found %v", found, err, tc.wantFound)
			}
			if !found {
				return
			}
			if tc.want.Health.Status != "" && rec.Health.CheckedAt.IsZero() {
				t.Error("health read but checked_at not set")
			}
			checkRecord(t, rec, tc.want)
		})
	}
}

// Import reads everything from the cloud-side name, the cloud and hydra's marker on the machine.
func TestImport(t *testing.T) {
	provisioned := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	cases := []struct {
		name       string
		inspector  *fakeInspector
		off        bool
		wantStatus cloudprovider.Status
		wantDigest string
		wantUnread bool
	}{
		{"marker: ready with its digest", &fakeInspector{marker: Marker{Digest: "d9", ProvisionedAt: provisioned}}, false, cloudprovider.StatusReady, "d9", false},
		{"no marker: running, provisioned by the next apply", &fakeInspector{markerErr: fmt.Errorf("cat: %w", cloudprovider.ErrNoMarker)}, false, cloudprovider.StatusRunning, "", false},
		{"marker unreadable: running, and why", &fakeInspector{markerErr: errors.New("ssh: handshake failed")}, false, cloudprovider.StatusRunning, "", true},
		{"provisioning off: ready once it runs", nil, true, cloudprovider.StatusReady, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{cloud: "verda"}
			inst := b.put(cloudprovider.Instance{Name: "verda-vm-trainer--abcdefgh", Region: "FIN-01", InstanceType: "1H100", GPUType: "h100", GPUCount: 1,
				PricePerHour: usd(2.49), Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH})
			opts := Options{Provisioner: &poolProvisioner{}}
			if tc.inspector != nil {
				opts.Inspector = tc.inspector
			}
			if tc.off {
				opts.Provisioner = nil
			}
			cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, opts)
			imp, found, err := cp.Import(context.Background(), inst.Name)
			if err != nil || !found {
				t.Fatalf("Import = %v, %v", found, err)
			}
			if imp.Resource != "trainer" || imp.Pool.Name != "verda-vm-pool" || imp.OfferID != "verda-vm-pool/FIN-01/1H100/ondemand@2.49" {
				t.Errorf("imported %q in %s as %s", imp.Resource, imp.Pool.Name, imp.OfferID)
			}
			r := imp.Record
			if r.Status != tc.wantStatus || r.ProvisioningDigest != tc.wantDigest || (imp.MarkerUnread != nil) != tc.wantUnread || r.ID != inst.ID {
				t.Errorf("record %+v, marker unread %v", r, imp.MarkerUnread)
			}
			if tc.wantDigest != "" && (!r.ReadyAt.Equal(provisioned) || r.HostKey != "ssh-ed25519 SEEN") {
				t.Errorf("a marked machine: ready_at %v, host key %q; want the marker's time and the key it presented", r.ReadyAt, r.HostKey)
			}
		})
	}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{&fakeBackend{cloud: "verda"}}, Options{})
	if _, found, err := cp.Import(context.Background(), "verda-vm-none"); found || err != nil {
		t.Errorf("Import of a machine that does not exist = %v, %v; want not found", found, err)
	}
	if err := cp.CheckImportID(context.Background(), "nowhere-x"); err == nil {
		t.Error("CheckImportID accepted a name of no configured pool")
	}
}

// Drain drains execlets only, and never for longer than its timeout.
func TestDrain(t *testing.T) {
	b := &fakeBackend{cloud: "sandbox"}
	in := &fakeInspector{drainBlocks: true}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{Provisioner: &poolProvisioner{}, Inspector: in})
	ctx := context.Background()
	cp.Drain(ctx, Record{Name: "sbx-vm-a--abcdefgh", SSH: testSSH}, "h100", 1, time.Hour)
	cp.Drain(ctx, Record{Name: "sbx-ex-b--abcdefgh"}, "h100", 1, time.Hour) // never reached: no address
	done := make(chan struct{})
	go func() {
		defer close(done)
		cp.Drain(ctx, Record{Name: "sbx-ex-c--abcdefgh", SSH: testSSH}, "h100", 1, 10*time.Millisecond)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain outlived its timeout")
	}
	if fmt.Sprint(in.drained) != "[sbx-ex-c--abcdefgh@sandbox-execlet-pool]" {
		t.Errorf("drained %v, want only the reachable execlet", in.drained)
	}
}

// PlannedDigest is the digest of the machine's pool, or of any pool of its kind; none with
// provisioning off.
func TestPlannedDigest(t *testing.T) {
	b := &fakeBackend{cloud: "sandbox"}
	on := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{Provisioner: &scriptedProvisioner{}})
	if d, err := on.PlannedDigest("", "execlet", nil); d != "d1" || err != nil {
		t.Errorf("PlannedDigest = %q, %v", d, err)
	}
	off := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, Options{})
	if d, err := off.PlannedDigest("sandbox-vm-pool", "vm", nil); d != "" || err != nil || off.Provisioning() {
		t.Errorf("with provisioning off: %q, %v (provisioning %v)", d, err, off.Provisioning())
	}
}

// preparingProvisioner records, with the statuses BringUp saves, when it was asked to prepare and to
// provision.
type preparingProvisioner struct {
	poolProvisioner
	events *[]string
}

func (p *preparingProvisioner) Prepare() { *p.events = append(*p.events, "prepare") }

func (p *preparingProvisioner) Provision(ctx context.Context, req cloudprovider.ProvisionRequest) (cloudprovider.ProvisionResult, error) {
	*p.events = append(*p.events, "provision")
	return p.poolProvisioner.Provision(ctx, req)
}

// A Provisioner that can prepare is asked to once, before BringUp waits for the machine to run (the
// check of its tools overlaps with the boot); one that cannot is simply not asked.
func TestBringUpPreparesBeforeTheWait(t *testing.T) {
	var events []string
	b := &fakeBackend{cloud: "verda"}
	inst := cloudprovider.Instance{Name: "verda-vm-x--abcdefgh", Status: cloudprovider.StatusPending, CloudStatus: "booting"}
	inst.ID = b.put(cloudprovider.Instance{Name: inst.Name, Status: cloudprovider.StatusRunning, CloudStatus: "running", SSH: testSSH}).ID
	opts := fast
	opts.Provisioner = &preparingProvisioner{events: &events}
	cp := New(testInventory(t), []cloudprovider.InstanceManagerBackend{b}, opts)
	rec := NewRecord(inst)
	err := cp.BringUp(context.Background(), &rec, inst, BringUpSpec{Pool: inventory.Pool{Name: "verda-vm-pool"}}, func(r Record) {
		if len(events) == 0 || events[len(events)-1] != string(r.Status) {
			events = append(events, string(r.Status))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(events, " "), "prepare running provisioning provision ready"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

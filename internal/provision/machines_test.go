package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"reflect"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/osproc"
	"github.com/hydragpu/terraform-provider-hydra/internal/sandbox/simhost"
	"github.com/hydragpu/terraform-provider-hydra/internal/testsupport/sshtest"
	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

// checkContainerMachine checks a container without systemd (its systemctl refuses to work), an H100
// HGX's eight GPUs, that the fleet run (TestFleetOneMachineFails) brought to ready: no driver, Fabric
// Manager or unit was touched, the exporters run as processes on loopback, and the marker says so. The
// same machine then gets faults only the final health check sees (NVLink down, the fabric not
// initialised, a dead exporter), which must fail a run of its own, each one named.
func checkContainerMachine(t *testing.T, m *fleetMachine, started time.Time) {
	t.Helper()
	f := m.f
	ctx := context.Background()
	m2 := checkMarker(t, f, inventory.KindVM, nil, f.ep.HostKey, started)
	want := MarkerMachine{Virtualization: "container", Systemd: false, Driver: simhost.DefaultDriverVersion,
		Exporters: MarkerExporters{Address: "127.0.0.1", NodeExporter: "process", DCGMExporter: "process"}}
	got := *m2.Machine
	if got.HealthSpec["expect_count"] != float64(8) || got.HealthSpec["dcgm_diag_level"] != float64(0) {
		t.Errorf("marker's health criteria %v: want the run's, without the DCGM diagnostic", got.HealthSpec)
	}
	got.HealthSpec = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("marker's machine record %+v, want %+v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(f.ep.Dir, "run", "systemctl-refused.log")); err == nil {
		t.Errorf("the playbooks called systemctl in a container:\n%s", b)
	}
	for _, task := range []string{"Run Fabric Manager", "Run nvidia-persistenced", "Enable and start DCGM", "Reboot"} {
		if regexp.MustCompile(`task ok .*` + regexp.QuoteMeta(task)).MatchString(m.rec.String()) {
			t.Errorf("%q ran in a container", task)
		}
	}
	if _, err := os.Stat(filepath.Join(f.ep.Dir, "run", "nv-hostengine.pid")); err != nil {
		t.Errorf("DCGM's host engine was not started: %v", err)
	}
	checkRecorded(t, filepath.Join(f.ep.Dir, "run", "node-exporter.args"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", f.ep.NodeExporterPort))
	checkRecorded(t, filepath.Join(f.ep.Dir, "run", "dcgm-exporter.args"), fmt.Sprintf("--address=127.0.0.1:%d", f.ep.DCGMExporterPort))
	for _, port := range []int{f.ep.NodeExporterPort, f.ep.DCGMExporterPort} {
		if err := scrape(port); err != nil {
			t.Error(err)
		}
	}

	// Faults the early GPU check cannot see, all in one run (the machine's own: no batch to wait for).
	for name, content := range map[string]string{
		simhost.FaultNVLinkDown: "3 0 1", simhost.FaultFabric: "in_progress", simhost.FaultExporterDead: "dcgm",
	} {
		if err := simhost.SetFault(f.ep.Dir, name, content); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Config{PrivateKey: f.runner.cfg.PrivateKey, TempDir: f.tmpBase, BatchWindow: -1,
		SSHWaitTimeout: 30 * time.Second, SSHPollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"hydra_health_fabric_wait_seconds": 0, "hydra_health_exporters_wait_seconds": 0}
	again := &logRecorder{}
	res, err := r.Provision(ctx, fixture{runner: r, ep: f.ep}.request(inventory.KindVM, "h100", 8, f.ep.HostKey, vars, again))
	var te *TaskError
	if !errors.As(err, &te) || te.Task != "health : Check the machine is healthy" {
		t.Fatalf("want a failed health check, got %v\nlog:\n%s", err, again)
	}
	t.Logf("error: %v", err)
	for _, want := range []string{
		"unhealthy (fabric, nvlink, exporters)",
		"nvlink: GPU 3 has NVLink(s) down: 0, 1",
		"fabric: the NVSwitch fabric has not finished initialising on GPU(s) 0, 1, 2, 3, 4, 5, 6, 7 (state In Progress)",
		fmt.Sprintf("exporters: dcgm-exporter: http://127.0.0.1:%d/metrics does not answer: HTTP Error 503", f.ep.DCGMExporterPort),
	} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	if strings.Contains(again.String(), "changed:true role:monitoring") {
		t.Errorf("the exporters' processes were started again:\n%s", again)
	}

	// The processes the playbooks started end with the machine.
	pids := pidFiles(t, filepath.Join(f.ep.Root, "run", "hydra"))
	if len(pids) != 2 {
		t.Fatalf("pid files of the exporters: %v", pids)
	}
	if err := simhost.Stop(f.ep.Dir); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if osproc.Alive(pid) {
			t.Errorf("process %d outlived the machine", pid)
		}
	}
}

// TestCheckModeChangesNothing: the playbooks run clean in --check on a fresh machine (every layer,
// Fabric Manager and an empty block volume and a shared file system included) and change nothing on it.
func TestCheckModeChangesNothing(t *testing.T) {
	t.Parallel()
	v := newSandboxVolumes(t)
	f := newFixture(t, simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 8, Volumes: v.vols}, Config{})
	before := tree(t, f.ep.Root)
	f.runner.checkMode = true
	rec := &logRecorder{}
	// The cloud writes an interruption notice file: the watcher and the hook would be installed.
	vars := volumeUses([]cloudprovider.Attachment{v.block, v.nfs})
	vars["interruption_hook"] = "#!/bin/sh\necho hook\n"
	req := f.request(inventory.KindExeclet, "h100", 8, "", vars, rec)
	req.Volumes = []cloudprovider.Attachment{v.block, v.nfs}
	req.Signal = cloudprovider.InterruptionSignal{Path: "/var/lib/cloud/SIGNAL.yml", Format: cloudprovider.SignalStatusYAML}
	if _, err := f.runner.Provision(context.Background(), req); err != nil {
		t.Fatalf("--check: %v\nlog:\n%s", err, rec)
	}
	if after := tree(t, f.ep.Root); !slices.Equal(before, after) {
		t.Errorf("--check changed the machine:\nbefore %v\nafter  %v", before, after)
	}
	checkVolumesUnchanged(t, v, f.ep.Root, rec)
	for _, want := range []string{
		// --diff: the modules say what they would change.
		"changed:true diff:[new file] role:monitoring task:monitoring : Set node_exporter's listen address",
		"changed:true diff:[" + filepath.Join(f.ep.Root, "etc/hydra") + "] role:execlet task:execlet : Make hydra's configuration directory",
		"task ok map[changed:false msg:healthy",
		"changed:true diff:[new file] role:interruption_watch task:interruption_watch : Write the interruption hook",
	} {
		if !strings.Contains(rec.String(), want) {
			t.Errorf("--check events lack %q:\n%s", want, rec)
		}
	}
	// The agent's arguments may be secret: their file is never diffed.
	if strings.Contains(rec.String(), "execlet.env") {
		t.Errorf("--check --diff events name the agent's arguments file:\n%s", rec)
	}
}

// TestHealthProbeNamesEachFault runs the health probe (files/health_probe.py, the one place the health
// criteria live) alone over SSH, as a read-only probe of a ready machine would, once per fault.
func TestHealthProbeNamesEachFault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, simhost.Spec{GPUModel: simhost.NVIDIAName("h100"), GPUCount: 8}, Config{})
	script, err := fs.ReadFile(playbooks.FS, "files/health_probe.py")
	if err != nil {
		t.Fatal(err)
	}
	client := sshClient(t, f)
	spec, _ := json.Marshal(map[string]any{
		"checks": []string{"all"}, "expect_count": 8, "expect_model": `\bH100\b`, "gpu_type": "h100",
		"nvswitch": true, "persistence": true, "units": []string{"nvidia-fabricmanager.service", "nvidia-dcgm.service"},
		"dcgm_diag_level": 2, "fabric_wait": 0, "exporters_wait": 0, "smi_timeout": 3,
		"exporters": []map[string]any{
			{"name": "node_exporter", "port": f.ep.NodeExporterPort, "need": "node_"},
			{"name": "dcgm-exporter", "port": f.ep.DCGMExporterPort, "need": "DCGM_FI_DEV_GPU_TEMP"},
		},
	})
	type verdict struct {
		Verdict string            `json:"verdict"`
		Failed  []string          `json:"failed"`
		Reasons []string          `json:"reasons"`
		Checks  map[string]string `json:"checks"`
	}
	probe := func(t *testing.T) verdict {
		t.Helper()
		out, err := sshtest.Output(client, "python3 - "+shellQuote(string(spec)), script)
		var v verdict
		if jerr := json.Unmarshal([]byte(out), &v); jerr != nil {
			t.Fatalf("probe output %q (%v): %v", out, err, jerr)
		}
		return v
	}
	if v := probe(t); v.Verdict != "healthy" || len(v.Checks) != 16 {
		t.Fatalf("a healthy machine: %+v", v)
	}
	tests := []struct {
		fault, content string
		check, want    string
	}{
		{simhost.FaultGPULost, "2", "gpu_lost", "GPU 00000000:38:00.0 fell off the bus"},
		// H100s remap rows: NVIDIA's memory-error guide judges them on remapped_rows, not the ECC counters.
		{simhost.FaultECCVolatile, "1 2", "", ""},
		{simhost.FaultECCAggregate, "3", "", ""},
		{simhost.FaultXid, "4 79", "xid", "Xid 79 on 0000:58:00 since boot (GPU has fallen off the bus)"},
		{simhost.FaultXid, "4 13", "", ""}, // an application's error (catalog: restart the application): healthy
		{simhost.FaultXid, "4 94", "", ""}, // a contained ECC error (catalog: restart the application): healthy
		{simhost.FaultXid, "4 95", "xid", "Xid 95 on 0000:58:00 since boot (Uncontained: FBHUB"},
		{simhost.FaultXidForeign, "0000:e1:00.0 79", "", ""}, // another tenant's GPU
		{simhost.FaultRecoveryAction, "2 Reset", "recovery_action", "GPU 2 (00000000:38:00.0): the driver asks for a recovery action: Reset"},
		{simhost.FaultPCIeWidth, "3 8", "pcie", "GPU 3 (00000000:48:00.0): its PCIe link runs at x8 of x16"},
		{simhost.FaultSMIHang, "1", "nvidia_smi", "nvidia-smi did not answer within 3 s"},
		{simhost.FaultRemappedRows, "5 pending", "remapped_rows", "GPU 5 (00000000:68:00.0): a row remapping is pending"},
		{simhost.FaultRemappedRows, "5 failure", "remapped_rows", "GPU 5 (00000000:68:00.0): a row remapping failed"},
		{simhost.FaultNVLinkDown, "6 2", "nvlink", "GPU 6 has NVLink(s) down: 2"},
		{simhost.FaultFabric, "not_started", "fabric", "the NVSwitch fabric has not finished initialising on GPU(s) 0, 1, 2, 3, 4, 5, 6, 7 (state Not Started)"},
		{simhost.FaultFabric, "failure", "fabric", "the NVSwitch fabric failed to initialise on GPU(s) 0, 1, 2, 3, 4, 5, 6, 7 (status Failure)"},
		{simhost.FaultExporterDead, "node", "exporters", "node_exporter: http://127.0.0.1:" + strconv.Itoa(f.ep.NodeExporterPort) + "/metrics does not answer"},
		{"", "565.57.01", "nvidia_smi", "nvidia-smi does not work (exit code 18): Failed to initialize NVML: Driver/library version mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.fault+"/"+tc.content, func(t *testing.T) {
			if tc.fault == "" {
				err = simhost.SetLoadedDriver(f.ep.Dir, tc.content)
			} else {
				err = simhost.SetFault(f.ep.Dir, tc.fault, tc.content)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := simhost.ClearFaults(f.ep.Dir); err != nil {
					t.Fatal(err)
				}
			}()
			v := probe(t)
			if tc.check == "" {
				if v.Verdict != "healthy" {
					t.Errorf("want healthy, got %+v", v)
				}
				return
			}
			if v.Verdict != "unhealthy" || !slices.Contains(v.Failed, tc.check) || !strings.Contains(strings.Join(v.Reasons, "\n"), tc.check+": "+tc.want) {
				t.Errorf("want %s: %s, got %+v", tc.check, tc.want, v)
			}
		})
	}
	t.Run("kernel log unreadable", func(t *testing.T) {
		if err := simhost.SetFault(f.ep.Dir, simhost.FaultKernelLogUnreadable, "1"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := simhost.ClearFaults(f.ep.Dir); err != nil {
				t.Fatal(err)
			}
		}()
		// Never healthy when the Xids cannot be read: unknown, naming what could not be read.
		if v := probe(t); v.Verdict != "unknown" || !strings.HasPrefix(v.Checks["xid"], "unknown: the kernel log could not be read") {
			t.Errorf("want unknown (xid), got %+v", v)
		}
	})
	if v := probe(t); v.Verdict != "healthy" {
		t.Errorf("the mended machine: %+v", v)
	}
}

// sshClient logs in to the fixture's machine with the provisioning key, its host key pinned.
func sshClient(t *testing.T, f fixture) *ssh.Client {
	t.Helper()
	signer, err := ssh.ParsePrivateKey(f.runner.cfg.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sshtest.Login{Addr: net.JoinHostPort(f.ep.Host, strconv.Itoa(f.ep.Port)), User: f.ep.User, Signer: signer,
		HostKey: f.ep.HostKey, Timeout: 10 * time.Second}.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // best-effort: the test is over
	return c
}

func scrape(port int) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(b) == 0 {
		return fmt.Errorf("port %d: HTTP %d %q", port, resp.StatusCode, b)
	}
	return nil
}

// pidFiles reads the pids of every *.pid file in dir.
func pidFiles(t *testing.T, dir string) []int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var pids []int
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// tree lists every file and directory under root with its size and modification time.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out = append(out, rel+"/")
		} else {
			out = append(out, fmt.Sprintf("%s %d %d", rel, fi.Size(), fi.ModTime().UnixNano()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package simhost

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hydragpu/terraform-provider-hydra/playbooks"
)

// probeVerdict is the health probe's JSON verdict (playbooks/files/health_probe.py).
type probeVerdict struct {
	Verdict string            `json:"verdict"`
	Failed  []string          `json:"failed"`
	Reasons []string          `json:"reasons"`
	Unknown []string          `json:"unknown"`
	Checks  map[string]string `json:"checks"`
}

// TestHealthVerdictsOnRecordings runs the health probe (the one place hydra's health criteria live)
// against the stand-ins replaying real recorded GPUs (standins/recordings), case by case, with the
// verdict NVIDIA's documents give for each: the Xid catalog's recommended action, the memory-error
// guide's row-remapping flags, NVML's recovery action.
func TestHealthVerdictsOnRecordings(t *testing.T) {
	// The probe runs as on a machine: its python3 and its PATH (the stand-ins, then the system's),
	// not a version manager's shim from the test's PATH, with -S as the health roles and
	// provision's ProbeHealth start it.
	python, err := machinePython()
	if err != nil {
		t.Skip(err)
	}
	probe, err := playbooks.FS.ReadFile("files/health_probe.py")
	if err != nil {
		t.Fatal(err)
	}
	type fault struct{ name, content string }
	tests := []struct {
		name       string
		model      string
		count      int
		recording  string // gpus.json "recording": "" chooses by the model
		container  bool
		faults     []fault
		spec       map[string]any
		verdict    string
		failed     []string // every failed check, in the probe's order
		reason     string   // a substring of the reasons (or of the unknown list)
		checkState map[string]string
		// smiCalls, when set, is how many times the probe may start nvidia-smi (each start initialises
		// NVML again: on a real machine with 8 GPUs a fraction of a second).
		smiCalls int
	}{
		// The basic query, the checks' fields in one query, the fabric, NVLink.
		{name: "H100 HGX as recorded", model: "NVIDIA H100 80GB HBM3", count: 8, verdict: "healthy", smiCalls: 4},
		{name: "H200 as recorded", model: "NVIDIA H200", count: 8, verdict: "healthy"},
		{name: "L40S as recorded", model: "NVIDIA L40S", count: 4, verdict: "healthy", smiCalls: 2,
			checkState: map[string]string{"fabric": "skipped: no NVSwitch on this machine", "nvlink": "skipped: no NVSwitch on this machine"}},
		// Xid catalog (Resolution Bucket, Immediate Action): 94 (contained ECC) and 13 (graphics engine
		// exception) are RESTART_APP; 45 follows another Xid (IGNORE when not solo); 92 (high single-bit
		// ECC rate) and 157 (resource retirement failure) are IGNORE.
		{name: "Xid 94 contained ECC", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "2 94"}}, verdict: "healthy"},
		{name: "Xid 13 application", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "2 13"}}, verdict: "healthy"},
		{name: "Xid 45 and 92 and 157", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "2 45\n3 92\n4 157"}}, verdict: "healthy"},
		// RESET_GPU in the catalog: unhealthy, each on its own GPU (109 is a recorded line, gpud-46).
		{name: "Xid 109 context switch timeout", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "2 45\n3 109"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 109 on 0000:48:00 since boot (Ch 00000008, errorString CTX SWITCH TIMEOUT"},
		{name: "Xid 110 security fault", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "1 110"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 110 on 0000:28:00 since boot (Security Fault Error)"},
		{name: "Xid 136 link training", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "2 136"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 136 on 0000:38:00 since boot (Link Training Failed)"},
		{name: "Xid 143 GPU initialization", model: "NVIDIA H200", count: 8, faults: []fault{{FaultXid, "4 143"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 143 on 0000:58:00 since boot (GPU Initialization Error)"},
		{name: "Xid 155 NVLink SW defined", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "5 155"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 155 on 0000:68:00 since boot (NVLINK: SW Defined Error)"},
		{name: "Xid 156 resource retirement", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "6 156"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 156 on 0000:78:00 since boot (Resource Retirement Event)"},
		{name: "Xid 120 GSP error", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "3 120"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 120 on 0000:48:00 since boot (GSP task exception: store access page fault"},
		{name: "Xid 158 GPU fatal timeout", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "7 158"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 158 on 0000:88:00 since boot (GPU Fatal Timeout)"},
		// CHECK_MECHANICALS (a repair) and RESTART_VM (a reboot of the VM).
		{name: "Xid 54 auxiliary power", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "0 54"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 54 on 0000:18:00 since boot (Auxiliary power is not connected"},
		{name: "Xid 151 key rotation", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "0 151"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "xid: Xid 151 on 0000:18:00 since boot (Key rotation Error)"},
		// 63 records a row remapping: the machine is judged on remapped_rows (pending: reset).
		{name: "Xid 63 alone", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "1 63"}}, verdict: "healthy"},
		{name: "Xid 63 with the remapping pending", model: "NVIDIA H100 80GB HBM3", count: 8,
			faults:  []fault{{FaultXid, "1 63"}, {FaultRemappedRows, "1 pending"}},
			verdict: "unhealthy", failed: []string{"remapped_rows"}, reason: "GPU 1 (00000000:28:00.0): a row remapping is pending, the GPU needs a reset"},
		{name: "row remapping failed", model: "NVIDIA H200", count: 8, faults: []fault{{FaultRemappedRows, "4 failure"}},
			verdict: "unhealthy", failed: []string{"remapped_rows"}, reason: "a row remapping failed, the GPU needs repair"},
		{name: "Xid 95 uncontained ECC", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "5 95"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "Xid 95 on 0000:68:00 since boot"},
		{name: "Xid 46 GPU stopped processing", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "1 46"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "Xid 46 on 0000:28:00 since boot"},
		{name: "Xid 79 fallen off the bus", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "0 79"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "Xid 79 on 0000:18:00 since boot (GPU has fallen off the bus)"},
		{name: "Xid 154 recovery action", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultXid, "3 154"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "Xid 154 on 0000:48:00"},
		{name: "Xid 145 NVLink 5 non-fatal", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "3 145"}}, verdict: "healthy"},
		// XID 144-150 Decode: NETIR_LINK_EVT subcode 38 is logged Fatal, its immediate action IGNORE
		// (recorded, gpud-1160); subcode 37 (gpud-1174, the case above) is RESET_GPU.
		{name: "Xid 149 Fatal whose catalog action is IGNORE", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "3 149 gpud-1160"}}, verdict: "healthy"},
		{name: "Xid 144 NVLink 5 non-fatal", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "1 144"}}, verdict: "healthy"},
		{name: "Xid 149 NVLink 5 fatal", model: "NVIDIA B200", count: 8, faults: []fault{{FaultXid, "3 149"}},
			verdict: "unhealthy", failed: []string{"xid"}, reason: "Xid 149 on 0000:48:00 since boot (NETIR_LINK_EVT Fatal"},
		// Memory-error guide: GPUs that remap rows are not judged on the lifetime ECC counters.
		{name: "H100 lifetime ECC repaired by remapping", model: "NVIDIA H100 80GB HBM3", count: 8,
			faults: []fault{{FaultECCAggregate, "2 7"}, {FaultECCVolatile, "3 1"}}, verdict: "healthy"},
		{name: "recovery action", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultRecoveryAction, "6 Drain and Reset"}},
			verdict: "unhealthy", failed: []string{"recovery_action"}, reason: "GPU 6 (00000000:78:00.0): the driver asks for a recovery action: Drain and Reset"},
		{name: "PCIe link downgraded", model: "NVIDIA L40S", count: 2, faults: []fault{{FaultPCIeWidth, "1 8"}},
			verdict: "unhealthy", failed: []string{"pcie"}, reason: "its PCIe link runs at x8 of x16"},
		{name: "fabric still initialising, NVLink down", model: "NVIDIA H100 80GB HBM3", count: 8,
			faults:  []fault{{FaultFabric, "in_progress"}, {FaultNVLinkDown, "2 5"}},
			verdict: "unhealthy", failed: []string{"fabric", "nvlink"}, reason: "state In Progress"},
		// NVML's own line for a GPU whose every link is down (recorded on a B200, gpud issue 1085).
		{name: "B200 with every NVLink of a GPU down", model: "NVIDIA B200", count: 8, faults: []fault{{FaultNVLinkDown, "2 all"}},
			verdict: "unhealthy", failed: []string{"nvlink"}, reason: "nvlink: GPU 2 has every NVLink down (NVML: all links are inActive)"},
		// GB200/GB300 compute trays: no NVSwitch of their own, judged on their GPUs' fabric state (the H100
		// recording's fabric fields, as a GB200 machine replays it; faults as recorded on GB200 trays).
		{name: "GB200 tray as recorded", model: "NVIDIA GB200", count: 4, spec: map[string]any{"nvlink_domain": true},
			verdict: "healthy", checkState: map[string]string{"fabric": "ok", "nvlink": "ok"}},
		{name: "GB200 tray, fabric health unhealthy", model: "NVIDIA GB200", count: 4, spec: map[string]any{"nvlink_domain": true},
			faults:  []fault{{FaultFabric, "unhealthy"}},
			verdict: "unhealthy", failed: []string{"fabric"}, reason: "fabric: the NVLink fabric reports GPU(s) 0, 1, 2, 3 unhealthy"},
		{name: "GB200 tray, insufficient resources", model: "NVIDIA GB200", count: 4, spec: map[string]any{"nvlink_domain": true},
			faults:  []fault{{FaultFabric, "insufficient_resources"}},
			verdict: "unhealthy", failed: []string{"fabric"}, reason: "(status Insufficient Resources)"},
		{name: "GB300 tray, fabric not started", model: "NVIDIA GB300", count: 4, spec: map[string]any{"nvlink_domain": true},
			faults:  []fault{{FaultFabric, "not_started"}},
			verdict: "unhealthy", failed: []string{"fabric"}, reason: "state Not Started); is the rack's Fabric Manager running?"},
		{name: "B200 fabric failed", model: "NVIDIA B200", count: 8, faults: []fault{{FaultFabric, "failure"}},
			verdict: "unhealthy", failed: []string{"fabric"}, reason: "(status Failure)"},
		{name: "GPU lost", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultGPULost, "7"}},
			verdict: "unhealthy", failed: []string{"gpu_lost", "gpu_count", "xid"}, reason: "GPU 00000000:88:00.0 fell off the bus"},
		{name: "nvidia-smi hangs", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultSMIHang, "1"}},
			spec: map[string]any{"smi_timeout": 2}, verdict: "unhealthy", failed: []string{"nvidia_smi"}, reason: "did not answer within 2 s"},
		// A pod reads its host's whole kernel log: another tenant's Xid is not this machine's.
		{name: "another tenant's Xid", model: "NVIDIA H100 80GB HBM3", count: 2, container: true,
			faults: []fault{{FaultXidForeign, "0000:c1:00.0 79"}}, verdict: "healthy"},
		{name: "kernel log unreadable", model: "NVIDIA H100 80GB HBM3", count: 8, faults: []fault{{FaultKernelLogUnreadable, "1"}},
			verdict: "unknown", reason: "xid: the kernel log could not be read"},
		{name: "kernel log unreadable in a pod", model: "NVIDIA H100 80GB HBM3", count: 2, container: true,
			faults: []fault{{FaultKernelLogUnreadable, "1"}}, verdict: "healthy",
			checkState: map[string]string{"xid": "skipped: the kernel log cannot be read in this container (journalctl -k -b: no entries; dmesg: dmesg: read kernel buffer failed: Operation not permitted)"}},
		// Older recordings (nvidia-smi -q -x of driver 510.47.03): a P100 without row remapping is judged
		// on its ECC counters; the A100 under MIG reports no remapping and no fabric fields.
		{name: "P100 as recorded", model: "Tesla P100-PCIE-16GB", count: 1, verdict: "healthy",
			checkState: map[string]string{"recovery_action": "skipped: not reported by this driver", "remapped_rows": "skipped: not reported by these GPUs or this driver (no row remapping, or MIG)"}},
		{name: "P100 uncorrectable ECC", model: "Tesla P100-PCIE-16GB", count: 1, faults: []fault{{FaultECCVolatile, "0 2"}},
			verdict: "unhealthy", failed: []string{"ecc_volatile"}, reason: "GPU 0 (00000000:18:00.0): 2 uncorrectable ECC error(s) since the driver loaded"},
		{name: "P100 lifetime ECC", model: "Tesla P100-PCIE-16GB", count: 1, faults: []fault{{FaultECCAggregate, "0 3"}},
			verdict: "unhealthy", failed: []string{"ecc_aggregate"}, reason: "3 uncorrectable ECC error(s) over its life"},
		// The units hydra runs, asked of systemctl in one call: each named by its own state.
		{name: "units running", model: "NVIDIA L40S", count: 4, verdict: "healthy",
			spec:       map[string]any{"units": []string{"nvidia-persistenced.service", "nvidia-dcgm.service"}},
			checkState: map[string]string{"units": "ok"}},
		{name: "a unit not running among running ones", model: "NVIDIA L40S", count: 4, verdict: "unhealthy", failed: []string{"units"},
			spec:   map[string]any{"units": []string{"nvidia-persistenced.service", "apt-daily.service", "nvidia-dcgm.service", "hydra-execlet.service"}},
			reason: "units: apt-daily.service is inactive\nunits: hydra-execlet.service is inactive"},
		{name: "A100 MIG, fabric from Fabric Manager's unit", model: "NVIDIA A100-SXM4-40GB", count: 8, recording: "netdata-a100-sxm4-mig.xml", verdict: "healthy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := writeMachineFiles(dir, Spec{GPUModel: tc.model, GPUCount: tc.count, Container: tc.container}); err != nil {
				t.Fatal(err)
			}
			if tc.recording != "" {
				cfgPath := filepath.Join(dir, gpusFile)
				var cfg map[string]any
				b, err := os.ReadFile(cfgPath)
				if err == nil {
					err = json.Unmarshal(b, &cfg)
				}
				if err != nil {
					t.Fatal(err)
				}
				cfg["recording"] = tc.recording
				b, _ = json.Marshal(cfg)
				if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.faults {
				if err := SetFault(dir, f.name, f.content); err != nil {
					t.Fatal(err)
				}
			}
			spec := map[string]any{"checks": []string{"all"}, "expect_count": tc.count, "nvswitch": DefaultNVSwitch(tc.model, tc.count),
				"persistence": !tc.container, "container": tc.container, "fabric_wait": 0, "exporters_wait": 0, "dcgm_diag_level": 0}
			for k, v := range tc.spec {
				spec[k] = v
			}
			js, _ := json.Marshal(spec)
			// nvidia-smi is counted on its way to the stand-in.
			counting, calls := filepath.Join(dir, "counting"), filepath.Join(dir, "smi-calls")
			if err := os.MkdirAll(counting, 0o755); err != nil {
				t.Fatal(err)
			}
			wrapper := "#!/bin/sh\necho \"$*\" >> '" + calls + "'\nexec '" + filepath.Join(dir, "bin", "nvidia-smi") + "' \"$@\"\n"
			if err := os.WriteFile(filepath.Join(counting, "nvidia-smi"), []byte(wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(python, "-S", "-", string(js))
			cmd.Stdin = strings.NewReader(string(probe))
			cmd.Env = append(os.Environ(), "PATH="+counting+":"+filepath.Join(dir, "bin")+":"+systemPath)
			out, err := cmd.Output()
			if tc.smiCalls > 0 {
				b, _ := os.ReadFile(calls)
				if n := strings.Count(string(b), "\n"); n > tc.smiCalls {
					t.Errorf("the probe started nvidia-smi %d times, want at most %d:\n%s", n, tc.smiCalls, b)
				}
			}
			var v probeVerdict
			if jerr := json.Unmarshal(out, &v); jerr != nil {
				t.Fatalf("probe output %q (%v): %v", out, err, jerr)
			}
			if v.Verdict != tc.verdict || !slices.Equal(v.Failed, tc.failed) && (len(tc.failed) != 0 || len(v.Failed) != 0) {
				t.Fatalf("verdict %s %v, want %s %v\nreasons: %v\nunknown: %v\nchecks: %v", v.Verdict, v.Failed, tc.verdict, tc.failed, v.Reasons, v.Unknown, v.Checks)
			}
			if text := strings.Join(append(v.Reasons, v.Unknown...), "\n"); !strings.Contains(text, tc.reason) {
				t.Errorf("reasons %q lack %q", text, tc.reason)
			}
			for check, want := range tc.checkState {
				if v.Checks[check] != want {
					t.Errorf("check %s: %q, want %q", check, v.Checks[check], want)
				}
			}
		})
	}
}

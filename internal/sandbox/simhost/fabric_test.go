package simhost

import (
	"strings"
	"testing"
)

// TestFabricStandins: a machine with a fabric lists the recorded ConnectX-7 adapters (ibstat,
// ibv_devinfo) with ib_port_down as a minimal edit; mpirun runs all_reduce_perf with the hostfile and
// -x variables, whose recorded average bus bandwidth nccl_busbw rescales; a machine without a fabric
// has no InfiniBand tools.
func TestFabricStandins(t *testing.T) {
	dir, _, ep, signer := startMachine(t, Spec{GPUModel: NVIDIAName("h100"), GPUCount: 8, Fabric: true})
	sh := func(cmd string) string {
		t.Helper()
		out, err := run(t, ep, signer, cmd)
		if err != nil {
			t.Fatalf("%s: %v (%q)", cmd, err, out)
		}
		return out
	}
	if got := strings.Count(sh("ibstat"), "State: Active"); got != 9 {
		t.Errorf("ibstat: %d ports Active, want the recorded 9", got)
	}
	if out := sh("ibstat -l"); !strings.HasPrefix(out, "mlx5_0\nmlx5_1\nmlx5_4\n") {
		t.Errorf("ibstat -l: %q", out)
	}
	if out := sh("ibv_devinfo | grep -c 'PORT_ACTIVE (4)'"); out != "8\n" {
		t.Errorf("ibv_devinfo: %q ports active, want the recorded 8", out)
	}

	if err := SetFault(dir, FaultIBPortDown, "mlx5_4"); err != nil {
		t.Fatal(err)
	}
	if out := sh("ibstat mlx5_4 1"); out != "CA: 'mlx5_4'\nPort 1:\nState: Down\nPhysical state: Polling\nRate: 400\nBase lid: 972\nLMC: 0\nSM lid: 1\nCapability mask: 0xa751e848\nPort GUID: 0xa088c20300da656a\nLink layer: InfiniBand\n" {
		t.Errorf("ibstat mlx5_4 1 with the port down:\n%s", out)
	}
	if got := strings.Count(sh("ibstat"), "State: Active"); got != 8 {
		t.Errorf("ibstat with one port down: %d Active", got)
	}
	if out := sh("ibv_devinfo -d mlx5_4"); !strings.Contains(out, "state:\t\t\tPORT_DOWN (1)") {
		t.Errorf("ibv_devinfo -d mlx5_4 with the port down:\n%s", out)
	}
	if out, err := run(t, ep, signer, "ibstat mlx5_99"); err == nil || !strings.Contains(err.Error(), "'mlx5_99' IB device can't be found") {
		t.Errorf("unknown adapter: %q, %v", out, err)
	}

	hostfile := ep.Root + "/tmp/hostfile"
	sh("printf '127.100.9.1 slots=8\\n127.100.9.2 slots=8\\n' >" + hostfile)
	out := sh("NCCL_IB_HCA=mlx5 mpirun --hostfile " + hostfile + " -np 16 -x NCCL_IB_PKEY=1 -x NCCL_IB_HCA all_reduce_perf -b 8 -e 8G -f 2 -g 1; echo NCCL_IB_PKEY=$NCCL_IB_PKEY")
	if !strings.Contains(out, "# Avg bus bandwidth    : 70.742 \n") || !strings.Contains(out, "8589934592    2147483648     float     sum      -1    47535  180.71  338.82") {
		t.Errorf("all_reduce_perf under mpirun:\n%s", out)
	}
	if !strings.HasSuffix(out, "NCCL_IB_PKEY=\n") {
		t.Errorf("mpirun's -x leaked into the caller's shell: %q", out[len(out)-40:])
	}
	if args := sh("cat $HYDRA_SANDBOX_BIN/../run/mpirun.args"); !strings.Contains(args, "-x\nNCCL_IB_PKEY=1\n-x\nNCCL_IB_HCA\n") {
		t.Errorf("mpirun.args: %q", args)
	}
	if hf := sh("cat $HYDRA_SANDBOX_BIN/../run/mpirun.hostfile"); hf != "127.100.9.1 slots=8\n127.100.9.2 slots=8\n" {
		t.Errorf("mpirun.hostfile: %q", hf)
	}
	if out := sh("mpirun --hostfile " + hostfile + " sh -c 'echo $NCCL_IB_PKEY' -x NCCL_IB_PKEY=7"); out != "\n" {
		// -x after the program is the program's argument, as mpirun reads it.
		t.Errorf("mpirun: an -x after the program: %q", out)
	}
	if out, err := run(t, ep, signer, "mpirun --hostfile /nonexistent all_reduce_perf"); err == nil || !strings.Contains(err.Error(), "Open RTE was unable to open the hostfile:\n    /nonexistent") {
		t.Errorf("mpirun without its hostfile: %q, %v", out, err)
	}

	if err := SetFault(dir, FaultNCCLBusBW, "12.3"); err != nil {
		t.Fatal(err)
	}
	out = sh("all_reduce_perf -b 8 -e 8G -f 2 -g 1")
	if !strings.Contains(out, "# Avg bus bandwidth    : 12.3 \n") || !strings.Contains(out, "  8589934592    2147483648     float     sum      -1   273392   31.42   58.91      0   274588   31.28   58.66      0\n") {
		t.Errorf("all_reduce_perf with nccl_busbw 12.3:\n%s", out)
	}

	_, _, plain, plainSigner := startMachine(t, Spec{GPUModel: NVIDIAName("h100"), GPUCount: 8})
	if out, err := run(t, plain, plainSigner, "command -v ibstat ibv_devinfo; command -v mpirun all_reduce_perf | wc -l"); err != nil || out != "2\n" {
		t.Errorf("a machine without a fabric: %q, %v (want no ibstat nor ibv_devinfo, mpirun and all_reduce_perf present)", out, err)
	}
}

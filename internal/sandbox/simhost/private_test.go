package simhost

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestPrivateAddr: a cluster node's sshd answers on its private loopback address too, on its port (a
// real TCP connection and an SSH session); with the private_net_down fault only 127.0.0.1 answers.
func TestPrivateAddr(t *testing.T) {
	addr := fmt.Sprintf("127.101.%d.%d", os.Getpid()>>8&0xff, os.Getpid()&0xff|1)
	dir, spec, ep, signer := startMachine(t, Spec{GPUModel: NVIDIAName("h100"), GPUCount: 8, PrivateAddr: addr, Fabric: true})
	if ep.PrivateAddr != addr {
		t.Fatalf("endpoint's private address %q, want %q", ep.PrivateAddr, addr)
	}
	if !bannerAt(addr, ep.Port) {
		t.Fatalf("no SSH banner at %s:%d", addr, ep.Port)
	}
	private := ep
	private.Host = addr
	if out, err := run(t, private, signer, "echo private"); err != nil || out != "private\n" {
		t.Errorf("an SSH session over the private address: %q, %v", out, err)
	}

	if err := SetFault(dir, FaultPrivateNetDown, "1"); err != nil {
		t.Fatal(err)
	}
	down, err := Ensure(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	if bannerAt(addr, down.Port) {
		t.Errorf("private_net_down: %s:%d still answers", addr, down.Port)
	}
	if !banner(down.Port) || down.PrivateAddr != addr {
		t.Errorf("private_net_down: 127.0.0.1:%d answers %v, reported address %q", down.Port, banner(down.Port), down.PrivateAddr)
	}
	if err := ClearFaults(dir); err != nil {
		t.Fatal(err)
	}
	if back, err := Ensure(dir, spec); err != nil || !bannerAt(addr, back.Port) {
		t.Errorf("mended: %v, banner at %s:%d %v", err, addr, back.Port, bannerAt(addr, back.Port))
	}
}

func TestCheckPrivateAddr(t *testing.T) {
	for addr, ok := range map[string]bool{
		"": true, "127.100.1.2": true, "127.0.0.2": true,
		"127.0.0.1": false, "10.0.0.2": false, "::1": false, "127.100.1": false, "127.100.001.2": false,
	} {
		if err := checkPrivateAddr(addr); (err == nil) != ok {
			t.Errorf("checkPrivateAddr(%q) = %v, want ok %v", addr, err, ok)
		} else if err != nil && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("checkPrivateAddr(%q): %v", addr, err)
		}
	}
}

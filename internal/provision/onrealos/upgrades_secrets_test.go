//go:build linux

package onrealos

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// upgradeLockTimer makes the machine's automatic upgrade (apt-daily-upgrade.service, Debian's own unit)
// take the dpkg lock for 20 seconds, started by its timer every 15 seconds, and note each start (the
// machine's clock, Unix seconds) in /var/log/hydra-test-upgrade.log: an unattended upgrade that would
// run again and again during a provisioning run.
const upgradeLockTimer = `set -e
mkdir -p /etc/systemd/system/apt-daily-upgrade.service.d /etc/systemd/system/apt-daily-upgrade.timer.d
cat > /usr/local/bin/hydra-test-upgrade <<'EOF'
#!/usr/bin/python3
import fcntl, time
with open("/var/log/hydra-test-upgrade.log", "a") as f:
    f.write("%d\n" % time.time())
locks = [open(p, "a") for p in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock")]
for l in locks:
    fcntl.lockf(l, fcntl.LOCK_EX)
time.sleep(20)
EOF
chmod 755 /usr/local/bin/hydra-test-upgrade
cat > /etc/systemd/system/apt-daily-upgrade.service.d/hydra-test.conf <<'EOF'
[Unit]
ConditionACPower=
[Service]
ExecStartPre=
ExecStart=
ExecStart=/usr/local/bin/hydra-test-upgrade
EOF
cat > /etc/systemd/system/apt-daily-upgrade.timer.d/hydra-test.conf <<'EOF'
[Timer]
OnCalendar=
OnCalendar=*:*:0/15
RandomizedDelaySec=0
AccuracySec=1s
Persistent=false
EOF
systemctl daemon-reload
systemctl enable --quiet apt-daily-upgrade.timer
systemctl restart apt-daily-upgrade.timer`

// execletSecret is the secret the Debian 12 case of TestRealOS_BareVMAndExeclet passes in the agent's arguments.
const execletSecret = "hydra-test-secret-6d1f0c"

// startUpgradeLock installs upgradeLockTimer and waits until the upgrade holds the dpkg lock, so that
// it holds it when the run begins.
func (f realOSFixture) startUpgradeLock(t *testing.T) {
	t.Helper()
	f.run(t, upgradeLockTimer)
	// The upgrade (a oneshot service: activating while it runs) holds the dpkg lock when the run begins.
	deadline := time.Now().Add(40 * time.Second)
	for f.run(t, "test -s /var/log/hydra-test-upgrade.log && systemctl is-active apt-daily-upgrade.service || true") != "activating" {
		if time.Now().After(deadline) {
			t.Fatalf("the test's upgrade never started: %s", f.run(t, "systemctl status apt-daily-upgrade.timer apt-daily-upgrade.service --no-pager || true"))
		}
		time.Sleep(time.Second)
	}
}

// checkUpgradesPausedAndSecretsHidden checks, after the provisioning runs of runs (bare-vm.yml's run,
// then execlet.yml's two) on a machine whose automatic upgrade takes the dpkg lock every 15
// seconds (startUpgradeLock), that the upgrade was paused for the runs and runs again after them (its
// timer active, its service no longer masked, nothing left of the pause), and that the execlet agent's
// secret arguments (execletSecret) reach it in its environment, never on its command line, which
// another user reads in /proc.
func (f realOSFixture) checkUpgradesPausedAndSecretsHidden(t *testing.T, runs ...runSpan) {
	t.Helper()
	const secret = execletSecret

	// Paused for the runs: counted from each span's first pause (spanSince), the upgrade starts only
	// in the few seconds from a run's resume (before its health checks and marker) to its end or the
	// next run's pause (the test's checks between spans run unpaused; the upgrade startUpgradeLock
	// started is before the first span), at most once in each of those windows;
	// unpaused it would start every 15 to 20 seconds (its 20 seconds of lock included), some ten times
	// over two runs.
	var during []int64
	var seconds int64
	n := 0
	for _, r := range runs {
		seconds += r.ended - r.started
		n += r.runs
	}
	for _, l := range strings.Fields(f.run(t, "cat /var/log/hydra-test-upgrade.log")) {
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatalf("upgrade log line %q: %v", l, err)
		}
		for _, r := range runs {
			if v > r.started+5 && v < r.ended {
				during = append(during, v-runs[0].started)
			}
		}
	}
	t.Logf("the upgrade started %d time(s) during the %d s of the %d runs (seconds after the first run's pause: %v)", len(during), seconds, n, during)
	// On a busy machine the windows after each resume grow past the upgrade's 20 seconds (a fresh-clone
	// make test once saw 2 starts in each, runs of 154 and 133 s): allow one start a minute of the runs,
	// at least one more than there are windows (3 for two runs in one span; 5 for bare-vm.yml's run
	// and execlet.yml's two, which saw 4 starts in 231 s), still under half the starts an unpaused
	// upgrade makes (one each 20 s: 11 in those 231 s).
	if allowed := max(n+len(runs), int(seconds/60)); len(during) > allowed {
		t.Errorf("the automatic upgrade started %d times during the runs (at %v s), want it paused", len(during), during)
	}
	// Resumed after it.
	if st := f.run(t, "systemctl is-active apt-daily-upgrade.timer apt-daily.timer || true"); st != "active\nactive" {
		t.Errorf("the upgrade timers after the run: %q, want both active", st)
	}
	if st := strings.Fields(f.run(t, "systemctl show -p LoadState --value apt-daily-upgrade.service apt-daily.service")); strings.Join(st, " ") != "loaded loaded" {
		t.Errorf("the upgrade services after the run: %q, want loaded (not masked)", st)
	}
	if st := f.run(t, "test -e /run/hydra/upgrades-paused && echo left || echo gone; systemctl is-active hydra-resume-upgrades.timer || true"); st != "gone\ninactive" {
		t.Errorf("after the run: %q, want the pause's record gone and its safety-net timer stopped", st)
	}

	// The agent's arguments: in its environment (root reads it), not on its command line (anyone does).
	pid := f.run(t, "systemctl show -p MainPID --value hydra-execlet.service")
	if pid == "" || pid == "0" {
		t.Fatalf("hydra-execlet.service has no main process")
	}
	cmdline := f.run(t, "setpriv --reuid=65534 --regid=65534 --clear-groups cat /proc/"+pid+"/cmdline | tr '\\0' ' '")
	t.Logf("the agent's command line as nobody reads it: %s", cmdline)
	if !strings.Contains(cmdline, "/etc/hydra/execlet.json") {
		t.Errorf("nobody could not read the agent's command line (%q): the check below proves nothing", cmdline)
	}
	if strings.Contains(cmdline, secret) {
		t.Errorf("the agent's secret is on its command line, readable by any user: %s", cmdline)
	}
	if env := f.run(t, "tr '\\0' '\\n' < /proc/"+pid+"/environ | grep '^HYDRA_EXECLET_ARGS=' || true"); env != "HYDRA_EXECLET_ARGS=--token "+secret+" --verbose" {
		t.Errorf("the agent's environment has %q, want its arguments", env)
	}
	if out := f.run(t, "setpriv --reuid=65534 --regid=65534 --clear-groups cat /proc/"+pid+"/environ 2>&1 >/dev/null || true"); !strings.Contains(out, "Permission denied") {
		t.Errorf("another user reads the agent's environment: %q", out)
	}
	if st := f.run(t, "stat -c '%a %U' /etc/hydra/execlet.env"); st != "600 root" {
		t.Errorf("/etc/hydra/execlet.env: %s, want 600 root", st)
	}
}

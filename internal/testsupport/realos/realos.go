// Package realos boots real system containers of the operating systems GPU clouds boot (Debian 12,
// Ubuntu 22.04 and 24.04: OSes) for tests of hydra's playbooks: systemd as PID 1 (or, for a pod, no
// systemd at all), real apt against the distribution's archive, real units, real packages, reachable
// over SSH on a loopback port. Only the GPU layer is simulated, except in a plain image, which has no
// NVIDIA package at all (for the driver's install path, with the distribution's real packages).
//
// # The root file system
//
// EnsureImageOf builds an OS's root file system once with debootstrap (variant minbase, from the OS's
// own archive, Ubuntu's with Ubuntu's keyring package checked by SHA-256 and key fingerprint, plus
// systemd, openssh-server, python3 and the few packages of OS.Packages) and keeps it outside the
// repository, in CacheDir()/<key>, where key is the SHA-256 of every input (suite, archive, package
// list, sources, the stand-in packages and this package's build version): later runs reuse it, a
// changed input builds another. A file lock keeps concurrent builds (several test processes) from
// colliding.
//
// # A machine
//
// Boot mounts the cached tree as the lower layer of an overlay in a run directory of its own (a copy
// where the kernel has no overlayfs), so every run starts from the same clean image and the cache is
// never written, then starts it with
// systemd-nspawn from Debian's systemd-container: `--boot` runs the image's systemd as PID 1; a pod
// runs only its sshd (`--as-pid2 sshd -D`), as a container image without an init system does. Every
// machine has a network namespace of its own (--private-network: only its loopback, no route out), so
// nothing touches the host's firewall, addresses or ports, and machines run side by side, each with its
// exporters on their default ports (9100, 9400). Its sshd listens on the machine's loopback and is
// reached through a forwarder on a free loopback port of the host (Machine.Port) that dials from inside
// the machine's namespace (Machine.DialContext, Machine.HTTPClient reach the machine's loopback the same
// way). apt reaches Debian's mirror through the test's proxy listening on the machine's loopback
// (127.0.0.1:3142, set in the machine's apt configuration), which keeps the files that never change
// under their URL (packages, indexes named by their hash) in CacheDir()/apt for later machines; apt
// checks them against the signed InRelease as always. Boot returns when sshd answers and, with
// systemd, when `systemctl is-system-running --wait` says the boot finished: signals, not sleeps. Stop
// ends the container at once (SIGTERM to systemd-nspawn, which kills its init: the disk is discarded,
// so there is no orderly shutdown), kills whatever is left, unmounts and removes the run directory. Each run directory
// (CacheDir()/machines/m-XXXX) has a lock its process holds from Boot to Stop: a Boot sweeps the run
// directories no process holds (their test was killed), never another machine's. Each machine runs in
// cgroups of its own (see makeCgroups), so that no two containers' systemd share a cgroup tree.
//
// # What is substituted, and why
//
// Substitutions lists every step a container cannot do as a real GPU machine would, and what stands in
// for it. In short: there is no GPU and no NVIDIA kernel module in a container, so the image ships
// packages named as NVIDIA's repository names them whose commands are hydra's GPU stand-ins
// (internal/sandbox/simhost, linked from /opt/hydra-gpu), as a cloud's GPU image ships the NVIDIA stack
// preinstalled; NVIDIA's repositories are not reachable from here (only Debian's mirror is), so
// nothing is installed from them; Docker's daemon cannot run in the container, so the docker client is
// the stand-in and docker.service a unit that only stands for it. Everything else is real.
package realos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/filelock"
)

// DefaultMirror is the Debian mirror debootstrap and the container's apt use (HYDRA_REALOS_MIRROR
// overrides it; HYDRA_REALOS_UBUNTU_MIRROR Ubuntu's archive).
const DefaultMirror = "http://deb.debian.org/debian"

// buildVersion changes whenever the way the image is built changes (it is part of the cache key).
const buildVersion = "1"

// DriverVersion is the NVIDIA driver version the image's stand-in packages carry and nvidia-smi reports.
const DriverVersion = "570.133.20"

// Substitution is one step of provisioning a real GPU machine that the container cannot do, and what
// stands in for it.
type Substitution struct {
	// Step is what a real machine does.
	Step string
	// Instead is what the test machine does.
	Instead string
	// Why the container cannot do the real step.
	Why string
}

// Substitutions are every step the real-OS machines replace (the test logs them, README.md shows them).
var Substitutions = []Substitution{
	{
		Step:    "the NVIDIA driver from NVIDIA's CUDA repository (nvidia-dkms-570-open, nvidia-utils-570, libnvidia-compute-570), its kernel module built by DKMS and loaded after a reboot",
		Instead: "packages of those names, installed in the image with dpkg, whose nvidia-smi is hydra's stand-in answering for simulated GPUs; no kernel module, so modinfo finds none and no reboot is needed",
		Why:     "a container has no GPU, cannot load a kernel module and cannot reboot its host; NVIDIA's repository is not reachable from the test machine",
	},
	{
		Step:    "DCGM (datacenter-gpu-manager-4-core, -cuda12) and its nvidia-dcgm.service, dcgm-exporter (datacenter-gpu-manager-exporter)",
		Instead: "packages of those names with the dcgmi, nv-hostengine and dcgm-exporter stand-ins; nvidia-dcgm.service is a real unit of the image's systemd, run by it",
		Why:     "DCGM needs GPUs and the driver; NVIDIA's repository is not reachable",
	},
	{
		Step:    "the NVIDIA Container Toolkit (nvidia-container-toolkit) from NVIDIA's libnvidia-container repository",
		Instead: "a package of that name with the nvidia-ctk stand-in",
		Why:     "NVIDIA's repository is not reachable",
	},
	{
		Step:    "Docker's daemon (docker-ce with docker.service) running GPU containers",
		Instead: "a docker-ce package whose docker client is the stand-in (docker run runs the command on the machine itself) and whose docker.service is a oneshot unit standing for the daemon",
		Why:     "Docker's daemon cannot run inside this container, and registries are not reachable",
	},
	{
		Step:    "apt fetching from Debian's mirror over the machine's network",
		Instead: "apt fetches from Debian's mirror through the test's proxy on the machine's own loopback, which keeps the packages and the indexes named by their hash between machines (InRelease is fetched each time; apt checks everything against it)",
		Why:     "the machine's network namespace is its own, with no route out, so that machines run side by side and nothing touches the host's network",
	},
	{
		Step:    "the execlet agent downloaded from hydra_execlet_url",
		Instead: "the same download through get_url, from a file:// URL inside the container, checked against its SHA-256",
		Why:     "no release server is reachable",
	},
	{
		Step:    "NVSwitch fabric (Fabric Manager), InfiniBand and GPU kernel log (Xid) events",
		Instead: "none: the machines have no NVSwitch, so the Fabric Manager role is skipped as on a PCIe machine; the kernel log is the container's, with no Xid",
		Why:     "/proc/driver and /sys are the host's in a container",
	},
}

// Available says why real-OS machines cannot run here (nil when they can): they need Linux, root, and
// systemd-nspawn and debootstrap on PATH.
func Available() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("real-OS machines need Linux (systemd-nspawn), not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("real-OS machines need root (systemd-nspawn and debootstrap run as root)")
	}
	for _, tool := range []string{"systemd-nspawn", "debootstrap"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install systemd-container debootstrap; tools/install-deps.sh does)", tool)
		}
	}
	return nil
}

// CacheDir is where images and run directories are kept: $HYDRA_REALOS_CACHE, else
// $XDG_CACHE_HOME/hydra/realos, else ~/.cache/hydra/realos. It is never inside the repository.
func CacheDir() (string, error) {
	if d := os.Getenv("HYDRA_REALOS_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("realos: no cache directory (set HYDRA_REALOS_CACHE): %w", err)
	}
	return filepath.Join(base, "hydra", "realos"), nil
}

// Image is a built root file system in the cache.
type Image struct {
	// Key is the SHA-256 (hex) of the image's inputs; Root its root file system (never written by a
	// machine: Boot works on a copy).
	Key  string
	Root string
	// OS is what it was built from.
	OS OS
	// Plain images have none of the stand-in packages: no NVIDIA driver, no DCGM, no Docker.
	Plain bool
}

// baseKey is the SHA-256 over the inputs of debootstrap's tree (the base image). Debian 12's inputs
// hash as they did before images of other systems were built.
func baseKey(o OS, mirror string) string {
	h := sha256.New()
	pkgs := append([]string(nil), o.Packages...)
	sort.Strings(pkgs)
	_, _ = fmt.Fprintf(h, "build %s\x00suite %s\x00mirror %s\x00packages %s\x00", buildVersion, o.Suite, mirror, strings.Join(pkgs, ","))
	if o.Name != Debian12.Name {
		_, _ = fmt.Fprintf(h, "os %s\x00components %s\x00sources %s\x00", o.Name, strings.Join(o.Components, ","), o.sourcesList())
		if o.keyring != nil {
			_, _ = fmt.Fprintf(h, "keyring %s %s\x00", o.keyring.SHA256, o.keyring.Fingerprint)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// imageKey is the SHA-256 over every input of the image: the base's and the stand-in packages (none
// in a plain image).
func imageKey(o OS, mirror string, plain bool) string {
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "base %s\x00", baseKey(o, mirror))
	if plain {
		_, _ = fmt.Fprintf(h, "plain\x00script %s\x00", aptScript(o.PlainKernel))
		return hex.EncodeToString(h.Sum(nil))
	}
	for _, p := range standinPackages(o) {
		_, _ = fmt.Fprintf(h, "deb %s %s %s %s\x00", p.Name, p.Version, p.Depends, p.Description)
		for _, l := range p.Links {
			_, _ = fmt.Fprintf(h, "link %s %s\x00", l[0], l[1])
		}
		for _, f := range p.Files {
			_, _ = fmt.Fprintf(h, "file %s %d %s\x00", f.Path, len(f.Content), f.Content)
		}
		_, _ = fmt.Fprintf(h, "enable %s\x00", strings.Join(p.Enable, ","))
	}
	_, _ = fmt.Fprintf(h, "apt %s\x00script %s\x00", aptScript(""), installScript)
	return hex.EncodeToString(h.Sum(nil))
}

// completeMark is written into an image's directory when its build finished.
const completeMark = "complete"

// EnsureImage returns the cached Debian 12 image with the stand-in packages (EnsureImageOf).
func EnsureImage(ctx context.Context, logf func(format string, args ...any)) (Image, error) {
	return EnsureImageOf(ctx, Debian12, false, logf)
}

// EnsureImageOf returns the cached image of o, building it first when it is missing: debootstrap's
// tree from o's archive (the base, cached on its own: a few minutes, about 100 MB from the archive),
// then a copy of it with the stand-in packages installed (seconds), or none (plain: an image without
// any NVIDIA driver, for the driver's install path). logf receives progress lines.
func EnsureImageOf(ctx context.Context, o OS, plain bool, logf func(format string, args ...any)) (Image, error) {
	if err := Available(); err != nil {
		return Image{}, err
	}
	cache, err := CacheDir()
	if err != nil {
		return Image{}, err
	}
	m := o.Mirror()
	key := imageKey(o, m, plain)
	img := Image{Key: key, Root: filepath.Join(cache, "images", key, "rootfs"), OS: o, Plain: plain}
	err = cached(filepath.Join(cache, "images", key), logf, func(root string) error {
		base, err := cachedBase(ctx, cache, o, m, logf)
		if err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", base, root).CombinedOutput(); err != nil {
			return fmt.Errorf("realos: copying the base image: %v: %s", err, tail(out, 1000))
		}
		// apt reaches the archive through the apt proxy (which keeps the packages for the next build).
		env, stop, err := aptProxyEnv(cache, o)
		if err != nil {
			return err
		}
		defer stop()
		if plain {
			return inImage(ctx, root, aptScript(o.PlainKernel), "installing the plain image's packages and kernel", env...)
		}
		if err := inImage(ctx, root, aptScript(""), "installing the image's packages", env...); err != nil {
			return err
		}
		return installStandins(ctx, o, root)
	})
	return img, err
}

// PreparedImage returns img with commands run in it (/bin/sh -c in systemd-nspawn, without booting it,
// apt reaching the archive through the apt proxy), built once and cached as an image of its own, keyed
// by img's key and the commands.
func PreparedImage(ctx context.Context, img Image, commands []string, logf func(format string, args ...any)) (Image, error) {
	cache, err := CacheDir()
	if err != nil {
		return Image{}, err
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "image %s\x00", img.Key)
	for _, c := range commands {
		_, _ = fmt.Fprintf(h, "prepare %s\x00", c)
	}
	out := img
	out.Key = hex.EncodeToString(h.Sum(nil))
	out.Root = filepath.Join(cache, "images", out.Key, "rootfs")
	err = cached(filepath.Join(cache, "images", out.Key), logf, func(root string) error {
		if b, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", img.Root, root).CombinedOutput(); err != nil {
			return fmt.Errorf("realos: copying the image: %v: %s", err, tail(b, 1000))
		}
		env, stop, err := aptProxyEnv(cache, img.OS)
		if err != nil {
			return err
		}
		defer stop()
		for _, c := range commands {
			if err := inImage(ctx, root, c, "preparing the image ("+c+")", env...); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// aptProxyEnv starts an apt proxy to o's archives on a loopback port and returns the environment that
// sends a command's apt through it; stop closes the proxy.
func aptProxyEnv(cache string, o OS) (env []string, stop func(), err error) {
	proxy, err := osAptProxy(cache, o)
	if err != nil {
		return nil, nil, err
	}
	l, env, err := proxy.serveLoopback()
	if err != nil {
		return nil, nil, err
	}
	return env, func() { _ = l.Close() }, nil
}

// cachedBase returns debootstrap's tree, building it when it is missing.
func cachedBase(ctx context.Context, cache string, o OS, mirror string, logf func(string, ...any)) (string, error) {
	dir := filepath.Join(cache, "images", "base-"+baseKey(o, mirror))
	err := cached(dir, logf, func(root string) error {
		logf("building the real-OS base image of %s: debootstrap --variant=minbase %s from %s (once; cached in %s)", o.Name, o.Suite, mirror, dir)
		args := []string{"--variant=minbase", "--include=" + strings.Join(o.Packages, ",")}
		if len(o.Components) > 1 {
			args = append(args, "--components="+strings.Join(o.Components, ","))
		}
		kr, err := o.keyringFile(ctx, cache)
		if err != nil {
			return err
		}
		if kr != "" {
			args = append(args, "--keyring="+kr)
		}
		args = append(args, o.Suite, root, mirror)
		if o.ID == "ubuntu" {
			// debootstrap's script for every Ubuntu release since 7.10 (jammy and noble are links to it;
			// Debian 12's debootstrap predates noble).
			args = append(args, "/usr/share/debootstrap/scripts/gutsy")
		}
		if out, err := exec.CommandContext(ctx, "debootstrap", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("realos: debootstrap %s: %v: %s", strings.Join(args, " "), err, tail(out, 3000))
		}
		if src := o.sourcesList(); src != "" {
			if err := os.WriteFile(filepath.Join(root, "etc/apt/sources.list"), []byte(src), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	return filepath.Join(dir, "rootfs"), err
}

// cached makes dir/rootfs with build unless dir is complete, under a lock (dir.lock) so that
// concurrent processes build it once; a failed build leaves nothing.
func cached(dir string, logf func(string, ...any), build func(root string) error) error {
	if _, err := os.Stat(filepath.Join(dir, completeMark)); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	unlock, err := filelock.Lock(dir+".lock", 0o644)
	if err != nil {
		return fmt.Errorf("realos: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, completeMark)); err == nil {
		return nil // another process built it while this one waited
	}
	tmp := dir + ".building"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // left only by a failed build
	started := time.Now()
	if err := build(filepath.Join(tmp, "rootfs")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMark), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	logf("real-OS: %s built in %s", dir, time.Since(started).Round(time.Second))
	return nil
}

// installStandins builds and installs the stand-in packages inside root.
func installStandins(ctx context.Context, o OS, root string) error {
	if err := writeStandinPackages(o, filepath.Join(root, standinBuildDir)); err != nil {
		return err
	}
	return inImage(ctx, root, installScript, "installing the stand-in packages in the image")
}

// inImage runs script in the image at root (systemd-nspawn, without booting), with env added to its
// environment.
func inImage(ctx context.Context, root, script, what string, env ...string) error {
	args := []string{"--quiet", "--register=no", "--keep-unit", "--private-users=no", "--resolv-conf=off", "--directory=" + root}
	for _, e := range env {
		args = append(args, "--setenv="+e)
	}
	cmd := exec.CommandContext(ctx, "systemd-nspawn", append(args, "/bin/sh", "-c", script)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("realos: %s: %v: %s", what, err, tail(out, 3000))
	}
	return nil
}

// imagePackages are what the clouds' images have beyond debootstrap's minimal base that the playbooks'
// tools use: python3-apt, the library of Ansible's apt module (Debian's and Ubuntu's cloud images have
// it, with unattended-upgrades). Where it is missing, the module installs it itself before its own
// work, with an apt-get update of its own: about 4 CPU-s of every first run that no cloud's machine
// spends.
var imagePackages = []string{"python3-apt"}

// AptCaches builds apt's binary caches (pkgcache.bin, srcpkgcache.bin) from an image's package lists,
// which aptScript's apt-get clean removed: run last in Options.ImagePrepare, once per image, it spares
// every machine's first apt command building them (1.6 -> 0.5 CPU-s for python3-apt's first Cache() on
// Ubuntu 24.04). apt checks them against the lists and dpkg's status and builds them again when either
// changed, so no outcome depends on them.
const AptCaches = "apt-cache gencaches >/dev/null"

// aptScript runs inside a new image, apt reaching the archive through the apt proxy: it installs
// imagePackages and kernel, the OS's kernel package, when given (a plain image: as a cloud's image has a
// kernel), and cleans apt's cache, as installScript does. The package lists stay, as apt-get update
// left them.
func aptScript(kernel string) string {
	pkgs := strings.Join(imagePackages, " ")
	if kernel != "" {
		pkgs += " " + kernel
	}
	return "set -eu\napt-get -q update >/dev/null\nDEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends " + pkgs + " >/dev/null\napt-get clean\n"
}

// standinBuildDir is where the stand-in packages' trees are written in the image (not /tmp:
// systemd-nspawn mounts a tmpfs there).
const standinBuildDir = "/var/tmp/hydra-debs"

// installScript runs inside the new image (systemd-nspawn, without booting): it builds the stand-in
// packages with dpkg-deb, installs them with dpkg as an image ships them, enables their units and
// cleans up.
const installScript = `set -eu
cd /var/tmp/hydra-debs
for d in */; do
  d=${d%/}
  dpkg-deb --root-owner-group --build "$d" "$d.deb" >/dev/null
done
dpkg -i ./*.deb
for u in $(cat enable); do systemctl enable "$u"; done
cd / && rm -rf /var/tmp/hydra-debs
apt-get clean
`

func tail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

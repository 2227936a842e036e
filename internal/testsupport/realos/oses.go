package realos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// OS is an operating system a real-OS image is built from: a distribution's release, from its own
// archive, as the clouds boot it.
type OS struct {
	// Name is hydra's name for it (debian-12, ubuntu-22.04, ubuntu-24.04): the tests' case names.
	Name string
	// ID and VersionID are /etc/os-release's.
	ID, VersionID string
	// Suite is the release's code name (the archive's suite).
	Suite string
	// DefaultMirror is the archive debootstrap and the machines' apt use; MirrorEnv overrides it.
	DefaultMirror, MirrorEnv string
	// Security is the archive of the release's security pocket ("" when the image lists none).
	Security string
	// Components are the archive's components the image lists.
	Components []string
	// Pockets are the suites the image's apt lists besides Suite (-updates; -security from Security).
	Pockets []string
	// Packages are what debootstrap adds to the minimal base.
	Packages []string
	// PlainKernel is the kernel package a plain image has, as a cloud's image has one ("": none).
	PlainKernel string
	// keyring, when set, is the archive's keyring package fetched for debootstrap (the host has
	// Debian's keyring only).
	keyring *keyringDeb
}

// keyringDeb is an archive keyring package, fetched from the archive's pool and checked against its
// SHA-256 (a file in a pool never changes), whose keyring must hold Fingerprint.
type keyringDeb struct {
	Pool, SHA256, Member, Fingerprint string
}

// ubuntuKeyring is Ubuntu's keyring package as noble's archive lists it (dists/noble/main
// binary-amd64 Packages: ubuntu-keyring 2023.11.28.1, SHA256 below); its archive keyring holds the
// "Ubuntu Archive Automatic Signing Key (2018) <ftpmaster@ubuntu.com>", which signs jammy's and noble's
// InRelease.
var ubuntuKeyring = &keyringDeb{
	Pool:        "pool/main/u/ubuntu-keyring/ubuntu-keyring_2023.11.28.1_all.deb",
	SHA256:      "36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8",
	Member:      "./usr/share/keyrings/ubuntu-archive-keyring.gpg",
	Fingerprint: "F6ECB3762474EDA9D21B7022871920D1991BC93C",
}

// debianPackages are the Debian packages debootstrap adds to the minimal base: systemd as init, sshd
// for Ansible, python3 for its modules, and what the playbooks call on a machine of this kind (sudo for
// a non-root login, iproute2's ss, procps, kmod's modinfo, nftables for the exporters' firewall).
// prometheus-node-exporter is not among them: the playbooks install it with apt.
var debianPackages = []string{
	"systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "sudo", "ca-certificates", "gnupg",
	"apt-transport-https", "iproute2", "procps", "kmod", "nftables",
}

// ubuntuPackages are the same for Ubuntu (whose apt has https built in), with its archive's keyring.
var ubuntuPackages = []string{
	"systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "sudo", "ca-certificates", "gnupg",
	"iproute2", "procps", "kmod", "nftables", "ubuntu-keyring",
}

var (
	// Debian12 is Debian 12 (bookworm).
	Debian12 = OS{Name: "debian-12", ID: "debian", VersionID: "12", Suite: "bookworm",
		DefaultMirror: DefaultMirror, MirrorEnv: "HYDRA_REALOS_MIRROR", Components: []string{"main"}, Packages: debianPackages}
	// Ubuntu2204 is Ubuntu 22.04 LTS (jammy), as Lambda's and Verda's images are.
	Ubuntu2204 = ubuntu("22.04", "jammy")
	// Ubuntu2404 is Ubuntu 24.04 LTS (noble), as Lambda's, Verda's and UpCloud's GPU images are. Its
	// plain image has noble's release kernel, whose NVIDIA packages (branch 550) the archive here serves
	// (README.md: the newest builds answer 404).
	Ubuntu2404 = withPlainKernel(ubuntu("24.04", "noble"), "linux-image-6.8.0-31-generic")
)

func withPlainKernel(o OS, pkg string) OS {
	o.PlainKernel = pkg
	return o
}

func ubuntu(version, suite string) OS {
	return OS{Name: "ubuntu-" + version, ID: "ubuntu", VersionID: version, Suite: suite,
		DefaultMirror: "http://archive.ubuntu.com/ubuntu", MirrorEnv: "HYDRA_REALOS_UBUNTU_MIRROR",
		Security:   "http://security.ubuntu.com/ubuntu",
		Components: []string{"main", "restricted", "universe", "multiverse"}, Pockets: []string{suite + "-updates"},
		Packages: ubuntuPackages, keyring: ubuntuKeyring}
}

// OSes are the operating systems the real-OS tests run on.
func OSes() []OS { return []OS{Debian12, Ubuntu2204, Ubuntu2404} }

// Mirror is the archive the image is built from and its machines' apt reaches.
func (o OS) Mirror() string {
	if m := os.Getenv(o.MirrorEnv); m != "" {
		return m
	}
	return o.DefaultMirror
}

// securityMirrors are the archives of the security pocket, when another host serves it.
func (o OS) securityMirrors() []string {
	if o.Security == "" {
		return nil
	}
	return []string{o.Security}
}

// sourcesList is the image's /etc/apt/sources.list: the suite, its pockets and its security pocket,
// as a cloud's image lists them ("" keeps debootstrap's).
func (o OS) sourcesList() string {
	if len(o.Pockets) == 0 && o.Security == "" {
		return ""
	}
	comps := strings.Join(o.Components, " ")
	s := fmt.Sprintf("# hydra real-OS image of %s: its archive, as a cloud's image lists it\ndeb %s %s %s\n", o.Name, o.Mirror(), o.Suite, comps)
	for _, p := range o.Pockets {
		s += fmt.Sprintf("deb %s %s %s\n", o.Mirror(), p, comps)
	}
	if o.Security != "" {
		s += fmt.Sprintf("deb %s %s-security %s\n", o.Security, o.Suite, comps)
	}
	return s
}

// keyringFile returns the archive's keyring for debootstrap ("" for Debian: the host's), fetching its
// package into cache/keyrings once: the package's SHA-256 and the key's fingerprint are checked
// (playbooks/files/pgp_fingerprints.py's reading of the key, done here with gpg).
func (o OS) keyringFile(ctx context.Context, cache string) (string, error) {
	k := o.keyring
	if k == nil {
		return "", nil
	}
	dir := filepath.Join(cache, "keyrings")
	file := filepath.Join(dir, k.SHA256+".gpg")
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	u := strings.TrimRight(o.Mirror(), "/") + "/" + k.Pool
	deb := filepath.Join(dir, k.SHA256+".deb")
	if err := fetchChecked(ctx, u, deb, k.SHA256); err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(deb) }()
	tmp, err := os.MkdirTemp(dir, ".x-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("realos: unpacking %s: %v: %s", u, err, tail(out, 500))
	}
	kr := filepath.Join(tmp, k.Member)
	out, err := exec.CommandContext(ctx, "gpg", "--homedir", tmp, "--batch", "--show-keys", "--with-colons", kr).Output()
	if err != nil {
		return "", fmt.Errorf("realos: reading the keyring of %s: %v", u, err)
	}
	if !strings.Contains(string(out), "fpr:::::::::"+k.Fingerprint+":") {
		return "", fmt.Errorf("realos: the keyring of %s lacks the key %s", u, k.Fingerprint)
	}
	b, err := os.ReadFile(kr)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(file+".part", b, 0o644); err != nil {
		return "", err
	}
	return file, os.Rename(file+".part", file)
}

// fetchChecked downloads u to file when its SHA-256 is sum.
func fetchChecked(ctx context.Context, u, file, sum string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("realos: %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("realos: %s: HTTP %d", u, resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	got := sha256.Sum256(b)
	if hex.EncodeToString(got[:]) != sum {
		return fmt.Errorf("realos: %s has SHA-256 %x, want %s", u, got, sum)
	}
	return os.WriteFile(file, b, 0o644)
}

// SubstitutionsOf are the substitutions of a machine of o's image (plain: without the stand-in
// packages): Substitutions, with o's archive, and for a plain image the driver's real install path.
func SubstitutionsOf(o OS, plain bool) []Substitution {
	var out []Substitution
	for _, s := range Substitutions {
		if o.ID != "debian" {
			s.Step = strings.ReplaceAll(s.Step, "Debian's mirror", o.Name+"'s archive")
			s.Instead = strings.ReplaceAll(s.Instead, "Debian's mirror", o.Name+"'s archive")
		}
		if plain && (strings.HasPrefix(s.Step, "DCGM") || strings.HasPrefix(s.Step, "the NVIDIA Container Toolkit") || strings.HasPrefix(s.Step, "Docker's daemon")) {
			continue // a plain image has none of the stand-ins
		}
		if plain && strings.HasPrefix(s.Step, "the NVIDIA driver") {
			s = Substitution{
				Step: "the NVIDIA driver's packages from the distribution's archive (modules precompiled for the kernel the machine boots), a reboot, the module loaded",
				Instead: "the same packages, installed by the playbooks from the archive; the reboot is real (systemd-nspawn starts the container again); " +
					"the image's newest kernel in /boot stands for the booted one; no module loads, so the real nvidia-smi fails as on a machine whose module did not load",
				Why: "a container runs its host's kernel and cannot load a module",
			}
		}
		out = append(out, s)
	}
	return out
}

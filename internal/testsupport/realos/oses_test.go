package realos

import (
	"context"
	"strings"
	"testing"
)

// TestRealOS_Images: the image of every OS is built from its own archive (Ubuntu's with Ubuntu's
// keyring, its SHA-256 and key checked), boots with systemd, says it is that release, lists its
// archive's pockets, and runs the GPU stand-ins from its packages; the plain Ubuntu 24.04 image has no
// NVIDIA package and no nvidia-smi.
func TestRealOS_Images(t *testing.T) {
	t.Parallel()
	requireTools(t)
	type tc struct {
		o     OS
		plain bool
	}
	cases := []tc{{Ubuntu2404, true}}
	for _, o := range OSes() {
		cases = append(cases, tc{o, false})
	}
	for _, c := range cases {
		name := c.o.Name + map[bool]string{true: "-plain", false: ""}[c.plain]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			img, err := EnsureImageOf(ctx, c.o, c.plain, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			m := bootL4(t, img, true)
			want := map[string]string{
				". /etc/os-release && echo $ID $VERSION_ID": c.o.ID + " " + c.o.VersionID,
				"systemctl is-system-running":               "running",
				// Ansible's apt module's library, as the clouds' images have it (imagePackages).
				"dpkg-query -W -f '${db:Status-Abbrev}' python3-apt": "ii",
			}
			if c.plain {
				want["dpkg-query -W 'nvidia-*' 'libnvidia-*' 2>/dev/null | wc -l; command -v nvidia-smi || echo none"] = "0 none"
				want["dpkg-query -W -f '${db:Status-Abbrev}' "+c.o.PlainKernel] = "ii"
			} else {
				want["nvidia-smi --query-gpu=name --format=csv,noheader"] = "NVIDIA L4"
				want["dpkg-query -W -f '${Version}' docker-ce"] = "5:27.5.1-1~" + c.o.ID + "." + c.o.VersionID + "~" + c.o.Suite
			}
			for cmd, w := range want {
				out, err := m.Run(ctx, cmd)
				if got := strings.Join(strings.Fields(out), " "); err != nil || got != w {
					t.Errorf("%s: %q (%v), want %q", cmd, got, err, w)
				}
			}
			if c.o.ID == "ubuntu" {
				src, err := m.Run(ctx, "cat /etc/apt/sources.list")
				for _, p := range []string{c.o.Suite + " ", c.o.Suite + "-updates ", c.o.Suite + "-security "} {
					if err != nil || !strings.Contains(src, " "+p+"main restricted universe multiverse") {
						t.Errorf("sources.list lacks the %s pocket (%v):\n%s", p, err, src)
					}
				}
			}
		})
	}
}

package osproc

import (
	"os"
	"testing"
)

func TestNamesDir(t *testing.T) {
	cases := []struct {
		args []string
		want bool
	}{
		{[]string{"ssh: /tmp/hydra-1-2/cp/abc [mux]"}, true},
		{[]string{"x", "/tmp/hydra-1-2"}, true},
		{[]string{"-oControlPath=/tmp/hydra-1-2/cp/%C"}, true},
		{[]string{"/tmp/hydra-1-23/cp"}, false},
		{[]string{"/tmp/hydra-1-2x"}, false},
		{[]string{"/tmp/hydra-1-23", "/tmp/hydra-1-2/run"}, true},
		{nil, false},
	}
	for _, c := range cases {
		if got := NamesDir(c.args, "/tmp/hydra-1-2"); got != c.want {
			t.Errorf("NamesDir(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// List finds this process, with its command line, as the user it runs as.
func TestListFindsThisProcess(t *testing.T) {
	for _, p := range List() {
		if p.PID == os.Getpid() {
			if len(p.Args) == 0 || p.UID != os.Geteuid() {
				t.Errorf("this process listed as %+v", p)
			}
			return
		}
	}
	t.Error("List does not list this process")
}

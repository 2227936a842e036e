package clouds

import (
	"context"
	"errors"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/backendtest"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

func TestRegistry(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	block := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	names, blocks := map[string]bool{}, map[string]bool{}
	var order []string
	for _, d := range All() {
		if !name.MatchString(d.Name) || !block.MatchString(d.Block) {
			t.Errorf("%q (block %q): a name is lower-case letters and digits, a block also underscores", d.Name, d.Block)
		}
		if names[d.Name] || blocks[d.Block] || d.Name == Sandbox.Name || d.Block == Sandbox.Block || d.Block == "provisioning" || d.Simulated {
			t.Errorf("%s: name or block %q taken", d.Name, d.Block)
		}
		names[d.Name], blocks[d.Block] = true, true
		order = append(order, d.Name)
		if d.Title == "" || !strings.HasSuffix(d.Description, ".") || d.Build == nil || d.StartEmulator == nil {
			t.Errorf("%s: Title, Description (a sentence), Build and StartEmulator are required", d.Name)
		}
		if ByName(d.Name) != d || ByBlock(d.Block) != d {
			t.Errorf("%s: ByName/ByBlock do not find it", d.Name)
		}
	}
	if !slices.IsSorted(order) {
		t.Errorf("the registry is not in alphabetical order: %v", order)
	}
	if got := Names(); !slices.IsSorted(got) || !slices.Contains(got, Sandbox.Name) || len(got) != len(All())+1 {
		t.Errorf("Names() = %v", got)
	}
	// The sandbox is registered (ByName finds it) but simulated: no emulator, no emulator_dir, not among
	// the real clouds' blocks.
	if ByName(Sandbox.Name) != Sandbox || ByBlock(Sandbox.Block) != nil || !Sandbox.Simulated || Sandbox.StartEmulator != nil {
		t.Errorf("the sandbox's registration: %+v", Sandbox)
	}
	if _, ok := Sandbox.Setting(EmulatorDirKey); ok {
		t.Error("the sandbox has an emulator_dir setting")
	}
	// The inventory knows exactly the registry's clouds.
	if !slices.Equal(inventory.EmbeddedClouds(), Names()) {
		t.Errorf("inventory.EmbeddedClouds() = %v, want the registry's %v", inventory.EmbeddedClouds(), Names())
	}
	// Prime Intellect keeps its three spellings: the registry holds the first two, pools.yml the third.
	if d := ByBlock("primeintellect"); d == nil || d.Name != "primeintellect" {
		t.Errorf("primeintellect block: %+v", d)
	}
	var quoted []string
	for _, n := range Names() {
		quoted = append(quoted, "`"+n+"`")
	}
	if NamesMarkdown() != strings.Join(quoted, ", ") {
		t.Errorf("NamesMarkdown() = %s", NamesMarkdown())
	}
}

// Every cloud has pools in the embedded inventory, and the inventory names no cloud the registry does
// not know (so the inventory's fallback, the clouds of the embedded pools.yml, equals the registry).
func TestEmbeddedInventoryMatchesRegistry(t *testing.T) {
	// EmbeddedClouds are the clouds of the embedded pools, sorted (inventory's TestKnownClouds).
	if poolClouds := inventory.EmbeddedClouds(); !slices.Equal(poolClouds, Names()) {
		t.Errorf("the embedded pools.yml serves %v; the registry knows %v", poolClouds, Names())
	}
	for _, d := range All() {
		if !strings.Contains(d.BlockMarkdown(), "Serves `") {
			t.Errorf("%s: the block's docs name no pool: %s", d.Name, d.BlockMarkdown())
		}
	}
}

func TestSettingsDocumented(t *testing.T) {
	key := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	envs := map[string]string{}
	for _, d := range All() {
		keys := map[string]bool{}
		for _, s := range d.AllSettings() {
			where := d.Block + "." + s.Key
			if !key.MatchString(s.Key) || keys[s.Key] {
				t.Errorf("%s: bad or duplicate key", where)
			}
			keys[s.Key] = true
			if doc := s.Markdown(); len(s.Doc) < 8 || !strings.HasSuffix(doc, ".") || strings.Contains(doc, "  ") || strings.Contains(doc, "..") {
				t.Errorf("%s: documentation %q", where, doc)
			}
			if s.Env != "" {
				if other, dup := envs[s.Env]; dup {
					t.Errorf("%s: environment variable %s is also %s's", where, s.Env, other)
				}
				envs[s.Env] = where
				if !strings.Contains(s.Markdown(), "`"+s.Env+"`") {
					t.Errorf("%s: the docs do not name %s", where, s.Env)
				}
			}
			if s.Sensitive && !strings.Contains(s.Markdown(), "Sensitive.") {
				t.Errorf("%s: the docs do not say it is sensitive", where)
			}
			if s.Default != nil {
				if err := s.check(s.Default, where+"'s default"); err != nil {
					t.Error(err)
				}
			}
			if s.Range != nil && s.Kind != KindFloat {
				t.Errorf("%s: a range on a %s", where, s.Kind)
			}
		}
		if !keys[EmulatorDirKey] {
			t.Errorf("%s: no emulator_dir", d.Block)
		}
		if keys[EnabledKey] != d.OffByDefault {
			t.Errorf("%s: enabled is a setting exactly when the cloud is off by default", d.Block)
		}
	}
}

// clearEnv unsets every environment variable the registry reads, for this test.
func clearEnv(t *testing.T) {
	for _, d := range All() {
		for _, s := range d.AllSettings() {
			if s.Env != "" {
				t.Setenv(s.Env, "")
			}
		}
	}
}

func TestBuildWithoutCredentialsNamesThem(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	// The exact wording of some clouds' messages; every cloud is also checked generically below.
	want := map[string][]string{
		"atlas":          {"endpoint", "token", "ATLAS_ENDPOINT", "ATLAS_TOKEN"},
		"mithril":        {"api_key", "MITHRIL_API_KEY"},
		"primeintellect": {"api_key", "PRIME_API_KEY"},
		"upcloud":        {"username and password, or token", "UPCLOUD_USERNAME and UPCLOUD_PASSWORD, or UPCLOUD_TOKEN"},
		"verda":          {"client_id and client_secret", "VERDA_CLIENT_ID and VERDA_CLIENT_SECRET"},
	}
	for _, d := range All() {
		s, err := d.Resolve(Values{})
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		_, err = d.Build(s, inv, hclog.NewNullLogger())
		var missing *MissingError
		if !errors.As(err, &missing) {
			t.Errorf("%s: Build without credentials: %v, want a *MissingError", d.Name, err)
			continue
		}
		msg := err.Error()
		for _, alt := range missing.Need {
			for _, s := range alt {
				if !strings.Contains(msg, s.Key) || !strings.Contains(msg, s.Env) {
					t.Errorf("%s: %q does not name %s and %s", d.Name, msg, s.Key, s.Env)
				}
			}
		}
		for _, w := range append(want[d.Name], "the "+d.Block+" block", "emulator_dir") {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q does not contain %q", d.Name, msg, w)
			}
		}
		// Configure, the provider's way in, fails the same way.
		if _, err := d.Configure(Values{}, Env{Inventory: inv}); !errors.As(err, &missing) {
			t.Errorf("%s: Configure without credentials: %v", d.Name, err)
		}
	}
	for name := range want {
		if ByName(name) == nil {
			t.Errorf("the table above names %q, which the registry does not hold", name)
		}
	}
}

func TestResolvePrecedence(t *testing.T) {
	clearEnv(t)
	s, err := Verda.Resolve(Values{"client_id": "from-block", "client_secret": ""})
	if err != nil {
		t.Fatal(err)
	}
	if s.String("client_id") != "from-block" || s.Has("client_secret") || s.Float("eur_to_usd") != 1.08 || s.String("endpoint") != "https://api.verda.com/v1" {
		t.Errorf("without environment: %+v", s.values)
	}
	t.Setenv("VERDA_CLIENT_ID", "from-env")
	t.Setenv("VERDA_CLIENT_SECRET", "secret-from-env")
	s, _ = Verda.Resolve(Values{"client_id": "from-block", "client_secret": ""})
	if s.String("client_id") != "from-block" || s.String("client_secret") != "secret-from-env" {
		t.Errorf("the block wins over the environment, and an empty block value is unset: %+v", s.values)
	}
	if err := s.Require("client_id", "client_secret"); err != nil {
		t.Error(err)
	}

	// A token wins over sub-account credentials from the environment.
	t.Setenv("UPCLOUD_USERNAME", "sub")
	t.Setenv("UPCLOUD_PASSWORD", "pw")
	s, _ = UpCloud.Resolve(Values{"token": "tok"})
	if err := s.RequireOneOf([]string{"username", "password"}, []string{"token"}); err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		block Values
		want  string
	}{
		{Values{"eur_to_usd": 0.0}, "must be at least 0.01"},
		{Values{"eur_to_usd": "1.1"}, "must be a float"},
		{Values{"region": "x"}, `no setting "region"`},
	} {
		if _, err := Verda.Resolve(tc.block); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%v) = %v, want %q", tc.block, err, tc.want)
		}
	}
	if _, err := Mithril.Resolve(Values{"win_margin_percent": 1001.0}); err == nil || !strings.Contains(err.Error(), "between 0 and 1000") {
		t.Errorf("Mithril margin out of range: %v", err)
	}
	if Mithril.Enabled(Values{}) || !Mithril.Enabled(Values{"enabled": true}) || !Verda.Enabled(Values{}) {
		t.Error("only Mithril needs enabled = true")
	}
}

func TestMarkdown(t *testing.T) {
	for _, tc := range []struct {
		s    Setting
		want string
	}{
		{Setting{Doc: "OAuth2 client ID.", Env: "VERDA_CLIENT_ID", Sensitive: true}, "OAuth2 client ID. Sensitive. Default: the `VERDA_CLIENT_ID` environment variable."},
		{Setting{Doc: "Rate.", Kind: KindFloat, Default: 1.08}, "Rate. Default `1.08`."},
		{Setting{Doc: "Margin.", Kind: KindFloat, Default: 10.0}, "Margin. Default `10`."},
		{Setting{Doc: "On.", Kind: KindBool, Default: false}, "On. Default `false`."},
		{Setting{Doc: "Where.", Env: "X_URL", Default: "https://x"}, "Where. Default: the `X_URL` environment variable, else `https://x`."},
	} {
		if got := tc.s.Markdown(); got != tc.want {
			t.Errorf("Markdown() = %q, want %q", got, tc.want)
		}
	}
	if got := Mithril.BlockMarkdown(); got != "Mithril's spot capacity, sold by a sealed second-price auction. Off unless `enabled = true`. Serves `mithril-vm-pool`." {
		t.Errorf("Mithril.BlockMarkdown() = %q", got)
	}
	if got := PrimeIntellect.BlockMarkdown(); !strings.HasSuffix(got, "Serves `primeintellect-vm-pool` and `primeintellect-execlet-pool`.") {
		t.Errorf("PrimeIntellect.BlockMarkdown() = %q", got)
	}
}

// Every emulator starts on loopback, answers the real client with the credentials it hands out, and stops.
func TestEmulatorsStartAndStop(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			emu, err := d.StartEmulator(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			url, _ := emu.Settings["endpoint"].(string)
			if !strings.HasPrefix(url, "http://127.0.0.1:") {
				t.Fatalf("endpoint %q", url)
			}
			for k := range emu.Settings {
				if _, ok := d.Setting(k); !ok {
					t.Errorf("the emulator overrides %q, which is no setting", k)
				}
			}
			s, err := d.Resolve(Values{})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range emu.Settings {
				s.values[k] = v
			}
			b, err := d.Build(s, inv, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			if b.Cloud() != d.Name {
				t.Errorf("the backend calls itself %q", b.Cloud())
			}
			if got := cloudprovider.FactsOf(b); got != (d.Facts) {
				t.Errorf("the backend states %+v, its driver %+v (the docs are written from the driver's)", got, d.Facts)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			offers, err := b.Offers(ctx)
			if err != nil || len(offers) == 0 {
				t.Errorf("offers from the emulator: %d, %v", len(offers), err)
			}
			if err := emu.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Timeout: 2 * time.Second}
			if resp, err := client.Get(url); err == nil {
				_ = resp.Body.Close()
				t.Errorf("the emulator still answers after Stop")
			}
		})
	}
}

// Configuring the same emulated cloud again (every Terraform command does) reuses its emulator.
func TestConfigureSharesEmulators(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	dir := t.TempDir()
	emus := NewEmulators()
	t.Cleanup(func() { _ = emus.Stop(context.Background()) })
	env := Env{Inventory: inv, Emulators: emus}
	before := runtime.NumGoroutine()
	for i := range 5 {
		c, err := Verda.Configure(Values{EmulatorDirKey: dir}, env)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Emulated || c.Backend.Cloud() != "verda" {
			t.Errorf("configure %d: %+v", i, c)
		}
		// An emulator needs no credentials, and ignores the ones configured.
		if _, err := Atlas.Configure(Values{EmulatorDirKey: dir + "/atlas", "token": "real-token", "endpoint": "https://atlas.invalid"}, env); err != nil {
			t.Fatal(err)
		}
	}
	if n := emus.Len(); n != 2 {
		t.Errorf("%d emulators run after five configures of two clouds", n)
	}
	if err := emus.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after Stop, %d before the configures", g, before)
	}
}

func TestConfigureEmulatorFailure(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := PrimeIntellect.Configure(Values{EmulatorDirKey: file}, Env{Inventory: inv, Emulators: NewEmulators()})
	var emu *EmulatorError
	if !errors.As(err, &emu) || !strings.Contains(err.Error(), "Prime Intellect emulator") {
		t.Errorf("an emulator_dir that is a file: %v", err)
	}
}

// Without a set of emulators to run them in, a block that sets emulator_dir fails, naming the cloud.
// The sandbox is configured through the registry like every cloud: its directory (default
// .hydra-sandbox), a boot time that must be a positive duration, and SSH machines only when
// provisioning is on.
func TestConfigureSandbox(t *testing.T) {
	inv := backendtest.Inventory(t)
	dir := t.TempDir()
	c, err := Sandbox.Configure(Values{"dir": dir, "boot_time": "90s"}, Env{Inventory: inv})
	if err != nil || c.Backend.Cloud() != Sandbox.Name || c.StateDir != dir || c.Emulated {
		t.Fatalf("configured %+v, %v", c, err)
	}
	for _, bad := range []string{"soon", "-1s", "0s"} {
		if _, err := Sandbox.Configure(Values{"dir": dir, "boot_time": bad}, Env{Inventory: inv}); err == nil || !strings.Contains(err.Error(), "boot_time") {
			t.Errorf("boot_time %q: %v", bad, err)
		}
	}
	if _, err := Sandbox.Configure(Values{"emulator_dir": dir}, Env{Inventory: inv}); err == nil {
		t.Error("the sandbox accepted emulator_dir")
	}
	t.Chdir(t.TempDir())
	c, err = Sandbox.Configure(Values{}, Env{Inventory: inv, Provisioning: true})
	if err != nil || c.StateDir != SandboxDefaultDir {
		t.Errorf("the default directory: %+v, %v", c, err)
	}
}

func TestConfigureWithoutEmulators(t *testing.T) {
	clearEnv(t)
	inv := backendtest.Inventory(t)
	_, err := Lambda.Configure(Values{EmulatorDirKey: t.TempDir()}, Env{Inventory: inv})
	var emu *EmulatorError
	if !errors.As(err, &emu) || !strings.Contains(err.Error(), "Lambda emulator") {
		t.Errorf("emulator_dir without Emulators: %v", err)
	}
}

// One spelling per cloud everywhere: the provider block is the cloud's name, and its pools' names start
// with it.
func TestOneSpellingPerCloud(t *testing.T) {
	inv := backendtest.Inventory(t)
	for _, d := range All() {
		if d.Block != d.Name {
			t.Errorf("cloud %q has provider block %q: use one spelling", d.Name, d.Block)
		}
	}
	for _, p := range inv.Pools {
		if !strings.HasPrefix(p.Name, p.Cloud+"-") {
			t.Errorf("pool %q of cloud %q does not start with the cloud's name", p.Name, p.Cloud)
		}
	}
}

// TestBillingMarkdown: the docs' billing sentence comes from what the clouds state, every cloud named once.
func TestBillingMarkdown(t *testing.T) {
	got := BillingMarkdown()
	for _, d := range Registered() {
		name := d.Title
		if d.Facts.BillingUnit > 0 {
			name = d.Facts.Billing
		}
		if d.Simulated {
			name = strings.ToLower(d.Title)
		}
		if strings.Count(got, name) != 1 {
			t.Errorf("BillingMarkdown() = %q: %q is not named exactly once", got, name)
		}
	}
}

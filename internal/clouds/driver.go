package clouds

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Driver is one cloud.
type Driver struct {
	// Name is the cloud's name in pools.yml, api_names, the `clouds` argument and the backend's Cloud():
	// lower-case letters and digits ("primeintellect").
	Name string
	// Block is the name of the cloud's provider block ("primeintellect").
	Block string
	// Title is the cloud's name for people ("Prime Intellect"), used in docs and errors.
	Title string
	// Description is the block's documentation (markdown). The off-by-default rule and the pools that
	// the embedded inventory gives the cloud are appended to it (BlockMarkdown).
	Description string
	// Settings are the block's attributes, besides the ones every driver gets (emulator_dir, and enabled
	// when OffByDefault).
	Settings []Setting
	// OffByDefault clouds are asked only when their block also sets `enabled = true` (a cloud whose
	// orders are commitments, such as auction bids), not merely when the block is present.
	OffByDefault bool
	// Simulated clouds rent nothing real (the sandbox): they have no emulator (no emulator_dir, no
	// StartEmulator), and the provider uses them only on purpose.
	Simulated bool
	// Build makes the backend from the block's resolved settings. It returns a *MissingError
	// (Settings.Require, RequireOneOf) when credentials are missing.
	Build func(s Settings, inv *inventory.Inventory, logger hclog.Logger) (cloudprovider.InstanceManagerBackend, error)
	// Facts are what the cloud states about itself: its backend package's, the same its backend
	// returns (cloudprovider.FactStater), here for the docs, which are written before any backend is built.
	Facts cloudprovider.Facts
	// StartEmulator serves the cloud's local emulator on a loopback port with its state in dir, and
	// returns the settings (endpoint, credentials) that point Build at it.
	StartEmulator func(dir string) (Emulator, error)
}

// Emulator is a running local emulator of a cloud's API.
type Emulator struct {
	// Settings override the block's (endpoint and credentials), whatever the block or the environment says.
	Settings Values
	// Stop shuts the emulator's HTTP server down.
	Stop func(context.Context) error
}

// Kind is the type of a setting's value.
type Kind int

// The kinds of setting: a Values entry of a KindString setting is a string, of KindFloat a float64, of
// KindBool a bool.
const (
	KindString Kind = iota
	KindFloat
	KindBool
)

func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Setting is one attribute of a cloud's provider block.
type Setting struct {
	// Key is the attribute's name in the block ("client_id").
	Key string
	// Env is the environment variable read when the block does not set Key: the name the vendor's own
	// tools use ("VERDA_CLIENT_ID"). Empty: none.
	Env string
	// Sensitive settings are credentials: hidden in plans and logs.
	Sensitive bool
	// Kind is the value's type.
	Kind Kind
	// Default applies when neither the block nor Env sets the value: a string, float64 or bool by Kind;
	// nil for none. Markdown shows it.
	Default any
	// Doc is the attribute's documentation (markdown, whole sentences). Sensitivity, Env and Default are
	// appended to it (Markdown); a default that is not a value, Doc describes in words.
	Doc string
	// Range bounds a KindFloat setting (nil: any value).
	Range *Range
}

// Range is the inclusive bounds of a float setting; Max is +Inf when there is no upper bound.
type Range struct {
	Min, Max float64
}

// AtLeast is a Range with only a lower bound.
func AtLeast(lo float64) *Range { return &Range{Min: lo, Max: math.Inf(1)} }

// Between is a Range with both bounds.
func Between(lo, hi float64) *Range { return &Range{Min: lo, Max: hi} }

// Names of the settings the registry adds to every driver.
const (
	EmulatorDirKey = "emulator_dir"
	EnabledKey     = "enabled"
)

// AllSettings returns the block's attributes: the driver's own, then enabled (OffByDefault drivers)
// and emulator_dir (real clouds).
func (d *Driver) AllSettings() []Setting {
	out := append([]Setting(nil), d.Settings...)
	if d.OffByDefault {
		out = append(out, Setting{Key: EnabledKey, Kind: KindBool, Default: false,
			Doc: fmt.Sprintf("Turn %s on: ask it for offers and let them be chosen. Without `enabled = true` the block is ignored.", d.Title)})
	}
	if d.Simulated {
		return out
	}
	out = append(out, Setting{Key: EmulatorDirKey, Kind: KindString,
		Doc: fmt.Sprintf("Run hydra's local emulator of the %s API, with its state in this directory, and talk "+
			"to it instead of the real cloud: the real client code paths, no account, no cost. Separate Terraform runs "+
			"with the same directory see the same machines. Credentials are not needed. Emulated machines cannot be "+
			"reached over SSH, so this needs `provisioning { enabled = false }`.", d.Title)})
	return out
}

// Setting returns the block attribute named key.
func (d *Driver) Setting(key string) (Setting, bool) {
	for _, s := range d.AllSettings() {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// Markdown is the setting's whole documentation: Doc, then whether it is sensitive and its default.
func (s Setting) Markdown() string {
	doc := strings.TrimSpace(s.Doc)
	if s.Sensitive {
		doc += " Sensitive."
	}
	switch {
	case s.Env != "" && s.Default != nil:
		doc += fmt.Sprintf(" Default: the `%s` environment variable, else `%s`.", s.Env, formatValue(s.Default))
	case s.Env != "":
		doc += fmt.Sprintf(" Default: the `%s` environment variable.", s.Env)
	case s.Default != nil:
		doc += fmt.Sprintf(" Default `%s`.", formatValue(s.Default))
	}
	return doc
}

func formatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// BlockMarkdown is the block's whole documentation: Description, the off-by-default rule, and the
// pools of the embedded inventory that the cloud serves.
func (d *Driver) BlockMarkdown() string {
	doc := strings.TrimSpace(d.Description)
	if d.OffByDefault {
		doc += " Off unless `enabled = true`."
	}
	if inv, err := embeddedInventory(); err == nil {
		var pools []string
		for _, p := range inv.Pools {
			if p.Cloud == d.Name {
				pools = append(pools, "`"+p.Name+"`")
			}
		}
		if len(pools) > 0 {
			doc += " Serves " + joinAnd(pools) + "."
		}
	}
	return doc
}

// HowToConfigure says how a provider configuration turns the cloud on: its block, the settings that
// have no default (with the environment variables read in their place) and, for clouds off by
// default, enabled = true.
func (d *Driver) HowToConfigure() string {
	if d.Simulated {
		return fmt.Sprintf("add a `%s {}` block to the provider", d.Block)
	}
	var keys []string
	for _, s := range d.Settings {
		if s.Default != nil {
			continue
		}
		k := "`" + s.Key + "`"
		if s.Env != "" {
			k += " (or " + s.Env + ")"
		}
		keys = append(keys, k)
	}
	msg := fmt.Sprintf("add a `%s { ... }` block to the provider", d.Block)
	if len(keys) > 0 {
		msg += " (settings: " + strings.Join(keys, ", ") + ")"
	}
	if d.OffByDefault {
		msg += " and `enabled = true`"
	}
	return msg
}

var embeddedInventory = sync.OnceValues(inventory.Default)

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// Values are settings by key: a string, float64 or bool by the setting's Kind. In a block's Values a

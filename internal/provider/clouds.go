package provider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/atlas"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/mithril"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/primeintellect"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/upcloud"
	"github.com/hydragpu/terraform-provider-hydra/internal/backends/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	emuatlas "github.com/hydragpu/terraform-provider-hydra/internal/emulator/atlas"
	emumithril "github.com/hydragpu/terraform-provider-hydra/internal/emulator/mithril"
	emuprime "github.com/hydragpu/terraform-provider-hydra/internal/emulator/primeintellect"
	emuupcloud "github.com/hydragpu/terraform-provider-hydra/internal/emulator/upcloud"
	emuverda "github.com/hydragpu/terraform-provider-hydra/internal/emulator/verda"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// Provider configuration blocks of the real clouds. A cloud whose block is absent is not asked.

type verdaModel struct {
	ClientID     types.String  `tfsdk:"client_id"`
	ClientSecret types.String  `tfsdk:"client_secret"`
	Endpoint     types.String  `tfsdk:"endpoint"`
	EURToUSD     types.Float64 `tfsdk:"eur_to_usd"`
	EmulatorDir  types.String  `tfsdk:"emulator_dir"`
}

type upcloudModel struct {
	Username    types.String  `tfsdk:"username"`
	Password    types.String  `tfsdk:"password"`
	Token       types.String  `tfsdk:"token"`
	Endpoint    types.String  `tfsdk:"endpoint"`
	EURToUSD    types.Float64 `tfsdk:"eur_to_usd"`
	Template    types.String  `tfsdk:"template"`
	EmulatorDir types.String  `tfsdk:"emulator_dir"`
}

type primeIntellectModel struct {
	APIKey      types.String `tfsdk:"api_key"`
	Endpoint    types.String `tfsdk:"endpoint"`
	EmulatorDir types.String `tfsdk:"emulator_dir"`
}

type atlasModel struct {
	Endpoint    types.String  `tfsdk:"endpoint"`
	Token       types.String  `tfsdk:"token"`
	PriceFactor types.Float64 `tfsdk:"price_factor"`
	EmulatorDir types.String  `tfsdk:"emulator_dir"`
}

type mithrilModel struct {
	Enabled          types.Bool    `tfsdk:"enabled"`
	APIKey           types.String  `tfsdk:"api_key"`
	Project          types.String  `tfsdk:"project"`
	Endpoint         types.String  `tfsdk:"endpoint"`
	WinMarginPercent types.Float64 `tfsdk:"win_margin_percent"`
	EmulatorDir      types.String  `tfsdk:"emulator_dir"`
}

func endpointAttr(cloud, def string) schema.StringAttribute {
	return schema.StringAttribute{
		MarkdownDescription: fmt.Sprintf("Base URL of the %s API, for private endpoints and tests. Default `%s`.", cloud, def),
		Optional:            true,
	}
}

func emulatorDirAttr(cloud string) schema.StringAttribute {
	return schema.StringAttribute{
		MarkdownDescription: fmt.Sprintf("Run hydra's local emulator of the %s API, with its state in this directory, and talk "+
			"to it instead of the real cloud: the real client code paths, no account, no cost. Separate Terraform runs "+
			"with the same directory see the same machines. Credentials are not needed. Emulated machines cannot be "+
			"reached over SSH, so this needs `provisioning { enabled = false }`.", cloud),
		Optional: true,
	}
}

func secretAttr(desc, env string) schema.StringAttribute {
	return schema.StringAttribute{
		MarkdownDescription: fmt.Sprintf("%s Sensitive. Default: the `%s` environment variable.", desc, env),
		Optional:            true,
		Sensitive:           true,
	}
}

// cloudBlocks is the schema of every real cloud's block.
func cloudBlocks() map[string]schema.Block {
	return map[string]schema.Block{
		"verda": schema.SingleNestedBlock{
			MarkdownDescription: "Verda (formerly DataCrunch). Serves `verda-vm-pool`.",
			Attributes: map[string]schema.Attribute{
				"client_id":     secretAttr("OAuth2 client ID.", "VERDA_CLIENT_ID"),
				"client_secret": secretAttr("OAuth2 client secret.", "VERDA_CLIENT_SECRET"),
				"endpoint":      endpointAttr("Verda", "https://api.verda.com/v1"),
				"eur_to_usd": schema.Float64Attribute{
					MarkdownDescription: "Exchange rate for accounts billed in euros: hydra's prices are US dollars per hour. Default `1.08`.",
					Optional:            true,
					Validators:          []validator.Float64{float64validator.AtLeast(0.01)},
				},
				"emulator_dir": emulatorDirAttr("Verda"),
			},
		},
		"upcloud": schema.SingleNestedBlock{
			MarkdownDescription: "UpCloud (API 1.3), with a sub-account's username and password or an API token. Serves `upcloud-vm-pool`.",
			Attributes: map[string]schema.Attribute{
				"username": schema.StringAttribute{MarkdownDescription: "API sub-account username. Default: the `UPCLOUD_USERNAME` environment variable.", Optional: true},
				"password": secretAttr("API sub-account password.", "UPCLOUD_PASSWORD"),
				"token":    secretAttr("API token (instead of username and password).", "UPCLOUD_TOKEN"),
				"endpoint": endpointAttr("UpCloud", "https://api.upcloud.com/1.3"),
				"eur_to_usd": schema.Float64Attribute{
					MarkdownDescription: "Exchange rate for UpCloud's prices, which are euro cents per hour: hydra's prices are US dollars per hour. Default `1.08`.",
					Optional:            true,
					Validators:          []validator.Float64{float64validator.AtLeast(0.01)},
				},
				"template": schema.StringAttribute{
					MarkdownDescription: "The storage template new machines are cloned from (UUID or exact title). Default: the newest public GPU-ready Ubuntu template.",
					Optional:            true,
				},
				"emulator_dir": emulatorDirAttr("UpCloud"),
			},
		},
		"prime_intellect": schema.SingleNestedBlock{
			MarkdownDescription: "Prime Intellect, an aggregator reselling other clouds' GPUs. Serves `prime-intellect-vm-pool` and `prime-intellect-execlet-pool`.",
			Attributes: map[string]schema.Attribute{
				"api_key":      secretAttr("API key.", "PRIME_API_KEY"),
				"endpoint":     endpointAttr("Prime Intellect", "https://api.primeintellect.ai"),
				"emulator_dir": emulatorDirAttr("Prime Intellect"),
			},
		},
		"atlas": schema.SingleNestedBlock{
			MarkdownDescription: "Atlas, the in-house cloud. Its offers carry an artificially low price, so Atlas wins whenever it has capacity. Serves `atlas-vm-pool` and `atlas-execlet-pool`.",
			Attributes: map[string]schema.Attribute{
				"endpoint": schema.StringAttribute{MarkdownDescription: "Base URL of the Atlas API. Default: the `ATLAS_ENDPOINT` environment variable.", Optional: true},
				"token":    secretAttr("Bearer token.", "ATLAS_TOKEN"),
				"price_factor": schema.Float64Attribute{
					MarkdownDescription: "Factor applied to Atlas's list prices before ranking. Default `0.5`.",
					Optional:            true,
					Validators:          []validator.Float64{float64validator.Between(0.01, 10)},
				},
				"emulator_dir": emulatorDirAttr("Atlas"),
			},
		},
		"mithril": schema.SingleNestedBlock{
			MarkdownDescription: "Mithril's spot capacity, sold by a sealed second-price auction. Off unless `enabled = true`. Serves `mithril-vm-pool`.",
			Attributes: map[string]schema.Attribute{
				"enabled":  schema.BoolAttribute{MarkdownDescription: "Ask Mithril for offers and let it win bids. Default `false`.", Optional: true},
				"api_key":  secretAttr("API key.", "MITHRIL_API_KEY"),
				"project":  schema.StringAttribute{MarkdownDescription: "Project ID or name. Default: the `MITHRIL_PROJECT` environment variable.", Optional: true},
				"endpoint": endpointAttr("Mithril", "https://api.mithril.ai"),
				"win_margin_percent": schema.Float64Attribute{
					MarkdownDescription: "A bid is placed only when it beats the auction's recent winning price by this much (and the auction's own signals agree); otherwise the offer is shown as not eligible with both prices. Default `10`.",
					Optional:            true,
					Validators:          []validator.Float64{float64validator.Between(0, 1000)},
				},
				"emulator_dir": emulatorDirAttr("Mithril"),
			},
		},
	}
}

// cloudsConfig gathers the real clouds' blocks of the provider configuration.
type cloudsConfig struct {
	Verda          *verdaModel
	UpCloud        *upcloudModel
	PrimeIntellect *primeIntellectModel
	Atlas          *atlasModel
	Mithril        *mithrilModel
}

// fromEnv returns the attribute's value, else the environment variable's.
func fromEnv(v types.String, env string) string {
	if !v.IsNull() && !v.IsUnknown() && v.ValueString() != "" {
		return v.ValueString()
	}
	return os.Getenv(env)
}

// startEmulator serves an emulator on a loopback port for the life of the provider process.
func startEmulator(h http.Handler, basePath string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + basePath, nil
}

// cloudBackends builds the backend of every configured cloud. emulated is true when any of them runs
// on a local emulator.
func cloudBackends(ctx context.Context, cfg cloudsConfig, inv *inventory.Inventory, logger hclog.Logger, addErr func(path.Path, string, string)) (backends []controlplane.InstanceManagerBackend, emulated bool) {
	fail := func(block, summary string, err error) {
		addErr(path.Root(block), summary, err.Error())
	}
	emuDir := func(v types.String) string {
		if v.IsNull() || v.ValueString() == "" {
			return ""
		}
		emulated = true
		return v.ValueString()
	}
	if c := cfg.Verda; c != nil {
		vc := verda.Config{ClientID: fromEnv(c.ClientID, "VERDA_CLIENT_ID"), ClientSecret: fromEnv(c.ClientSecret, "VERDA_CLIENT_SECRET"),
			BaseURL: c.Endpoint.ValueString(), EURToUSD: c.EURToUSD.ValueFloat64()}
		if dir := emuDir(c.EmulatorDir); dir != "" {
			url, err := startEmulator(emuverda.New(emuverda.Options{StateDir: dir}), emuverda.BasePath)
			if err != nil {
				fail("verda", "Cannot start the Verda emulator", err)
				return nil, emulated
			}
			vc.BaseURL, vc.ClientID, vc.ClientSecret = url, emuverda.DefaultClientID, emuverda.DefaultClientSecret
		}
		if vc.ClientID == "" || vc.ClientSecret == "" {
			addErr(path.Root("verda"), "Missing Verda credentials", "Set client_id and client_secret in the verda block, or the VERDA_CLIENT_ID and VERDA_CLIENT_SECRET environment variables (or emulator_dir to use the local emulator).")
			return nil, emulated
		}
		b, err := verda.New(vc, inv, logger)
		if err != nil {
			fail("verda", "Invalid Verda configuration", err)
			return nil, emulated
		}
		backends = append(backends, b)
	}
	if c := cfg.UpCloud; c != nil {
		uc := upcloud.Config{Username: fromEnv(c.Username, "UPCLOUD_USERNAME"), Password: fromEnv(c.Password, "UPCLOUD_PASSWORD"),
			Token: fromEnv(c.Token, "UPCLOUD_TOKEN"), BaseURL: c.Endpoint.ValueString(), EURToUSD: c.EURToUSD.ValueFloat64(), Template: c.Template.ValueString()}
		if dir := emuDir(c.EmulatorDir); dir != "" {
			srv := emuupcloud.New(emuupcloud.Options{StateDir: dir, Username: "hydra-emulator", Password: "hydra-emulator"})
			url, err := startEmulator(srv, "/1.3")
			if err != nil {
				fail("upcloud", "Cannot start the UpCloud emulator", err)
				return nil, emulated
			}
			uc.BaseURL, uc.Username, uc.Password, uc.Token = url, "hydra-emulator", "hydra-emulator", ""
		}
		if uc.Token != "" && uc.Username != "" && uc.Password != "" {
			uc.Username, uc.Password = "", "" // an explicit token wins over sub-account credentials from the environment
		}
		if uc.Token == "" && (uc.Username == "" || uc.Password == "") {
			addErr(path.Root("upcloud"), "Missing UpCloud credentials", "Set username and password (a sub-account's) or token in the upcloud block, or UPCLOUD_USERNAME/UPCLOUD_PASSWORD or UPCLOUD_TOKEN in the environment (or emulator_dir to use the local emulator).")
			return nil, emulated
		}
		b, err := upcloud.New(uc, inv, logger)
		if err != nil {
			fail("upcloud", "Invalid UpCloud configuration", err)
			return nil, emulated
		}
		backends = append(backends, b)
	}
	if c := cfg.PrimeIntellect; c != nil {
		pc := primeintellect.Config{APIKey: fromEnv(c.APIKey, "PRIME_API_KEY"), BaseURL: c.Endpoint.ValueString()}
		if dir := emuDir(c.EmulatorDir); dir != "" {
			url, err := startEmulator(emuprime.New(emuprime.Options{StateDir: dir}), "")
			if err != nil {
				fail("prime_intellect", "Cannot start the Prime Intellect emulator", err)
				return nil, emulated
			}
			pc.BaseURL, pc.APIKey = url, emuprime.DefaultAPIKey
		}
		if pc.APIKey == "" {
			addErr(path.Root("prime_intellect"), "Missing Prime Intellect credentials", "Set api_key in the prime_intellect block or PRIME_API_KEY in the environment (or emulator_dir to use the local emulator).")
			return nil, emulated
		}
		b, err := primeintellect.New(pc, inv, logger)
		if err != nil {
			fail("prime_intellect", "Invalid Prime Intellect configuration", err)
			return nil, emulated
		}
		backends = append(backends, b)
	}
	if c := cfg.Atlas; c != nil {
		ac := atlas.Config{BaseURL: fromEnv(c.Endpoint, "ATLAS_ENDPOINT"), Token: fromEnv(c.Token, "ATLAS_TOKEN"), PriceFactor: c.PriceFactor.ValueFloat64()}
		if dir := emuDir(c.EmulatorDir); dir != "" {
			url, err := startEmulator(emuatlas.New(emuatlas.Options{StateDir: dir}), "")
			if err != nil {
				fail("atlas", "Cannot start the Atlas emulator", err)
				return nil, emulated
			}
			ac.BaseURL, ac.Token = url, emuatlas.DefaultToken
		}
		if ac.BaseURL == "" || ac.Token == "" {
			addErr(path.Root("atlas"), "Missing Atlas configuration", "Set endpoint and token in the atlas block, or ATLAS_ENDPOINT and ATLAS_TOKEN in the environment (or emulator_dir to use the local emulator).")
			return nil, emulated
		}
		b, err := atlas.New(ac, inv, logger)
		if err != nil {
			fail("atlas", "Invalid Atlas configuration", err)
			return nil, emulated
		}
		backends = append(backends, b)
	}
	if c := cfg.Mithril; c != nil && c.Enabled.ValueBool() {
		mc := mithril.Config{APIKey: fromEnv(c.APIKey, "MITHRIL_API_KEY"), Project: fromEnv(c.Project, "MITHRIL_PROJECT"), BaseURL: c.Endpoint.ValueString()}
		if !c.WinMarginPercent.IsNull() {
			m := c.WinMarginPercent.ValueFloat64()
			mc.WinMarginPercent = &m
		}
		if dir := emuDir(c.EmulatorDir); dir != "" {
			url, err := startEmulator(emumithril.New(emumithril.Options{StateDir: dir}), "")
			if err != nil {
				fail("mithril", "Cannot start the Mithril emulator", err)
				return nil, emulated
			}
			mc.BaseURL, mc.APIKey, mc.Project = url, emumithril.DefaultAPIKey, "hydra"
		}
		if mc.APIKey == "" {
			addErr(path.Root("mithril"), "Missing Mithril credentials", "Set api_key (and project) in the mithril block, or MITHRIL_API_KEY and MITHRIL_PROJECT in the environment (or emulator_dir to use the local emulator).")
			return nil, emulated
		}
		b, err := mithril.New(mc, inv, logger)
		if err != nil {
			fail("mithril", "Invalid Mithril configuration", err)
			return nil, emulated
		}
		backends = append(backends, b)
	}
	return backends, emulated
}

// Package provider is hydra's Terraform provider: its configuration, the hydra_gpu_instance and
// hydra_gpu_cluster resources and the hydra_gpu_offer and hydra_gpu_instances data sources. It translates between Terraform and the control plane and holds
// no cloud knowledge of its own.
package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
	"github.com/hydragpu/terraform-provider-hydra/internal/provision"
)

var (
	_ provider.ProviderWithValidateConfig = (*hydraProvider)(nil)
)

// ValidateConfig warns about creates this working directory's journal says were cut short. Terraform
// calls it in every command (a destroy of an empty state calls nothing else), and it reads only local
// files.
func (p *hydraProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var dir types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("plan_quote_dir"), &dir)...)
	if dir.IsUnknown() {
		return
	}
	quoteDir := dir.ValueString()
	if quoteDir == "" {
		quoteDir = defaultQuoteDir()
	}
	if summary, detail, ok := journalWarning(controlplane.Journal{Dir: filepath.Join(quoteDir, "creates")}); ok {
		resp.Diagnostics.AddWarning(summary, detail)
	}
	if currentCommand() == commandDestroys && req.Config.Raw.IsFullyKnown() {
		// A destroy of a state that holds nothing never configures the provider: here is the one place
		// it can refuse to report success while creates cut short bill outside the state.
		// Nothing in the protocol shows such a destroy: where the command line cannot be read, only the
		// journal's warning above is given.
		var cresp provider.ConfigureResponse
		data := p.open(ctx, provider.ConfigureRequest{Config: req.Config}, &cresp)
		if data == nil || cresp.Diagnostics.HasError() {
			return // its errors would have failed no destroy before
		}
		octx, done := operation(ctx)
		defer done()
		p.started = &started{config: req.Config.Raw, data: data, diags: cresp.Diagnostics, startup: data.cp.Open(octx)}
		if summary, detail, ok := leftoversError(p.started.startup.Machines); ok {
			resp.Diagnostics.AddError(summary, detail)
		}
	}
}

// New returns the provider factory for providerserver, with a set of emulators of its own (NewWith).
func New(version string) func() provider.Provider {
	return NewWith(version, clouds.NewEmulators())
}

// NewWith returns the provider factory for providerserver. The emulators that blocks' emulator_dir
// start run in emulators, shared by every provider the factory makes; the caller stops them when the
// provider is done.
func NewWith(version string, emulators *clouds.Emulators) func() provider.Provider {
	return func() provider.Provider { return &hydraProvider{version: version, emulators: emulators} }
}

type hydraProvider struct {
	version   string
	emulators *clouds.Emulators
	// tuning is the cloud API clients' tuning (zero: each cloud's documented defaults); tests on local
	// emulators raise its rate limit.
	tuning restclient.Tuning
	// started is the configuration a destroy's ValidateConfig opened, with what the control plane
	// found: Configure of the same configuration takes it instead of listing every cloud again.
	started *started
}

// started is one opened configuration.
type started struct {
	config  tftypes.Value
	data    *providerData
	diags   diag.Diagnostics
	startup controlplane.Startup
}

type providerModel struct {
	InventoryDir types.String `tfsdk:"inventory_dir"`
	PlanQuoteDir types.String `tfsdk:"plan_quote_dir"`
	PlanQuoteTTL types.String `tfsdk:"plan_quote_ttl"`
	OfferTimeout types.String `tfsdk:"offer_timeout"`
	OrphanGrace  types.String `tfsdk:"orphan_grace"`
	// MaxTotalPricePerHour is the budget of the whole configuration (budget.go).
	MaxTotalPricePerHour types.Float64 `tfsdk:"max_total_price_per_hour"`
	// CapacityMemory is how long an offer that failed for capacity is skipped (capacity.go).
	CapacityMemory types.String       `tfsdk:"capacity_memory"`
	Sandbox        *sandboxModel      `tfsdk:"sandbox"`
	Provisioning   *provisioningModel `tfsdk:"provisioning"`
	// The clouds' blocks are not here: they are derived from the registry (internal/clouds) and read
	// by readConfig.
}

type sandboxModel struct {
	Dir      types.String `tfsdk:"dir"`
	BootTime types.String `tfsdk:"boot_time"`
}

type provisioningModel struct {
	Enabled         types.Bool   `tfsdk:"enabled"`
	MaxAttempts     types.Int64  `tfsdk:"max_attempts"`
	RetryDelay      types.String `tfsdk:"retry_delay"`
	SSHPrivateKey   types.String `tfsdk:"ssh_private_key"`
	PlaybookDir     types.String `tfsdk:"playbook_dir"`
	AnsiblePlaybook types.String `tfsdk:"ansible_playbook"`
}

// fleetQuiet is how long instances that compete for limited stock gather before they are served in
// name order (Terraform plans up to -parallelism instances at once; they all join within this time).
const fleetQuiet = 300 * time.Millisecond

// providerData is what resources and data sources get from Configure.
type providerData struct {
	cp     *controlplane.ControlPlane
	quotes *quoteStore
	// command is what the provider knows of the terraform command (mode.go): under a known destroy,
	// the plans of its first walk are thrown away, so none is checked.
	command command
	// machines is what Configure listed of hydra's machines, for the leftovers guard of a destroy plan.
	machines controlplane.ListResult
	// walk is what this walk (plan or apply) has seen of the configuration.
	walk *walk
	// unmappedWarned holds the clouds whose unmapped GPUs this walk has warned about (once per cloud).
	unmappedWarned sync.Map
	// provisioning is false when provisioning is switched off (machines are ready once they run).
	provisioning bool
	// provisioningUnavailable, when set, is why provisioning is on but ansible-playbook cannot run where
	// Terraform runs: plans that need it fail with it (runner still reads markers and health over SSH).
	provisioningUnavailable *provisioningUnavailable
	// sshPublicKeys are installed on every new machine so provisioning can log in.
	sshPublicKeys []string
	// sandbox is the sandbox's backend when configured (tests reach into it), and sandboxDir its
	// directory (where its provisioning key lives).
	sandbox    cloudprovider.InstanceManagerBackend
	sandboxDir string
}

func (p *hydraProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "hydra"
	resp.Version = p.version
}

func (p *hydraProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "hydra rents GPU machines across several clouds at the cheapest price and hands them over " +
			"provisioned and ready. With no cloud block configured, hydra uses the **sandbox**, a simulated cloud on " +
			"this machine that needs no credentials.",
		Attributes: map[string]schema.Attribute{
			"inventory_dir": schema.StringAttribute{
				MarkdownDescription: "Directory holding your own `supported_gpus.yml` and/or `pools.yml`. A file missing " +
					"there is taken from the copy embedded in the provider. Default: the embedded inventory.",
				Optional: true,
			},
			"plan_quote_dir": schema.StringAttribute{
				MarkdownDescription: "hydra's local working directory, a local optimisation that no runner needs to keep: " +
					"a plain `terraform apply` pins its plan's chosen offers here (a saved plan carries them in the plan " +
					"file), and every create in flight is journaled here (in `creates/`), so that the same working directory " +
					"adopts a create cut short by a hard kill on every cloud (any runner recognises one at the cloud where " +
					"the cloud records confirmation). Default: `hydra-plan-quotes` in Terraform's data directory " +
					"(`TF_DATA_DIR`, else `.terraform`).",
				Optional: true,
			},
			"plan_quote_ttl": schema.StringAttribute{
				MarkdownDescription: "How long a pinned plan-time choice stays valid, as a Go duration (`\"1h\"`). Default `\"1h\"`.",
				Optional:            true,
				Validators:          []validator.String{durationValidator},
			},
			"max_total_price_per_hour": budgetSchema(),
			"capacity_memory":          capacityMemorySchema(),
			"orphan_grace": schema.StringAttribute{
				MarkdownDescription: "How old a machine that hydra created, but that no completed create, refresh or import " +
					"has confirmed, must be before every plan warns about it as a possible orphan (a create cut short by a hard " +
					"kill), as a Go duration. Younger ones may still be in flight in another run. A machine left by a cut-short " +
					"create of a resource (it carries that resource name's ownership token) is named at once. Default `\"10m\"`.",
				Optional:   true,
				Validators: []validator.String{durationValidator},
			},
			"offer_timeout": schema.StringAttribute{
				MarkdownDescription: "How long each cloud may take to list its offers during a plan, as a Go duration. A cloud " +
					"that takes longer is left out and named as timed out. Default `\"20s\"`.",
				Optional:   true,
				Validators: []validator.String{durationValidator},
			},
		},
		Blocks: mergeBlocks(cloudBlocks(), map[string]schema.Block{
			// The sandbox's block, from its registration (clouds.Sandbox).
			clouds.Sandbox.Block: schema.SingleNestedBlock{
				MarkdownDescription: clouds.Sandbox.Description,
				Attributes: map[string]schema.Attribute{
					"dir": schema.StringAttribute{MarkdownDescription: sandboxSetting("dir").Markdown(), Optional: true},
					"boot_time": schema.StringAttribute{MarkdownDescription: sandboxSetting("boot_time").Markdown(), Optional: true,
						Validators: []validator.String{durationValidator}},
				},
			},
			"provisioning": schema.SingleNestedBlock{
				MarkdownDescription: "How machines are provisioned before they are `ready`.",
				Attributes: map[string]schema.Attribute{
					"enabled": schema.BoolAttribute{
						MarkdownDescription: "Run hydra's provisioning on every new machine. With `false` a machine is `ready` as soon " +
							"as its cloud says it runs (for images that need no setup). Default `true`.",
						Optional: true,
					},
					"max_attempts": schema.Int64Attribute{
						MarkdownDescription: "How many provisioning attempts a machine gets before it ends in `error`: 1 to 20. Default `3`.",
						Optional:            true,
						Validators:          []validator.Int64{int64validator.Between(1, 20)},
					},
					"retry_delay": schema.StringAttribute{
						MarkdownDescription: "Wait before the second provisioning attempt, doubling after that, as a Go duration. Default `\"5s\"`.",
						Optional:            true,
						Validators:          []validator.String{durationValidator},
					},
					"ssh_private_key": schema.StringAttribute{
						MarkdownDescription: "The SSH private key (OpenSSH or PEM, no passphrase) hydra provisions with; its public key is " +
							"installed on every new machine. Sensitive. Required when a real cloud is configured; with only the sandbox, " +
							"hydra generates one in the sandbox directory. Tip: `file(\"~/.ssh/hydra\")`.",
						Optional:  true,
						Sensitive: true,
					},
					"playbook_dir": schema.StringAttribute{
						MarkdownDescription: "Directory with your own `bare-vm.yml`, `execlet.yml` and roles, used instead of the playbooks " +
							"embedded in the provider. Any change to its files re-runs provisioning in place on the next apply.",
						Optional: true,
					},
					"ansible_playbook": schema.StringAttribute{
						MarkdownDescription: "Path of `ansible-playbook` (ansible-core 2.14 or later). Default: found on `PATH`.",
						Optional:            true,
					},
				},
			},
		}),
	}
}

func mergeBlocks(a, b map[string]schema.Block) map[string]schema.Block {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func (p *hydraProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var data *providerData
	var st controlplane.Startup
	if was := p.started; was != nil && was.config.Equal(req.Config.Raw) {
		p.started = nil
		data, st = was.data, was.startup
		resp.Diagnostics.Append(was.diags...)
	} else {
		if data = p.open(ctx, req, resp); data == nil || resp.Diagnostics.HasError() {
			return
		}
		// Every plan, destroy plans included, names the machines that may be billed with no state.
		scanCtx, done := operation(ctx)
		defer done()
		st = data.cp.Open(scanCtx)
	}
	data.command, data.machines = currentCommand(), st.Machines
	if data.command == commandDestroys {
		// A destroy never reports success while creates cut short bill outside the state (where the
		// command is unknown, the destroy plan of a resource runs this guard: leftoversGuard).
		if summary, detail, ok := leftoversError(st.Machines); ok {
			resp.Diagnostics.AddError(summary, detail)
			return
		}
	}
	if summary, detail, ok := orphanWarning(st.Orphans); ok {
		resp.Diagnostics.AddWarning(summary, detail)
	}
	resp.DataSourceData = data
	resp.ResourceData = data
}

// open reads the provider's configuration into its data and control plane (nil on an error): the
// clouds configured, the sandbox only on purpose, provisioning, quotes and journal.
func (p *hydraProvider) open(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) *providerData {
	var cfg providerModel
	cloudBlockValues, diags := readConfig(ctx, req.Config, &cfg)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return nil
	}
	inv, err := inventory.Load(cfg.InventoryDir.ValueString(), clouds.Names()...)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("inventory_dir"), "Invalid hydra inventory", err.Error())
		return nil
	}
	// The backends log through tflog (with Configure's fields), so TF_LOG_PROVIDER shows their retries.
	logger := backendLogger(ctx)
	logger.Info("hydra provider configured", "version", p.version, "terraform_version", req.TerraformVersion)

	data := &providerData{provisioning: true, walk: newWalk()}
	env := clouds.Env{Inventory: inv, Logger: logger, UserAgent: clouds.UserAgent(p.version, req.TerraformVersion), Emulators: p.emulators,
		Tuning: p.tuning}
	backends, emulated := cloudBackends(cloudBlockValues, env, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return nil
	}

	// The sandbox only on purpose: when its block is configured, or when the provider block names no
	// cloud at all (a disabled cloud block counts as configured: production must never land on a
	// simulated cloud). Every command then says that nothing real is rented.
	anyCloudBlock := false
	for _, b := range cloudBlockValues {
		anyCloudBlock = anyCloudBlock || !b.IsNull()
	}
	if cfg.Sandbox == nil && anyCloudBlock && len(backends) == 0 {
		resp.Diagnostics.AddWarning("No cloud is enabled",
			"The provider block configures clouds, but none is enabled (for example only `mithril { enabled = false }`), so "+
				"hydra has nowhere to rent from and every plan that needs a machine fails. Enable a cloud, or add a `sandbox {}` "+
				"block to use the simulated cloud on purpose.")
	}
	if cfg.Sandbox != nil || !anyCloudBlock {
		// The sandbox is built through the registry like every cloud (clouds.Sandbox).
		vals := clouds.Values{}
		if sb := cfg.Sandbox; sb != nil {
			vals["dir"], vals["boot_time"] = sb.Dir.ValueString(), sb.BootTime.ValueString()
		}
		senv := env
		senv.Provisioning = provisioningEnabled(cfg.Provisioning)
		c, err := clouds.Sandbox.Configure(vals, senv)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root(clouds.Sandbox.Block).AtName("dir"), "Cannot open the sandbox", err.Error())
			return nil
		}
		data.sandbox, data.sandboxDir = c.Backend, c.StateDir
		dir := c.StateDir
		backends = append(backends, c.Backend)
		why := "a `sandbox` block is configured"
		if cfg.Sandbox == nil {
			why = "the provider block configures no cloud"
		}
		resp.Diagnostics.AddWarning("Simulated cloud: nothing real will be rented",
			fmt.Sprintf("hydra offers machines of the sandbox, a simulated cloud on this machine (state in %q), because %s. "+
				"Machines there cost nothing and are not real GPUs. Configure a cloud block (%s) to rent real machines.",
				dir, why, cloudBlockList()))
	}

	opts := controlplane.Options{
		OfferTimeout: parseDuration(cfg.OfferTimeout, 20*time.Second),
		Logger:       logger,
		FleetQuiet:   fleetQuiet,
	}
	opts.MaxTotalPricePerHour = budgetOf(cfg.MaxTotalPricePerHour)
	opts.CapacityMemory = parseDuration(cfg.CapacityMemory, defaultCapacityMemory)
	data.provisioning = provisioningEnabled(cfg.Provisioning)
	if pc := cfg.Provisioning; pc != nil {
		opts.MaxProvisionAttempts = int(pc.MaxAttempts.ValueInt64())
		opts.ProvisionBackoff = parseDuration(pc.RetryDelay, 5*time.Second)
	}
	if data.provisioning && emulated {
		resp.Diagnostics.AddAttributeError(path.Root("provisioning").AtName("enabled"), "Emulated clouds cannot be provisioned",
			"A cloud block sets emulator_dir: its machines are simulated by a local API emulator and cannot be reached over SSH. "+
				"Set provisioning { enabled = false } to run the whole lifecycle against the emulators.")
		return nil
	}
	if data.provisioning {
		pc := cfg.Provisioning
		if pc == nil {
			pc = &provisioningModel{}
		}
		ansible, unavailable := locateAnsible(pc, runtime.GOOS)
		if unavailable != nil {
			// Where Terraform runs cannot run ansible-playbook: plans that need it fail, everything else
			// (refresh with health checks, import, destroy) works, so that machines can still be read,
			// adopted and destroyed from here.
			data.provisioningUnavailable = unavailable
			resp.Diagnostics.AddAttributeWarning(path.Root("provisioning"), unavailable.summary, unavailable.detail+
				" Until then, plans that create, replace or provision a GPU instance fail; refresh, import and destroy work "+
				"(execlets are destroyed without draining).")
		}
		runner, pubKey, diags := newProvisioner(pc, ansible, data.sandboxDir, len(backends) > 1 || data.sandbox == nil, logger)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return nil
		}
		opts.Provisioner = runner
		opts.Inspector = runnerInspector{runner}
		data.sshPublicKeys = []string{pubKey}
		// Run directories (keys, inventories) a hard-killed provider left behind are removed once per process.
		sweepOnce.Do(func() { provision.SweepStale(logger) })
	}
	quoteDir := cfg.PlanQuoteDir.ValueString()
	if quoteDir == "" {
		quoteDir = defaultQuoteDir()
	}
	data.quotes = &quoteStore{dir: quoteDir, ttl: parseDuration(cfg.PlanQuoteTTL, time.Hour)}
	opts.Journal = controlplane.Journal{Dir: filepath.Join(quoteDir, "creates")}
	opts.OrphanGrace = parseDuration(cfg.OrphanGrace, 10*time.Minute)
	data.cp = controlplane.New(inv, backends, opts)
	return data
}

func (p *hydraProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewGPUInstanceResource, NewGPUClusterResource, NewVolumeResource}
}

func (p *hydraProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewGPUOfferDataSource, NewGPUInstancesDataSource}
}

// parseDuration reads a validated duration attribute, or returns def when it is null.
func parseDuration(v types.String, def time.Duration) time.Duration {
	if v.IsNull() || v.IsUnknown() || v.ValueString() == "" {
		return def
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil {
		return def
	}
	return d
}

// durationValidator accepts positive Go durations ("90s", "1h30m").
var durationValidator = problemCheck{
	description: "must be a Go duration such as \"90s\" or \"1h30m\"",
	summary:     "Invalid duration",
	problem: func(v string) string {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Sprintf("%q is not a positive Go duration; use a number with a unit, such as \"90s\", \"15m\" or \"1h\".", v)
		}
		return ""
	},
}

// configuredData extracts providerData in a resource's or data source's Configure.
func configuredData(pd any, add func(summary, detail string)) *providerData {
	if pd == nil {
		return nil
	}
	d, ok := pd.(*providerData)
	if !ok {
		add("Unexpected Provider Data Type", fmt.Sprintf("Expected *providerData, got %T. Please report this issue to the provider developers.", pd))
		return nil
	}
	return d
}

// sweepOnce runs provision.SweepStale once per provider process.
var sweepOnce sync.Once

// Address is the provider's registry address; HCL names it `source = "hydragpu/hydra"`.
const Address = "registry.terraform.io/hydragpu/hydra"

// sandboxSetting is one of the sandbox's registered settings (clouds.Sandbox).
func sandboxSetting(key string) clouds.Setting {
	s, _ := clouds.Sandbox.Setting(key)
	return s
}

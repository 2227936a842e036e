// Command terraform-provider-hydra serves the hydra Terraform provider.
package main

import (
	"context"
	_ "embed"
	"flag"
	"log"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
	"github.com/hydragpu/terraform-provider-hydra/internal/provider"
)

// version is the provider's version, set at build time with -ldflags "-X main.version=..." (make build,
// make install and goreleaser do). Without it: the VERSION file's with "-dev".
var version string

// versionFile is the next release's version.
//
//go:embed VERSION
var versionFile string

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	if version == "" {
		version = strings.TrimSpace(versionFile) + "-dev"
	}
	quietFrameworkLogs()
	cleanup := func() {}
	if !debug {
		// Started by Terraform: exit (after cancelling what runs, and removing the plugin socket) within
		// a second of Terraform dying.
		cleanup = provider.PluginSocketDir()
		go provider.WatchParent(500*time.Millisecond, cleanup)
	}

	// Emulators started for emulator_dir live as long as the provider process.
	emulators := clouds.NewEmulators()
	err := providerserver.Serve(context.Background(), provider.NewWith(version, emulators), providerserver.ServeOpts{
		Address: provider.Address,
		Debug:   debug,
	})
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = emulators.Stop(stopCtx)
	cleanup()
	if err != nil {
		log.Fatal(err.Error())
	}
}

// quietFrameworkLogs switches the plugin framework's own TRACE logging off when nobody asked for logs.
// The provider inherits Terraform's environment, so with none of the TF_LOG variables set no log line
// would be shown anyway; yet the framework would still encode several trace lines per attribute per
// request, which costs more than hydra's own planning. Any TF_LOG* setting leaves everything as is.
func quietFrameworkLogs() {
	for _, v := range []string{"TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO", "TF_LOG_PATH", "TF_ACC_LOG_PATH"} {
		if os.Getenv(v) != "" {
			return
		}
	}
	for _, v := range []string{"TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK"} {
		_ = os.Setenv(v, "OFF")
	}
}

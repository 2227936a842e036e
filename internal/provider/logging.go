package provider

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tfsdklog"
)

// hydraLog is the context of hydra's own log lines: a provider logger of its own (tflog), with no
// per-request fields and no source locations, so that under TF_LOG_PROVIDER=INFO each step of each
// machine is one short line ("offer chosen: name=trainer offer=... price=$2.49/h"). Its level is the
// one Terraform was asked for (TF_LOG_PROVIDER, else TF_LOG); with neither, nothing is written.
var hydraLog = sync.OnceValue(func() context.Context {
	return tfsdklog.NewRootProviderLogger(context.Background(), tfsdklog.WithLogName("hydra"),
		tfsdklog.WithoutLocation(), tfsdklog.WithStderrFromInit(), tfsdklog.WithLevel(levelFromEnv()))
})

// levelFromEnv is the provider log level Terraform was asked for.
func levelFromEnv() hclog.Level {
	for _, v := range []string{"TF_LOG_PROVIDER", "TF_LOG"} {
		s := strings.TrimSpace(os.Getenv(v))
		if s == "" {
			continue
		}
		if strings.EqualFold(s, "JSON") {
			return hclog.Trace
		}
		if l := hclog.LevelFromString(s); l != hclog.NoLevel {
			return l
		}
		return hclog.Off
	}
	return hclog.Off
}

// withControlPlaneLogger returns ctx carrying an hclog.Logger (hclog.WithContext) whose lines go to
// Terraform's log through tflog (hydraLog). The control plane and the backends log through go-hclog and
// find this logger with hclog.FromContext; users see its lines with TF_LOG_PROVIDER=INFO (steps) or
// DEBUG (detail).
func withControlPlaneLogger(ctx context.Context) context.Context {
	return hclog.WithContext(ctx, backendLogger(ctx))
}

// backendLogger is an hclog.Logger whose lines go to Terraform's log through tflog (hydraLog), at
// their own level: the backends keep one for their life, so TF_LOG_PROVIDER shows the clouds'
// retries and rate-limit waits like every other provider line.
func backendLogger(context.Context) hclog.Logger {
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "hydra", Output: io.Discard, Level: hclog.Trace})
	l.RegisterSink(tflogSink{})
	return l
}

// tflogSink forwards hclog lines to tflog.
type tflogSink struct{}

func (tflogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	ctx := hydraLog()
	fields := map[string]any{}
	if sub := strings.TrimPrefix(name, "hydra."); sub != name && sub != "" {
		fields["from"] = sub
	}
	for i := 0; i+1 < len(args); i += 2 {
		fields[fmt.Sprint(args[i])] = args[i+1]
	}
	switch level {
	case hclog.Trace:
		tflog.Trace(ctx, msg, fields)
	case hclog.Debug:
		tflog.Debug(ctx, msg, fields)
	case hclog.Info:
		tflog.Info(ctx, msg, fields)
	case hclog.Warn:
		tflog.Warn(ctx, msg, fields)
	default:
		tflog.Error(ctx, msg, fields)
	}
}

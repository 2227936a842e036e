package provider

import (
	"context"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// withControlPlaneLogger returns ctx carrying an hclog.Logger (hclog.WithContext) whose lines go to
// Terraform's log through tflog, with this RPC's fields. The control plane logs through go-hclog and
// finds this logger with hclog.FromContext; users see its lines with TF_LOG_PROVIDER=DEBUG.
func withControlPlaneLogger(ctx context.Context) context.Context {
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "hydra", Output: io.Discard, Level: hclog.Trace})
	l.RegisterSink(&tflogSink{ctx: ctx})
	return hclog.WithContext(ctx, l)
}

// tflogSink forwards hclog lines to tflog.
type tflogSink struct{ ctx context.Context }

func (s *tflogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	fields := map[string]any{"@subsystem": name}
	for i := 0; i+1 < len(args); i += 2 {
		fields[fmt.Sprint(args[i])] = args[i+1]
	}
	switch level {
	case hclog.Trace:
		tflog.Trace(s.ctx, msg, fields)
	case hclog.Debug:
		tflog.Debug(s.ctx, msg, fields)
	case hclog.Info:
		tflog.Info(s.ctx, msg, fields)
	case hclog.Warn:
		tflog.Warn(s.ctx, msg, fields)
	default:
		tflog.Error(s.ctx, msg, fields)
	}
}

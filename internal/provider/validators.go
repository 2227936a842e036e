package provider

import (
	"unicode"

	"context"
	"fmt"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hydragpu/terraform-provider-hydra/internal/clouds"
)

// maxNameLength is the longest name a hydra_gpu_instance accepts: the cloud-side name adds the pool's
// prefix, "--" and the ownership token, and must stay within every cloud's limit.
const maxNameLength = 48

// nameValidators check a hydra_gpu_instance name with one error that says what is wrong with the value
// given and what is accepted (instead of the framework's length and pattern errors, both at once for an
// empty name).
func nameValidators() []validator.String { return []validator.String{instanceName} }

// instanceName accepts lower case letters and digits in groups joined by single dashes, 1 to
// maxNameLength characters ("--" is reserved: it joins the name and the ownership token).
var instanceName = problemCheck{
	description: description(fmt.Sprintf("lower case letters and digits with single dashes between them, 1 to %d characters", maxNameLength)),
	summary:     "Invalid name",
	problem:     nameProblem,
}

// problemCheck is a string validator from a function that says what is wrong with a value ("" when
// nothing is): a known value with a problem is refused with summary and "<attribute>: <problem>.".
type problemCheck struct {
	description
	summary string
	problem func(string) string
}

// description is a validator's description, the same in plain text and Markdown.
type description string

func (d description) Description(context.Context) string { return string(d) }

func (d description) MarkdownDescription(context.Context) string { return string(d) }

func (c problemCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if msg := c.problem(req.ConfigValue.ValueString()); msg != "" {
		if !strings.HasSuffix(msg, ".") {
			msg += "."
		}
		resp.Diagnostics.AddAttributeError(req.Path, c.summary, fmt.Sprintf("%s: %s", req.Path, msg))
	}
}

// numberCheck is an int64 and float64 validator from a function that says what is wrong with a number
// ("" when nothing is): a known value with a problem is refused with summary and "<attribute> is
// <value>; <problem>".
type numberCheck struct {
	description
	summary string
	problem func(float64) string
}

func (c numberCheck) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	n := req.ConfigValue.ValueInt64()
	c.validate(req.Path, req.ConfigValue, float64(n), strconv.FormatInt(n, 10), &resp.Diagnostics)
}

func (c numberCheck) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	f := req.ConfigValue.ValueFloat64()
	c.validate(req.Path, req.ConfigValue, f, fmt.Sprintf("%g", f), &resp.Diagnostics)
}

// validate checks a known value n, shown as written.
func (c numberCheck) validate(p path.Path, v attr.Value, n float64, shown string, diags *diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() {
		return
	}
	if msg := c.problem(n); msg != "" {
		diags.AddAttributeError(p, c.summary, fmt.Sprintf("%s is %s; %s", p, shown, msg))
	}
}

// nameProblem says what is wrong with a name and what would be accepted, or "" when it is valid.
func nameProblem(name string) string {
	accepted := fmt.Sprintf("a name is lower case letters and digits with single dashes between them, at most %d characters", maxNameLength)
	suggest := func() string {
		if s := suggestName(name); s != "" && s != name {
			return fmt.Sprintf(", for example %q", s)
		}
		return `, for example "trainer-1"`
	}
	switch {
	case name == "":
		return fmt.Sprintf("the name is empty; %s, for example \"trainer-1\".", accepted)
	case utf8.RuneCountInString(name) > maxNameLength:
		return fmt.Sprintf("%q is %d characters, more than %d (the cloud-side name adds the pool's prefix and an ownership token); %s%s.",
			name, utf8.RuneCountInString(name), maxNameLength, accepted, suggest())
	case namePattern.MatchString(name):
		return ""
	case strings.Contains(name, "--"):
		return fmt.Sprintf("%q contains \"--\", which hydra reserves to join the name and the machine's ownership token in the cloud-side name; %s%s. "+
			"(To bring a machine under Terraform, import its cloud-side name, which has the \"--\": see the importing guide.)", name, accepted, suggest())
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		return fmt.Sprintf("%q starts or ends with a dash; %s%s.", name, accepted, suggest())
	default:
		var bad []string
		if strings.ToLower(name) != name {
			bad = append(bad, "upper case letters")
		}
		for _, r := range strings.ToLower(name) {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				if q := fmt.Sprintf("%q", string(r)); !slices.Contains(bad, q) {
					bad = append(bad, q)
				}
			}
		}
		return fmt.Sprintf("%q has %s, which a name may not contain; %s%s.", name, strings.Join(bad, ", "), accepted, suggest())
	}
}

// suggestName turns a name into an accepted one if it can: lower case, accents dropped ("ä" is "a"),
// every run of other characters a single dash, no dash at either end, cut to maxNameLength.
func suggestName(name string) string {
	var b strings.Builder
	dash := false
	plain, _, err := transform.String(transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn))), name)
	if err != nil {
		plain = name
	}
	for _, r := range strings.ToLower(plain) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > maxNameLength {
		s = strings.TrimRight(s[:maxNameLength], "-")
	}
	return s
}

// knownCloudsValidators check a `clouds` argument: at least one, each a cloud of the registry. One
// error per wrong value, naming the attribute, the value and every accepted value.
func knownCloudsValidators() []validator.Set { return []validator.Set{knownClouds{}} }

// knownClouds accepts a non-empty set of the registry's cloud names.
type knownClouds struct{}

func (knownClouds) Description(context.Context) string {
	return "at least one of " + strings.Join(clouds.Names(), ", ")
}

func (v knownClouds) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (knownClouds) ValidateSet(ctx context.Context, req validator.SetRequest, resp *validator.SetResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if len(req.ConfigValue.Elements()) == 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "No clouds named",
			fmt.Sprintf("%s is empty; leave it out to use every cloud the provider configures, or name at least one of them. "+
				"A cloud is configured by its block in the provider (%s); with none, hydra uses the sandbox.", req.Path, quotedCloudBlocks()))
		return
	}
	for _, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if msg := cloudProblem(s.ValueString()); msg != "" {
			resp.Diagnostics.AddAttributeError(req.Path, "Unknown cloud", fmt.Sprintf("%s: %s", req.Path, msg))
		}
	}
}

// cloudProblem says why name is not a cloud of the registry and lists the accepted names, or "" when
// it is one.
func cloudProblem(name string) string {
	names := clouds.Names()
	if slices.Contains(names, name) {
		return ""
	}
	msg := fmt.Sprintf("%q is not a cloud hydra knows", name)
	squash := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == ' ' || r == '.' {
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	for _, n := range names {
		if squash(n) == squash(name) {
			msg += fmt.Sprintf("; did you mean %q?", n)
			return msg + " Accepted values: " + quotedCloudNames() + "."
		}
	}
	return msg + ". Accepted values: " + quotedCloudNames() + "."
}

// quotedCloudBlocks lists the real clouds' provider blocks: "`atlas { ... }`, ...".
func quotedCloudBlocks() string {
	var blocks []string
	for _, d := range clouds.All() {
		if !d.Simulated {
			blocks = append(blocks, "`"+d.Block+" { ... }`")
		}
	}
	return strings.Join(blocks, ", ")
}

// quoteAll quotes each item and joins them with commas.
func quoteAll(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// quotedCloudNames lists the registry's cloud names, quoted: `"atlas", "lambda", ...`.
func quotedCloudNames() string {
	names := clouds.Names()
	for i, n := range names {
		names[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(names, ", ")
}

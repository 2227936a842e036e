package mithril

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/gpuname"
	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// TypeName is what a Mithril instance type name says of its GPUs. Mithril writes the names in several
// styles (reference section 4.7 and the naming table): "h100-80gb.sxm.8x", "h100-80gb.pcie.8x",
// "a100-80gb.sxm.1x", "h100.80gb.sxm", "b200-192gb.8x", "b200.8x".
type TypeName struct {
	// Model is the GPU model, lower case, its words joined: "h100", "b200", "rtxpro6000".
	Model string
	// MemoryGB is the memory of one GPU (0: the name does not say).
	MemoryGB int
	// FormFactor is cloudprovider.FormFactorSXM or cloudprovider.FormFactorPCIe ("" when not said).
	FormFactor string
	// Count is the number of GPUs from the "<n>x" suffix (0: the name does not say).
	Count int
}

// Key returns the canonical key "<model>[-<memory>gb][.<sxm|pcie>]", e.g. "h100-80gb.sxm", "b200".
func (n TypeName) Key() string {
	k := n.Model
	if n.MemoryGB > 0 {
		k += "-" + strconv.Itoa(n.MemoryGB) + "gb"
	}
	if n.FormFactor != "" {
		k += "." + n.FormFactor
	}
	return k
}

var (
	countToken  = regexp.MustCompile(`^([0-9]+)x$`)
	memoryToken = regexp.MustCompile(`^([0-9]+)(?:gb|gib|g)$`)
	socketToken = regexp.MustCompile(`^sxm[0-9]*$`)
)

// ParseTypeName reads a Mithril instance type name (or a gpu_type such as "H100", "A100-PCIe-80G").
// The rules:
//   - case is ignored, and '-', '.', '_', '/' and spaces all separate words;
//   - the leading words are the model, joined ("rtx-pro-6000" is "rtxpro6000"; a leading "nvidia" is
//     dropped); the first must start with a letter;
//   - after the model come, in any order and each at most once: the memory of one GPU ("80gb",
//     "80g", "80gib"), the form factor ("sxm", "sxm4".."sxm6" are sxm; "pcie" is pcie) and the count
//     ("8x");
//   - any other word after the model makes the name unknown (ok false), so a shape hydra does not
//     understand is reported as unmapped rather than mistaken for a known one.
func ParseTypeName(name string) (TypeName, bool) {
	words := strings.FieldsFunc(strings.ToLower(strings.TrimSpace(name)), func(r rune) bool {
		return r == '-' || r == '.' || r == '_' || r == '/' || r == ' ' || r == '\t'
	})
	if len(words) > 1 && words[0] == "nvidia" {
		words = words[1:]
	}
	var n TypeName
	var model []string
	attrs := false
	for _, w := range words {
		switch {
		case countToken.MatchString(w):
			c, err := strconv.Atoi(countToken.FindStringSubmatch(w)[1])
			if err != nil || c <= 0 || n.Count != 0 {
				return TypeName{}, false
			}
			n.Count, attrs = c, true
		case memoryToken.MatchString(w):
			m, err := strconv.Atoi(memoryToken.FindStringSubmatch(w)[1])
			if err != nil || m <= 0 || n.MemoryGB != 0 {
				return TypeName{}, false
			}
			n.MemoryGB, attrs = m, true
		case socketToken.MatchString(w) || w == "pcie":
			if n.FormFactor != "" {
				return TypeName{}, false
			}
			n.FormFactor, attrs = cloudprovider.FormFactorSXM, true
			if w == "pcie" {
				n.FormFactor = cloudprovider.FormFactorPCIe
			}
		case attrs:
			return TypeName{}, false
		default:
			model = append(model, w)
		}
	}
	if len(model) == 0 || model[0][0] < 'a' || model[0][0] > 'z' {
		return TypeName{}, false
	}
	n.Model = strings.Join(model, "")
	return n, true
}

// describe returns what an instance type says of its GPUs, as up to two readings: first the catalog's
// structured fields (gpu_type, gpu_memory_gb, gpu_socket) with the name filling their gaps, then the
// name with the fields filling its gaps (left out when the name cannot be read or says the same).
// Mapping tries both, so a catalog that writes 81 GB where the name says 80gb still maps. The count
// is num_gpus in both, or the name's "<n>x" when num_gpus is missing or 0.
func describe(it InstanceType) []TypeName {
	fromName, nameOK := ParseTypeName(it.Name)
	fromType, _ := ParseTypeName(it.GPUType) // the zero TypeName when gpu_type cannot be read
	api := TypeName{Model: fromType.Model, MemoryGB: fromType.MemoryGB, FormFactor: fromType.FormFactor}
	if it.GPUMemoryGB.Valid && it.GPUMemoryGB.Value > 0 {
		api.MemoryGB = int(it.GPUMemoryGB.Value)
	}
	if ff := gpuname.FormFactor(it.GPUSocket); ff != "" {
		api.FormFactor = ff
	}
	count := fromName.Count
	if it.NumGPUs.Valid && it.NumGPUs.Value > 0 {
		count = int(it.NumGPUs.Value)
	}
	fields := fill(api, fromName)
	fields.Count = count
	out := []TypeName{fields}
	if nameOK {
		byName := fill(fromName, api)
		byName.Count = count
		if byName != fields {
			out = append(out, byName)
		}
	}
	return out
}

// fill returns have with its zero fields taken from from.
func fill(have, from TypeName) TypeName {
	if have.Model == "" {
		have.Model = from.Model
	}
	if have.MemoryGB == 0 {
		have.MemoryGB = from.MemoryGB
	}
	if have.FormFactor == "" {
		have.FormFactor = from.FormFactor
	}
	if have.Count == 0 {
		have.Count = from.Count
	}
	return have
}

// matches says whether an api_names entry, read as a pattern, covers the facts, and how specifically
// (1: the model alone; +1 each for memory and form factor). A pattern's memory and form factor, when
// it names them, must equal the facts'; a pattern's count, when it names one, must equal too.
func matches(pattern TypeName, f TypeName) (int, bool) {
	if pattern.Model == "" || pattern.Model != f.Model {
		return 0, false
	}
	score := 1
	if pattern.MemoryGB != 0 {
		if pattern.MemoryGB != f.MemoryGB {
			return 0, false
		}
		score++
	}
	if pattern.FormFactor != "" {
		if pattern.FormFactor != f.FormFactor {
			return 0, false
		}
		score++
	}
	if pattern.Count != 0 && pattern.Count != f.Count {
		return 0, false
	}
	return score, true
}

// hardwareOf is what the catalog says of an instance type's machines: gpu_memory_gb (one GPU; else the
// memory the name states), num_cpus, ram_gb, and the form factor from gpu_socket ("SXM5" is sxm,
// "PCIe" is pcie), else from the name ("h100-80gb.pcie.8x"), else from gpu_type; "" when none says.
func hardwareOf(it InstanceType) cloudprovider.Hardware {
	fields := describe(it)[0]
	hw := cloudprovider.Hardware{GPUMemoryGB: fields.MemoryGB, FormFactor: fields.FormFactor}
	if hw.FormFactor == "" {
		hw.FormFactor = gpuname.FormFactor(it.GPUType)
	}
	if it.NumCPUs.Valid && it.NumCPUs.Value > 0 {
		hw.VCPUs = int(it.NumCPUs.Value)
	}
	if it.RAMGB.Valid && it.RAMGB.Value > 0 {
		hw.MemoryGB = int(it.RAMGB.Value)
	}
	return hw
}

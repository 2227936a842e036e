// Package gpuname reads what a cloud's GPU name says of the hardware: the form factor (SXM or PCIe) and
// the memory of one GPU. Mapping a cloud's GPU name to hydra's GPU type is the inventory's
// (inventory.Inventory.GPUType), driven by supported_gpus.yml's api_names.
package gpuname

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// exactFormFactor holds GPU names that say their form factor without a marker word. They are the names
// nvidia-smi prints (and clouds repeat); each is paired with its socket in recorded cloud traffic:
// Prime Intellect's availability (reference/recorded/primeintellect/capture.availability-gpus.200.json)
// lists cloudId "NVIDIA H100 80GB HBM3" with socket SXM5 and "NVIDIA H100 PCIe" with socket PCIe.
var exactFormFactor = map[string]string{
	"NVIDIA H100 80GB HBM3": cloudprovider.FormFactorSXM,
}

var (
	nameTokens  = regexp.MustCompile(`[A-Za-z0-9]+`)
	countPrefix = regexp.MustCompile(`^[0-9]+X`)
	sxmToken    = regexp.MustCompile(`^SXM[0-9]*$`)
	memoryInGB  = regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9])([0-9]+)\s?GB(?:[^A-Za-z0-9]|$)`)
)

// FormFactor reads the form factor a cloud's GPU name states: cloudprovider.FormFactorSXM for "SXM",
// "SXM2".."SXM6" and "HGX"; cloudprovider.FormFactorPCIe for "PCIe" and "NVL" (H100 NVL is a PCIe card)
// and for GPUs that only exist as PCIe cards (L4, L40, L40S, the RTX cards including the RTX A6000);
// "" when the name does not say. Names are tried in order and the first that states a form factor wins;
// within a name an explicit marker (SXM, HGX, PCIe, NVL) wins over the model rule.
//
// Pass GPU names only (a gpu description, a GPU type, a model): a plan name is fine as long as what it
// says of form factors concerns its GPUs.
func FormFactor(names ...string) string {
	for _, n := range names {
		if ff := formFactorOf(n); ff != "" {
			return ff
		}
	}
	return ""
}

func formFactorOf(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return ""
	}
	for k, ff := range exactFormFactor {
		if strings.EqualFold(name, k) {
			return ff
		}
	}
	tokens := nameTokens.FindAllString(strings.ToUpper(name), -1)
	for i, t := range tokens {
		tokens[i] = countPrefix.ReplaceAllString(t, "") // "1xL40S" in a plan name
	}
	for _, t := range tokens {
		switch {
		case sxmToken.MatchString(t), t == "HGX":
			return cloudprovider.FormFactorSXM
		case t == "PCIE", t == "NVL":
			return cloudprovider.FormFactorPCIe
		}
	}
	for _, t := range tokens {
		switch {
		case t == "L4", t == "L40", t == "L40S", t == "A6000", strings.HasPrefix(t, "RTX"):
			return cloudprovider.FormFactorPCIe
		}
	}
	return ""
}

// MemoryGB reads the memory of one GPU that a GPU name states ("H100 SXM5 80GB",
// "H100 (80 GB SXM5)", "A100_80GB", "NVIDIA H100 80GB HBM3"), or 0. Pass a GPU name, never a plan
// name: "GPU-8xCPU-64GB-1xL40S" names the machine's RAM.
func MemoryGB(name string) int {
	m := memoryInGB.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

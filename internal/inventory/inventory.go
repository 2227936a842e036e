// Package inventory loads and validates hydra's inventory: the GPU types hydra rents (supported_gpus.yml)
// and the pools that serve them (pools.yml).
//
// Every problem in a file is reported with the file's name and the line it is on, so a user who points
// the provider at their own inventory sees exactly what to fix.
package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	inventoryfiles "github.com/hydragpu/terraform-provider-hydra/inventory"
)

// File names inside an inventory directory.
const (
	GPUsFile  = "supported_gpus.yml"
	PoolsFile = "pools.yml"
)

// Kinds of machine a pool serves.
const (
	KindVM      = "vm"
	KindExeclet = "execlet"
)

// Kinds lists every valid kind, in the order docs and errors show them.
var Kinds = []string{KindVM, KindExeclet}

// EmbeddedClouds returns the clouds the embedded pools.yml names, sorted: the clouds an inventory may
// name when its loader is handed no list (Load, Parse and Default without known clouds).
//
// The one list of clouds is the registry in internal/clouds. The registry imports the backends, which
// import this package, so this package cannot import the list: the provider hands it to Load (known)
// instead. The embedded pools.yml gives every registered cloud a pool, so this fallback equals the
// registry's list (the registry's tests check it).
func EmbeddedClouds() []string {
	return slices.Clone(embeddedClouds())
}

var embeddedClouds = sync.OnceValue(embeddedPoolClouds)

// embeddedPoolClouds returns the clouds the embedded pools.yml names.
func embeddedPoolClouds() []string {
	data, err := fs.ReadFile(inventoryfiles.FS, PoolsFile)
	if err != nil {
		return nil
	}
	var doc struct {
		Pools []struct {
			Cloud string `yaml:"cloud"`
		} `yaml:"pools"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	var names []string
	for _, p := range doc.Pools {
		names = append(names, p.Cloud)
	}
	return sortedUnique(names)
}

func sortedUnique(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	return slices.Compact(out)
}

// GPU is one internal GPU type.
type GPU struct {
	// Type is hydra's own name, e.g. "h100".
	Type string
	// MaxCount is the most GPUs of this type one instance may have.
	MaxCount int
	// APINames maps a cloud to the names that cloud uses for this GPU.
	APINames map[string][]string
	// SpotClouds lists the clouds whose spot capacity of this type hydra may offer, for clouds that gate
	// spot per GPU type (UpCloud's spot plans; on-demand only unless listed here).
	SpotClouds []string
}

// SpotEnabled reports whether the inventory lets cloud's spot capacity of gpuType be offered.
func (inv *Inventory) SpotEnabled(gpuType, cloud string) bool {
	return contains(inv.GPUs[gpuType].SpotClouds, cloud)
}

// Pool is a named slice of one cloud for one kind of machine.
type Pool struct {
	Name   string
	Cloud  string
	Kind   string
	Prefix string
	// Playbook is the provisioning playbook's file name under playbooks/.
	Playbook string
}

// Inventory is a validated pair of supported_gpus.yml and pools.yml.
type Inventory struct {
	GPUs  map[string]GPU
	Pools []Pool
	// Clouds are the clouds the files were checked against, sorted: the only clouds pools.yml and
	// api_names may name, and the clouds a request may ask for.
	Clouds []string
}

// DefaultPlaybook returns the playbook a kind uses when its pool names none.
func DefaultPlaybook(kind string) string {
	if kind == KindExeclet {
		return "execlet.yml"
	}
	return "bare-vm.yml"
}

// Default returns the inventory embedded in the provider (the repository's inventory/ directory).
func Default() (*Inventory, error) {
	return loadFS(inventoryfiles.FS, ".", "embedded ", nil)
}

// KnownClouds are the clouds the inventory was checked against (Clouds), or EmbeddedClouds for an
// inventory built by hand.
func (inv *Inventory) KnownClouds() []string {
	if len(inv.Clouds) == 0 {
		return EmbeddedClouds()
	}
	return inv.Clouds
}

// Load reads an inventory directory. A file missing from dir is taken from the embedded defaults, so a
// user can override only the GPUs or only the pools. known are the clouds the files may name (the
// registry's, internal/clouds.Names); none: EmbeddedClouds.
func Load(dir string, known ...string) (*Inventory, error) {
	if dir == "" {
		return loadFS(inventoryfiles.FS, ".", "embedded ", known)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("inventory directory %q: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("inventory directory %q is not a directory", dir)
	}
	gpuData, gpuName, err := readWithFallback(dir, GPUsFile)
	if err != nil {
		return nil, err
	}
	poolData, poolName, err := readWithFallback(dir, PoolsFile)
	if err != nil {
		return nil, err
	}
	return Parse(gpuName, gpuData, poolName, poolData, known...)
}

func readWithFallback(dir, name string) ([]byte, string, error) {
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	if err == nil {
		return data, p, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("reading %s: %w", p, err)
	}
	data, err = fs.ReadFile(inventoryfiles.FS, name)
	return data, "embedded " + name, err
}

func loadFS(fsys fs.FS, dir, label string, known []string) (*Inventory, error) {
	g, err := fs.ReadFile(fsys, filepath.Join(dir, GPUsFile))
	if err != nil {
		return nil, err
	}
	p, err := fs.ReadFile(fsys, filepath.Join(dir, PoolsFile))
	if err != nil {
		return nil, err
	}
	return Parse(label+GPUsFile, g, label+PoolsFile, p, known...)
}

// Parse validates the contents of supported_gpus.yml and pools.yml; the names are used in errors.
// known are the clouds the files may name; none: EmbeddedClouds.
func Parse(gpuFile string, gpuData []byte, poolFile string, poolData []byte, known ...string) (*Inventory, error) {
	clouds := sortedUnique(known)
	if len(clouds) == 0 {
		clouds = EmbeddedClouds()
	}
	gpus, err := parseGPUs(gpuFile, gpuData, clouds)
	if err != nil {
		return nil, err
	}
	pools, err := parsePools(poolFile, poolData, clouds)
	if err != nil {
		return nil, err
	}
	return &Inventory{GPUs: gpus, Pools: pools, Clouds: clouds}, nil
}

// FileError is a problem at one line of one inventory file.
type FileError struct {
	File string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func fileErr(file string, n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &FileError{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func parseDoc(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3 errors already say "yaml: line N: ...".
		return nil, &FileError{File: file, Msg: err.Error()}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &FileError{File: file, Msg: "the file is empty"}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fileErr(file, root, "expected a mapping at the top level")
	}
	return root, nil
}

// mapping walks a mapping node, rejecting unknown and duplicate keys.
func mapping(file string, n *yaml.Node, what string, allowed []string, fn func(key string, keyNode, val *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return fileErr(file, n, "%s must be a mapping", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fileErr(file, k, "duplicate key %q in %s", k.Value, what)
		}
		seen[k.Value] = true
		if allowed != nil && !contains(allowed, k.Value) {
			return fileErr(file, k, "unknown key %q in %s (allowed: %s)", k.Value, what, strings.Join(allowed, ", "))
		}
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func parseGPUs(file string, data []byte, clouds []string) (map[string]GPU, error) {
	root, err := parseDoc(file, data)
	if err != nil {
		return nil, err
	}
	gpus := map[string]GPU{}
	var gpusNode *yaml.Node
	err = mapping(file, root, "the top level", []string{"gpus"}, func(_ string, _, v *yaml.Node) error {
		gpusNode = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if gpusNode == nil {
		return nil, fileErr(file, root, "missing key %q", "gpus")
	}
	if gpusNode.Kind != yaml.MappingNode {
		return nil, fileErr(file, gpusNode, "gpus must be a mapping of GPU type to its settings")
	}
	for i := 0; i+1 < len(gpusNode.Content); i += 2 {
		k, v := gpusNode.Content[i], gpusNode.Content[i+1]
		typ := k.Value
		if _, dup := gpus[typ]; dup {
			return nil, fileErr(file, k, "duplicate GPU type %q", typ)
		}
		if !validName(typ) {
			return nil, fileErr(file, k, "GPU type %q must be lower case letters, digits and dashes", typ)
		}
		g := GPU{Type: typ, APINames: map[string][]string{}}
		maxSeen := false
		var spotNode *yaml.Node
		err := mapping(file, v, "GPU type "+typ, []string{"max_count", "api_names", "spot"}, func(key string, kn, val *yaml.Node) error {
			switch key {
			case "max_count":
				maxSeen = true
				if err := val.Decode(&g.MaxCount); err != nil {
					return fileErr(file, val, "max_count of %q must be a whole number, got %q", typ, val.Value)
				}
				if g.MaxCount < 1 {
					return fileErr(file, val, "max_count of %q is %d; it must be at least 1", typ, g.MaxCount)
				}
			case "spot":
				spotNode = val
				if err := val.Decode(&g.SpotClouds); err != nil {
					return fileErr(file, val, "spot of %q must be a list of clouds, e.g. [upcloud]", typ)
				}
			case "api_names":
				return mapping(file, val, "api_names of "+typ, clouds, func(cloud string, _, names *yaml.Node) error {
					var list []string
					switch names.Kind {
					case yaml.ScalarNode:
						list = []string{names.Value}
					case yaml.SequenceNode:
						if err := names.Decode(&list); err != nil {
							return fileErr(file, names, "api_names.%s of %q must be a string or a list of strings", cloud, typ)
						}
					default:
						return fileErr(file, names, "api_names.%s of %q must be a string or a list of strings", cloud, typ)
					}
					for _, s := range list {
						if strings.TrimSpace(s) == "" {
							return fileErr(file, names, "api_names.%s of %q has an empty name", cloud, typ)
						}
					}
					if len(list) == 0 {
						return fileErr(file, names, "api_names.%s of %q is empty", cloud, typ)
					}
					g.APINames[cloud] = list
					return nil
				})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !maxSeen {
			return nil, fileErr(file, k, "GPU type %q has no max_count", typ)
		}
		if len(g.APINames) == 0 {
			return nil, fileErr(file, k, "GPU type %q has no api_names: no cloud could offer it", typ)
		}
		for _, c := range g.SpotClouds {
			if _, ok := g.APINames[c]; !ok {
				return nil, fileErr(file, spotNode, "spot of %q names cloud %q, which its api_names do not list", typ, c)
			}
		}
		gpus[typ] = g
	}
	if len(gpus) == 0 {
		return nil, fileErr(file, gpusNode, "no GPU types are listed")
	}
	return gpus, nil
}

func parsePools(file string, data []byte, clouds []string) ([]Pool, error) {
	root, err := parseDoc(file, data)
	if err != nil {
		return nil, err
	}
	var poolsNode *yaml.Node
	if err := mapping(file, root, "the top level", []string{"pools"}, func(_ string, _, v *yaml.Node) error {
		poolsNode = v
		return nil
	}); err != nil {
		return nil, err
	}
	if poolsNode == nil {
		return nil, fileErr(file, root, "missing key %q", "pools")
	}
	if poolsNode.Kind != yaml.SequenceNode {
		return nil, fileErr(file, poolsNode, "pools must be a list")
	}
	var pools []Pool
	names := map[string]bool{}
	for _, item := range poolsNode.Content {
		var p Pool
		if err := mapping(file, item, "a pool", []string{"name", "cloud", "kind", "prefix", "playbook"}, func(key string, _, v *yaml.Node) error {
			if v.Kind != yaml.ScalarNode {
				return fileErr(file, v, "%s must be a string", key)
			}
			switch key {
			case "name":
				p.Name = v.Value
			case "cloud":
				if !contains(clouds, v.Value) {
					return fileErr(file, v, "unknown cloud %q (known: %s)", v.Value, strings.Join(clouds, ", "))
				}
				p.Cloud = v.Value
			case "kind":
				if !contains(Kinds, v.Value) {
					return fileErr(file, v, "unknown kind %q (known: %s)", v.Value, strings.Join(Kinds, ", "))
				}
				p.Kind = v.Value
			case "prefix":
				p.Prefix = v.Value
			case "playbook":
				p.Playbook = v.Value
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for _, req := range []struct{ key, val string }{{"name", p.Name}, {"cloud", p.Cloud}, {"kind", p.Kind}, {"prefix", p.Prefix}} {
			if req.val == "" {
				return nil, fileErr(file, item, "pool %q has no %s", p.Name, req.key)
			}
		}
		if names[p.Name] {
			return nil, fileErr(file, item, "duplicate pool name %q", p.Name)
		}
		names[p.Name] = true
		if !validName(strings.TrimSuffix(p.Prefix, "-")) {
			return nil, fileErr(file, item, "prefix %q of pool %q must be lower case letters, digits and dashes", p.Prefix, p.Name)
		}
		for _, other := range pools {
			if strings.HasPrefix(p.Prefix, other.Prefix) || strings.HasPrefix(other.Prefix, p.Prefix) {
				return nil, fileErr(file, item, "prefix %q of pool %q overlaps prefix %q of pool %q: names could not be routed", p.Prefix, p.Name, other.Prefix, other.Name)
			}
		}
		if p.Playbook == "" {
			p.Playbook = DefaultPlaybook(p.Kind)
		}
		pools = append(pools, p)
	}
	if len(pools) == 0 {
		return nil, fileErr(file, poolsNode, "no pools are listed")
	}
	return pools, nil
}

// GPUTypes returns the GPU types in sorted order.
func (inv *Inventory) GPUTypes() []string {
	out := make([]string, 0, len(inv.GPUs))
	for t := range inv.GPUs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// PoolByName returns the pool with that name.
func (inv *Inventory) PoolByName(name string) (Pool, bool) {
	for _, p := range inv.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return Pool{}, false
}

// PoolForInstance returns the pool whose prefix starts the instance name.
func (inv *Inventory) PoolForInstance(instanceName string) (Pool, bool) {
	for _, p := range inv.Pools {
		if strings.HasPrefix(instanceName, p.Prefix) {
			return p, true
		}
	}
	return Pool{}, false
}

// GPUType maps a cloud's name for a GPU to hydra's GPU type through api_names: the one place every
// backend (and the sandbox) turns a cloud's GPU name into hydra's. names are the cloud's candidate
// names, best first (a cloud that writes a GPU several ways passes each); the first one that api_names
// lists for the cloud wins. Names are compared without regard to case, with surrounding white space
// trimmed and inner runs of white space read as one space ("NVIDIA  H100 " is "NVIDIA H100"). It is ""
// when no name maps: hydra does not rent that GPU, and the offer is reported with its CloudGPU.
func (inv *Inventory) GPUType(cloud string, names ...string) string {
	for _, name := range names {
		name = strings.Join(strings.Fields(name), " ")
		if name == "" {
			continue
		}
		for _, t := range inv.GPUTypes() {
			for _, n := range inv.GPUs[t].APINames[cloud] {
				if strings.EqualFold(n, name) {
					return t
				}
			}
		}
	}
	return ""
}

// Suggest returns the known GPU types closest to an unknown one, best first (at most three).
func (inv *Inventory) Suggest(unknown string) []string {
	type scored struct {
		t string
		d int
	}
	var all []scored
	u := strings.ToLower(unknown)
	for _, t := range inv.GPUTypes() {
		d := levenshtein(u, t)
		if strings.Contains(t, u) || strings.Contains(u, t) {
			d = min(d, 1)
		}
		all = append(all, scored{t, d})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []string
	for _, s := range all {
		if len(out) == 3 || s.d > max(2, len(u)/2) {
			break
		}
		out = append(out, s.t)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

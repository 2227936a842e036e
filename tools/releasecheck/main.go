// Command releasecheck checks a goreleaser dist directory against what the Terraform Registry expects
// of a provider release:
//   - for every platform a zip terraform-provider-hydra_<version>_<os>_<arch>.zip holding the executable
//     terraform-provider-hydra_v<version> (.exe on windows) built with that version, and at most
//     README.md, LICENSE and CHANGELOG.md besides;
//   - terraform-provider-hydra_<version>_SHA256SUMS listing exactly the zips and the manifest, with the
//     files' digests;
//   - the manifest terraform-provider-hydra_<version>_manifest.json saying protocol version 6.0;
//   - with -signed, the detached signature terraform-provider-hydra_<version>_SHA256SUMS.sig.
//
// tools/release.sh runs it.
package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

const project = "terraform-provider-hydra"

func main() {
	dist := flag.String("dist", "dist", "goreleaser's dist directory")
	version := flag.String("version", "", "the release's version, without a leading v (required)")
	targets := flag.String("targets", "", "os_arch pairs that must have a zip, separated by spaces or commas")
	signed := flag.Bool("signed", false, "require the detached signature of SHA256SUMS")
	flag.Parse()
	if *version == "" {
		fmt.Fprintln(os.Stderr, "releasecheck: -version is required")
		os.Exit(2)
	}
	want := strings.FieldsFunc(*targets, func(r rune) bool { return r == ' ' || r == ',' })
	found, err := check(*dist, *version, want, *signed)
	if err != nil {
		fmt.Fprintf(os.Stderr, "releasecheck: %s: %v\n", *dist, err)
		os.Exit(1)
	}
	fmt.Printf("releasecheck: %s: %d platforms (%s), SHA256SUMS and the manifest (protocol 6.0) are right\n",
		*dist, len(found), strings.Join(found, " "))
}

// check returns the platforms found, or every problem it saw.
func check(dist, version string, want []string, signed bool) ([]string, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	prefix := project + "_" + version + "_"
	zipName := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `([a-z0-9]+)_([a-z0-9]+)\.zip$`)
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, err
	}
	var zips, found []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".zip") {
			continue
		}
		m := zipName.FindStringSubmatch(name)
		if m == nil {
			fail("%s: not named %s<os>_<arch>.zip", name, prefix)
			continue
		}
		zips = append(zips, name)
		found = append(found, m[1]+"_"+m[2])
		if err := checkZip(filepath.Join(dist, name), m[1], version); err != nil {
			fail("%s: %v", name, err)
		}
	}
	for _, t := range want {
		if !slices.Contains(found, t) {
			fail("no zip for %s (want %s%s.zip)", t, prefix, t)
		}
	}

	manifest := prefix + "manifest.json"
	if err := checkManifest(filepath.Join(dist, manifest)); err != nil {
		fail("%s: %v", manifest, err)
	}

	sums := prefix + "SHA256SUMS"
	listed, err := readSums(filepath.Join(dist, sums))
	if err != nil {
		fail("%s: %v", sums, err)
	} else {
		for name, digest := range listed {
			got, err := fileSHA256(filepath.Join(dist, name))
			switch {
			case err != nil:
				fail("%s lists %s: %v", sums, name, err)
			case got != digest:
				fail("%s: %s has SHA-256 %s, the file %s", sums, name, digest, got)
			}
		}
		for _, name := range append(slices.Clone(zips), manifest) {
			if _, ok := listed[name]; !ok {
				fail("%s does not list %s", sums, name)
			}
		}
		if len(listed) != len(zips)+1 {
			fail("%s lists %d files, want the %d zips and the manifest", sums, len(listed), len(zips))
		}
	}
	if _, err := os.Stat(filepath.Join(dist, sums+".sig")); signed && err != nil {
		fail("no detached signature: %v", err)
	}
	slices.Sort(found)
	return found, errors.Join(errs...)
}

// docs are the files goreleaser adds to every archive beside the executable, as in HashiCorp's own
// provider releases.
var docs = []string{"CHANGELOG.md", "LICENSE", "README.md"}

// checkZip checks that the archive holds the provider's executable, built with the version, and at
// most the docs besides.
func checkZip(path, goos, version string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer func() { _ = zr.Close() }()
	binary := project + "_v" + version
	if goos == "windows" {
		binary += ".exe"
	}
	var f *zip.File
	var names []string
	for _, e := range zr.File {
		names = append(names, e.Name)
		switch {
		case e.Name == binary:
			f = e
		case !slices.Contains(docs, e.Name):
			return fmt.Errorf("holds %s: want only %s and %s", e.Name, binary, strings.Join(docs, ", "))
		}
	}
	if f == nil {
		return fmt.Errorf("holds %v, not %s", names, binary)
	}
	if goos != "windows" && f.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %v)", binary, f.Mode())
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	// -X main.version=<version> leaves the string in the binary.
	if !bytes.Contains(data, []byte(version)) {
		return fmt.Errorf("%s does not contain its version %q (ldflags -X main.version)", binary, version)
	}
	return nil
}

// checkManifest checks the registry manifest: format version 1, protocol 6.0 only.
func checkManifest(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"6.0"}) {
		return fmt.Errorf("version %d, protocol_versions %v: want version 1 and [\"6.0\"]", m.Version, m.Metadata.ProtocolVersions)
	}
	return nil
}

// readSums reads a sha256sum file: "<hex digest>  <name>" per line.
func readSums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		digest, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(digest) != 64 || name == "" {
			return nil, fmt.Errorf("line %q is not \"<sha256>  <file>\"", sc.Text())
		}
		out[name] = digest
	}
	if len(out) == 0 {
		return nil, errors.New("empty")
	}
	return out, sc.Err()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package realos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GPULayerDir is where a machine's simulated GPU layer lives inside the container (written by Boot
// with simhost.WriteGPULayer): the stand-in packages' commands are links into GPULayerDir/bin.
const GPULayerDir = "/opt/hydra-gpu"

// standinPackage is a Debian package named as NVIDIA's (or Docker's) whose commands are hydra's
// GPU stand-ins.
type standinPackage struct {
	Name, Version, Depends, Description string
	// Links are [path in the image, target] symbolic links.
	Links [][2]string
	// Files are files the package ships (units).
	Files []standinFile
	// Enable are units enabled in the image (as the image of a machine that already runs them).
	Enable []string
}

type standinFile struct{ Path, Content string }

func gpuTool(name string) [2]string {
	return [2]string{"/usr/bin/" + name, GPULayerDir + "/bin/" + name}
}

// standinPackages are the packages the image of o has, named as NVIDIA's CUDA repository names them
// for driver branch 570 (the versions the stand-ins report), and Docker's as Docker's repository
// versions it for o.
func standinPackages(o OS) []standinPackage {
	branch, _, _ := strings.Cut(DriverVersion, ".")
	drv := DriverVersion + "-1"
	return []standinPackage{
		{Name: "nvidia-utils-" + branch, Version: drv, Description: "nvidia-smi",
			Links: [][2]string{gpuTool("nvidia-smi")}},
		{Name: "libnvidia-compute-" + branch, Version: drv, Description: "the CUDA driver library (no content)"},
		{Name: "nvidia-compute-utils-" + branch, Version: drv, Description: "compute utilities (no content)"},
		{Name: "nvidia-dkms-" + branch + "-open", Version: drv, Description: "the open kernel module sources (no module: a container loads none)"},
		{Name: "datacenter-gpu-manager-4-core", Version: "1:4.2.3-1", Description: "dcgmi, nv-hostengine and nvidia-dcgm.service",
			Links: [][2]string{gpuTool("dcgmi"), gpuTool("nv-hostengine")},
			Files: []standinFile{{Path: "/lib/systemd/system/nvidia-dcgm.service", Content: `# hydra real-OS test: DCGM's unit, running hydra's nv-hostengine stand-in (which daemonizes at once).
[Unit]
Description=NVIDIA DCGM service (hydra real-OS stand-in)

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/nv-hostengine
ExecStop=/usr/bin/nv-hostengine -t

[Install]
WantedBy=multi-user.target
`}}},
		{Name: "datacenter-gpu-manager-4-cuda12", Version: "1:4.2.3-1", Depends: "datacenter-gpu-manager-4-core",
			Description: "DCGM's diagnostics for CUDA 12 (no content)"},
		{Name: "datacenter-gpu-manager-exporter", Version: "4.2.3-4.1.3-1", Description: "dcgm-exporter",
			Links: [][2]string{gpuTool("dcgm-exporter")}},
		{Name: "nvidia-container-toolkit", Version: "1.17.8-1", Description: "nvidia-ctk",
			Links: [][2]string{gpuTool("nvidia-ctk")}},
		{Name: "docker-ce", Version: "5:27.5.1-1~" + o.ID + "." + o.VersionID + "~" + o.Suite, Description: "the docker client, and docker.service standing for the daemon",
			Links: [][2]string{gpuTool("docker")},
			Files: []standinFile{{Path: "/lib/systemd/system/docker.service", Content: `# hydra real-OS test: stands for Docker's daemon, which cannot run in this container; the docker
# client is hydra's stand-in (docker run runs the command on the machine itself).
[Unit]
Description=Docker Application Container Engine (hydra real-OS stand-in)

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/docker version

[Install]
WantedBy=multi-user.target
`}},
			Enable: []string{"docker.service"}},
	}
}

// writeStandinPackages writes each package's tree (DEBIAN/control, links, files) under dir, and the
// units to enable in dir/enable, for installScript.
func writeStandinPackages(o OS, dir string) error {
	var enable []string
	for _, p := range standinPackages(o) {
		root := filepath.Join(dir, p.Name)
		if err := os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755); err != nil {
			return err
		}
		control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: hydra real-OS test <hydra-realos@invalid>\n", p.Name, p.Version)
		if p.Depends != "" {
			control += "Depends: " + p.Depends + "\n"
		}
		control += fmt.Sprintf("Description: hydra real-OS stand-in for NVIDIA's %s\n %s: hydra's GPU stand-ins (internal/sandbox/simhost), for tests on a machine without GPUs.\n", p.Name, p.Description)
		if err := os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(control), 0o644); err != nil {
			return err
		}
		for _, l := range p.Links {
			at := filepath.Join(root, l[0])
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(l[1], at); err != nil {
				return err
			}
		}
		for _, f := range p.Files {
			at := filepath.Join(root, f.Path)
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(at, []byte(f.Content), 0o644); err != nil {
				return err
			}
		}
		enable = append(enable, p.Enable...)
	}
	return os.WriteFile(filepath.Join(dir, "enable"), []byte(strings.Join(enable, "\n")+"\n"), 0o644)
}

package simhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/atomicfile"
)

// Volumes. A machine's volumes (Spec.Volumes) are directories on the host, their stores, which
// outlive the machine: a second machine given the same store sees the files the first left. Inside
// the machine a block volume is a device path (a link under the machine's root to the store's device
// file) and a shared one a network file system's source, and the stand-ins act on the store as the
// real tools act on a disk (their output and exit status replay util-linux 2.38.1 and e2fsprogs
// 1.47.0 as recorded in standins/recordings/debian12-volume-tools.txt; see PROVENANCE.md):
//
//	blkid        a block volume's file system (TYPE ext4, UUID, BLOCK_SIZE) once mkfs.ext4 made one;
//	             exit 2 when it finds none (no file system, no such device)
//	mkfs.ext4    wipes the store's data and records an ext4 file system (store/fs.json); refuses a
//	             mounted device
//	mount        mount PATH (or SOURCE) looks the line up in $HYDRA_ROOT/etc/fstab, resolves its device
//	             or NFS source to the store, and makes $HYDRA_ROOT<PATH> a link to the store's data/
//	             (an empty mount point is replaced; a non-empty one's files are set aside until umount),
//	             noting the mount in <dir>/run/mounts (/proc/mounts' format); mount -a mounts every line
//	findmnt      reads <dir>/run/mounts (exit 1: nothing matches, as for a path not mounted)
//	umount       undoes a mount
//
// Paths given to them may be the machine's ("/data") or under its root ("$HYDRA_ROOT/data"): both
// name the same place, so roles that prefix their paths with hydra_root work unchanged.

// Volume is a volume the machine has.
type Volume struct {
	// ID names the volume.
	ID string `json:"id"`
	// Device is a block volume's device path inside the machine (/dev/disk/by-id/...); Source a
	// shared volume's network file system source (server:/export). Exactly one is set.
	Device string `json:"device,omitempty"`
	Source string `json:"source,omitempty"`
	// SizeGB is a block volume's size in GiB, as mkfs.ext4 reports it.
	SizeGB int `json:"size_gb,omitempty"`
	// Store is the host directory that keeps the volume: its files in data/, a block volume's file
	// system in fs.json (none until mkfs.ext4) and device, the file Device links to.
	Store string `json:"store"`
}

// volumesFile lists the machine's volumes for the stand-ins.
const volumesFile = "volumes.json"

// Files of a volume's store.
const (
	storeData   = "data"
	storeFS     = "fs.json"
	storeDevice = "device"
)

// VolumeFS is the file system mkfs.ext4 made on a block volume's store (nil: none).
type VolumeFS struct {
	Type      string `json:"type"`
	UUID      string `json:"uuid"`
	BlockSize int    `json:"block_size"`
}

// StoreFS reads the file system of a block volume's store (nil when none was made).
func StoreFS(store string) (*VolumeFS, error) {
	b, err := os.ReadFile(filepath.Join(store, storeFS))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var fs VolumeFS
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("simhost: %s: %w", filepath.Join(store, storeFS), err)
	}
	return &fs, nil
}

// StoreData is the directory of a store's files.
func StoreData(store string) string { return filepath.Join(store, storeData) }

// writeVolumes writes the machine's volume list and, for each block volume, its store's device file
// and the device link under the machine's root. Files already right are left alone.
func writeVolumes(dir, root string, vols []Volume) error {
	vols = slices.Clone(vols)
	for i, v := range vols {
		switch {
		case v.ID == "" || v.Store == "":
			return fmt.Errorf("simhost: volume %d has no id or store", i)
		case (v.Device == "") == (v.Source == ""):
			return fmt.Errorf("simhost: volume %s needs a device or a source, not both", v.ID)
		case v.Device != "" && !strings.HasPrefix(v.Device, "/dev/"):
			return fmt.Errorf("simhost: volume %s's device %q is not under /dev", v.ID, v.Device)
		}
		store, err := filepath.Abs(v.Store)
		if err != nil {
			return err
		}
		vols[i].Store = store
		if err := os.MkdirAll(filepath.Join(store, storeData), 0o755); err != nil {
			return err
		}
		if v.Device == "" {
			continue
		}
		dev := filepath.Join(store, storeDevice)
		f, err := os.OpenFile(dev, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		_ = f.Close() // only its existence matters
		link := filepath.Join(root, filepath.FromSlash(v.Device))
		if got, err := os.Readlink(link); err == nil && got == dev {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		_ = os.Remove(link)
		if err := os.Symlink(dev, link); err != nil {
			return err
		}
	}
	if vols == nil {
		vols = []Volume{}
	}
	b, err := json.MarshalIndent(vols, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Update(filepath.Join(dir, volumesFile), append(b, '\n'), 0o644)
}

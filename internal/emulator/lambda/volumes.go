package lambda

// Lambda's file systems (persistent NFS storage), as Lambda's OpenAPI document (v1.10.0: the
// Filesystem schema, GET /file-systems, POST /filesystems, DELETE /filesystems/{id}, the launch
// request's file_system_names and file_system_mounts, the error schemas file-system-in-wrong-region and
// filesystems/filesystem-in-use) describes them:
//
//   - a file system has no size: it grows as it fills (bytes_used); it is bound to its region;
//   - it is attached only at launch: by name (mounted at its mount_point, /lambda/nfs/<name>) or by id
//     with a mount point under /home, /lambda/nfs or /data (the pattern ^(/home|/lambda/nfs|/data)[/a-zA-Z0-9-]*$,
//     at most 256 characters); one of another region fails the launch with
//     400 instance-operations/launch/file-system-in-wrong-region, and nothing is launched;
//   - deleting one a live instance mounts is 400 filesystems/filesystem-in-use, and nothing is deleted.
//
// Not confirmed, chosen here: a file system is in use until its instance is terminated (terminate
// requested); a second file system of the same name is 400 global/duplicate; the deleted answer is
// {"deleted_ids": [id]}.

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/emulator/emukit"
	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// fileSystem is one stored file system.
type fileSystem struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Region    string    `json:"region"`
	CreatedAt time.Time `json:"created_at"`
}

// fsMount is one file system mounted on an instance.
type fsMount struct {
	FileSystemID string `json:"file_system_id"`
	MountPoint   string `json:"mount_point"`
}

// mountRoots are where Lambda mounts a file system given by id (the launch request's
// file_system_mounts): a mount point is one of them or below one.
var mountRoots = []string{"/home", "/lambda/nfs", "/data"}

// mountPointRE is RequestedFilesystemMountEntry's mount_point pattern (at most 256 characters).
var mountPointRE = regexp.MustCompile(`^(/home|/lambda/nfs|/data)[/a-zA-Z0-9-]*$`)

// defaultMountPoint is where a file system given by name is mounted.
func defaultMountPoint(name string) string { return "/lambda/nfs/" + name }

func sortedFileSystems(st *state) []*fileSystem {
	return emukit.ByAge(st.FileSystems, func(f *fileSystem) time.Time { return f.CreatedAt }, func(f *fileSystem) string { return f.ID })
}

// inUse reports whether a live instance (not terminated) mounts the file system.
func inUse(st *state, id string) bool {
	for _, in := range st.Instances {
		if in.TerminatedAt != nil {
			continue
		}
		for _, m := range in.FileSystems {
			if m.FileSystemID == id {
				return true
			}
		}
	}
	return false
}

func (s *Server) fileSystemView(st *state, f *fileSystem) map[string]any {
	return map[string]any{
		"id":          f.ID,
		"name":        f.Name,
		"mount_point": defaultMountPoint(f.Name),
		"created":     f.CreatedAt.UTC().Format(time.RFC3339),
		"created_by":  map[string]any{"id": "emulator-user", "email": "emulator@example.com", "status": "active"},
		"is_in_use":   inUse(st, f.ID),
		"region":      s.regions[f.Region],
		"bytes_used":  0,
	}
}

func (s *Server) listFileSystems(st *state) reply {
	out := []map[string]any{}
	for _, f := range sortedFileSystems(st) {
		out = append(out, s.fileSystemView(st, f))
	}
	return dataReply(out)
}

func (s *Server) createFileSystem(st *state, body []byte) reply {
	var req struct {
		Name   string `json:"name"`
		Region string `json:"region"`
	}
	if r, ok := decodeNamed(body, &req, &req.Name); !ok {
		return r
	}
	if _, ok := s.regions[req.Region]; !ok {
		return invalid("region", fmt.Sprintf("Unknown region %q.", req.Region))
	}
	for _, f := range st.FileSystems {
		if f.Name == req.Name {
			return errReply(http.StatusBadRequest, "global/duplicate",
				fmt.Sprintf("A filesystem named %q already exists.", req.Name), "Use a different name.")
		}
	}
	f := &fileSystem{ID: simulation.RandomHex(16), Name: req.Name, Region: req.Region, CreatedAt: s.opts.Now()}
	st.FileSystems[f.ID] = f
	return dataReply(s.fileSystemView(st, f))
}

func (s *Server) deleteFileSystem(st *state, id string) reply {
	f, ok := st.FileSystems[id]
	if !ok {
		return notFound("Specified filesystem does not exist.")
	}
	if inUse(st, id) {
		return errReply(http.StatusBadRequest, "filesystems/filesystem-in-use",
			fmt.Sprintf("Filesystem %q is in use by an instance.", f.Name), "Terminate the instances using the filesystem first.")
	}
	delete(st.FileSystems, id)
	return dataReply(map[string]any{"deleted_ids": []string{id}})
}

// launchMounts resolves a launch's file_system_names and file_system_mounts into mounts, or the error
// Lambda answers: an unknown file system, a mount point outside mountRoots, one of another region.
func (s *Server) launchMounts(st *state, region string, names []string, mounts []fsMount) ([]fsMount, reply, bool) {
	var out []fsMount
	seen := map[string]bool{}
	add := func(f *fileSystem, at string) {
		if !seen[f.ID] {
			seen[f.ID] = true
			out = append(out, fsMount{FileSystemID: f.ID, MountPoint: at})
		}
	}
	for _, n := range names {
		var found *fileSystem
		for _, f := range st.FileSystems {
			if f.Name == n {
				found = f
			}
		}
		if found == nil {
			return nil, errReply(http.StatusBadRequest, "global/object-does-not-exist",
				fmt.Sprintf("File system %q does not exist.", n), "Check the file system's name."), false
		}
		add(found, defaultMountPoint(n))
	}
	for _, m := range mounts {
		if !underMountRoot(m.MountPoint) {
			return nil, invalid("file_system_mounts", fmt.Sprintf("Mount point %q must be /home, /lambda/nfs or /data, or below one.", m.MountPoint)), false
		}
		f, ok := st.FileSystems[m.FileSystemID]
		if !ok {
			return nil, errReply(http.StatusBadRequest, "global/object-does-not-exist",
				fmt.Sprintf("File system %q does not exist.", m.FileSystemID), "Check the file system's id."), false
		}
		add(f, m.MountPoint)
	}
	for _, m := range out {
		if f := st.FileSystems[m.FileSystemID]; f.Region != region {
			return nil, errReply(http.StatusBadRequest, "instance-operations/launch/file-system-in-wrong-region",
				fmt.Sprintf("File system %q is in %s, not in %s.", f.Name, f.Region, region),
				"Launch the instance in the file system's region, or use a file system of that region."), false
		}
	}
	return out, reply{}, true
}

func underMountRoot(p string) bool {
	if len(p) > 256 || !mountPointRE.MatchString(p) {
		return false
	}
	for _, r := range mountRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return !strings.Contains(p, "/../") && !strings.HasSuffix(p, "/..")
		}
	}
	return false
}

// fileSystemFields are the file_system_names and file_system_mounts of an instance's answer.
func fileSystemFields(st *state, in *instance) (names []string, mounts []fsMount) {
	names, mounts = []string{}, []fsMount{}
	for _, m := range in.FileSystems {
		if f, ok := st.FileSystems[m.FileSystemID]; ok {
			names = append(names, f.Name)
		}
		mounts = append(mounts, m)
	}
	return names, mounts
}

// FileSystemInfo is an emulator-side summary of one file system.
type FileSystemInfo struct {
	ID, Name, Region string
	InUse            bool
}

// FileSystems lists the account's file systems, oldest first.
func (s *Server) FileSystems() []FileSystemInfo {
	var out []FileSystemInfo
	_ = s.update(func(st *state) error {
		for _, f := range sortedFileSystems(st) {
			out = append(out, FileSystemInfo{ID: f.ID, Name: f.Name, Region: f.Region, InUse: inUse(st, f.ID)})
		}
		return nil
	})
	return out
}

package controlplane

import (
	"fmt"
	"path"
	"slices"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// volumePlace is where the volumes of a request are: one cloud and region (name: the first volume's
// name, for messages).
type volumePlace struct{ cloud, region, name string }

func (p volumePlace) String() string { return p.cloud + "/" + p.region }

// placeVolumes checks a request's volumes, touching no cloud: each id is <cloud>/<region>/<name>,
// none given twice, each mount path absolute and used once, and all in one cloud and region. ok is
// false without volumes. Errors are *RequestError on "volumes".
func placeVolumes(uses []VolumeUse) (p volumePlace, ok bool, err error) {
	ids, paths := map[string]bool{}, map[string]bool{}
	for i, u := range uses {
		cloud, region, name, err := ParseVolumeID(u.ID)
		if err != nil {
			return volumePlace{}, false, &RequestError{Field: "volumes", Msg: err.Error()}
		}
		switch mp := path.Clean(u.MountPath); {
		case !path.IsAbs(u.MountPath) || mp == "/":
			return volumePlace{}, false, &RequestError{Field: "volumes", Msg: fmt.Sprintf("volume %s: mount_path %q must be an absolute path other than /", u.ID, u.MountPath)}
		case ids[u.ID]:
			return volumePlace{}, false, &RequestError{Field: "volumes", Msg: fmt.Sprintf("volume %s is given twice", u.ID)}
		case paths[mp]:
			return volumePlace{}, false, &RequestError{Field: "volumes", Msg: fmt.Sprintf("two volumes are mounted at %s", mp)}
		}
		ids[u.ID], paths[path.Clean(u.MountPath)] = true, true
		if i == 0 {
			p = volumePlace{cloud: cloud, region: region, name: name}
			continue
		}
		if cloud != p.cloud || region != p.region {
			return volumePlace{}, false, &RequestError{Field: "volumes", Msg: fmt.Sprintf("a machine's volumes must be in one cloud and region: volume %s is in %s, volume %s in %s/%s",
				p.name, p, name, cloud, region)}
		}
	}
	return p, len(uses) > 0, nil
}

// checkVolumeMountPaths refuses, on "volumes", a mount path other than the one where the volumes'
// cloud mounts them itself (Facts.VolumeMountPath): the data would not be where the user looks.
func (cp *ControlPlane) checkVolumeMountPaths(p volumePlace, uses []VolumeUse) error {
	b, ok := cp.backends[p.cloud]
	if !ok {
		return nil
	}
	at := cloudprovider.FactsOf(b).VolumeMountPath
	if at == "" {
		return nil
	}
	for _, u := range uses {
		if path.Clean(u.MountPath) != at {
			return &RequestError{Field: "volumes", Msg: fmt.Sprintf("volume %s: %s mounts a machine's volume at %s itself, not at mount_path %s; set mount_path = %q (one volume per machine there)",
				u.ID, p.cloud, at, u.MountPath, at)}
		}
	}
	return nil
}

// volumeRejection says why cloud c cannot take a machine (or, with cluster, a cluster's nodes) with
// volumes at p: another cloud, or a backend that cannot launch with volumes. "" when it can.
func (cp *ControlPlane) volumeRejection(c string, p volumePlace, cluster bool) string {
	if c != p.cloud {
		return fmt.Sprintf("volume %s is in %s", p.name, p)
	}
	b := cp.backends[c]
	if _, ok := b.(cloudprovider.VolumeBackend); !ok {
		return fmt.Sprintf("%s has no volume API, so its machines cannot have volume %s", c, p.name)
	}
	if cluster {
		if _, ok := b.(cloudprovider.ClusterBackend); !ok {
			return "no cluster API"
		}
		return ""
	}
	if _, ok := b.(cloudprovider.VolumeLauncher); !ok {
		return fmt.Sprintf("%s cannot create a machine with volumes (its backend has no launch with volumes)", c)
	}
	return ""
}

// volumeRegions narrows req's regions to its volumes' region for cloud (the volumes' cloud): why is
// set, and no region is left, when the request's regions exclude it.
func volumeRegions(cloud string, req OfferRequest) (regions []string, why string) {
	p, ok, err := placeVolumes(req.Volumes)
	if err != nil || !ok || cloud != p.cloud {
		return req.Regions, ""
	}
	if len(req.Regions) > 0 && !slices.Contains(req.Regions, p.region) {
		return nil, fmt.Sprintf("volume %s is in %s, outside regions %s", p.name, p, quoteList(req.Regions, ", "))
	}
	return []string{p.region}, ""
}

// checkPinnedVolumes checks a pinned offer's cloud and region against the request's volumes.
func (cp *ControlPlane) checkPinnedVolumes(id, cloud, region string, req OfferRequest) error {
	p, ok, err := placeVolumes(req.Volumes)
	if err != nil {
		return err
	}
	if !ok {
		return nil
	}
	if why := cp.volumeRejection(cloud, p, false); why != "" {
		return &MismatchError{id, "volumes", why}
	}
	if region != p.region {
		return &MismatchError{id, "volumes", fmt.Sprintf("it is in region %q, but volume %s is in %s", region, p.name, p)}
	}
	return nil
}

// checkClusterVolumes checks a cluster offer's cloud and region against the spec's volumes: a
// *MismatchError on "volumes" when they are elsewhere or the cloud cannot take them.
func (cp *ControlPlane) checkClusterVolumes(spec ClusterSpec, offerID string) error {
	p, ok, err := placeVolumes(spec.Volumes)
	if err != nil || !ok {
		return err
	}
	parsed, err := ParseClusterOfferID(offerID)
	if err != nil {
		return err
	}
	cloud := cp.PoolCloud(parsed.Pool)
	if why := cp.volumeRejection(cloud, p, true); why != "" {
		return &MismatchError{offerID, "volumes", why}
	}
	if parsed.Region != p.region {
		return &MismatchError{offerID, "volumes", fmt.Sprintf("it is in region %q, but volume %s is in %s", parsed.Region, p.name, p)}
	}
	return nil
}

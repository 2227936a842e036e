package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
	"github.com/hydragpu/terraform-provider-hydra/internal/money"
)

// VolumeSpec is what a hydra_volume asks for.
type VolumeSpec struct {
	// Name is the resource's name; the cloud-side name is CloudName(<the cloud's vm pool>, Name, token).
	Name   string
	Type   cloudprovider.VolumeType
	SizeGB int
	// Cloud and Region are where the volume lives; a volume never moves.
	Cloud, Region string
}

// VolumeRecord is a volume as a state holds it.
type VolumeRecord struct {
	// ID is hydra_volume.id: <cloud>/<region>/<name> (VolumeID).
	ID string
	// CloudVolumeID is the cloud's id; CloudName the cloud-side name.
	CloudVolumeID, CloudName, Name, Cloud, Region string
	Type                                          cloudprovider.VolumeType
	SizeGB                                        int
	// AttachedTo are the cloud-side names of the machines using the volume, sorted.
	AttachedTo []string
	// PricePerMonth is what the cloud bills a month (0: the cloud does not say).
	PricePerMonth money.USD
}

// VolumeUse is one volume a machine or cluster gets: ID is hydra_volume.id, MountPath where it is
// mounted inside the machine.
type VolumeUse struct {
	ID        string
	MountPath string
}

// VolumeID is hydra_volume.id for a volume named name in cloud's region.
func VolumeID(cloud, region, name string) string { return cloud + "/" + region + "/" + name }

// ParseVolumeID splits a hydra_volume.id into its cloud, region and name; an id that is not
// <cloud>/<region>/<name> (three non-empty parts) is an error saying so.
func ParseVolumeID(id string) (cloud, region, name string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("volume id %q is not <cloud>/<region>/<name>", id)
	}
	return parts[0], parts[1], parts[2], nil
}

var errVolumesNotYet = errors.New("volumes: not implemented yet")

// PlanVolume checks at plan that spec's cloud is configured, has a volume API, and has spec.Type in
// spec.Region. An error is a *RequestError naming what the cloud has.
func (cp *ControlPlane) PlanVolume(ctx context.Context, spec VolumeSpec) error {
	return errVolumesNotYet
}

// CreateVolume creates spec's volume under the first free ownership token of its name (idempotent by
// name: a volume the cloud already has under that name is the one returned). Errors are classified
// *cloudprovider.Error or *RequestError.
func (cp *ControlPlane) CreateVolume(ctx context.Context, spec VolumeSpec) (VolumeRecord, error) {
	return VolumeRecord{}, errVolumesNotYet
}

// RefreshVolume reads rec's volume back from its cloud by CloudVolumeID (found false: it is gone) and
// updates rec (size, attachments as machine names, price).
func (cp *ControlPlane) RefreshVolume(ctx context.Context, rec *VolumeRecord) (found bool, err error) {
	return false, errVolumesNotYet
}

// ImportVolume reads the volume of importID (<cloud>/<cloud volume id>); its record's ID comes from the
// volume's region and its ownership record's resource name.
func (cp *ControlPlane) ImportVolume(ctx context.Context, importID string) (VolumeRecord, error) {
	return VolumeRecord{}, errVolumesNotYet
}

// DeleteVolume deletes rec's volume; while any machine uses it, it refuses with an error naming the
// machines, and deletes nothing. A volume already gone is success.
func (cp *ControlPlane) DeleteVolume(ctx context.Context, rec VolumeRecord) error {
	return errVolumesNotYet
}

// VolumeRegions is, for each configured cloud with a volume API, the regions that have volumes of typ
// (for hydra_gpu_offer's volume_type), sorted.
func (cp *ControlPlane) VolumeRegions(ctx context.Context, typ cloudprovider.VolumeType) (map[string][]string, error) {
	return nil, errVolumesNotYet
}

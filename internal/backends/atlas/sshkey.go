package atlas

// RequiresSSHKey reports that Atlas creates instances only with at least one SSH public key
// (ssh_public_keys: "at least one key is required"; API.md).
func (b *Backend) RequiresSSHKey() bool { return true }

package upcloud

// RequiresSSHKey reports that hydra creates UpCloud servers only with an SSH public key: its servers
// allow key logins only (no password is ever set), so a server without a key could never be reached.
func (b *Backend) RequiresSSHKey() bool { return true }

// Package cloudprovider is the contract between hydra's control plane and the clouds: what a backend
// must do (InstanceManagerBackend), what it may also do (the optional abilities, each its own small
// interface), what it says about its cloud (Facts), how its errors are classified (Error, ErrorKind),
// the provisioner's interface, and the names and ownership tokens machines carry. Backends, the
// sandbox and the clouds registry import this package, never the control plane. It knows nothing of
// Terraform.
package cloudprovider

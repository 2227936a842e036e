// Package differential holds hydra's differential test of offer ranking (issue 10), and nothing else:
// the package has no code outside its test.
//
// The test generates random catalogs, loads them into every cloud of the registry (internal/clouds):
// real backends, built through the registry as the provider builds them, talk real HTTP to the clouds'
// emulators (Atlas, Lambda, Mithril, Prime Intellect, UpCloud, Verda), and the sandbox reads its
// catalog.json. It asks a control plane for offers and compares the answer with a small reference
// ranking written in the test from the documented rules (docs/index.md "Prices",
// docs/data-sources/gpu_offer.md, the comments on cloudprovider.Offer, on each backend's Offers and on
// Mithril's PriceBids). The reference never calls the control plane's filtering or ranking, nor the
// backends' pricing. A cloud added to the registry without an adapter in the test fails it.
//
// Runs are deterministic: case i of a run uses a generator seeded with (seed, i). Override the seed
// and the number of random cases with HYDRA_DIFF_SEED and HYDRA_DIFF_CASES; run a single random case
// with HYDRA_DIFF_CASE (its number, as a failure prints it):
//
//	HYDRA_DIFF_SEED=7 HYDRA_DIFF_CASES=1000 go test ./internal/differential/
//	HYDRA_DIFF_SEED=7 HYDRA_DIFF_CASE=123 go test -v ./internal/differential/ -run TestDifferentialRandom
package differential

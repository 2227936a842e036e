package cloudprovider

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/inventory"
)

// TokenSeparator joins a resource's name and its ownership token in a cloud-side name. Resource names
// may not contain it, so the split is never ambiguous.
const TokenSeparator = "--"

// tokenLen is the length of an ownership token: 8 characters of lower-case base32, 40 random bits.
const tokenLen = 8

var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewOwnerToken returns a fresh random ownership token.
func NewOwnerToken() string {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return tokenEncoding.EncodeToString(b[:])
}

// OwnerGenerations is how many derived tokens one resource name has: a create takes the first whose
// cloud-side name is free, so a create_before_destroy replacement (its predecessor still running)
// gets the next one.
const OwnerGenerations = 4

// OwnerToken returns the ownership token a create of resource takes in generation gen (0 first). It
// is derived from the resource's name alone, so every runner of a configuration (a fresh CI runner
// with only the .tf files and the state included) computes the same tokens and can tell a machine its
// configuration's cut-short create left (a derived token, never confirmed at the cloud) from one a
// state holds (confirmed). Machines made before derived tokens carry random ones (NewOwnerToken).
func OwnerToken(resource string, gen int) string {
	sum := sha256.Sum256([]byte("hydra ownership token v1\x00" + resource + "\x00" + strconv.Itoa(gen)))
	return tokenEncoding.EncodeToString(sum[:5])
}

// DerivedToken reports whether token is one of OwnerToken(resource, gen)'s.
func DerivedToken(resource, token string) bool {
	if token == "" {
		return false
	}
	for gen := 0; gen < OwnerGenerations; gen++ {
		if OwnerToken(resource, gen) == token {
			return true
		}
	}
	return false
}

// CloudName returns the cloud-side name of a resource's machine in a pool:
// "<prefix><name>--<token>", or "<prefix><name>" when token is empty (machines made before ownership
// records, and names given to import).
func CloudName(pool inventory.Pool, name, token string) string {
	if token == "" {
		return pool.Prefix + name
	}
	return pool.Prefix + name + TokenSeparator + token
}

// ParseCloudName splits a cloud-side name of the pool into the resource's name and the ownership
// token ("" when the name carries none). ok is false when the name is not the pool's.
func ParseCloudName(pool inventory.Pool, cloudName string) (name, token string, ok bool) {
	rest, ok := strings.CutPrefix(cloudName, pool.Prefix)
	if !ok || rest == "" {
		return "", "", false
	}
	if i := strings.LastIndex(rest, TokenSeparator); i > 0 {
		t := rest[i+len(TokenSeparator):]
		if len(t) == tokenLen && strings.Trim(t, "abcdefghijklmnopqrstuvwxyz234567") == "" {
			return rest[:i], t, true
		}
	}
	return rest, "", true
}

// WithOwner fills inst.Owner from the cloud-side name when the backend reported no record.
func WithOwner(pool inventory.Pool, inst Instance) Instance {
	if inst.Owner.Token != "" {
		return inst
	}
	if name, token, ok := ParseCloudName(pool, inst.Name); ok && token != "" {
		inst.Owner.Resource, inst.Owner.Token = name, token
	}
	return inst
}

// FindNamed looks for the one of name among what list(ctx, name) lists (clouds list by name prefix):
// of those is accepts, the first by less, or the first listed when less is nil. ok is false when is
// accepts none; list's error is returned as it is.
func FindNamed[T any](ctx context.Context, name string, list func(ctx context.Context, prefix string) ([]T, error),
	is func(T) bool, less func(a, b T) bool) (found T, ok bool, err error) {
	all, err := list(ctx, name)
	if err != nil {
		return found, false, err
	}
	for _, x := range all {
		if is(x) && (!ok || less != nil && less(x, found)) {
			found, ok = x, true
		}
	}
	return found, ok, nil
}

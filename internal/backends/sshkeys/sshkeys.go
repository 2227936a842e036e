// Package sshkeys registers SSH public keys on a cloud account for the backends whose cloud wants a key
// id rather than the key itself: it looks before it adds, names keys the same on every cloud (Name), and
// finds a key whose add answer was lost. Each backend hands it its cloud's key calls (Registry).
package sshkeys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// AccountKey is an SSH public key registered on a cloud account.
type AccountKey struct {
	ID        string
	PublicKey string
}

// Registry is how Ensure reaches one cloud's SSH key API.
type Registry struct {
	// Cloud names the cloud in errors.
	Cloud string
	// List returns the account's keys.
	List func(ctx context.Context) ([]AccountKey, error)
	// Add registers a key under name and returns its id.
	Add func(ctx context.Context, name, publicKey string) (string, error)
	// AddAgain makes a failed Add whose outcome is unknown (ErrOther: a 5xx, a lost answer) add once
	// more when the account, listed again, does not hold the key: for clouds whose key create the HTTP
	// client does not retry, so that a single 5xx never fails a create.
	AddAgain bool
}

// Normalize reduces an authorized_keys line to "<type> <base64 body>" (the comment and options do
// not make a key different); "" when the line holds no key.
func Normalize(line string) string {
	f := strings.Fields(line)
	if i := keyType(f); i >= 0 {
		return f[i] + " " + f[i+1]
	}
	return ""
}

// Bare drops the authorized_keys options of a line and keeps "<type> <base64> [comment]", for clouds
// that refuse options; a line that holds no key comes back trimmed.
func Bare(line string) string {
	f := strings.Fields(line)
	if i := keyType(f); i >= 0 {
		return strings.Join(f[i:], " ")
	}
	return strings.TrimSpace(line)
}

// keyType is the index of the key type among the fields of an authorized_keys line (a body follows
// it), or -1.
func keyType(f []string) int {
	for i := 0; i+1 < len(f); i++ {
		if strings.HasPrefix(f[i], "ssh-") || strings.HasPrefix(f[i], "ecdsa-") || strings.HasPrefix(f[i], "sk-") {
			return i
		}
	}
	return -1
}

// Name is the account-side name hydra gives a public key: "hydra-" and 12 hex digits of the
// normalised key's SHA-256, the same on every cloud.
func Name(publicKey string) string {
	sum := sha256.Sum256([]byte(Normalize(publicKey)))
	return "hydra-" + hex.EncodeToString(sum[:6])
}

// Ensure returns the ids of account keys holding each given public key (duplicates once, in
// order), registering the ones the account lacks. It looks before it adds, so a retried or repeated
// call never registers a key twice, and adds with AddOrFind, listing the account again after a failed
// add (with r.AddAgain, a key still missing is added once more). A line that holds no key is ErrInvalid.
func Ensure(ctx context.Context, r Registry, publicKeys []string) ([]string, error) {
	ids := []string{}
	var have []AccountKey
	listed := false
	find := func(norm string) string {
		for _, k := range have {
			if Normalize(k.PublicKey) == norm {
				return k.ID
			}
		}
		return ""
	}
	seen := map[string]bool{}
	for _, pk := range publicKeys {
		if strings.TrimSpace(pk) == "" {
			continue
		}
		norm := Normalize(pk)
		if norm == "" {
			return nil, cloudprovider.Errorf(cloudprovider.ErrInvalid, r.Cloud, "registering SSH key", "not an authorized_keys line: %.40q", pk)
		}
		if seen[norm] {
			continue
		}
		seen[norm] = true
		if !listed {
			var err error
			if have, err = r.List(ctx); err != nil {
				return nil, err
			}
			listed = true
		}
		if id := find(norm); id != "" {
			ids = append(ids, id)
			continue
		}
		id, err := AddOrFind(ctx, func() (string, error) { return r.Add(ctx, Name(pk), strings.TrimSpace(pk)) },
			func() (string, error) {
				again, err := r.List(ctx)
				if err != nil {
					return "", err
				}
				have = again
				return find(norm), nil
			}, r.AddAgain)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		have = append(have, AccountKey{ID: id, PublicKey: pk})
	}
	return ids, nil
}

// AddOrFind registers one key: add adds it and returns its id. After a failed add it looks for the key
// (find: its id, "" while the account lacks it), since the answer may have been lost after the key was
// stored; with again, an add whose outcome is unknown (ErrOther) is made once more when the key is
// still missing. An ErrAuth failure or an ended ctx returns at once; otherwise add's error.
func AddOrFind(ctx context.Context, add, find func() (string, error), again bool) (string, error) {
	for attempt := 1; ; attempt++ {
		id, err := add()
		if err == nil {
			return id, nil
		}
		if cloudprovider.KindOf(err) == cloudprovider.ErrAuth || ctx.Err() != nil {
			return "", err
		}
		id, ferr := find()
		if ferr == nil && id != "" {
			return id, nil
		}
		if !again || attempt > 1 || ferr != nil || cloudprovider.KindOf(err) != cloudprovider.ErrOther {
			return "", err
		}
	}
}

// Serial runs one account's key registrations one at a time in this process, so that two creates
// never add one key twice. The zero Serial is ready to use; it must not be copied after first use.
type Serial struct{ mu sync.Mutex }

// Ensure is Ensure, after the registrations in flight.
func (s *Serial) Ensure(ctx context.Context, r Registry, publicKeys []string) ([]string, error) {
	defer s.Lock()()
	return Ensure(ctx, r, publicKeys)
}

// Lock waits for the registrations in flight and holds off others until unlock, for a cloud's own
// key work beside Ensure (Lambda's generated key).
func (s *Serial) Lock() (unlock func()) {
	s.mu.Lock()
	return s.mu.Unlock
}

// Lister adapts a cloud's own key listing to Registry.List: account turns each of the cloud's keys
// into an AccountKey.
func Lister[K any](list func(ctx context.Context) ([]K, error), account func(K) AccountKey) func(ctx context.Context) ([]AccountKey, error) {
	return func(ctx context.Context) ([]AccountKey, error) {
		keys, err := list(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]AccountKey, 0, len(keys))
		for _, k := range keys {
			out = append(out, account(k))
		}
		return out, nil
	}
}

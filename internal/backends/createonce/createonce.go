// Package createonce makes a backend's Create idempotent by name, the same way on every cloud: creates
// of one name in this process run one at a time; each first looks for a live instance of the name and
// returns it; and a create whose outcome is unknown (a 5xx, a lost answer) looks for the name once more
// before it gives up, since the cloud may have made the machine after all.
package createonce

import (
	"cmp"
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
)

// Group holds the per-name locks of one backend. The zero Group is ready to use; it must not be copied
// after first use.
type Group struct {
	mu    sync.Mutex
	names map[string]*nameLock
}

// nameLock is one name's lock; waiters counts its holder and the creates waiting for it, so that the
// entry is dropped when nobody needs it.
type nameLock struct {
	ch      chan struct{}
	waiters int
}

// Lock takes the name's lock, waiting for a create of the name in flight to finish, or gives up with
// ctx's error when ctx ends first. unlock releases the lock.
func (g *Group) Lock(ctx context.Context, name string) (unlock func(), err error) {
	g.mu.Lock()
	if g.names == nil {
		g.names = map[string]*nameLock{}
	}
	l := g.names[name]
	if l == nil {
		l = &nameLock{ch: make(chan struct{}, 1)}
		g.names[name] = l
	}
	l.waiters++
	g.mu.Unlock()
	release := func() {
		g.mu.Lock()
		if l.waiters--; l.waiters == 0 {
			delete(g.names, name)
		}
		g.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// StepsOf are one cloud's parts of an idempotent create of a T: a machine, a cluster, a volume.
type StepsOf[T any] struct {
	// Cloud and Op name the cloud and the operation in the error returned when ctx ends while the
	// create waits for another create of the name (ErrOther).
	Cloud, Op string
	// Name is the cloud-side name the create is idempotent by.
	Name string
	// Key is the name's lock (default Name): things of different kinds that may share a name (a
	// machine and a cluster) lock different keys.
	Key string
	// Find looks for a live T of the name (ok false: there is none). Its error is returned as it is.
	Find func(ctx context.Context) (found T, ok bool, err error)
	// Prepare, when set, runs after Find found nothing and before Create: checks and set-up (prices,
	// SSH keys, a launch rate limit) that create nothing. Its error is returned as it is.
	Prepare func(ctx context.Context) error
	// Create makes the T.
	Create func(ctx context.Context) (T, error)
	// Unknown reports whether Create's error leaves the outcome unknown, so that the T may exist
	// (default UnknownOutcome).
	Unknown func(ctx context.Context, err error) bool
	// Refind looks for the name after an unknown outcome (default Find). Its error is dropped: Run
	// then returns Create's.
	Refind func(ctx context.Context) (found T, ok bool, err error)
	// Log, when set, hears of a T found instead of created; ID, when set, gives its id for the log.
	Log hclog.Logger
	ID  func(T) string
}

// Steps are the parts of an idempotent create of a machine (Group.Do).
type Steps = StepsOf[cloudprovider.Instance]

// Outcome says where what Run returns comes from.
type Outcome int

const (
	// Created: Create made it.
	Created Outcome = iota
	// Existed: Find found it before anything was created.
	Existed
	// Recovered: Create's outcome was unknown, and Refind found it afterwards.
	Recovered
)

// UnknownOutcome is the default Steps.Unknown: the error is ErrOther (a 5xx, a lost answer, a transport
// failure) and ctx has not ended.
func UnknownOutcome(ctx context.Context, err error) bool {
	return cloudprovider.KindOf(err) == cloudprovider.ErrOther && ctx.Err() == nil
}

// Do is Run for a machine.
func (g *Group) Do(ctx context.Context, s Steps) (cloudprovider.Instance, Outcome, error) {
	if s.ID == nil {
		s.ID = func(in cloudprovider.Instance) string { return in.ID }
	}
	return Run(ctx, g, s)
}

// Run runs one idempotent create of s.Name: under the name's lock it returns the live T Find finds
// (Existed), or runs Prepare and Create (Created); when Create fails with an unknown outcome it looks
// once more and returns the T Refind finds (Recovered), else Create's error.
func Run[T any](ctx context.Context, g *Group, s StepsOf[T]) (T, Outcome, error) {
	var zero T
	unlock, err := g.Lock(ctx, cmp.Or(s.Key, s.Name))
	if err != nil {
		return zero, Created, cloudprovider.NewError(cloudprovider.ErrOther, s.Cloud, s.Op, err)
	}
	defer unlock()
	log := s.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	id := func(v T) string {
		if s.ID == nil {
			return ""
		}
		return s.ID(v)
	}
	if found, ok, err := s.Find(ctx); err != nil {
		return zero, Created, err
	} else if ok {
		log.Info("found by name; not creating another", "name", s.Name, "id", id(found))
		return found, Existed, nil
	}
	if s.Prepare != nil {
		if err := s.Prepare(ctx); err != nil {
			return zero, Created, err
		}
	}
	made, err := s.Create(ctx)
	if err == nil {
		return made, Created, nil
	}
	unknown, refind := s.Unknown, s.Refind
	if unknown == nil {
		unknown = UnknownOutcome
	}
	if refind == nil {
		refind = s.Find
	}
	if unknown(ctx, err) {
		if found, ok, ferr := refind(ctx); ferr == nil && ok {
			log.Warn("the create answered with an error, but it was made; returning it", "name", s.Name, "id", id(found), "error", err)
			return found, Recovered, nil
		}
	}
	return zero, Created, err
}

// FindByName is a Steps.Find for clouds whose List(prefix) finds a name: the instance listed under
// exactly name that keep accepts (nil: any). When there are several (made outside hydra), it returns the
// first by less (nil: the oldest by CreatedAt).
func FindByName(ctx context.Context, name string, list func(ctx context.Context, prefix string) ([]cloudprovider.Instance, error),
	keep func(cloudprovider.Instance) bool, less func(a, b cloudprovider.Instance) bool) (cloudprovider.Instance, bool, error) {
	if less == nil {
		less = func(a, b cloudprovider.Instance) bool { return a.CreatedAt.Before(b.CreatedAt) }
	}
	return cloudprovider.FindNamed(ctx, name, list, func(in cloudprovider.Instance) bool { return in.Name == name && (keep == nil || keep(in)) }, less)
}

package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/controlplane"
)

// HostKeyMismatchError says the machine presented another SSH host key than the pinned one.
type HostKeyMismatchError struct {
	Address string
	// Pinned and Seen are SHA256 fingerprints.
	Pinned, Seen string
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("SSH host key of %s changed: pinned %s, the machine presented %s; refusing to provision "+
		"(if the machine was rebuilt, replace the resource; otherwise something may be impersonating it)",
		e.Address, e.Pinned, e.Seen)
}

// hostKeyAlgorithms lists the host key algorithms that can present a key of this type.
func hostKeyAlgorithms(keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	default:
		return []string{keyType}
	}
}

// tofuAlgorithms is the preference order when no key is pinned.
var tofuAlgorithms = []string{
	ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
	ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
}

// waitSSH polls until an SSH session runs on the machine, checking its host key against pinned (an
// authorized_keys line), or trusting and returning the first key seen when pinned is empty. A host key
// mismatch returns at once as a *controlplane.PermanentError.
func (r *Runner) waitSSH(ctx context.Context, ep controlplane.SSHEndpoint, pinned string) (ssh.PublicKey, error) {
	signer, err := ssh.ParsePrivateKey(r.cfg.PrivateKey)
	if err != nil {
		return nil, &controlplane.PermanentError{Err: errors.New("the SSH private key for provisioning could not be parsed")}
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	var want ssh.PublicKey
	if pinned != "" {
		want, _, _, _, err = ssh.ParseAuthorizedKey([]byte(pinned))
		if err != nil {
			return nil, &controlplane.PermanentError{Err: fmt.Errorf("the pinned host key of %s cannot be parsed: %w", addr, err)}
		}
	}
	var (
		mu       sync.Mutex
		seen     ssh.PublicKey
		mismatch *HostKeyMismatchError
	)
	algos := tofuAlgorithms
	if want != nil {
		algos = hostKeyAlgorithms(want.Type())
	}
	config := &ssh.ClientConfig{
		User:              ep.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyAlgorithms: algos,
		Timeout:           10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			mu.Lock()
			defer mu.Unlock()
			seen = key
			if want != nil && !bytes.Equal(key.Marshal(), want.Marshal()) {
				mismatch = &HostKeyMismatchError{Address: addr, Pinned: ssh.FingerprintSHA256(want), Seen: ssh.FingerprintSHA256(key)}
				return mismatch
			}
			return nil
		},
	}
	deadline := time.Now().Add(r.cfg.SSHWaitTimeout)
	var lastErr error
	for attempt := 1; ; attempt++ {
		err := probe(ctx, addr, config)
		mu.Lock()
		mm, key := mismatch, seen
		mu.Unlock()
		if mm != nil {
			return nil, &controlplane.PermanentError{Err: mm}
		}
		if err == nil {
			return key, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for SSH on %s cancelled: %w", addr, ctx.Err())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("SSH on %s@%s did not answer within %s (%d attempts): %v", ep.User, addr, r.cfg.SSHWaitTimeout, attempt, lastErr)
		}
		r.logger.Debug("SSH not ready yet", "address", addr, "attempt", attempt, "error", err.Error())
		t := time.NewTimer(r.cfg.SSHPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for SSH on %s cancelled: %w", addr, ctx.Err())
		case <-t.C:
		}
	}
}

// probe connects once and runs `true` in a session.
func probe(ctx context.Context, addr string, config *ssh.ClientConfig) error {
	dctx, cancel := context.WithTimeout(ctx, config.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	// Bound the handshake and the session by the same deadline.
	_ = conn.SetDeadline(time.Now().Add(2 * config.Timeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if err != nil {
		conn.Close()
		return err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := sess.Run("true"); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

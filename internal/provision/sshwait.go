package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hydragpu/terraform-provider-hydra/internal/cloudprovider"
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

// hostKeyCheck checks the host key a connection presents against the pinned one (any key when none is
// pinned) and remembers what it saw.
type hostKeyCheck struct {
	addr string
	want ssh.PublicKey

	mu       sync.Mutex
	seen     ssh.PublicKey
	mismatch *HostKeyMismatchError
}

func (c *hostKeyCheck) callback(_ string, _ net.Addr, key ssh.PublicKey) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = key
	if c.want != nil && !bytes.Equal(key.Marshal(), c.want.Marshal()) {
		c.mismatch = &HostKeyMismatchError{Address: c.addr, Pinned: ssh.FingerprintSHA256(c.want), Seen: ssh.FingerprintSHA256(key)}
		return c.mismatch
	}
	return nil
}

// result returns the last key seen and the mismatch, if there was one.
func (c *hostKeyCheck) result() (ssh.PublicKey, *HostKeyMismatchError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen, c.mismatch
}

// clientConfig returns the SSH client configuration logging in to ep with the provisioning key,
// checking the host key against pinned (an authorized_keys line; empty: trust on first use).
func (r *Runner) clientConfig(ep cloudprovider.SSHEndpoint, pinned string) (*ssh.ClientConfig, *hostKeyCheck, error) {
	signer, err := ssh.ParsePrivateKey(r.cfg.PrivateKey)
	if err != nil {
		return nil, nil, &cloudprovider.PermanentError{Err: errors.New("the SSH private key for provisioning could not be parsed")}
	}
	check := &hostKeyCheck{addr: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))}
	if pinned != "" {
		check.want, _, _, _, err = ssh.ParseAuthorizedKey([]byte(pinned))
		if err != nil {
			return nil, nil, &cloudprovider.PermanentError{Err: fmt.Errorf("the pinned host key of %s cannot be parsed: %w", check.addr, err)}
		}
	}
	algos := tofuAlgorithms
	if check.want != nil {
		algos = hostKeyAlgorithms(check.want.Type())
	}
	return &ssh.ClientConfig{
		User:              ep.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyAlgorithms: algos,
		Timeout:           10 * time.Second,
		HostKeyCallback:   check.callback,
	}, check, nil
}

// waitSSH polls until an SSH session runs on the machine, checking its host key against pinned (an
// authorized_keys line), or trusting and returning the first key seen when pinned is empty. A host key
// mismatch returns at once as a *cloudprovider.PermanentError.
func (r *Runner) waitSSH(ctx context.Context, ep cloudprovider.SSHEndpoint, pinned string) (ssh.PublicKey, error) {
	config, check, err := r.clientConfig(ep, pinned)
	if err != nil {
		return nil, err
	}
	addr := check.addr
	deadline := time.Now().Add(r.cfg.SSHWaitTimeout)
	var lastErr error
	for attempt := 1; ; attempt++ {
		err := probe(ctx, addr, config)
		key, mm := check.result()
		if mm != nil {
			return nil, &cloudprovider.PermanentError{Err: mm}
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
	return remoteRun(ctx, addr, config, "true", nil, nil)
}

// remoteRun connects once and runs command in a session, its output going to stdout and stderr (nil:
// discarded). The connection, handshake and session are bounded by 2*config.Timeout and by ctx. An
// exit status other than 0 is an *ssh.ExitError (wrapped).
func remoteRun(ctx context.Context, addr string, config *ssh.ClientConfig, command string, stdout, stderr io.Writer) error {
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
		_ = conn.Close() // the handshake already failed
		return err
	}
	client := ssh.NewClient(c, chans, reqs)
	defer func() { _ = client.Close() }() // the session's outcome is the result
	sess, err := client.NewSession()
	if err != nil {
		return err
	}
	defer func() { _ = sess.Close() }() // the session's outcome is the result
	sess.Stdout, sess.Stderr = stdout, stderr
	if err := sess.Run(command); err != nil {
		return fmt.Errorf("session: %w", err)
	}
	return nil
}

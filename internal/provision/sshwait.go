package provision

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
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

// route is how a machine is reached: its address, client configuration and host key check, and the
// jump host the connection goes through (nil: dialled directly).
type route struct {
	addr   string
	config *ssh.ClientConfig
	check  *hostKeyCheck
	jump   *route
}

// jumpEndpoint returns ep's jump host with the defaults Provision applies to a machine (port 22, the
// machine's user), checked; nil when ep has none.
func jumpEndpoint(ep cloudprovider.SSHEndpoint) (*cloudprovider.SSHEndpoint, error) {
	if ep.Jump == nil {
		return nil, nil
	}
	j := *ep.Jump
	j.Port, j.User = cmp.Or(j.Port, 22), cmp.Or(j.User, ep.User)
	if j.Jump != nil {
		return nil, errors.New("an SSH jump host reached through another jump host is not supported")
	}
	if err := validateEndpoint(j); err != nil {
		return nil, fmt.Errorf("jump host: %w", err)
	}
	j.HostKey = strings.TrimSpace(j.HostKey)
	return &j, nil
}

// route returns the way to ep: its client configuration checking the host key against pinned (an
// authorized_keys line; empty: trust on first use), and through ep.Jump when set, whose host key is
// checked against ep.Jump.HostKey the same way.
func (r *Runner) route(ep cloudprovider.SSHEndpoint, pinned string) (*route, error) {
	config, check, err := r.clientConfig(ep, pinned)
	if err != nil {
		return nil, err
	}
	rt := &route{addr: check.addr, config: config, check: check}
	j, err := jumpEndpoint(ep)
	if err != nil {
		return nil, &cloudprovider.PermanentError{Err: err}
	}
	if j != nil {
		jc, jcheck, err := r.clientConfig(*j, j.HostKey)
		if err != nil {
			return nil, err
		}
		rt.jump = &route{addr: jcheck.addr, config: jc, check: jcheck}
	}
	return rt, nil
}

// result returns the keys seen (the machine's, the jump host's) and the first host key mismatch on the
// way (the jump host's first).
func (rt *route) result() (key, jumpKey ssh.PublicKey, mismatch *HostKeyMismatchError) {
	if rt.jump != nil {
		var mm *HostKeyMismatchError
		jumpKey, mm = rt.jump.check.result()
		if mm != nil {
			return nil, jumpKey, mm
		}
	}
	key, mismatch = rt.check.result()
	return key, jumpKey, mismatch
}

// name is the machine's address, with its jump host's when it has one.
func (rt *route) name() string {
	if rt.jump != nil {
		return rt.addr + " (through " + rt.jump.addr + ")"
	}
	return rt.addr
}

// waitSSH polls until an SSH session runs on the machine, checking its host key against pinned (an
// authorized_keys line), or trusting and returning the first key seen when pinned is empty; with
// ep.Jump the session goes through the jump host, whose key is checked (or trusted) alike and
// returned as jumpKey. A host key mismatch returns at once as a *cloudprovider.PermanentError. A
// refused key is waited out like a silent sshd (a new machine's keys may not be installed yet); still
// refused at the end, it is a *cloudprovider.PermanentError naming the key to install (another wait
// in this attempt's retries would not install it).
func (r *Runner) waitSSH(ctx context.Context, ep cloudprovider.SSHEndpoint, pinned string) (key, jumpKey ssh.PublicKey, err error) {
	rt, err := r.route(ep, pinned)
	if err != nil {
		return nil, nil, err
	}
	addr := rt.name()
	deadline := time.Now().Add(r.cfg.SSHWaitTimeout)
	var lastErr error
	for attempt := 1; ; attempt++ {
		err := remoteRun(ctx, rt, "true", nil, nil)
		key, jumpKey, mm := rt.result()
		if mm != nil {
			return nil, nil, &cloudprovider.PermanentError{Err: mm}
		}
		if err == nil {
			return key, jumpKey, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("waiting for SSH on %s cancelled: %w", addr, ctx.Err())
		}
		if time.Now().After(deadline) {
			if keyRefused(lastErr) {
				// Short before the key: the error is kept to 1 KiB in state, and an RSA key is up to 750 bytes.
				return nil, nil, &cloudprovider.PermanentError{Err: fmt.Errorf("SSH on %s@%s refused hydra's provisioning key for %s "+
					"(%d attempts): the machine lacks it (made with provisioning off or outside hydra, or its keys changed). "+
					"Add this line to the authorized_keys of %s there, then apply again: %s",
					ep.User, addr, r.cfg.SSHWaitTimeout, attempt, ep.User, r.AuthorizedKey())}
			}
			return nil, nil, fmt.Errorf("SSH on %s@%s did not answer within %s (%d attempts): %v", ep.User, addr, r.cfg.SSHWaitTimeout, attempt, lastErr)
		}
		r.logger.Debug("SSH not ready yet", "address", addr, "attempt", attempt, "error", err.Error())
		t := time.NewTimer(r.cfg.SSHPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("waiting for SSH on %s cancelled: %w", addr, ctx.Err())
		case <-t.C:
		}
	}
}

// keyRefused reports whether err is sshd refusing every key offered (x/crypto/ssh says so only in its
// text).
func keyRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ssh: unable to authenticate")
}

// AuthorizedKey is the public half of the provisioning key as the authorized_keys line machines get.
func (r *Runner) AuthorizedKey() string {
	return r.publicKey + " hydra-provisioning"
}

// remoteRun connects once and runs command in a session, its output going to stdout and stderr (nil:
// discarded). With rt.jump it logs in to the jump host first and opens the machine's connection as a
// TCP forward from there ("direct-tcpip"). The connection, handshakes and session are bounded by
// 2*config.Timeout and by ctx. An exit status other than 0 is an *ssh.ExitError (wrapped).
func remoteRun(ctx context.Context, rt *route, command string, stdout, stderr io.Writer) error {
	first := rt
	if rt.jump != nil {
		first = rt.jump
	}
	dctx, cancel := context.WithTimeout(ctx, first.config.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", first.addr)
	if err != nil {
		return err
	}
	// Bound the handshakes and the session by the same deadline (a forwarded channel has no deadline
	// of its own: the jump host's TCP connection carries it).
	_ = conn.SetDeadline(time.Now().Add(2 * first.config.Timeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	c, chans, reqs, err := ssh.NewClientConn(conn, first.addr, first.config)
	if err != nil {
		_ = conn.Close() // the handshake already failed
		return err
	}
	firstClient := ssh.NewClient(c, chans, reqs)
	defer func() { _ = firstClient.Close() }() // the session's outcome is the result
	client := firstClient
	if rt.jump != nil {
		fwd, err := firstClient.DialContext(dctx, "tcp", rt.addr)
		if err != nil {
			return fmt.Errorf("through jump host %s: %w", first.addr, err)
		}
		tc, tchans, treqs, err := ssh.NewClientConn(fwd, rt.addr, rt.config)
		if err != nil {
			_ = fwd.Close()
			return err
		}
		client = ssh.NewClient(tc, tchans, treqs)
		defer func() { _ = client.Close() }() // the session's outcome is the result
	}
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

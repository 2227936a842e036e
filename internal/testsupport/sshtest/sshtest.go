// Package sshtest is how tests reach a machine over SSH: a fresh client key, and a login that accepts
// only the machine's pinned host key.
package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// NewKey makes a fresh ed25519 client key: its signer and its authorized_keys line (without a comment).
// It fails t when it cannot.
func NewKey(t testing.TB) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
}

// Login is a machine to log in to with a key, its host key pinned.
type Login struct {
	Addr   string     // host:port
	User   string     // the user logged in as
	Signer ssh.Signer // the client key
	// HostKey, in authorized_keys form, is the only host key accepted, and its algorithm the only one
	// asked for (so a server with several host keys shows this one). Pin ed25519 or ECDSA keys: an
	// ssh-rsa key would ask for SHA-1 signatures.
	HostKey string
	Timeout time.Duration // of the connection and the handshake
}

// Dial logs in.
func (l Login) Dial() (*ssh.Client, error) {
	pinned, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l.HostKey))
	if err != nil {
		return nil, fmt.Errorf("host key %q: %w", l.HostKey, err)
	}
	return ssh.Dial("tcp", l.Addr, &ssh.ClientConfig{
		User: l.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(l.Signer)}, Timeout: l.Timeout,
		HostKeyCallback: ssh.FixedHostKey(pinned), HostKeyAlgorithms: []string{pinned.Type()},
	})
}

// Run logs in, runs cmd as Output does (no stdin) and logs out.
func (l Login) Run(cmd string) (string, error) {
	c, err := l.Dial()
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }() // the command's outcome is the result
	return Output(c, cmd, nil)
}

// Output runs cmd in a new session of c with stdin (nil: none) and returns its standard output, also
// when cmd fails. A failed cmd's error is the session's (*ssh.ExitError when cmd exited non-zero),
// followed by ": " and cmd's standard error when it wrote any.
func Output(c *ssh.Client, cmd string, stdin []byte) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close() }() // after Run the session is closed already (Close answers io.EOF)
	var out, stderr bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = bytes.NewReader(stdin), &out, &stderr
	err = s.Run(cmd)
	if err != nil && stderr.Len() > 0 {
		err = fmt.Errorf("%w: %s", err, stderr.String())
	}
	return out.String(), err
}

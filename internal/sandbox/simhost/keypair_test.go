package simhost

import (
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestNewKeyPair(t *testing.T) {
	key, pub, err := NewKeyPair("test-comment")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatalf("the private key does not parse: %v", err)
	}
	if got := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))); got != pub || !strings.HasPrefix(pub, "ssh-ed25519 ") {
		t.Fatalf("authorized line %q, want the ed25519 public half of the private key %q", pub, got)
	}
	if _, other, _ := NewKeyPair("test-comment"); other == pub {
		t.Fatal("two key pairs are the same")
	}
}

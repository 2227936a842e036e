package realos

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// innerSSHPort is the port sshd listens on inside a container with a network of its own.
const innerSSHPort = 22

// innerPort is the port sshd listens on in the container's network namespace.
func (m *Machine) innerPort() int {
	if m.PrivateNetwork {
		return innerSSHPort
	}
	return m.Port
}

// forward accepts connections on 127.0.0.1:m.Port of the host and joins each to the container's sshd,
// dialled from inside the container's network namespace.
func (m *Machine) forward() error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(m.Port)))
	if err != nil {
		return fmt.Errorf("realos: forwarder for %s: %w", m.Name, err)
	}
	m.fwd = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go m.join(c)
		}
	}()
	return nil
}

func (m *Machine) join(c net.Conn) {
	defer func() { _ = c.Close() }()
	init := 0
	for deadline := time.Now().Add(30 * time.Second); init == 0 && time.Now().Before(deadline); {
		if init = containerInit(m.cmd.Process.Pid); init == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if init == 0 {
		return
	}
	inner, err := dialInNetns(fmt.Sprintf("/proc/%d/ns/net", init), net.JoinHostPort("127.0.0.1", strconv.Itoa(innerSSHPort)))
	if err != nil {
		return
	}
	defer func() { _ = inner.Close() }()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(inner, c); closeWrite(inner) }()
	go func() { defer wg.Done(); _, _ = io.Copy(c, inner); closeWrite(c) }()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
}

// dialInNetns dials addr from the network namespace at nsPath. The socket is made by a goroutine
// locked to its own OS thread that enters the namespace; the goroutine ends locked, so the Go runtime
// discards that thread and no other code ever runs in the namespace.
func dialInNetns(nsPath, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		f, err := os.Open(nsPath)
		if err != nil {
			ch <- result{nil, err}
			return
		}
		defer func() { _ = f.Close() }()
		if err := setns(f); err != nil {
			ch <- result{nil, fmt.Errorf("realos: entering %s: %w", nsPath, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

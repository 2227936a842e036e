package realos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// innerSSHPort is the port sshd listens on inside a container with a network of its own.
const innerSSHPort = 22

// forward accepts connections on a free loopback port of the host (m.Port once Boot has it) and
// joins each to the container's sshd, dialled from inside the container's network namespace.
func (m *Machine) forward() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
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
	ns, err := m.netns()
	if err != nil {
		return
	}
	inner, err := inNetns(ns, func() (net.Conn, error) {
		return net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(innerSSHPort)), 10*time.Second)
	})
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

// netns is the path of the container's network namespace (containerNetns), waiting up to 30 s for it.
func (m *Machine) netns() (string, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(30 * time.Second)
	for {
		if ns := containerNetns(m.pid()); ns != "" {
			return ns, nil
		}
		select {
		case <-m.exited:
			return "", fmt.Errorf("realos: the container %s exited", m.Name)
		case <-timeout:
			return "", fmt.Errorf("realos: the container %s has no init process in a network of its own", m.Name)
		case <-tick.C:
		}
	}
}

// containerNetns is the path of the network namespace of the container of systemd-nspawn (pid
// nspawn), "" until its init, nspawn's child, has PID and network namespaces other than nspawn's.
// nspawn's first child only prepares the container; the init it clones starts in a new PID namespace
// but in nspawn's (the host's) network, and unshares its own only later (systemd 252: after its
// mounts; milliseconds, longer on a loaded host): a socket made in that window would be the host's.
// An init only ever leaves nspawn's namespaces, so the path keeps naming the container's.
func containerNetns(nspawn int) string {
	init := containerInit(nspawn)
	if init <= 0 {
		return ""
	}
	for _, kind := range []string{"pid", "net"} {
		outer, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", nspawn, kind))
		if err != nil {
			return ""
		}
		if inner, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", init, kind)); err != nil || inner == outer {
			return ""
		}
	}
	return fmt.Sprintf("/proc/%d/ns/net", init)
}

// DialContext connects to addr inside the machine's network namespace (its own loopback, say): the
// machine's network is not the host's.
func (m *Machine) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ns, err := m.netns()
	if err != nil {
		return nil, err
	}
	return inNetns(ns, func() (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// HTTPClient is an HTTP client whose connections are made inside the machine's network namespace:
// http://127.0.0.1:9100/ is the machine's loopback.
func (m *Machine) HTTPClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: m.DialContext, DisableKeepAlives: true}}
}

// ListeningTCP lists the TCP sockets listening in the machine's network namespace (address and
// port), from the kernel's table of listening sockets (sock_diag). To sample often, use ListeningSampler.
func (m *Machine) ListeningTCP() ([]netip.AddrPort, error) {
	sample, stop, err := m.ListeningSampler()
	if err != nil {
		return nil, err
	}
	defer stop()
	return sample()
}

// ListeningSampler returns sample, which lists the TCP sockets listening in the machine's network
// namespace as ListeningTCP does, through one sock_diag socket made in that namespace: a sample
// enters no namespace and opens nothing (cheap enough to call every few milliseconds). sample is not
// safe for concurrent use; stop closes the socket.
func (m *Machine) ListeningSampler() (sample func() ([]netip.AddrPort, error), stop func(), err error) {
	ns, err := m.netns()
	if err != nil {
		return nil, nil, err
	}
	s, err := inNetns(ns, openSockDiag)
	if err != nil {
		return nil, nil, err
	}
	return s.listening, s.close, nil
}

// inNetns runs f (which makes a socket) in the network namespace at nsPath: on a goroutine locked to
// its OS thread, which enters the namespace, runs f and goes back to its own namespace before it is
// unlocked. A thread that cannot go back is never unlocked (the runtime discards it with the
// goroutine), so no other code ever runs in the namespace. A socket stays in the namespace it was made
// in. The thread is not discarded when all goes well: a child process started from it (systemd-nspawn,
// whose parent-death signal is its parent thread's) would be signalled.
func inNetns[T any](nsPath string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var zero T
		home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{zero, err}
			return
		}
		defer func() { _ = home.Close() }()
		nf, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{zero, err}
			return
		}
		defer func() { _ = nf.Close() }()
		if err := setns(nf); err != nil {
			ch <- result{zero, fmt.Errorf("realos: entering %s: %w", nsPath, err)}
			return // the thread stays locked: the runtime discards it
		}
		v, err := f()
		if setns(home) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

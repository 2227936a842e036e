//go:build linux

package realos

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockDiag is a sock_diag socket. A socket stays in the network namespace it was made in: one made
// inside a machine's namespace lists that namespace's sockets from any thread, with no namespace
// switch per listing.
type sockDiag struct {
	fd  int
	buf []byte
}

// openSockDiag makes a sock_diag socket in the calling thread's network namespace.
func openSockDiag() (*sockDiag, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	return &sockDiag{fd: fd, buf: make([]byte, 1<<16)}, nil
}

func (s *sockDiag) close() { _ = unix.Close(s.fd) }

// listeningTCP lists the listening TCP sockets (IPv4 and IPv6) of the calling thread's network
// namespace (openSockDiag, sockDiag.listening).
func listeningTCP() ([]netip.AddrPort, error) {
	s, err := openSockDiag()
	if err != nil {
		return nil, err
	}
	defer s.close()
	return s.listening()
}

// listening lists the listening TCP sockets (IPv4 and IPv6) of s's network namespace with a sock_diag
// dump restricted to the listening state: the kernel walks only its table of listening sockets, where
// reading /proc/net/tcp walks every connection's bucket of the host's (a few milliseconds of system
// time on this machine, too much to sample every 10 ms). Not safe for concurrent use.
func (s *sockDiag) listening() ([]netip.AddrPort, error) {
	fd, buf := s.fd, s.buf
	var out []netip.AddrPort
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		// nlmsghdr (16 bytes), then inet_diag_req_v2: family, protocol, ext, pad, states, and a zero
		// inet_diag_sockid (48 bytes).
		req := make([]byte, 16+56)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], 20) // SOCK_DIAG_BY_FAMILY
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
		req[16], req[17] = family, unix.IPPROTO_TCP
		binary.NativeEndian.PutUint32(req[20:], 1<<10) // TCP_LISTEN
		if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return nil, os.NewSyscallError("sendto", err)
		}
	recv:
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return nil, os.NewSyscallError("recvfrom", err)
			}
			msgs, err := syscall.ParseNetlinkMessage(buf[:n])
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case unix.NLMSG_DONE:
					break recv
				case unix.NLMSG_ERROR:
					return nil, fmt.Errorf("realos: sock_diag: error %d", int32(binary.NativeEndian.Uint32(m.Data)))
				}
				// inet_diag_msg: family, state, timer, retrans, then inet_diag_sockid: sport and dport
				// (big-endian), src and dst (16 bytes each).
				d := m.Data
				if len(d) < 4+48 {
					continue
				}
				port := binary.BigEndian.Uint16(d[4:])
				var addr netip.Addr
				if d[0] == unix.AF_INET {
					addr = netip.AddrFrom4([4]byte(d[8:12]))
				} else {
					addr = netip.AddrFrom16([16]byte(d[8:24])).Unmap()
				}
				out = append(out, netip.AddrPortFrom(addr, port))
			}
		}
	}
	return out, nil
}

package sockowner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The socket is found with the kernel's sock_diag interface (NETLINK_SOCK_DIAG, an exact
// inet_diag request): a hash lookup by the connection's four-tuple. Reading /proc/net/tcp
// instead walks every bucket of the kernel's socket hash tables, which costs milliseconds
// on a machine with much memory however few sockets exist (BenchmarkFindSocket: ms against
// tens of µs here); it stays as the fallback where netlink is refused or finds nothing.

const (
	inetDiagReqLen = 56 // struct inet_diag_req_v2
	inetDiagMsgLen = 72 // struct inet_diag_msg
	inodeOffset    = 68 // idiag_inode within inet_diag_msg
)

var seq atomic.Uint32

// diagInode asks the kernel for the TCP socket whose local address is local and remote
// address is remote. It returns 0 when there is none, or none a file refers to.
func diagInode(local, remote netip.AddrPort) (uint64, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	family := byte(unix.AF_INET)
	if !local.Addr().Is4() {
		family = unix.AF_INET6
	}
	msg := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
	s := seq.Add(1)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], s)
	req := msg[unix.NLMSG_HDRLEN:]
	req[0], req[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], 0xffffffff) // every state
	id := req[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	putAddr(id[4:20], local.Addr())
	putAddr(id[20:36], remote.Addr())
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return 0, err
		}
		for _, m := range msgs {
			if m.Header.Seq != s {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return 0, errors.New("short netlink error")
				}
				errno := -int32(binary.NativeEndian.Uint32(m.Data))
				if errno == 0 {
					continue
				}
				if unix.Errno(errno) == unix.ENOENT {
					return 0, nil
				}
				return 0, fmt.Errorf("sock_diag: %w", unix.Errno(errno))
			case unix.SOCK_DIAG_BY_FAMILY:
				if len(m.Data) < inetDiagMsgLen {
					return 0, errors.New("short inet_diag message")
				}
				return uint64(binary.NativeEndian.Uint32(m.Data[inodeOffset:])), nil
			case unix.NLMSG_DONE:
				return 0, nil
			}
		}
	}
}

func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		b := a.As4()
		copy(dst, b[:])
		return
	}
	b := a.As16()
	copy(dst, b[:])
}

// netlinkRefused is set once sock_diag failed for another reason than "no such socket":
// from then on the socket tables in /proc are read.
var netlinkRefused atomic.Bool

#!/usr/bin/env python3
# A point-to-point IP link between two network namespaces that holds every packet for a fixed time
# each way, as `tc qdisc ... netem delay` does, for kernels built without sch_netem. One TUN device
# in each namespace (opened after setns into it); a /32 route sends the peer's address through it,
# so traffic between the two addresses leaves the veth pair for this link while the process lives.
# Packets keep their order (one FIFO per direction, constant delay). Ends on SIGTERM/SIGINT; the
# TUN devices and their routes go with it.
# usage: delay_link.py NS_A ADDR_A NS_B ADDR_B DELAY_MS TAG
#   prints "ready" on stdout once both ends route through the link.
import collections, ctypes, fcntl, os, select, signal, struct, subprocess, sys, time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000
MTU = 65000  # large packets: fewer trips through this loop


def open_tun_in(namespace, name):
    libc = ctypes.CDLL(None, use_errno=True)
    with open(f"/var/run/netns/{namespace}") as ns_file:
        if libc.setns(ns_file.fileno(), CLONE_NEWNET) != 0:
            sys.exit(f"delay_link: setns into {namespace}: {os.strerror(ctypes.get_errno())}")
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)  # the device lives in this namespace
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def ip(namespace, *args):
    subprocess.run(["ip", "-n", namespace, *args], check=True)


def main():
    ns_a, addr_a, ns_b, addr_b, delay_ms, tag = sys.argv[1:7]
    delay_s = float(delay_ms) / 1000
    names = (f"{tag}ta", f"{tag}tb")
    with open("/proc/self/ns/net") as home:
        home_fd = os.dup(home.fileno())
    fd_a = open_tun_in(ns_a, names[0])
    fd_b = open_tun_in(ns_b, names[1])
    ctypes.CDLL(None).setns(home_fd, CLONE_NEWNET)
    for ns, name, peer, own in ((ns_a, names[0], addr_b, addr_a), (ns_b, names[1], addr_a, addr_b)):
        ip(ns, "link", "set", name, "mtu", str(MTU), "up")
        ip(ns, "route", "add", f"{peer}/32", "dev", name, "src", own)
    print("ready", flush=True)

    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    # queue per direction: (due time, packet); what fd_a reads goes out on fd_b and back
    queues = {fd_a: collections.deque(), fd_b: collections.deque()}
    out_of = {fd_a: fd_b, fd_b: fd_a}
    while running[0]:
        now = time.monotonic()
        for src, queue in queues.items():
            while queue and queue[0][0] <= now:
                try:
                    os.write(out_of[src], queue.popleft()[1])
                except BlockingIOError:
                    break
        due = [q[0][0] for q in queues.values() if q]
        timeout = max(0.0, min(due) - time.monotonic()) if due else 0.5
        try:
            readable, _, _ = select.select([fd_a, fd_b], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in readable:
            while True:
                try:
                    packet = os.read(fd, MTU + 64)
                except BlockingIOError:
                    break
                queues[fd].append((now + delay_s, packet))


if __name__ == "__main__":
    main()

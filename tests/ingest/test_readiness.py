"""The readiness helpers the real-peer fixtures rely on: a process's own sockets, load-scaled deadlines."""

import os
import socket
import subprocess
import sys

from servers.readiness import listening_ports, load_factor, load_scaled_s, poll_until


def test_listening_ports_are_the_sockets_of_that_process():
    with socket.socket() as tcp, socket.socket(type=socket.SOCK_DGRAM) as udp, socket.socket() as bound_only:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        bound_only.bind(("127.0.0.1", 0))  # bound, not listening: no server answers there
        tcp_port, udp_port, bound_port = (s.getsockname()[1] for s in (tcp, udp, bound_only))
        mine = listening_ports(os.getpid())
        assert tcp_port in mine and bound_port not in mine
        assert udp_port in listening_ports(os.getpid(), "udp")
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # inherits no socket
        try:
            assert tcp_port not in listening_ports(child.pid)  # another process's socket is not its own
        finally:
            child.kill()
            child.wait()
        assert listening_ports(child.pid) == set()  # an exited process listens nowhere
    assert tcp_port not in listening_ports(os.getpid())


def test_deadlines_grow_with_load_and_polling_returns_the_first_true_value():
    assert 1.0 <= load_factor() <= 10.0
    assert 2.0 <= load_scaled_s(2.0) <= 20.0
    calls = iter([0, "", "ready", "later"])
    assert poll_until(lambda: next(calls), 5.0, interval_s=0.0) == "ready"
    assert poll_until(lambda: None, 0.01, interval_s=0.0) is None

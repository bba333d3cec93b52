"""The session's way out, made inside the sandbox: a listening socket Cadre's proxy serves.

Run by bubblewrap as the sandbox's first program, in the sandbox's own network
(a loopback and nothing else): `python3 -I -S net_bridge.py <channel fd> <port>
-- <program> [args...]`. It listens on 127.0.0.1:<port> there, hands the
listening socket to Cadre through the channel (a Unix socket Cadre holds the
other end of), closes its own copies of both, and becomes the session's
program. Cadre accepts each connection a command makes to that port and
checks it (helpers/checking_proxy.py); nothing else of this machine, Cadre's
own server included, can be reached from in here.

Any python3 the sandbox shows will do: the standard library only, no newer
than Python 3.7 (`socket(fileno=...)` telling the family itself).
"""

import array
import os
import socket
import sys


def main(argv):
    channel_fd, port = int(argv[1]), int(argv[2])
    program = argv[argv.index("--") + 1 :]
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", port))
    listening.listen(128)
    channel = socket.socket(fileno=channel_fd)
    fds = array.array("i", [listening.fileno()])
    channel.sendmsg([b"listening"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    channel.close()
    listening.close()
    os.execvp(program[0], program)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (OSError, ValueError, IndexError) as exc:
        sys.stderr.write(f"the sandbox's network could not be made: {exc}\n")
        sys.exit(125)

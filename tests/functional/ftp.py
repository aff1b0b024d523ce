"""Just enough active-mode FTP to need a conntrack helper through NAT.

The client tells the server where to connect for the data (``PORT``, its
own address and a port it listens on); the server connects there and sends
the file. Behind a router's SNAT that address is private: only an ``ftp``
helper on the router rewrites it (to the gateway's address) and expects the
server's connection, which it then forwards to the client.

``python -m tests.functional.ftp serve PORT`` runs the server (each ``RETR``
sends ``DATA``); ``python -m tests.functional.ftp fetch ADDRESS PORT`` prints
what one ``RETR`` brought, or the server's refusal (``425 ...``).
"""

from __future__ import annotations

import socket
import sys
import threading

DATA = "through the helper"


def _lines(conn: socket.socket):
    buffered = b""
    while True:
        while b"\r\n" not in buffered:
            chunk = conn.recv(1024)
            if not chunk:
                return
            buffered += chunk
        line, buffered = buffered.split(b"\r\n", 1)
        yield line.decode()


def _session(conn: socket.socket) -> None:
    with conn:
        conn.sendall(b"220 ready\r\n")
        target = None
        for line in _lines(conn):
            verb, _, arg = line.partition(" ")
            if verb == "USER":
                conn.sendall(b"230 logged in\r\n")
            elif verb == "PORT":
                numbers = arg.split(",")
                target = (".".join(numbers[:4]), int(numbers[4]) * 256 + int(numbers[5]))
                conn.sendall(b"200 PORT ok\r\n")
            elif verb == "RETR" and target is not None:
                conn.sendall(b"150 opening data connection\r\n")
                try:
                    with socket.create_connection(target, timeout=3) as data:
                        data.sendall(DATA.encode())
                except OSError as error:
                    conn.sendall(f"425 no data connection to {target}: {error}\r\n".encode())
                else:
                    conn.sendall(b"226 sent\r\n")
            elif verb == "QUIT":
                conn.sendall(b"221 bye\r\n")
                return
            else:
                conn.sendall(b"502 not here\r\n")


def serve(port: int) -> None:
    with socket.create_server(("0.0.0.0", port), reuse_port=True) as server:
        while True:
            conn, _ = server.accept()
            threading.Thread(target=_session, args=(conn,), daemon=True).start()


def fetch(address: str, port: int) -> str:
    """The file, or the server's last answer."""
    with socket.create_connection((address, port), timeout=5) as control:
        lines = _lines(control)
        next(lines)  # 220
        # the kernel's helper reads a command only after a line it has seen end
        control.sendall(b"USER anonymous\r\n")
        next(lines)  # 230
        mine = control.getsockname()[0]
        with socket.create_server((mine, 0)) as listener:
            listener.settimeout(5)
            data_port = listener.getsockname()[1]
            numbers = ",".join([*mine.split("."), str(data_port // 256), str(data_port % 256)])
            control.sendall(f"PORT {numbers}\r\n".encode())
            next(lines)  # 200
            control.sendall(b"RETR file\r\n")
            next(lines)  # 150
            answer = next(lines)
            if not answer.startswith("226"):
                return answer
            conn, _ = listener.accept()
            with conn:
                got = b""
                while chunk := conn.recv(1024):
                    got += chunk
        control.sendall(b"QUIT\r\n")
        return got.decode()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        print(fetch(sys.argv[2], int(sys.argv[3])))

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""rexec: the rig's remote-exec agent, an ssh stand-in for MPI launchers.

Inside rig guests only (vms.sh --rexec starts the daemon in every guest).

  rexec.py --serve [--bind ADDR] [--port PORT]      the daemon
  rexec.py [SSH-OPTIONS] HOST COMMAND [ARGS...]      the client, called as ssh

The client is what Open MPI's plm_rsh_agent and MPICH hydra's
-launcher-exec expect: like ssh, it joins COMMAND and ARGS with spaces and
has the daemon on HOST run the string with /bin/sh -c in $HOME, relays its
stdin, stdout and stderr, and exits with its status (128 + N if it was
killed by signal N; 255 if the connection failed).  ssh options are accepted
and ignored, except -n (stdin from /dev/null) and -p PORT.  When the client
goes away (killed, or its connection drops), the daemon sends SIGTERM to the
command's process group, SIGKILL 2 s later.

Only inside the guests' private network: the daemon listens on one address
(default: the guest's GUEST_IP) and drops connections from outside NET; the
client connects only to addresses in NET (COLL_REXEC_NET, default
10.77.0.0/24).  Both prove knowledge of a shared key (COLL_REXEC_KEY, 32+
hex digits, which vms.sh --rexec draws at random for each boot) with
HMAC-SHA256 over fresh nonces and the request; the key never crosses the
wire.  The stream after that is neither encrypted nor authenticated: this is
a tool for the rig's private network, not a replacement for ssh.  Port:
COLL_REXEC_PORT or 7792.

Wire (big-endian): server "CREX1" + 16-byte nonce; client 16-byte nonce,
32-byte MAC(key, "rexec client" | both nonces | request), 4-byte length,
JSON request {"cmd": STRING, "stdin": BOOL}; server 32-byte MAC(key, "rexec
server" | both nonces).  Then frames: 1-byte type, 4-byte length, payload.
Client to server: "i" stdin bytes (length 0: end of input).  Server to
client: "o" stdout, "e" stderr, "x" exit (payload: 4-byte signed status).
"""

import hashlib
import hmac
import ipaddress
import json
import os
import selectors
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import time

MAGIC = b"CREX1"
DEFAULT_PORT = 7792
DEFAULT_NET = "10.77.0.0/24"
# ssh options that take an argument (OpenSSH 9).
SSH_ARG_OPTS = set("BbcDEeFIiJLlmOoPpQRSWw")


def die(msg, code=255):
    sys.stderr.write("rexec: %s\n" % msg)
    sys.exit(code)


def get_key():
    k = os.environ.get("COLL_REXEC_KEY", "")
    try:
        key = bytes.fromhex(k)
    except ValueError:
        key = b""
    if len(key) < 16:
        die("COLL_REXEC_KEY must hold at least 32 hex digits")
    return key


def get_net():
    try:
        return ipaddress.ip_network(os.environ.get("COLL_REXEC_NET", DEFAULT_NET))
    except ValueError as e:
        die("bad COLL_REXEC_NET: %s" % e)


def mac(key, label, *parts):
    h = hmac.new(key, label, hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.digest()


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def send_frame(sock, kind, data=b""):
    sock.sendall(kind + struct.pack(">I", len(data)) + data)


class FrameReader:
    """Incremental parser of (type, payload) frames from a socket."""

    def __init__(self):
        self.buf = b""

    def feed(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 5:
            (n,) = struct.unpack(">I", self.buf[1:5])
            if len(self.buf) < 5 + n:
                break
            out.append((self.buf[:1], self.buf[5:5 + n]))
            self.buf = self.buf[5 + n:]
        return out


# --------------------------------------------------------------------------
# Daemon

class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        peer = ipaddress.ip_address(self.client_address[0])
        if peer not in self.server.net:
            return
        sock.settimeout(10)
        snonce = os.urandom(16)
        try:
            sock.sendall(MAGIC + snonce)
            cnonce = recv_exact(sock, 16)
            cmac = recv_exact(sock, 32)
            (n,) = struct.unpack(">I", recv_exact(sock, 4))
            if n > 1 << 20:
                return
            req = recv_exact(sock, n)
            if not hmac.compare_digest(cmac, mac(self.server.key, b"rexec client",
                                                 snonce, cnonce, req)):
                log("%s: bad key" % peer)
                return
            sock.sendall(mac(self.server.key, b"rexec server", snonce, cnonce))
            req = json.loads(req)
            cmd = str(req["cmd"])
        except (OSError, EOFError, ValueError, KeyError, TypeError):
            return
        sock.settimeout(None)
        log("%s: %s" % (peer, cmd[:200]))
        self.run(sock, cmd, bool(req.get("stdin", True)))

    def run(self, sock, cmd, want_stdin):
        home = os.environ.get("HOME", "/")
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=home if os.path.isdir(home) else "/",
                                    stdin=subprocess.PIPE if want_stdin else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as e:
            send_frame(sock, b"e", ("rexec: %s\n" % e).encode())
            send_frame(sock, b"x", struct.pack(">i", 127))
            return
        sel = selectors.DefaultSelector()
        outs = {proc.stdout.fileno(): b"o", proc.stderr.fileno(): b"e"}
        for fd in outs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        sel.register(sock, selectors.EVENT_READ)
        stdin = proc.stdin
        reader = FrameReader()
        exited_at = None
        client_gone = False
        try:
            while True:
                if exited_at is None and proc.poll() is not None:
                    exited_at = time.monotonic()
                # Done when the command exited and its pipes closed; a child
                # that outlives it may hold them: stop waiting 2 s later.
                if exited_at is not None and (not outs or time.monotonic() - exited_at > 2):
                    break
                for key, _ in sel.select(0.2 if outs else 0.02):
                    if key.fileobj is sock:
                        data = sock.recv(65536)
                        if not data:
                            raise EOFError
                        for kind, payload in reader.feed(data):
                            if kind == b"i" and stdin is not None:
                                stdin = feed_stdin(stdin, payload)
                        continue
                    data = os.read(key.fd, 65536)
                    if data:
                        send_frame(sock, outs[key.fd], data)
                    else:
                        sel.unregister(key.fd)
                        del outs[key.fd]
            status = proc.wait()
            status = 128 - status if status < 0 else status
            send_frame(sock, b"x", struct.pack(">i", status))
        except (OSError, EOFError):
            client_gone = True
        finally:
            if client_gone or proc.poll() is None:
                kill_group(proc)
            sel.close()
            for f in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if f:
                        f.close()
                except OSError:
                    pass


def feed_stdin(stdin, data):
    """Write @data to the command's stdin (close it on b""); None once closed."""
    try:
        if data:
            stdin.write(data)
            stdin.flush()
            return stdin
        stdin.close()
    except OSError:
        pass
    return None


def kill_group(proc):
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


_log = None


def log(msg):
    if _log:
        _log.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
        _log.flush()


def serve(argv):
    global _log
    bind = os.environ.get("GUEST_IP", "")
    port = int(os.environ.get("COLL_REXEC_PORT", DEFAULT_PORT))
    logfile = None
    i = 0
    while i < len(argv):
        if argv[i] == "--bind" and i + 1 < len(argv):
            bind = argv[i + 1]
            i += 2
        elif argv[i] == "--port" and i + 1 < len(argv):
            port = int(argv[i + 1])
            i += 2
        elif argv[i] == "--log" and i + 1 < len(argv):
            logfile = argv[i + 1]
            i += 2
        else:
            die("usage: rexec.py --serve [--bind ADDR] [--port PORT] [--log FILE]", 2)
    net = get_net()
    if not bind or ipaddress.ip_address(bind) not in net:
        die("--bind (or GUEST_IP) must be an address in %s, got '%s'" % (net, bind), 2)
    _log = open(logfile, "a", encoding="utf-8") if logfile else sys.stderr
    srv = Server((bind, port), Handler)
    srv.key = get_key()
    srv.net = net
    log("listening on %s:%d" % (bind, port))
    srv.serve_forever()


# --------------------------------------------------------------------------
# Client

def client(argv):
    port = int(os.environ.get("COLL_REXEC_PORT", DEFAULT_PORT))
    want_stdin = True
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        opt = argv[i]
        i += 1
        j = 1
        while j < len(opt):
            c = opt[j]
            if c in SSH_ARG_OPTS:
                val = opt[j + 1:]
                if not val:
                    if i >= len(argv):
                        die("option -%s needs an argument" % c)
                    val = argv[i]
                    i += 1
                if c == "p":
                    port = int(val)
                break
            if c == "n":
                want_stdin = False
            j += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    if len(argv) - i < 2:
        die("usage: rexec.py [SSH-OPTIONS] HOST COMMAND [ARGS...]", 255)
    host = argv[i].rsplit("@", 1)[-1]
    cmd = " ".join(argv[i + 1:])
    net = get_net()
    key = get_key()
    try:
        addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
    except OSError as e:
        die("%s: %s" % (host, e))
    if ipaddress.ip_address(addr[0]) not in net:
        die("%s (%s) is outside %s" % (host, addr[0], net))
    sock = None
    for attempt in range(20):
        try:
            sock = socket.create_connection(addr, timeout=10)
            break
        except OSError as e:
            if attempt == 19:
                die("%s: %s" % (host, e))
            time.sleep(0.5)
    try:
        hdr = recv_exact(sock, len(MAGIC) + 16)
        if hdr[:len(MAGIC)] != MAGIC:
            die("%s: not a rexec daemon" % host)
        snonce, cnonce = hdr[len(MAGIC):], os.urandom(16)
        req = json.dumps({"cmd": cmd, "stdin": want_stdin}).encode()
        sock.sendall(cnonce + mac(key, b"rexec client", snonce, cnonce, req) +
                     struct.pack(">I", len(req)) + req)
        smac = recv_exact(sock, 32)
    except (OSError, EOFError) as e:
        die("%s: %s (wrong key?)" % (host, e))
    if not hmac.compare_digest(smac, mac(key, b"rexec server", snonce, cnonce)):
        die("%s: the daemon does not know the key" % host)
    sock.settimeout(None)
    sys.exit(relay(sock, want_stdin))


def relay(sock, want_stdin):
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    if want_stdin:
        try:
            sel.register(0, selectors.EVENT_READ)
        except (OSError, ValueError):
            # Not pollable (a regular file, /dev/null) or closed: send it all.
            try:
                while True:
                    data = os.read(0, 65536)
                    if not data:
                        break
                    send_frame(sock, b"i", data)
            except OSError:
                pass
            send_frame(sock, b"i")
    else:
        send_frame(sock, b"i")
    reader = FrameReader()
    fds = {b"o": 1, b"e": 2}
    while True:
        for key, _ in sel.select():
            if key.fileobj is sock:
                data = sock.recv(65536)
                if not data:
                    sys.stderr.write("rexec: connection lost\n")
                    return 255
                for kind, payload in reader.feed(data):
                    if kind == b"x":
                        return struct.unpack(">i", payload)[0] & 255
                    if kind in fds:
                        write_all(fds[kind], payload)
            else:
                data = os.read(0, 65536)
                if not data:
                    sel.unregister(0)
                send_frame(sock, b"i", data)


def write_all(fd, data):
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass    # our reader went away; keep relaying the exit status


def main():
    # Python ignores SIGPIPE (EPIPE raises instead); the commands the daemon
    # starts get the default back (subprocess restore_signals).
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2:])
    else:
        client(sys.argv[1:])


if __name__ == "__main__":
    main()

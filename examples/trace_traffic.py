#!/usr/bin/env python3
"""Loopback traffic for examples/record_trace.sh (see examples/CAPTURE.md).

Roles (argv[1]):
  udp-server HOST PORT SECONDS   DNS-like UDP responder on HOST (127.0.0.1 or ::1)
  http-client NAME HOST PORT SECONDS SEED
                                 HTTP/1.x requests with explicit Host headers
  udp-client HOST PORT SECONDS SEED
                                 DNS-like UDP queries

Every role stops by itself after SECONDS; request counts and sizes are bounded
so the capture stays small.  Only loopback addresses are ever used.
"""
import http.client
import random
import socket
import struct
import sys
import time

LOOPBACK = {"127.0.0.1", "::1"}

HOSTS = [
    ("Host", "www.example.com"),
    ("Host", "api.test.local"),
    ("host", "lower.example.org"),           # lower-case header name
    ("HOST", "shout.example.net:8765"),       # upper-case, with port
    ("Host", "cdn-3.static.example.com"),
    ("hOsT", "mixed.case.test"),
]
PATHS = ["/index.html", "/a.txt", "/data/b.json", "/missing", "/"]


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def udp_server(host, port, seconds):
    assert host in LOOPBACK
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    end = time.time() + seconds
    while True:
        left = end - time.time()
        if left <= 0:
            break
        s.settimeout(min(left, 1.0))
        try:
            data, peer = s.recvfrom(2048)
        except socket.timeout:
            continue
        if len(data) < 12:
            continue
        # answer: same id, QR bit set, one A record 127.0.0.<id%250+1>
        qid = data[:2]
        flags = struct.pack("!H", 0x8180)
        counts = struct.pack("!HHHH", 1, 1, 0, 0)
        question = data[12:]
        answer = struct.pack("!HHHLH", 0xC00C, 1, 1, 60, 4) + bytes(
            [127, 0, 0, data[1] % 250 + 1])
        s.sendto(qid + flags + counts + question + answer, peer)
    s.close()


def dns_query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


def udp_client(host, port, seconds, seed):
    assert host in LOOPBACK
    rnd = random.Random(seed)
    s = socket.socket(family(host), socket.SOCK_DGRAM)
    s.settimeout(1.0)
    end = time.time() + seconds
    qid = seed * 1000
    while time.time() < end:
        qid = (qid + 1) & 0xFFFF
        name = rnd.choice(HOSTS)[1].split(":")[0]
        s.sendto(dns_query(qid, name), (host, port))
        try:
            s.recvfrom(2048)
        except socket.timeout:
            pass
        time.sleep(min(rnd.uniform(0.8, 2.5), max(0.0, end - time.time())))
    s.close()


def http_client(name, host, port, seconds, seed):
    assert host in LOOPBACK
    rnd = random.Random(seed)
    end = time.time() + seconds
    n = 0
    while time.time() < end and n < 40:
        # one connection with 1-3 requests (the server speaks HTTP/1.0 or 1.1)
        try:
            conn = http.client.HTTPConnection(host, port, timeout=5)
            for _ in range(rnd.randint(1, 3)):
                hname, hval = rnd.choice(HOSTS)
                path = rnd.choice(PATHS)
                method = "GET" if rnd.random() < 0.8 else rnd.choice(["HEAD", "POST"])
                conn.putrequest(method, path, skip_host=True,
                                skip_accept_encoding=True)
                conn.putheader(hname, hval)
                conn.putheader("User-Agent", "gsqlc-trace/" + name)
                body = None
                if method == "POST":
                    body = b"q=" + str(n).encode()
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body)
                r = conn.getresponse()
                r.read()
                n += 1
                if r.getheader("Connection", "").lower() == "close" or r.version == 10:
                    break
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            print(f"{name}: {e}", file=sys.stderr)
        time.sleep(min(rnd.uniform(1.5, 5.0), max(0.0, end - time.time())))
    print(f"{name}: {n} requests", file=sys.stderr)


def main(argv):
    role = argv[1]
    if role == "udp-server":
        udp_server(argv[2], int(argv[3]), float(argv[4]))
    elif role == "udp-client":
        udp_client(argv[2], int(argv[3]), float(argv[4]), int(argv[5]))
    elif role == "http-client":
        http_client(argv[2], argv[3], int(argv[4]), float(argv[5]), int(argv[6]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

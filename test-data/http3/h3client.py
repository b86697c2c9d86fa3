#!/usr/bin/env python3
"""An HTTP/3 client for server/tests/http3.rs, over aioquic (a real QUIC and HTTP/3 stack
from PyPI), driven like a browser: one connection, many request streams at once.

    h3client.py HOST PORT CA_PEM COMMAND [ARGS...]

Prints one JSON document on stdout. Commands:

    requests JSON   a list of requests sent at once on one connection, each
                    {"method", "path", "headers": [[k, v]], "body_bytes": N,
                     "body_seed": S}; for each: status, headers, 1xx heads (with the
                    time they arrived), body length, sha256, the body if short, the time
                    of the final head and of each body chunk, and the stream's error if
                    it was reset.
    attack NAME     bad input on one connection, then reports what the server did:
                    data-before-headers, bad-qpack, huge-headers, stream-flood,
                    unknown-frame-on-control.
    burst N         N connections opened at once, each doing one GET; how many got 200.
    idle SECONDS    one GET, then an idle wait: whether and how the server closed the
                    connection meanwhile.
    load N PATH C   N GETs of PATH on one connection, C streams at a time: how many got
                    200, the bytes of their bodies, the wall time (a benchmark's client).
"""

import asyncio
import hashlib
import json
import os
import ssl
import sys
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamReset


class H3(H3Connection):
    """aioquic's HTTP/3, except that a HEAD response's Content-Length (the length a GET
    would get, RFC 9110 §8.6) is not held against its empty body."""

    def __init__(self, quic):
        super().__init__(quic)
        self.head_streams = set()

    def _check_content_length(self, stream):
        if stream.stream_id not in self.head_streams:
            super()._check_content_length(stream)


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3(self._quic)
        self.streams = {}
        self.terminated = None
        self.started = time.monotonic()

    def stream(self, stream_id):
        return self.streams.setdefault(
            stream_id,
            {
                "heads": [],
                "body": bytearray(),
                "chunks": [],
                "ended": False,
                "reset": None,
                "event": asyncio.Event(),
            },
        )

    def quic_event_received(self, event):
        now = time.monotonic() - self.started
        if isinstance(event, ConnectionTerminated):
            self.terminated = {
                "error_code": event.error_code,
                "reason": event.reason_phrase,
            }
            for s in self.streams.values():
                s["event"].set()
        if isinstance(event, StreamReset):
            s = self.stream(event.stream_id)
            s["reset"] = event.error_code
            s["event"].set()
        try:
            h3_events = self.http.handle_event(event)
        except Exception as e:  # the server broke HTTP/3 (a test failure to report)
            self.terminated = {"client_error": repr(e)}
            h3_events = []
        for ev in h3_events:
            if isinstance(ev, HeadersReceived):
                s = self.stream(ev.stream_id)
                s["heads"].append((ev.headers, now))
                if ev.stream_ended:
                    s["ended"] = True
                    s["event"].set()
            elif isinstance(ev, DataReceived):
                s = self.stream(ev.stream_id)
                if ev.data:
                    s["body"] += ev.data
                    s["chunks"].append((len(ev.data), now))
                if ev.stream_ended:
                    s["ended"] = True
                    s["event"].set()


def body_bytes(n, seed):
    """n deterministic bytes (what the Rust side hashes too)."""
    block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
    out = bytearray()
    while len(out) < n:
        out += block
    return bytes(out[:n])


def configuration(ca):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(ca)
    # The name the certificate must carry (SNI and verification): H3_SERVER_NAME, else
    # the test certificate's localhost.
    config.server_name = os.environ.get("H3_SERVER_NAME", "localhost")
    # Room for large uploads and downloads without stalling on flow control.
    config.max_data = 64 << 20
    config.max_stream_data = 16 << 20
    config.idle_timeout = 30.0
    return config


def report(client, stream_id, started):
    s = client.stream(stream_id)
    heads = [
        {
            "status": int(dict(h).get(b":status", b"0")),
            "headers": [[k.decode(), v.decode()] for k, v in h if not k.startswith(b":")],
            "at": round(t - started, 4),
        }
        for h, t in s["heads"]
    ]
    final = [h for h in heads if h["status"] >= 200]
    body = bytes(s["body"])
    return {
        "status": final[0]["status"] if final else None,
        "headers": final[0]["headers"] if final else [],
        "head_at": final[0]["at"] if final else None,
        "informational": [h for h in heads if 100 <= h["status"] < 200],
        "body_len": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
        "body": body.decode("utf-8", "replace") if len(body) <= 4096 else None,
        "chunks": [[n, round(t - started, 4)] for n, t in s["chunks"]],
        "ended": s["ended"],
        "reset": s["reset"],
    }


async def send_request(client, host, port, req):
    quic = client._quic
    stream_id = quic.get_next_available_stream_id()
    method = req.get("method", "GET")
    body = body_bytes(req.get("body_bytes", 0), req.get("body_seed", 0))
    headers = [
        (b":method", method.encode()),
        (b":scheme", b"https"),
        (b":authority", f"localhost:{port}".encode()),
        (b":path", req["path"].encode()),
        (b"user-agent", b"aioquic-test"),
    ]
    for k, v in req.get("headers", []):
        headers.append((k.lower().encode(), v.encode()))
    if body:
        headers.append((b"content-length", str(len(body)).encode()))
    started = time.monotonic() - client.started
    if method == "HEAD":
        client.http.head_streams.add(stream_id)
    client.http.send_headers(stream_id, headers, end_stream=not body)
    client.transmit()
    # For a test that acts once the request is on its way (a shutdown under way).
    print(f"sent {req['path']}", file=sys.stderr, flush=True)
    # The body in 64 KiB pieces, letting the event loop send in between.
    send_stopped = None
    for i in range(0, len(body), 1 << 16):
        piece = body[i : i + (1 << 16)]
        try:
            client.http.send_data(stream_id, piece, end_stream=i + len(piece) >= len(body))
        except Exception as e:
            # The server answered early and stopped reading (STOP_SENDING): as a browser
            # does, stop sending and read the answer.
            send_stopped = repr(e)
            break
        client.transmit()
        await asyncio.sleep(0)
    s = client.stream(stream_id)
    await asyncio.wait_for(s["event"].wait(), timeout=60)
    out = report(client, stream_id, started)
    out["sent_sha256"] = hashlib.sha256(body).hexdigest()
    out["send_stopped"] = send_stopped
    return out


async def run_requests(host, port, ca, reqs):
    async with connect(host, port, configuration=configuration(ca), create_protocol=Client) as client:
        results = await asyncio.gather(
            *(send_request(client, host, port, r) for r in reqs), return_exceptions=True
        )
        return {
            "results": [r if isinstance(r, dict) else {"error": repr(r)} for r in results],
            "terminated": client.terminated,
        }


def raw_frame(frame_type, payload):
    return encode_uint_var(frame_type) + encode_uint_var(len(payload)) + payload


async def attack(host, port, ca, name):
    """Bad input on one connection; reports how the server answered it."""
    async with connect(host, port, configuration=configuration(ca), create_protocol=Client) as client:
        quic = client._quic
        # Make sure the HTTP/3 set-up (control streams, SETTINGS) is done first.
        await asyncio.sleep(0.2)
        result = {}
        if name == "data-before-headers":
            sid = quic.get_next_available_stream_id()
            quic.send_stream_data(sid, raw_frame(0x0, b"hello"), end_stream=True)
        elif name == "bad-qpack":
            sid = quic.get_next_available_stream_id()
            quic.send_stream_data(sid, raw_frame(0x1, b"\xff\xff\xff\xff\xff\xff"), end_stream=True)
        elif name == "huge-headers":
            # A 200 KiB header block: over --max-header-size (64 KiB by default).
            sid = quic.get_next_available_stream_id()
            headers = [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", f"localhost:{port}".encode()),
                (b":path", b"/app.php?do=server"),
            ] + [(f"x-big-{i}".encode(), b"v" * 1000) for i in range(200)]
            client.http.send_headers(sid, headers, end_stream=True)
            client.transmit()
            s = client.stream(sid)
            try:
                await asyncio.wait_for(s["event"].wait(), timeout=10)
            except asyncio.TimeoutError:
                pass
            result["stream"] = report(client, sid, 0)
        elif name == "stream-flood":
            # Ignore the server's stream limit (as a hostile client would) and open 400
            # request streams at once.
            quic._remote_max_streams_bidi = 1 << 20
            for _ in range(400):
                sid = quic.get_next_available_stream_id()
                client.http.send_headers(
                    sid,
                    [
                        (b":method", b"GET"),
                        (b":scheme", b"https"),
                        (b":authority", f"localhost:{port}".encode()),
                        (b":path", b"/app.php?do=server"),
                    ],
                    end_stream=True,
                )
        elif name == "unknown-frame-on-control":
            # A DATA frame on the control stream is a connection error (RFC 9114 §7.2.1).
            control = client.http._local_control_stream_id
            quic.send_stream_data(control, raw_frame(0x0, b"nope"))
        else:
            raise SystemExit(f"unknown attack {name}")
        client.transmit()
        for _ in range(50):
            if client.terminated:
                break
            await asyncio.sleep(0.1)
        result["terminated"] = client.terminated
        return result


async def idle(host, port, ca, seconds):
    async with connect(host, port, configuration=configuration(ca), create_protocol=Client) as client:
        first = await send_request(client, host, port, {"path": "/app.php?do=server"})
        waited = 0.0
        while waited < seconds and not client.terminated:
            await asyncio.sleep(0.1)
            waited += 0.1
        return {"status": first["status"], "terminated": client.terminated, "after": round(waited, 1)}


async def load(host, port, ca, n, path, concurrency):
    async with connect(host, port, configuration=configuration(ca), create_protocol=Client) as client:
        window = asyncio.Semaphore(concurrency)
        ok = 0
        size = 0

        async def one():
            nonlocal ok, size
            async with window:
                quic = client._quic
                sid = quic.get_next_available_stream_id()
                client.http.send_headers(
                    sid,
                    [
                        (b":method", b"GET"),
                        (b":scheme", b"https"),
                        (b":authority", f"localhost:{port}".encode()),
                        (b":path", path.encode()),
                    ],
                    end_stream=True,
                )
                client.transmit()
                s = client.stream(sid)
                await asyncio.wait_for(s["event"].wait(), timeout=60)
                if s["heads"] and dict(s["heads"][-1][0]).get(b":status") == b"200":
                    ok += 1
                size += len(s["body"])
                del client.streams[sid]

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(n)))
        return {"ok": ok, "bytes": size, "seconds": round(time.monotonic() - started, 3)}


async def burst(host, port, ca, n):
    async def one():
        try:
            r = await asyncio.wait_for(
                run_requests(host, port, ca, [{"path": "/app.php?do=server"}]), timeout=30
            )
            return r["results"][0].get("status")
        except Exception as e:
            return repr(e)

    statuses = await asyncio.gather(*(one() for _ in range(n)))
    return {
        "ok": sum(1 for s in statuses if s == 200),
        "other": [s for s in statuses if s != 200][:10],
    }


def main():
    host, port, ca, command = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    args = sys.argv[5:]
    if command == "requests":
        # H3_TIMEOUT: give up after that many seconds (a server expected not to answer).
        limit = float(os.environ.get("H3_TIMEOUT", "300"))
        out = asyncio.run(
            asyncio.wait_for(run_requests(host, port, ca, json.loads(args[0])), limit)
        )
    elif command == "attack":
        out = asyncio.run(attack(host, port, ca, args[0]))
    elif command == "idle":
        out = asyncio.run(idle(host, port, ca, float(args[0])))
    elif command == "load":
        out = asyncio.run(load(host, port, ca, int(args[0]), args[1], int(args[2])))
    elif command == "burst":
        out = asyncio.run(burst(host, port, ca, int(args[0])))
    else:
        raise SystemExit(f"unknown command {command}")
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

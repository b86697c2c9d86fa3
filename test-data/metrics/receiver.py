#!/usr/bin/env python3
"""A test collector for ferrophp's metrics push mode. Listens on 127.0.0.1 (port 0 = any),
prints `listening PORT`, and for every POST prints one JSON line describing the payload.

The envelope (ferrophp.metrics.v1.Payload, docs/metrics.md) is parsed with a few lines of
wire-format reading; every embedded sketch is decoded by DataDog's `ddsketch` package
(DDSketchProto.from_proto), so the counts printed are what the reference implementation
sees in our bytes."""
import http.server
import json
import struct
import sys

from ddsketch.pb.ddsketch_pb2 import DDSketch as PbSketch
from ddsketch.pb.proto import DDSketchProto


def fields(buf):
    i = 0
    while i < len(buf):
        tag, i = varint(buf, i)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v = buf[i:i + 8]
            i += 8
        elif wire == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wire == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        yield field, v


def varint(buf, i):
    shift = v = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def double(b):
    return struct.unpack("<d", b)[0]


def series(buf):
    s = {"name": "", "tags": [], "kind": 0, "value": 0.0, "sum": 0.0, "count": 0.0}
    for f, v in fields(buf):
        if f == 1:
            s["name"] = v.decode()
        elif f == 2:
            s["tags"].append(v.decode())
        elif f == 3:
            s["kind"] = v
        elif f == 4:
            pb = PbSketch()
            pb.ParseFromString(v)
            sk = DDSketchProto.from_proto(pb)
            s["sketch_count"] = sk.count
            s["p50"] = sk.get_quantile_value(0.5)
            s["p99"] = sk.get_quantile_value(0.99)
        elif f == 5:
            s["value"] = double(v)
        elif f == 6:
            s["sum"] = double(v)
        elif f == 7:
            s["count"] = double(v)
    return s


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        payload = {"series": [], "bytes": len(body), "path": self.path,
                   "content_type": self.headers.get("Content-Type")}
        for f, v in fields(body):
            if f == 1:
                payload["series"].append(series(v))
            elif f == 2:
                payload["timestamp_unix_ms"] = v
            elif f == 3:
                payload["interval_ms"] = v
            elif f == 4:
                payload["dropped_series"] = v
            elif f == 5:
                payload["dropped_payloads"] = v
        print(json.dumps(payload), flush=True)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("listening %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

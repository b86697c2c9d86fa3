#!/usr/bin/env python3
"""A test collector for ferrophp's traces: OTLP/HTTP protobuf decoded with the reference
schema (PyPI `opentelemetry-proto`, the generated classes of the OpenTelemetry proto
repository). Listens on 127.0.0.1 (port 0 = any), prints `listening PORT`, and for every
POST prints one JSON line: the request's path and content type, each resource's
attributes and every span as the schema reads it. A field the schema does not know
(wrong field number or wire type in our encoding) is printed under `unknown_fields`.

Options: --delay-ms N answers each POST N ms late (a slow collector); --status N answers
with that HTTP status instead of 200; --reject N answers 200 with
partial_success.rejected_spans = N."""
import argparse
import http.server
import json
import time

from google.protobuf import unknown_fields
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def unknown(msg, path, found):
    """Collects unknown fields of `msg` and every message under it."""
    if len(unknown_fields.UnknownFieldSet(msg)):
        found.append(path)
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if field.is_repeated:
            for i, item in enumerate(value):
                unknown(item, "%s.%s[%d]" % (path, field.name, i), found)
        else:
            unknown(value, "%s.%s" % (path, field.name), found)


def span(s, scope):
    return {
        "scope": scope,
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": s.parent_span_id.hex(),
        "trace_state": s.trace_state,
        "name": s.name,
        "kind": s.kind,
        "start": s.start_time_unix_nano,
        "end": s.end_time_unix_nano,
        "attributes": attrs(s.attributes),
        "dropped_attributes_count": s.dropped_attributes_count,
        "events": [
            {
                "name": e.name,
                "time": e.time_unix_nano,
                "attributes": attrs(e.attributes),
                "dropped_attributes_count": e.dropped_attributes_count,
            }
            for e in s.events
        ],
        "dropped_events_count": s.dropped_events_count,
        "status": {"code": s.status.code, "message": s.status.message},
        "flags": s.flags,
    }


def handler(options):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            found = []
            unknown(request, "request", found)
            out = {
                "path": self.path,
                "content_type": self.headers.get("Content-Type"),
                "authorization": self.headers.get("Authorization"),
                "bytes": len(body),
                "unknown_fields": found,
                "resources": [],
                "spans": [],
            }
            for rs in request.resource_spans:
                out["resources"].append(attrs(rs.resource.attributes))
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out["spans"].append(span(s, ss.scope.name))
            print(json.dumps(out), flush=True)
            if options.delay_ms:
                time.sleep(options.delay_ms / 1000)
            response = ExportTraceServiceResponse()
            if options.reject:
                response.partial_success.rejected_spans = options.reject
                response.partial_success.error_message = "rejected by the test collector"
            payload = response.SerializeToString()
            self.send_response(options.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int, nargs="?", default=0)
    p.add_argument("--delay-ms", type=int, default=0)
    p.add_argument("--status", type=int, default=200)
    p.add_argument("--reject", type=int, default=0)
    options = p.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", options.port), handler(options))
    print("listening %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reads hex-encoded DDSketch protobuf messages (one per line) produced by ferrophp and
decodes each with DataDog's Python `ddsketch` package; prints one JSON line per input:
its non-zero bins, zero count, count and quantiles, as the reference sees them."""
import json
import sys

from ddsketch.pb.ddsketch_pb2 import DDSketch as PbSketch
from ddsketch.pb.proto import DDSketchProto

QUANTILES = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]


def bins(store):
    return [[store.offset + i, c] for i, c in enumerate(store.bins) if c != 0.0]


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    pb = PbSketch()
    pb.ParseFromString(bytes.fromhex(line))
    s = DDSketchProto.from_proto(pb)
    print(json.dumps({
        "gamma": s._mapping.gamma,
        "positive_bins": bins(s._store),
        "negative_bins": bins(s._negative_store),
        "zero_count": s._zero_count,
        "count": s.count,
        "quantiles": [[q, s.get_quantile_value(q)] for q in QUANTILES],
    }))

#!/usr/bin/env python3
"""Regenerates the DDSketch compatibility fixtures with DataDog's Python `ddsketch`
package (PyPI: `pip install ddsketch protobuf`).

Each fixture is a JSON file: the values added (in order), the relative accuracy, the
sketch's protobuf bytes (hex, the canonical ddsketch.proto DDSketch message as the
package serializes it), its non-zero bins, and the quantiles it answers. The Rust tests
(metrics/tests/fixtures.rs) build a sketch from the same values and check bins, quantiles
and decoding against these files. Values come from a fixed seed, so reruns give the
same files for the same package version.
"""
import json
import math
import os
import random

import ddsketch
from ddsketch import DDSketch
from ddsketch.pb.proto import DDSketchProto

HERE = os.path.dirname(os.path.abspath(__file__))
QUANTILES = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]


def value_sets():
    rng = random.Random(20261130)
    yield "uniform_1_1000", 0.01, [rng.uniform(1, 1000) for _ in range(5000)]
    yield "lognormal_latency", 0.01, [rng.lognormvariate(-4.0, 1.2) for _ in range(10000)]
    yield "exponential", 0.01, [rng.expovariate(0.05) for _ in range(3000)]
    yield "integers", 0.01, [float(i) for i in range(1, 2001)]
    yield "mixed_signs_and_zero", 0.01, (
        [rng.uniform(-500, -0.001) for _ in range(1000)]
        + [0.0] * 50
        + [rng.uniform(0.001, 500) for _ in range(1000)]
    )
    yield "wide_range", 0.01, [10 ** rng.uniform(-9, 9) for _ in range(4000)]
    yield "boundaries", 0.01, [1.0, 1.01, 1.02, 0.99, 2.0, 5e-324, 0.0, -2.5, 123456.789]
    # Extremes far apart would need tens of thousands of dense bins: one per sign here.
    yield "extremes", 0.01, [1e-300, 1e-300, -1e300, 5e-324, -5e-324]
    yield "accuracy_2pct", 0.02, [rng.gammavariate(2.0, 30.0) for _ in range(4000)]
    yield "single", 0.01, [42.0]


def bins(store):
    return [[store.offset + i, c] for i, c in enumerate(store.bins) if c != 0.0]


def main():
    for name, alpha, values in value_sets():
        s = DDSketch(alpha)
        for v in values:
            s.add(v)
        proto = DDSketchProto.to_proto(s)
        fixture = {
            "generator": "ddsketch %s (Python)" % ddsketch.__version__,
            "relative_accuracy": alpha,
            "gamma": s._mapping.gamma,
            "values": values,
            "proto_hex": proto.SerializeToString().hex(),
            "positive_bins": bins(s._store),
            "negative_bins": bins(s._negative_store),
            "zero_count": s._zero_count,
            "count": s.count,
            "quantiles": [[q, s.get_quantile_value(q)] for q in QUANTILES],
        }
        with open(os.path.join(HERE, "fixture_%s.json" % name), "w") as f:
            json.dump(fixture, f, indent=0)
            f.write("\n")
        print("wrote fixture_%s.json (%d values)" % (name, len(values)))


if __name__ == "__main__":
    main()

"""Checks an interleaved pipeline plan: plan-pipeline-interleaved.test.

Usage: plan-pipeline-interleaved.test.check.py INTERLEAVED.json 1F1B.json P V M
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
plain = json.load(open(sys.argv[2]))
p, v, m = (int(a) for a in sys.argv[3:6])
pipe = plan["pipeline"]
lst = pipe["stage_list"]
assert pipe["schedule"] == "interleaved" and pipe["chunks"] == v, pipe
assert pipe["stages"] == p and len(lst) == p * v, (pipe["stages"], len(lst))
# Virtual stage i: chunk i // p on device row i % p, the blocks cut evenly
# and in order.
k = pipe["repeated_blocks"] // (p * v)
for i, s in enumerate(lst):
    assert s["device"] == i % p and s["chunk"] == i // p, s["index"]
    assert s["blocks"] == [i * k, (i + 1) * k], s["blocks"]
    assert s["plan"]["ops"], i
assert lst[0]["prefix"] and lst[-1]["suffix"]
assert not any(s["prefix"] for s in lst[1:])
# Every op of the simulated schedule: m forwards and m backwards per chunk
# of every device.
events = pipe["events"]
assert len(events) == 2 * m * p * v, len(events)
for d in range(p):
    for c in range(v):
        for kind in "FB":
            mbs = sorted(e["microbatch"] for e in events if e["device"] == d
                         and e["chunk"] == c and e["kind"] == kind)
            assert mbs == list(range(m)), (d, c, kind, mbs)
# The step: the makespan plus the largest per-device sum of per-step
# reductions, never below the busiest device's work.
pred = plan["predicted"]
per_step = max(sum(s["per_step_s"] for s in lst if s["device"] == d)
               for d in range(p))
assert abs(pred["step_time_s"] - (pipe["makespan_s"] + per_step)) <= \
    1e-9 * pred["step_time_s"]
work = max(sum(m * (s["forward_s"] + s["backward_s"]) for s in lst
               if s["device"] == d) for d in range(p))
assert pipe["makespan_s"] >= work * (1 - 1e-9), (pipe["makespan_s"], work)
# A device's memory is the sum of its chunks' peaks.
for d in range(p):
    mine = [s for s in lst if s["device"] == d]
    total = sum(s["peak_memory_bytes"] for s in mine)
    assert all(s["device_peak_memory_bytes"] == total for s in mine), d
assert pred["peak_memory_bytes"] == max(s["device_peak_memory_bytes"]
                                        for s in lst)
# Interleaving divides the warm-up bubble by about v: smaller than 1F1B's
# on the same stages and microbatches.
assert pipe["bubble_fraction"] < plain["pipeline"]["bubble_fraction"], (
    pipe["bubble_fraction"], plain["pipeline"]["bubble_fraction"])
print("ok")

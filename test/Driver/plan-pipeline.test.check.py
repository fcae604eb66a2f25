"""Checks the pipeline section of a plan file: plan-pipeline.test.

Usage: plan-pipeline.test.check.py PLAN.json STAGES MICROBATCHES
"""
import json
import sys

plan = json.load(open(sys.argv[1]))
stages, m = int(sys.argv[2]), int(sys.argv[3])
pipe = plan["pipeline"]
lst = pipe["stage_list"]
assert pipe["stages"] == stages == len(lst), pipe["stages"]
assert pipe["microbatches"] == m, pipe["microbatches"]
# The stages cover the blocks in order, each on its own slab.
blocks = pipe["repeated_blocks"]
assert lst[0]["blocks"][0] == 0 and lst[-1]["blocks"][1] == blocks
for a, b in zip(lst, lst[1:]):
    assert a["blocks"][1] == b["blocks"][0], (a["blocks"], b["blocks"])
    assert a["slab"][1] == b["slab"][0], (a["slab"], b["slab"])
assert lst[0]["prefix"] and lst[-1]["suffix"]
# Every stage carries its own plan of its own ops.
for s in lst:
    assert s["plan"]["ops"], s["index"]
# The step: the simulated makespan plus the slowest per-step reduction, and
# never less than the busiest stage's work.
pred = plan["predicted"]
step = pred["step_time_s"]
per_step = max(s["per_step_s"] for s in lst)
assert abs(step - (pipe["makespan_s"] + per_step)) <= 1e-9 * step, step
work = max(m * (s["forward_s"] + s["backward_s"]) for s in lst)
assert pipe["makespan_s"] >= work * (1 - 1e-9), (pipe["makespan_s"], work)
# The bubble is the busiest device's idle share of the makespan.
busiest = max(s["busy_s"] for s in lst)
assert abs(pipe["bubble_fraction"] - (1 - busiest / pipe["makespan_s"])) < 1e-9
# Peak memory: the largest stage's.
assert pred["peak_memory_bytes"] == max(s["peak_memory_bytes"] for s in lst)
# Balanced 1F1B: the bubble is close to (p-1)/(m+p-1).
if pipe["schedule"] == "1f1b":
    ideal = (stages - 1) / (m + stages - 1)
    assert abs(pipe["bubble_fraction"] - ideal) < 0.05, (pipe["bubble_fraction"], ideal)
print("ok")

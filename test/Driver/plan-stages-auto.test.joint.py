"""Checks `--microbatches auto --stages auto` against the stage-count search
of each microbatch count on its own: plan-stages-auto.test.

Usage: plan-stages-auto.test.joint.py JOINT.json M=PLAN.json...

Each M=PLAN.json is the plan of `--microbatches M --stages auto`. The joint
search must try every divisor of the batch, choose the count whose plan is
fastest and give that plan's step; a count it cut short (some of its stage
counts cut under another count's plan) must have no plan faster than its
cutoff.
"""
import json
import sys

joint = json.load(open(sys.argv[1]))
alone = {}
for arg in sys.argv[2:]:
    count, path = arg.split("=")
    alone[int(count)] = json.load(open(path))["predicted"]["step_time_s"]
batch = joint["batch"]
searched = {e["microbatches"]: e for e in batch["searched"]}
assert sorted(searched) == sorted(alone), (sorted(searched), sorted(alone))
best = min(alone, key=lambda m: alone[m])
step = joint["predicted"]["step_time_s"]
assert abs(step - alone[best]) <= 1e-9 * alone[best], (step, alone)
assert alone[batch["microbatches"]] <= alone[best] * (1 + 1e-9), batch
pruned = 0
for m, entry in searched.items():
    if "step_time_s" in entry:
        # The best plan the joint search found with m: never faster than
        # m's own optimum, and that optimum when no stage count of m was
        # cut below it.
        found = entry["step_time_s"]
        assert found >= alone[m] * (1 - 1e-9), (m, entry, alone[m])
        if found <= entry.get("cutoff_s", float("inf")):
            assert abs(found - alone[m]) <= 1e-9 * alone[m], (m, entry)
        else:
            assert alone[m] >= entry["cutoff_s"] * (1 - 1e-9), (m, entry)
    else:
        assert "pruned" in entry, entry
        assert alone[m] >= entry["cutoff_s"] * (1 - 1e-9), (m, entry)
        pruned += 1
print(f"chose {batch['microbatches']} microbatches of "
      f"{batch['per_microbatch']} and {joint['stage_search']['chosen']} "
      f"stages; {pruned} count(s) cut short")

"""Checks `--stages auto` against every stage count planned on its own:
plan-stages-auto.test.

Usage: plan-stages-auto.test.check.py AUTO.json COUNT=PLAN.json...

Each COUNT=PLAN.json is the plan of `--stages COUNT` (1: no pipeline), or
COUNT=- when that count has no plan. The free search must choose the count
with the fastest fitting plan and give that plan's step; every count it
priced must have the step of that count's own plan; every count its cutoff
cut short must have no plan faster than the cutoff.
"""
import json
import sys

auto = json.load(open(sys.argv[1]))
alone = {}
for arg in sys.argv[2:]:
    count, path = arg.split("=")
    alone[int(count)] = None if path == "-" else json.load(open(path))


def step(plan):
    return plan["predicted"]["step_time_s"]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


search = auto["stage_search"]
tried = {e["stages"]: e for e in search["tried"]}
assert sorted(tried) == sorted(alone), (sorted(tried), sorted(alone))
# The best of the counts planned alone.
fitting = {c: step(p) for c, p in alone.items()
           if p is not None and p["predicted"].get("fits", True)}
assert fitting, "no count has a plan"
best = min(fitting, key=lambda c: fitting[c])
assert search["chosen"] == best, (search["chosen"], best, fitting)
assert close(step(auto), fitting[best]), (step(auto), fitting[best])
pruned = 0
for count, entry in tried.items():
    # The bound the pipelines are searched in order of is a bound.
    if "step_lower_bound_s" in entry and count in fitting:
        assert entry["step_lower_bound_s"] <= fitting[count] * (1 + 1e-9), \
            (count, entry)
    if "step_time_s" in entry:
        assert count in fitting, count
        assert close(entry["step_time_s"], fitting[count]), (count, entry)
    elif "pruned" in entry:
        pruned += 1
        # Cut short: nothing faster than the cutoff with this count.
        assert count not in fitting or \
            fitting[count] >= entry["cutoff_s"] * (1 - 1e-9), (count, entry)
    else:
        assert count not in fitting, (count, entry)
# The search order: no pipeline first, then the pipelines best first, in
# the order they were decided (searched in full, or cut), each under the best
# step found before it. Its bound (with the stages planned once
# probed) never decreases along that order: a count is decided when its
# bound is the least of those pending.
cutoff = float("inf")
if "cutoff_s" in tried.get(1, {}):
    cutoff = tried[1]["cutoff_s"]
decided = sorted((c for c in tried if "order" in tried[c]),
                 key=lambda c: tried[c]["order"])
assert [tried[c]["order"] for c in decided] == list(range(len(decided))), \
    decided
assert sorted(decided) == sorted(c for c in tried
                                 if "step_lower_bound_s" in tried[c]), decided
order = [1] + decided


def key(entry):
    return max(entry["step_lower_bound_s"],
               entry.get("step_lower_bound_probed_s", 0.0))


last = 0.0
for count in order:
    entry = tried[count]
    if count > 1:
        assert key(entry) >= last * (1 - 1e-9), (count, entry, last)
        last = key(entry)
    if "step_lower_bound_probed_s" in entry and count in fitting:
        assert entry["step_lower_bound_probed_s"] <= \
            fitting[count] * (1 + 1e-9), (count, entry)
    if cutoff == float("inf"):
        assert "cutoff_s" not in entry, (count, entry)
    else:
        assert close(entry["cutoff_s"], cutoff), (count, entry, cutoff)
    if entry.get("fits") and entry["step_time_s"] < cutoff:
        cutoff = entry["step_time_s"]
probed = sum("step_lower_bound_probed_s" in e for e in tried.values())
print(f"chosen {best} stages, {pruned} count(s) cut short, {probed} "
      f"probed, searched in the order {' '.join(map(str, order))}")

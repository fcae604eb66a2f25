"""Checks `autopar run --profile`'s memory line: the measured peak matches
the plan's prediction within a relative tolerance and stays below a bound.

    check-peak.py PROFILE_OUTPUT REL_TOL BELOW_BYTES

Prints `peak: predicted=P measured=M ok` (exit 0) or `... MISMATCH` (exit 1).
"""
import re
import sys

text = open(sys.argv[1]).read()
tol, below = float(sys.argv[2]), int(sys.argv[3])
match = re.search(r"peak memory predicted (\d+) bytes\s+measured (\d+) bytes",
                  text)
if not match:
    print("peak: no profile line")
    sys.exit(1)
predicted, measured = int(match.group(1)), int(match.group(2))
ok = abs(measured - predicted) <= tol * predicted and measured < below
print(f"peak: predicted={predicted} measured={measured} "
      f"{'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)

"""Runs the command in argv[1:] and prints each line of its standard output
with the seconds from that line to the command's exit (`2.9 step 1 ...`):
progress.test checks that `autopar train` prints a step when the job does,
not when the job ends."""

import subprocess
import sys
import time

process = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
arrivals = [(time.monotonic(), line.rstrip("\n")) for line in process.stdout]
end = time.monotonic()
code = process.wait()
for when, line in arrivals:
    print(f"{end - when:.1f} {line}")
print(f"exit {code}")

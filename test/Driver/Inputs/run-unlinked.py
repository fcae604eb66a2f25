"""Runs a copy of an executable whose file is removed before it starts, as
when a rebuild relinks build/bin/autopar under a running verify
(/proc/self/exe then names '<path> (deleted)'):

    run-unlinked.py EXECUTABLE SCRATCH_DIR ARGS...
"""
import os
import shutil
import sys

path = shutil.which(sys.argv[1]) or sys.argv[1]
copy = os.path.join(sys.argv[2], os.path.basename(path))
shutil.copy2(path, copy)
fd = os.open(copy, os.O_RDONLY)
os.unlink(copy)
os.execv(f"/proc/self/fd/{fd}", [copy] + sys.argv[3:])

#!/bin/sh
# Stands in for mpirun: a job whose rank 1 fails the way the runtime does.
echo "--------------------------------------------------------------------------" >&2
echo "autopar-runtime: rank 1: weight 3: file holds 12 bytes, expected 16" >&2
echo "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD" >&2
exit 1

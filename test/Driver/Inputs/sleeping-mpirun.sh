#!/bin/sh
# Stands in for mpirun: a job that never finishes.
exec sleep 120

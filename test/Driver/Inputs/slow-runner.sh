#!/bin/sh
# A stand-in for autopar-runner (AUTOPAR_RUNNER) that prints two training
# steps 3 s apart, for the test that `autopar train` prints each step as the
# job prints it (progress.test).
echo "step 1 loss=1"
sleep 3
echo "step 2 loss=0.5"

//===- LowerToLLVM.cpp - placeholder until the stage lands -------------------===//

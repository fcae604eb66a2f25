//===- Codegen.cpp - placeholder until the stage lands -------------------===//

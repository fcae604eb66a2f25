// RUN: autopar-opt %s -split-input-file --autopar-verify-sharded -verify-diagnostics

shard.grid @grid(shape = 4)
func.func @main(%x: tensor<8xf32> {autopar.sharding = #autopar.sharding<[[0]]>}) -> (tensor<8xf32> {autopar.sharding = #autopar.sharding<[[]]>}) {
  // expected-error @below {{value result #0 of 'autopar.relu' has no sharding}}
  %y = autopar.relu %x : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 4)
// expected-error @below {{value argument #0 dimension 0 (size 6) does not divide over grid axes [0] (4 devices); uneven shards are not supported yet}}
func.func @main(%x: tensor<6xf32> {autopar.sharding = #autopar.sharding<[[0]]>}) -> (tensor<6xf32> {autopar.sharding = #autopar.sharding<[[]]>}) {
  return %x : tensor<6xf32>
}

// -----

shard.grid @grid(shape = 4)
func.func @main(%x: tensor<8xf32> {autopar.sharding = #autopar.sharding<[[1]]>}) -> (tensor<8xf32> {autopar.sharding = #autopar.sharding<[[]]>}) {
  return %x : tensor<8xf32>
}
// expected-error @-3 {{grid axis 1 is out of range for a 1-d grid}}

// -----

shard.grid @grid(shape = 2)
func.func @main(%x: tensor<8xf32> {autopar.sharding = #autopar.sharding<[[]]>}) -> (tensor<8xf32> {autopar.sharding = #autopar.sharding<[[]]>}) {
  // expected-error @below {{result cannot be a pending sum: the op has no reduction that can be split}}
  %y = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[]], partial = [0]>]} : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// expected-error @below {{expected exactly one shard.grid in the module, got 0}}
module {
  func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}

// -----

// Only the first value that breaks the contract is reported: the values that
// take their sharding from it would repeat the error (found by the randomized
// differential test, whose plans must fail with one `autopar: error:` line).
shard.grid @grid(shape = 4)
// expected-error @below {{value argument #0 dimension 0 (size 6) does not divide over grid axes [0] (4 devices)}}
func.func @main(%x: tensor<6xf32> {autopar.sharding = #autopar.sharding<[[0]]>}) -> (tensor<6xf32> {autopar.sharding = #autopar.sharding<[[]]>}) {
  %y = autopar.relu %x {autopar.shardings = [#autopar.sharding<[[0]]>]} : (tensor<6xf32>) -> tensor<6xf32>
  %z = autopar.relu %y {autopar.shardings = [#autopar.sharding<[[0]]>]} : (tensor<6xf32>) -> tensor<6xf32>
  return %z : tensor<6xf32>
}

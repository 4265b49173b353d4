// The host schedule's verifiers.
// RUN: flow-opt %s -split-input-file -verify-diagnostics

func.func @view(%x: memref<4xf32>) {
  // expected-error @+1 {{cannot view 'memref<4xf32>' as 'memref<2x3xf32>': element type and count must match}}
  %v = host.view %x : memref<4xf32> -> memref<2x3xf32>
  return
}

// -----

func.func @arena() {
  // expected-error @+1 {{arena of type 'memref<64xi8>' must hold the 128 bytes of its plan}}
  %a = host.arena <bytes = 128, lower_bound = 64, unplanned = 128, heuristic = "x"> : memref<64xi8>
  return
}

// -----

func.func @plan() {
  // expected-error @+1 {{must have 0 <= lower_bound <= bytes and lower_bound <= unplanned}}
  %a = host.arena <bytes = 64, lower_bound = 128, unplanned = 128, heuristic = "x"> : memref<64xi8>
  return
}

// -----

func.func @slice_outside() {
  %a = host.arena <bytes = 128, lower_bound = 128, unplanned = 128, heuristic = "x"> : memref<128xi8>
  // expected-error @+1 {{slice of 128 bytes at offset 64 does not fit the arena of 128 bytes}}
  %s = host.slice %a[64] live[1, 2] : memref<128xi8> -> memref<32xf32>
  return
}

// -----

func.func @slice_misaligned() {
  %a = host.arena <bytes = 128, lower_bound = 128, unplanned = 128, heuristic = "x"> : memref<128xi8>
  // expected-error @+1 {{offset 4 must be a non-negative multiple of 64}}
  %s = host.slice %a[4] live[1, 2] : memref<128xi8> -> memref<4xf32>
  return
}

// -----

func.func @slice_range() {
  %a = host.arena <bytes = 128, lower_bound = 128, unplanned = 128, heuristic = "x"> : memref<128xi8>
  // expected-error @+1 {{live range [3, 2] is empty or negative}}
  %s = host.slice %a[0] live[3, 2] : memref<128xi8> -> memref<4xf32>
  return
}

// -----

func.func @gemm_shapes(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  // expected-error @+1 {{shapes 'memref<4x8xf32>' x 'memref<4x8xf32>' do not give 'memref<4x8xf32>'}}
  host.gemm %a, %b -> %c : memref<4x8xf32>, memref<4x8xf32> -> memref<4x8xf32>
  return
}

// -----

func.func @gemm_batch(%a: memref<3x4x8xf32>, %b: memref<8x4xf32>, %c: memref<2x4x4xf32>) {
  // expected-error @+1 {{batch dimensions of 'memref<3x4x8xf32>' do not broadcast to 'memref<2x4x4xf32>'}}
  host.gemm %a, %b -> %c : memref<3x4x8xf32>, memref<8x4xf32> -> memref<2x4x4xf32>
  return
}

// -----

func.func @gemm_bias(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %bias: memref<4xf32>, %c: memref<4x16xf32>) {
  // expected-error @+1 {{bias must be 16 'f32' values (one per column of the result), got 'memref<4xf32>'}}
  host.gemm %a, %b bias(%bias : memref<4xf32>) -> %c activation = relu : memref<4x8xf32>, memref<8x16xf32> -> memref<4x16xf32>
  return
}

// -----

func.func @gemm_type(%a: memref<4x8xf16>, %b: memref<8x4xf16>, %c: memref<4x4xbf16>) {
  // expected-error @+1 {{runs f32, bf16 or f16 operands of one type into f32 or their own type}}
  host.gemm %a, %b -> %c : memref<4x8xf16>, memref<8x4xf16> -> memref<4x4xbf16>
  return
}

// -----

func.func @gemm_mixed(%a: memref<4x8xf16>, %b: memref<8x4xbf16>, %c: memref<4x4xf32>) {
  // expected-error @+1 {{runs f32, bf16 or f16 operands of one type into f32 or their own type}}
  host.gemm %a, %b -> %c : memref<4x8xf16>, memref<8x4xbf16> -> memref<4x4xf32>
  return
}

// -----

func.func @gemm_tf32(%a: memref<4x8xbf16>, %b: memref<8x4xbf16>, %c: memref<4x4xf32>) {
  // expected-error @+1 {{allow_tf32 is for f32 operands}}
  host.gemm %a, %b -> %c {allow_tf32} : memref<4x8xbf16>, memref<8x4xbf16> -> memref<4x4xf32>
  return
}

// -----

func.func @gemm_bias_type(%a: memref<4x8xf16>, %b: memref<8x16xf16>, %bias: memref<16xf32>, %c: memref<4x16xf16>) {
  // expected-error @+1 {{bias must be 16 'f16' values (one per column of the result), got 'memref<16xf32>'}}
  host.gemm %a, %b bias(%bias : memref<16xf32>) -> %c : memref<4x8xf16>, memref<8x16xf16> -> memref<4x16xf16>
  return
}

// -----

func.func @copy(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{the byte sizes differ}}
  host.copy %a -> %b : memref<4xf32> -> memref<8xf32>
  return
}

// -----

func.func @dispatch(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{in-place operand 1 is not one of its 1 inputs}}
  host.dispatch @k(%a) outs(%b) {in_place_operands = array<i64: 1>} : (memref<4xf32>) -> (memref<4xf32>)
  return
}

// -----

flow.mesh @mesh [2]
func.func @collective_attrs(%a: memref<4xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{all_gather takes exactly 'dim'}}
  host.collective all_gather %a -> %b on @mesh axes = [0] : memref<4xf32> -> memref<8xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func @collective_pieces(%a: memref<4xf32>, %b: memref<6xf32>) {
  // expected-error @+1 {{operand dimension 0 (4) is not a piece of the result's 6 over 2 devices}}
  host.collective all_gather %a -> %b on @mesh axes = [0] {dim = 0 : i64} : memref<4xf32> -> memref<6xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func @async_unwaited(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{is asynchronous but no host.wait after it waits for it}}
  host.collective all_reduce %a -> %b on @mesh axes = [0] async {reduction = 0 : i32} : memref<4xf32> -> memref<4xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func @wait_for_nothing(%a: memref<4xf32>, %b: memref<4xf32>) {
  host.collective all_reduce %a -> %b on @mesh axes = [0] {reduction = 0 : i32} : memref<4xf32> -> memref<4xf32>
  // expected-error @+1 {{waits for no asynchronous collective}}
  host.wait %a -> %b : memref<4xf32> -> memref<4xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func private @k(tensor<4xf32>) -> tensor<4xf32>
func.func @wait_too_late(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  host.collective all_reduce %a -> %b on @mesh axes = [0] async {reduction = 0 : i32} : memref<4xf32> -> memref<4xf32>
  // A kernel may read the input in flight, not the output.
  host.dispatch @k(%a) outs(%c) : (memref<4xf32>) -> (memref<4xf32>)
  // expected-note @+1 {{this command}}
  host.dispatch @k(%b) outs(%c) : (memref<4xf32>) -> (memref<4xf32>)
  // expected-error @+1 {{waits too late: a command before it uses the buffers of the collective in flight}}
  host.wait %a -> %b : memref<4xf32> -> memref<4xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func private @k(tensor<4xf32>) -> tensor<4xf32>
func.func @input_written_in_flight(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  host.collective all_reduce %a -> %b on @mesh axes = [0] async {reduction = 0 : i32} : memref<4xf32> -> memref<4xf32>
  // expected-note @+1 {{this command}}
  host.dispatch @k(%c) outs(%a) : (memref<4xf32>) -> (memref<4xf32>)
  // expected-error @+1 {{waits too late}}
  host.wait %a -> %b : memref<4xf32> -> memref<4xf32>
  return
}

// -----

flow.mesh @mesh [2]
func.func @waited_twice(%a: memref<4xf32>, %b: memref<4xf32>) {
  host.collective all_reduce %a -> %b on @mesh axes = [0] async {reduction = 0 : i32} : memref<4xf32> -> memref<4xf32>
  host.wait %a -> %b : memref<4xf32> -> memref<4xf32>
  // expected-error @+1 {{waits for a collective already waited for}}
  host.wait %a -> %b : memref<4xf32> -> memref<4xf32>
  return
}

// -----

func.func @layout(%a: memref<4xf32, strided<[2]>>) {
  // expected-error @+1 {{must have the identity layout}}
  %v = host.view %a : memref<4xf32, strided<[2]>> -> memref<2x2xf32>
  return
}

// -----

// expected-error @+1 {{'flow.host_outputs' must be a function's count of trailing output buffers}}
func.func @outputs(%a: memref<4xf32>) attributes {flow.host_outputs = 2 : i64} {
  return
}

// -----

func.func @epilogue_alone(%a: memref<4x4xf32>, %b: memref<4x4xf32>) {
  // expected-error @+1 {{is a GEMM epilogue but does not follow a host.gemm}}
  host.dispatch @k(%a) outs(%b) {gemm_epilogue, in_place_operands = array<i64: 0>} : (memref<4x4xf32>) -> (memref<4x4xf32>)
  return
}

// -----

func.func @epilogue_elsewhere(%a: memref<4x4xf32>, %t: memref<4x4xf32>, %b: memref<4x4xf32>) {
  host.gemm %a, %a -> %t : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  // expected-error @+1 {{is a GEMM epilogue but does not read the GEMM's result element-wise}}
  host.dispatch @k(%a, %t) outs(%b) {gemm_epilogue, in_place_operands = array<i64: 0>} : (memref<4x4xf32>, memref<4x4xf32>) -> (memref<4x4xf32>)
  return
}

// -----

func.func @conv_shape(%x: memref<1x8x6x6xf32>, %w: memref<16x8x3x3xf32>, %o: memref<1x16x6x6xf32>) {
  // expected-error @+1 {{writes 'memref<1x16x6x6xf32>' but the convolution gives 1x16x4x4}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x6x6xf32>, memref<16x8x3x3xf32> -> memref<1x16x6x6xf32>
  return
}

// -----

func.func @conv_groups(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{filter 'memref<16x8x1x1xf32>' in 2 group(s) does not fit input 'memref<1x8x4x4xf32>'}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

// An f16 convolution is f16 throughout (its bias too).
func.func @conv_f16(%x: memref<1x8x4x4xf16>, %w: memref<16x8x1x1xf16>, %b: memref<16xf32>, %o: memref<1x16x4x4xf16>) {
  // expected-error @+1 {{runs f32 convolutions (a bf16 one may keep its blocked buffers in bf16), or f16 or bf16 ones on operands of that type only, got 'memref<16xf32>'}}
  host.conv %x, %w bias(%b : memref<16xf32>) -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf16>, memref<16x8x1x1xf16> -> memref<1x16x4x4xf16>
  return
}

// -----

func.func @conv_f16_blocked(%x: memref<1x16x4x4xf16>, %w: memref<16x16x1x1xf16>, %o: memref<1x16x4x4xf16>) {
  // expected-error @+1 {{a narrow ('f16') convolution is neither blocked nor bf16}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {blocked_input} : memref<1x16x4x4xf16>, memref<16x16x1x1xf16> -> memref<1x16x4x4xf16>
  return
}

// -----

func.func @conv_residual(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %r: memref<1x8x4x4xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{residual 'memref<1x8x4x4xf32>' must have the output's shape 'memref<1x16x4x4xf32>'}}
  host.conv %x, %w residual(%r : memref<1x8x4x4xf32>) -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @conv_blocked(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{a blocked buffer needs a multiple of 16 channels}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {blocked_input} : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @conv_bias(%x: memref<1x8x4x4xf32>, %w: memref<16x8x1x1xf32>, %b: memref<8xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{bias must hold one value per output channel (16), got 'memref<8xf32>'}}
  host.conv %x, %w bias(%b : memref<8xf32>) -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : memref<1x8x4x4xf32>, memref<16x8x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

// bf16 storage is for the blocked buffers of a bf16 convolution only.
func.func @conv_bf16_plain(%x: memref<1x16x4x4xbf16>, %w: memref<16x16x1x1xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{runs f32 convolutions (a bf16 one may keep its blocked buffers in bf16), or f16 or bf16 ones on operands of that type only, got 'memref<1x16x4x4xbf16>'}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16} : memref<1x16x4x4xbf16>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @conv_bf16_buffer_f32_conv(%x: memref<1x16x4x4xbf16>, %w: memref<16x16x1x1xf32>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{runs f32 convolutions (a bf16 one may keep its blocked buffers in bf16), or f16 or bf16 ones on operands of that type only, got 'memref<1x16x4x4xbf16>'}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {blocked_input} : memref<1x16x4x4xbf16>, memref<16x16x1x1xf32> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @conv_bf16_filter(%x: memref<1x16x4x4xbf16>, %w: memref<16x16x1x1xbf16>, %o: memref<1x16x4x4xf32>) {
  // A bf16 filter makes a narrow convolution, which is neither.
  // expected-error @+1 {{a narrow ('bf16') convolution is neither blocked nor bf16}}
  host.conv %x, %w -> %o strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 {bf16, blocked_input} : memref<1x16x4x4xbf16>, memref<16x16x1x1xbf16> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @max_pool_shape(%x: memref<1x16x8x8xf32>, %o: memref<1x16x3x4xf32>) {
  // expected-error @+1 {{writes 'memref<1x16x3x4xf32>' but the window gives 1x16x4x4}}
  host.max_pool %x -> %o kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] : memref<1x16x8x8xf32> -> memref<1x16x3x4xf32>
  return
}

// -----

func.func @max_pool_padding(%x: memref<1x16x8x8xf32>, %o: memref<1x16x5x5xf32>) {
  // expected-error @+1 {{padding 2 is not smaller than the window}}
  host.max_pool %x -> %o kernel = [2, 2] strides = [2, 2] padding = [2, 2, 0, 0] dilations = [1, 1] : memref<1x16x8x8xf32> -> memref<1x16x5x5xf32>
  return
}

// -----

func.func @max_pool_bf16(%x: memref<1x16x8x8xbf16>, %o: memref<1x16x4x4xf32>) {
  // expected-error @+1 {{pools f32 buffers (bf16 where blocked), got 'memref<1x16x8x8xbf16>'}}
  host.max_pool %x -> %o kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : memref<1x16x8x8xbf16> -> memref<1x16x4x4xf32>
  return
}

// -----

func.func @max_pool_blocked(%x: memref<1x8x8x8xf32>, %o: memref<1x8x4x4xf32>) {
  // expected-error @+1 {{a blocked buffer needs a multiple of 16 channels}}
  host.max_pool %x -> %o kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] {blocked_output} : memref<1x8x8x8xf32> -> memref<1x8x4x4xf32>
  return
}

// -----

func.func @avg_pool_shape(%x: memref<1x16x8x8xf32>, %o: memref<1x16x8x8xf32>) {
  // expected-error @+1 {{writes 'memref<1x16x8x8xf32>' but the window gives 1x16x4x4}}
  host.avg_pool %x -> %o kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] {count_include_pad} : memref<1x16x8x8xf32> -> memref<1x16x8x8xf32>
  return
}

// -----

// expected-error @+1 {{'flow.tied_input' on argument #1 must be on an output buffer of a host schedule and name an input of its type}}
func.func @tied_to_another_type(%w: memref<4xf32>, %out: memref<4xi32> {flow.tied_input = 0 : i64})
    attributes {flow.host_outputs = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'flow.tied_input' on argument #0 must be on an output buffer of a host schedule}}
func.func @tied_input_on_an_input(%w: memref<4xf32> {flow.tied_input = 0 : i64}, %out: memref<4xf32>)
    attributes {flow.host_outputs = 1 : i64} {
  return
}

// -----

func.func @attention_shape(%q: memref<2x8x16xf32>, %o: memref<2x8x8xf32>) {
  // expected-error @+1 {{writes 'memref<2x8x8xf32>' but the attention gives 2x8x16}}
  host.attention %q, %q, %q -> %o scale = 1.0 : memref<2x8x16xf32>, memref<2x8x16xf32>, memref<2x8x16xf32> -> memref<2x8x8xf32>
  return
}

// -----

func.func @attention_mask(%q: memref<2x8x16xf32>, %m: memref<8xf16>, %o: memref<2x8x16xf32>) {
  // expected-error @+1 {{mask must be i1 or 'f32', not 'f16'}}
  host.attention %q, %q, %q mask(%m : memref<8xf16>) -> %o scale = 1.0 : memref<2x8x16xf32>, memref<2x8x16xf32>, memref<2x8x16xf32> -> memref<2x8x16xf32>
  return
}

// -----

func.func @attention_f64(%q: memref<8x16xf64>) {
  // expected-error @+1 {{runs f32, f16 or bf16, not 'f64'}}
  host.attention %q, %q, %q -> %q scale = 1.0 : memref<8x16xf64>, memref<8x16xf64>, memref<8x16xf64> -> memref<8x16xf64>
  return
}

flow.mesh @mesh1d [4]
flow.mesh @mesh2d [2, 4]
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>,
                  %i: tensor<2x1xi64>, %j: tensor<3xi64>) -> tensor<4x8xf32> {
  %0 = flow.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = flow.sub %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = flow.mul %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %3 = flow.div %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = flow.maximum %3, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = flow.minimum %4, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %6 = flow.pow %5, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %7 = flow.compare ge, %6, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %8 = flow.compare eq, %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %9 = flow.select %7, %6, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}

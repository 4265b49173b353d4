func.func @f(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = flow.neg %a : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

func.func @f(%a: tensor<4xf32> {flow.sbp = #flow.sbp<[B]>}) {
  return
}

module attributes {flow.parameters = 3} {
}

flow.mesh @m [2, 0]

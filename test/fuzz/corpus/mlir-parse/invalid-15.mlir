flow.mesh @m []

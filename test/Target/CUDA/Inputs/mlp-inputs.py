"""Random inputs for test/models/mlp.mlir, written as .npy files to argv[1]."""
import os
import sys

import numpy as np

shapes = {"x": (16, 784), "w1": (784, 256), "b1": (256,), "w2": (256, 128),
          "b2": (128,), "w3": (128, 10), "b3": (10,)}
rng = np.random.default_rng(0)
for name, shape in shapes.items():
    np.save(os.path.join(sys.argv[1], name + ".npy"),
            rng.standard_normal(shape).astype(np.float32))

"""python -m flow.onnx_import MODEL.onnx [-o OUT.mlir]
[--parameters W.safetensors] [--archive-name NAME]
[--input-shape NAME=1x3x224x224]...: see flow.onnx_import.main."""

from . import main

raise SystemExit(main())
